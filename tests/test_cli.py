"""`python -m spotviz decode`: JSON output, trace files, and one-line errors with exit code 2."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spotviz.cli import main
from spotviz.trace import Trace

REPO = Path(__file__).resolve().parent.parent
JSON_KEYS = {"text", "tokens", "target_passes", "commits", "wall_s", "accepted_lengths", "drafter"}


def run_main(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def error_line(err: str) -> str:
    """The error message: the one line of stderr that starts with 'error:' (progress bars may precede it)."""
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, err
    assert err.rstrip("\n").splitlines()[-1] == lines[0], "the error must be the last thing printed"
    return lines[0]


def test_decode_json(capsys, tiny_block_dir):
    code, out, _ = run_main(capsys, "decode", "--model", str(tiny_block_dir), "--prompt", "ROMEO.",
                            "--gen-length", "20", "--json", "--temperature", "1", "--seed", "3")
    assert code == 0
    lines = out.strip().splitlines()
    assert len(lines) == 1, "--json prints exactly one JSON object"
    obj = json.loads(lines[0])
    assert JSON_KEYS <= set(obj)
    assert obj["drafter"] == "none"
    assert obj["commits"] == sum(obj["accepted_lengths"])
    assert len(obj["accepted_lengths"]) == obj["target_passes"] > 0
    assert all(n == 1 for n in obj["accepted_lengths"])  # exact mode
    assert isinstance(obj["tokens"], list) and all(isinstance(t, int) for t in obj["tokens"])
    assert isinstance(obj["text"], str) and obj["wall_s"] >= 0
    assert obj["prompt_truncated"] is False


def test_decode_trace_out(capsys, tiny_full_dir, tmp_path):
    path = tmp_path / "out" / "run.json"
    path.parent.mkdir()
    code, out, _ = run_main(capsys, "decode", "--model", str(tiny_full_dir), "--prompt", "JULIET.\nAy",
                            "--gen-length", "24", "--mode", "threshold", "--threshold", "0.03",
                            "--temperature", "1", "--seed", "5", "--json", "--trace-out", str(path))
    assert code == 0
    obj = json.loads(out)
    trace = Trace.load(path)
    assert trace.meta.mode == "threshold" and trace.meta.seed == 5 and trace.meta.attention == "full"
    assert trace.meta.prompt == "JULIET.\nAy"
    assert trace.tokens == obj["tokens"] and trace.text == obj["text"]
    assert trace.counters.target_passes == obj["target_passes"]
    assert [len(p.commits) for p in trace.passes] == obj["accepted_lengths"]


def test_decode_plain_text(capsys, tiny_block_dir):
    code, out, err = run_main(capsys, "decode", "--model", str(tiny_block_dir), "--prompt", "ROMEO.",
                              "--gen-length", "8")
    assert code == 0
    assert out.startswith("ROMEO.")
    assert "target passes" in err


def test_long_prompt_is_truncated_not_an_error(capsys, tiny_block_dir):
    code, out, _ = run_main(capsys, "decode", "--model", str(tiny_block_dir), "--prompt",
                            "O Romeo, Romeo, wherefore art thou Romeo? " * 50, "--gen-length", "16", "--json")
    assert code == 0
    assert json.loads(out)["prompt_truncated"] is True


@pytest.mark.parametrize("args, match", [
    (["--prompt", ""], "empty"),
    (["--prompt", "   \n "], "empty"),
    (["--prompt", "x", "--gen-length", "0"], "gen_length"),
    (["--prompt", "x", "--gen-length", "5000"], "gen_length"),
    (["--prompt", "x", "--gen-length", "64"], "context"),
    (["--prompt", "x", "--temperature", "-1"], "temperature"),
    (["--prompt", "x", "--mode", "threshold", "--threshold", "0"], "threshold"),
    (["--prompt", "x", "--threshold", "1.5"], "threshold"),
    (["--prompt", "x", "--drafter", "spot", "--budget", "0"], "budget"),
    (["--prompt", "x", "--budget", "100000"], "budget"),
    (["--prompt", "x", "--seed", "-4"], "seed"),
])
def test_bad_decode_input(capsys, tiny_block_dir, args, match):
    code, out, err = run_main(capsys, "decode", "--model", str(tiny_block_dir), *args)
    assert code == 2
    assert out == ""
    assert match in error_line(err)


def test_unknown_model(capsys):
    code, out, err = run_main(capsys, "decode", "--model", "no-such-model", "--prompt", "ROMEO.")
    assert code == 2 and out == ""
    assert "unknown model" in error_line(err)


def test_corrupt_weights(capsys, tiny_block_dir, tmp_path):
    dst = tmp_path / "broken"
    shutil.copytree(tiny_block_dir, dst)
    w = dst / "model.safetensors"
    w.write_bytes(w.read_bytes()[:1000])
    code, out, err = run_main(capsys, "decode", "--model", str(dst), "--prompt", "ROMEO.")
    assert code == 2 and out == ""
    assert "corrupt" in error_line(err)


def test_missing_weights(capsys, tiny_block_dir, tmp_path):
    dst = tmp_path / "nowts"
    shutil.copytree(tiny_block_dir, dst)
    (dst / "model.safetensors").unlink()
    code, out, err = run_main(capsys, "decode", "--model", str(dst), "--prompt", "ROMEO.")
    assert code == 2 and out == ""
    assert "missing" in error_line(err)


def test_unwritable_trace_out(capsys, tiny_block_dir, tmp_path):
    code, out, err = run_main(capsys, "decode", "--model", str(tiny_block_dir), "--prompt", "ROMEO.",
                              "--gen-length", "4", "--trace-out", str(tmp_path / "no" / "such" / "dir" / "t.json"))
    assert code == 2
    assert "t.json" in error_line(err)


def test_argparse_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main(["decode", "--prompt", "x", "--gen-length", "many"])
    assert e.value.code == 2
    assert "error:" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["decode"])  # --prompt is required
    assert e.value.code == 2


# ------------------------------------------------------------------------- the real entry point
def _subprocess(*args, timeout=180):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", "spotviz", *args], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=timeout)


def test_python_m_spotviz_decode(tiny_block_dir, tmp_path):
    trace_path = tmp_path / "t.json"
    r = _subprocess("decode", "--model", str(tiny_block_dir), "--prompt", "ROMEO.", "--gen-length", "12",
                    "--json", "--trace-out", str(trace_path))
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert JSON_KEYS <= set(obj)
    assert Trace.load(trace_path).tokens == obj["tokens"]


def test_python_m_spotviz_error(tmp_path):
    r = _subprocess("decode", "--model", str(tmp_path / "missing-model"), "--prompt", "ROMEO.")
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.strip().startswith("error:") and len(r.stderr.strip().splitlines()) == 1, r.stderr

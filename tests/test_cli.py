"""`python -m spotviz decode`: JSON output, trace files, and one-line errors with exit code 2.

Bad input (prompt, lengths, budget, tau, temperature, seed, unknown model, missing or corrupt weights, bad
drafters and traces) is one table in test_robustness.py, run through the CLI and the app alike; here the CLI's
own errors (argparse, devices, unwritable files, help)."""
from __future__ import annotations

import json
import os
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
    assert obj["prompt_truncated"] is False and obj["drafters"] is None  # (no trained drafter ran)
    code, out, _ = run_main(capsys, "decode", "--model", str(tiny_block_dir), "--prompt", "ROMEO.",
                            "--gen-length", "8", "--json", "--drafter", "spot", "--budget", "2")
    assert json.loads(out)["drafters"].startswith("shakespeare-bd's drafters, transferred (none trained for ")


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
    assert obj["walk_ends"] == trace.walk_ends() == {}  # (the standard decoder walks no tree)


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


def test_a_generation_longer_than_the_context_leaves_is_lowered_not_the_prompt_cut(capsys, tiny_block_dir):
    """A --gen-length the context cannot hold after the prompt is lowered to what it can (as the app's slider is),
    with a note: the prompt is kept whole, where it used to lose its beginning (and the answer changed)."""
    code, out, err = run_main(capsys, "decode", "--model", str(tiny_block_dir), "--prompt", "ROMEO. JULIET.",
                              "--gen-length", "64", "--json")
    assert code == 0, err
    assert "note: --gen-length 64 lowered to" in err and "context of 64 tokens" in err, err
    got = json.loads(out)
    assert got["prompt_truncated"] is False
    assert 0 < got["commits"] <= got["gen_length"] < got["gen_length_asked"] == 64


def test_a_train_target_output_folder_given_as_a_model_points_to_its_final(capsys, tiny_block_dir):
    code, _, err = run_main(capsys, "decode", "--model", str(tiny_block_dir.parent), "--prompt", "ROMEO.")
    assert code == 2 and error_line(err).endswith(f"is a train-target output folder; its model is {tiny_block_dir}"), err


def test_train_drafter_says_what_a_small_prompt_file_lowers_and_checks_calibrate_first(capsys, tmp_path, monkeypatch):
    """Counts larger than the prompt file holds are lowered with a note each (as bench --n-prompts is); a --calibrate
    folder without drafters is one error before the output folder is made."""
    import spotviz.training.drafter as td

    seen: dict = {}
    monkeypatch.setattr(td, "train_drafter", lambda cfg, calibrate_from=None: seen.update(cfg=cfg) or {})
    (tmp_path / "p.json").write_text(json.dumps([f"Prompt number {i}." for i in range(5)]))
    base = ("train-drafter", "--prompts", str(tmp_path / "p.json"), "--mix-prompts", "40")
    code, _, err = run_main(capsys, *base, "--n-prompts", "4", "--out", str(tmp_path / "a"))
    assert code == 0, err
    assert "note: --mix-prompts 40: the file has 1 prompt after the training ones, which choose" in err
    assert seen["cfg"].n_prompts == 4 and seen["cfg"].mix_prompts == 1
    code, _, err = run_main(capsys, *base, "--n-prompts", "8", "--out", str(tmp_path / "b"))
    assert code == 0, err
    assert "note: --n-prompts 8: the file holds 5 prompts; training on 5" in err
    assert "no prompt after the training ones: the pointer mixture is chosen by validation accuracy" in err
    assert seen["cfg"].n_prompts == 5 and seen["cfg"].mix_prompts == 0
    for bad, says in ((tmp_path / "none", "no such folder"), (tmp_path, "no drafter in")):
        code, _, err = run_main(capsys, "train-drafter", "--calibrate", str(bad), "--out", str(tmp_path / "c"))
        assert code == 2 and says in error_line(err) and error_line(err).startswith("error: --calibrate "), err
        assert not (tmp_path / "c").exists()


def test_trace_out_makes_its_folder_and_a_file_in_the_way_is_an_error(capsys, tiny_block_dir, tmp_path):
    """--trace-out runs/x.json in a fresh clone (as the assets/ refusal suggests) makes runs/, as Trace.save does; a
    file where a folder should be is refused before any work."""
    path = tmp_path / "no" / "such" / "dir" / "t.json"
    code, out, err = run_main(capsys, "decode", "--model", str(tiny_block_dir), "--prompt", "ROMEO.",
                              "--gen-length", "4", "--trace-out", str(path))
    assert code == 0 and path.is_file(), err
    if "stopped at --gen-length" in err:  # (no end-of-text marks to count in the summary then)
        assert "counting the end-of-text marks" not in err
    (tmp_path / "f").write_text("x")
    code, out, err = run_main(capsys, "decode", "--model", str(tiny_block_dir), "--prompt", "ROMEO.",
                              "--gen-length", "4", "--trace-out", str(tmp_path / "f" / "t.json"))
    assert code == 2 and "t.json" in error_line(err) and "is a file, not a folder" in error_line(err)


@pytest.mark.parametrize("argv", [
    ["decode", "--prompt", "x", "--gen-length", "many"],
    ["decode"],  # --prompt is required
    ["decode", "--prompt", "x", "--mode", "fast"],
    ["no-such-command"],
    [],
])
def test_argparse_errors_are_one_error_line_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and error_line(err) == err.strip()


@pytest.mark.parametrize("device, match", [
    ("foo", "unknown device"),
    ("cuda:99", "cuda"),
    ("cuda", "cuda"),
])
def test_bad_device_is_one_error_line(capsys, tiny_block_dir, device, match):
    import torch

    if device == "cuda" and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    code, out, err = run_main(capsys, "decode", "--model", str(tiny_block_dir), "--prompt", "x", "--device", device)
    assert code == 2 and out == ""
    assert match in error_line(err).lower()


def test_unknown_drafter_is_one_error_line(capsys, tiny_block_dir):
    code, out, err = run_main(capsys, "decode", "--model", str(tiny_block_dir), "--prompt", "x", "--drafter", "magic")
    assert code == 2 and out == "" and "drafter" in error_line(err)


def test_running_out_of_memory_is_one_error_line_and_other_crashes_stay_tracebacks(capsys, monkeypatch, tiny_block_dir):
    import torch

    from spotviz import cli

    def oom(a):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setitem(cli.COMMANDS, "decode", cli.COMMANDS["decode"][:2] + (oom,))
    code, out, err = run_main(capsys, "decode", "--model", str(tiny_block_dir), "--prompt", "x")
    assert code == 2 and out == "" and "out of memory" in error_line(err) and "--gen-length" in error_line(err)

    def bug(a):
        raise RuntimeError("a bug")

    monkeypatch.setitem(cli.COMMANDS, "decode", cli.COMMANDS["decode"][:2] + (bug,))
    with pytest.raises(RuntimeError, match="a bug"):  # (a bug keeps its traceback, for a report)
        main(["decode", "--model", str(tiny_block_dir), "--prompt", "x"])


def test_ctrl_c_is_one_line_with_status_130(capsys, monkeypatch, tiny_block_dir):
    """Ctrl-C printed a traceback of 40 lines and exit status 1, read as a crash."""
    from spotviz import cli

    def interrupted(a):
        raise KeyboardInterrupt

    monkeypatch.setitem(cli.COMMANDS, "decode", cli.COMMANDS["decode"][:2] + (interrupted,))
    code, out, err = run_main(capsys, "decode", "--model", str(tiny_block_dir), "--prompt", "x")
    assert code == 130 and out == "" and error_line(err) == "error: interrupted (Ctrl-C)"


def test_accuracy_checks_its_length_before_it_loads_the_model(capsys, monkeypatch):
    """It printed 'decoding 90 held-out problems ... up to 0 tokens each', then failed."""
    import spotviz.registry

    monkeypatch.setattr(spotviz.registry, "load_target", lambda *a, **k: pytest.fail("loaded a model"))
    code, out, err = run_main(capsys, "accuracy", "--per-family", "1", "--gen-length", "0")
    assert code == 2 and out == "" and error_line(err) == "error: --gen-length must be between 1 and 1024, got 0"


def test_a_bench_stopped_by_ctrl_c_keeps_the_rows_it_finished(capsys, monkeypatch, tiny_block_dir, tmp_path):
    """An interrupted bench wrote nothing: ten minutes of finished rows were lost. They are now written, marked."""
    from spotviz.eval import bench

    made = []
    real_row = bench._row

    def row(*args, **kw):  # (Ctrl-C while the third row is measured)
        if len(made) == 2:
            raise KeyboardInterrupt
        made.append(1)
        return real_row(*args, **kw)

    monkeypatch.setattr(bench, "_row", row)
    code, out, err = run_main(capsys, "bench", "--model", str(tiny_block_dir), "--n-prompts", "1", "--gen-length",
                              "8", "--budgets", "2,4", "--temperatures", "0", "--no-transfer", "--out",
                              str(tmp_path / "b"))
    md = tmp_path / "b" / f"bench-{bench.file_stem(str(tiny_block_dir))}.interrupted.md"  # (a finished one stays)
    assert code == 130 and error_line(err) == f"error: interrupted (Ctrl-C): the 2 row(s) finished by then are in {md} and its .json"
    data = json.loads(md.with_suffix(".json").read_text())
    assert data["interrupted"] is True and len(data["rows"]) == 2
    assert "**Interrupted** (Ctrl-C) after 2 rows" in md.read_text()
    made[:] = [1, 1]  # (Ctrl-C during the first row: nothing written, and it says so)
    code, out, err = run_main(capsys, "bench", "--model", str(tiny_block_dir), "--n-prompts", "1", "--gen-length",
                              "8", "--budgets", "2", "--temperatures", "0", "--no-transfer", "--out",
                              str(tmp_path / "c"))
    assert code == 130 and error_line(err).endswith("no bench row had finished; nothing written")
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("command, defaults", [
    ("decode", ["(default: 128)", "(default: exact)", "(default: 0.9)", "(default: none)", "(default: auto)",
                "(default: math-bd)"]),
    ("bench", ["(default: math-bd)", "(default: runs/bench)", "(default: 0,1)"]),
    ("train-target", ["(default: 256)", "(default: 0.002)", "(default: block)"]),
    ("train-drafter", ["(default: 120)", "(default: math-bd)"]),
])
def test_help_shows_the_defaults(capsys, command, defaults):
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    assert e.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for d in defaults:
        assert d in text, (command, d)


@pytest.mark.slow
def test_help_does_not_import_torch_or_transformers():
    """`python -m spotviz --help` answers without the heavy imports (lazy imports keep it fast)."""
    code = ("import sys\nfrom spotviz.cli import main\ntry:\n    main(['decode', '--help'])\nexcept SystemExit:\n"
            "    pass\nheavy = [m for m in ('torch', 'transformers', 'gradio') if m in sys.modules]\n"
            "print('HEAVY', heavy)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60,
                       env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert r.returncode == 0, r.stderr
    assert "HEAVY []" in r.stdout and "--device" in r.stdout


def test_identity_not_guaranteed_is_reported(capsys, tiny_block_dir, monkeypatch):
    from spotviz import registry

    def flagged(name, device=None, block_size=None):
        target = registry.load_embedded(name, device="cpu", check_invariance=False)
        target.info.batch_invariant = False
        target.info.extra["invariance"] = "identity not guaranteed on this device/dtype: probe"
        return target

    monkeypatch.setattr(registry, "load_target", flagged)
    code, out, err = run_main(capsys, "decode", "--model", str(tiny_block_dir), "--prompt", "ROMEO.",
                              "--gen-length", "8", "--json")
    assert code == 0 and json.loads(out)["identity_guaranteed"] is False
    code, out, err = run_main(capsys, "decode", "--model", str(tiny_block_dir), "--prompt", "ROMEO.",
                              "--gen-length", "8")
    assert code == 0 and "warning: identity not guaranteed" in err


# ------------------------------------------------------------------------- the real entry point
def _subprocess(*args, timeout=180):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", "spotviz", *args], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=timeout)


@pytest.mark.slow
def test_python_m_spotviz_decode(tiny_block_dir, tmp_path):
    trace_path = tmp_path / "t.json"
    r = _subprocess("decode", "--model", str(tiny_block_dir), "--prompt", "ROMEO.", "--gen-length", "12",
                    "--json", "--trace-out", str(trace_path))
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert JSON_KEYS <= set(obj)
    assert Trace.load(trace_path).tokens == obj["tokens"]


@pytest.mark.slow
def test_python_m_spotviz_error(tmp_path):
    r = _subprocess("decode", "--model", str(tmp_path / "missing-model"), "--prompt", "ROMEO.")
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.strip().startswith("error:") and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_trace_html_page_and_baseline_checks(capsys, tiny_block_dir, tmp_path):
    spot, std = tmp_path / "spot.json", tmp_path / "std.json"
    for path, drafter in ((spot, "training-free"), (std, "none")):
        code, _, _ = run_main(capsys, "decode", "--model", str(tiny_block_dir), "--prompt", "ROMEO.", "--gen-length",
                              "12", "--drafter", drafter, "--budget", "4", "--trace-out", str(path))
        assert code == 0
    page = tmp_path / "run.html"
    code, out, err = run_main(capsys, "trace", str(spot), "--html", str(page), "--baseline", str(std))
    assert code == 0 and "target passes" in out and "wrote" in err
    ends = Trace.load(spot).walk_ends()  # the summary says why the walks stopped, as the trace counts them
    assert ends and ("walks stopped: " + ", ".join(f"{k} {n}" for k, n in ends.items())) in out
    html = page.read_text(encoding="utf-8")
    assert 'id="sv-timeline"' in html and 'data-view="tree"' in html and "identical to the standard decoder" in html
    code, _, err = run_main(capsys, "trace", str(spot), "--baseline", str(std))
    assert code == 2 and err.strip() == "error: --baseline is used only with --html"
    other = tmp_path / "other.json"  # a standard run of another prompt: nothing to compare with
    code, _, _ = run_main(capsys, "decode", "--model", str(tiny_block_dir), "--prompt", "JULIET.", "--gen-length", "12",
                          "--trace-out", str(other))
    code, _, err = run_main(capsys, "trace", str(spot), "--html", str(tmp_path / "x.html"), "--baseline", str(other))
    assert code == 2 and err.startswith(f"error: --baseline {other} decoded another run") and not (tmp_path / "x.html").exists()
    # --baseline is the standard decoder's run, and the file the drafter's: a drafter's run as the baseline would be
    # called "standard" on the page, and a standard run with a baseline would drop it
    code, _, err = run_main(capsys, "trace", str(spot), "--html", str(tmp_path / "x.html"), "--baseline", str(spot))
    assert code == 2 and error_line(err).startswith(f"error: --baseline {spot} is a run of the training-free drafter")
    code, _, err = run_main(capsys, "trace", str(std), "--html", str(tmp_path / "x.html"), "--baseline", str(std))
    assert code == 2 and error_line(err).startswith(f"error: {std} is itself a standard-decoder run")
    assert not (tmp_path / "x.html").exists()


def test_decode_says_which_settings_the_run_does_not_read(capsys, tiny_block_dir):
    """A budget given to the standard decoder, a budget of 1 (nothing drafted) and tau in exact mode: each a note on
    stderr, and the run goes on (the output is the standard decoder's in every case)."""
    base = ("decode", "--model", str(tiny_block_dir), "--prompt", "ROMEO.", "--gen-length", "8")
    cases = [((), []),
             (("--budget", "16"), ["--budget 16 has no effect with --drafter none"]),
             (("--drafter", "training-free", "--budget", "1"), ["--budget 1 checks the root state alone"]),
             (("--drafter", "training-free", "--budget", "4", "--threshold", "0.5"),
              ["--threshold 0.5 is read in threshold mode only"]),
             (("--mode", "threshold", "--threshold", "0.5", "--budget", "4", "--drafter", "training-free"), []),
             (("--no-coupled-noise", "--min-path-prob", "0.5"),
              ["--no-coupled-noise, --min-path-prob 0.5 have no effect with --drafter none"]),
             (("--mode", "threshold", "--drafter", "training-free", "--budget", "4", "--no-cross-window"),
              ["--no-cross-window has no effect in threshold mode"]),
             (("--drafter", "training-free", "--budget", "4", "--no-coupled-noise"),
              ["--no-coupled-noise has no effect at --temperature 0"]),
             (("--drafter", "training-free", "--budget", "4", "--no-coupled-noise", "--temperature", "1"), [])]
    for extra, said in cases:
        code, _, err = run_main(capsys, *base, *extra)
        notes = [ln.removeprefix("note: ") for ln in err.splitlines() if ln.startswith("note: --")]
        assert code == 0 and len(notes) == len(said) and all(n.startswith(s) for n, s in zip(notes, said)), (extra, err)
    code, _, err = run_main(capsys, *base, "--threshold", "7")  # (a bad value: its error alone, no note before it)
    assert code == 2 and "note:" not in err and error_line(err).startswith("error: --threshold (tau) must be")


def test_an_output_folder_that_is_a_file_and_a_mistyped_model_folder_are_one_clear_line(capsys, tmp_path, monkeypatch):
    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    for out, said in ((afile, "it is a file; give a folder"), (afile / "sub", f"{afile} is a file, not a folder")):
        code, _, err = run_main(capsys, "train-drafter", "--out", str(out), "--n-prompts", "2")
        assert code == 2 and error_line(err) == f"error: --out {out}: {said}", err
    out = afile / "acc.json"  # (accuracy makes its --out's folders: a file in their way is said before the run)
    code, _, err = run_main(capsys, "accuracy", "--out", str(out))
    assert code == 2 and error_line(err) == f"error: --out {out}: {afile} is a file, not a folder", err
    # "runs/my-model" (one slash, like a Hub id "org/name"), where runs/ is a folder here: a folder that is missing
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # (no download tried: the test machine may have a network)
    code, _, err = run_main(capsys, "decode", "--model", "runs/my-model", "--prompt", "Sam has 8 marbles.")
    assert code == 2 and error_line(err).startswith(
        f"error: model folder {str(tmp_path / 'runs' / 'my-model')!r} does not exist (nor is 'runs/my-model' a Hugging "
        "Face repository"), err


def test_decode_errors_name_the_flags_and_accuracy_refuses_a_model_of_another_corpus(capsys, tiny_block_dir):
    for args, flag in ((["--gen-length", "-5"], "--gen-length"), (["--temperature", "-1"], "--temperature"),
                       (["--min-path-prob", "2"], "--min-path-prob"),
                       (["--drafter", "spot", "--drafter-dir", "/no/such/drafters"], "--drafter-dir")):
        code, out, err = run_main(capsys, "decode", "--model", str(tiny_block_dir), "--prompt", "ROMEO.", *args)
        assert code == 2 and out == "" and error_line(err).startswith(f"error: {flag} must be "), err
    code, out, err = run_main(capsys, "bench", "--model", str(tiny_block_dir), "--drafter-dir", "/no/such/drafters",
                              "--out", str(tiny_block_dir.parent / "bench-out"))
    assert code == 2 and out == "" and error_line(err).startswith("error: --drafter-dir: '/no/such/drafters' is not")
    code, out, err = run_main(capsys, "accuracy", "--model", str(tiny_block_dir), "--per-family", "1")
    assert code == 2 and out == "" and "accuracy measures word-problem models" in error_line(err)
    assert "shakespeare corpus" in error_line(err)


def test_train_drafter_bad_topk_is_one_error_line(capsys, tmp_path):
    code, out, err = run_main(capsys, "train-drafter", "--topk", "1", "--out", str(tmp_path / "d"))
    assert code == 2 and out == "" and err.strip() == "error: --topk must be a whole number from 2 to 64, got 1"


BAD_LONG_COMMANDS = [  # settings that crashed with a traceback, ran without a limit, or failed after the work
    (("train-drafter", "--n-prompts", "0"), "--n-prompts must be at least 2"),
    (("train-drafter", "--epochs", "0"), "--epochs must be at least 1"),
    (("train-drafter", "--threshold", "2"), "--threshold (tau) must be"),
    (("train-drafter", "--gen-length", "0"), "--gen-length must be"),
    (("train-target", "--max-steps", "1", "--batch-size", "0"), "--batch-size 0:"),
    (("train-target", "--max-steps", "1", "--heads", "7"), "--heads 7:"),
    (("train-target", "--max-steps", "-5"), "--max-steps -5"),
    (("train-target", "--minutes", "-1"), "--minutes -1"),
    (("train-target", "--max-steps", "1", "--context", "10", "--seq-len", "128"), "--context 10:"),
    (("train-target", "--max-steps", "1", "--init-from", "/no/such/model"), "--init-from /no/such/model:"),
    (("train-target", "--max-steps", "1", "--vocab-size", "10"), "--vocab-size 10:"),
    (("train-target", "--corpus", "math", "--problems", "0", "--prepare-only"), "--problems 0:"),
    (("bench", "--threshold", "2"), "--threshold (tau) must be"),
    (("bench", "--gen-length", "100000"), "--gen-length must be"),
    (("bench", "--prune", "1.5"), "--prune must be"),
    (("bench", "--modes", "fast"), "--modes fast:"),
]


@pytest.mark.parametrize("argv, message", BAD_LONG_COMMANDS, ids=[" ".join(a) for a, _ in BAD_LONG_COMMANDS])
def test_a_long_command_refuses_a_bad_setting_before_any_work(capsys, tmp_path, argv, message):
    out_dir = tmp_path / "out"
    code, out, err = run_main(capsys, *argv, "--out", str(out_dir))
    assert code == 2 and out == "" and error_line(err).startswith("error: " + message), err
    assert not out_dir.exists()  # (nothing drawn, trained or written)


def test_bench_refuses_an_empty_prompt_file(capsys, tmp_path):
    (tmp_path / "empty.json").write_text("[]")
    code, out, err = run_main(capsys, "bench", "--prompts", str(tmp_path / "empty.json"), "--out", str(tmp_path / "o"))
    assert code == 2 and error_line(err) == f"error: --prompts {tmp_path / 'empty.json'}: holds no prompts"


@pytest.mark.parametrize("name, content, says", [
    ("bytes.txt", b"\xff\xfe not text", "not UTF-8 text"), ("broken.json", b'["a",', "not valid JSON (the first error at line 1"),
    ("dict.json", b'{"a": 1}', "must hold a JSON list of non-empty strings"), ("folder", None, "is a folder"),
    ("missing.json", False, "no such file")])
def test_a_bad_prompt_file_is_one_error_naming_the_flag(capsys, tmp_path, name, content, says):
    """Every way a prompt file can be wrong is one error line that names --prompts and the file."""
    path = tmp_path / name
    if content is None:
        path.mkdir()
    elif content is not False:
        path.write_bytes(content)
    code, out, err = run_main(capsys, "bench", "--prompts", str(path), "--out", str(tmp_path / "o"))
    assert code == 2 and error_line(err).startswith(f"error: --prompts {path}: {says}"), err
    assert not (tmp_path / "o").exists()


def test_train_drafter_bad_threshold_prompts_is_one_error_line(capsys, tmp_path):
    code, out, err = run_main(capsys, "train-drafter", "--threshold-prompts", "-3", "--out", str(tmp_path / "d"))
    assert code == 2 and out == "" and err.strip() == "error: --threshold-prompts must be 0 (as --n-prompts) or more, got -3"
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("flag, value", [("--mix-prompts", "-1"), ("--mix-budget", "1")])
def test_train_drafter_bad_mixture_setting_is_one_error_line(capsys, tmp_path, flag, value):
    code, out, err = run_main(capsys, "train-drafter", flag, value, "--out", str(tmp_path / "d"))
    assert code == 2 and out == "" and err.startswith("error: --mix-prompts must be 0 or more and --mix-budget 2 ")
    assert value in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("jobs", ["0", "100000"])
def test_train_drafter_bad_jobs_is_one_error_line(capsys, tmp_path, jobs):
    code, out, err = run_main(capsys, "train-drafter", "--jobs", jobs, "--out", str(tmp_path / "d"))
    assert code == 2 and out == "" and err.startswith("error: --jobs must be 1 to this machine's ")
    assert err.strip().endswith(f"cores, got {jobs}") and not (tmp_path / "d").exists()


@pytest.mark.parametrize("flag, value", [("--stories", "1.5"), ("--reword", "-0.1")])
def test_train_target_prepare_only_checks_the_shares_first(capsys, tmp_path, flag, value):
    """--prepare-only draws no corpus for a setting training would refuse: the same one error line."""
    code, out, err = run_main(capsys, "train-target", "--corpus", "math", "--out", str(tmp_path / "m"),
                              "--prepare-only", flag, value)
    assert code == 2 and out == "" and error_line(err) == f"error: {flag} {float(value):g}: give a share in [0, 1]"
    assert not (tmp_path / "m").exists()


def test_train_drafter_missing_trajectories_is_one_error_line(capsys, tmp_path):
    code, out, err = run_main(capsys, "train-drafter", "--trajectories", str(tmp_path / "t.safetensors"),
                              "--out", str(tmp_path / "d"))
    assert code == 2 and out == "" and err.strip() == f"error: --trajectories: no such file: {tmp_path / 't.safetensors'}"
    assert not (tmp_path / "d").exists()


def test_cost_curve_command_prints_the_curve_and_says_whether_it_was_cached(capsys, tiny_block_dir, monkeypatch):
    from spotviz.samplers import forward_cost

    real = forward_cost.measure
    monkeypatch.setattr(forward_cost, "measure", lambda target, **k: real(target, sizes=(1, 2, 4), rounds=1, per_round=1))
    code, out, err = run_main(capsys, "cost-curve", "--model", str(tiny_block_dir), "--json")
    obj = json.loads(out)
    assert code == 0 and obj["sizes"] == [1, 2, 4] and obj["ratios"][0] == 1.0 and obj["clock"] == "thread"
    assert "model folder" in err  # (a folder's model may change under its name: never cached)
    monkeypatch.setattr(forward_cost, "cacheable", lambda target: True)
    for busy, said in ((True, "not cached: the machine was busy"), (False, "cached under")):
        monkeypatch.setattr(forward_cost, "machine_busy", lambda since, busy=busy: busy)
        code, out, err = run_main(capsys, "cost-curve", "--model", str(tiny_block_dir))
        assert code == 0 and "f(N)/f(1)" in out and said in err
        assert "measured in " in err  # (a decode's first pass waits for it: the time it took is said)



def test_a_folder_named_like_a_shipped_model_is_not_that_model(capsys, tmp_path, tiny_block_dir):
    """A copy or a retrained model in a folder called math-bd must not take math-bd's shipped drafters (nor its label
    and cached cost curve): it is named by its path."""
    import shutil

    from spotviz.drafter.store import uses_fallback
    from spotviz.registry import load_target
    from spotviz.samplers.forward_cost import cacheable

    folder = tmp_path / "math-bd"
    shutil.copytree(tiny_block_dir, folder)
    target = load_target(str(folder))
    assert target.info.name == str(folder.resolve()) and uses_fallback(target.info.name) and not cacheable(target)
    code, out, err = run_main(capsys, "decode", "--model", str(folder), "--prompt", "ROMEO.", "--drafter", "spot",
                              "--budget", "4", "--gen-length", "16", "--json")
    assert code == 0, err
    assert "transferred" in json.loads(out)["drafters"] and "math-bd's shipped" not in json.loads(out)["drafters"]
    assert load_target("math-bd").info.name == "math-bd"  # (the shipped one keeps its name)
    # its bench files are named after the path's end, in --out (a name with folders in it made them subfolders)
    code, out, err = run_main(capsys, "bench", "--model", str(folder), "--n-prompts", "1", "--gen-length", "8",
                              "--budgets", "2", "--temperatures", "0", "--modes", "exact", "--drafters", "spot",
                              "--no-transfer", "--out", str(tmp_path / "bench"))
    assert code == 0, err
    written = sorted(p.name for p in (tmp_path / "bench").iterdir())
    assert written == [f"bench-{tmp_path.name}-math-bd.json", f"bench-{tmp_path.name}-math-bd.md"]
    assert f"wrote {tmp_path / 'bench' / written[1]}" in err


def test_a_trained_models_final_folder_goes_by_its_runs_name(tmp_path, tiny_block_dir):
    """train-target writes every model to OUT/final: two trained models must not share the name "final" (traces,
    banners and bench files would take them for one)."""
    import shutil

    from spotviz.registry import load_target

    for run in ("run-a", "run-b"):
        shutil.copytree(tiny_block_dir, tmp_path / run / "final")
    names = {load_target(str(tmp_path / run / "final")).info.name for run in ("run-a", "run-b")}
    assert names == {"run-a-final", "run-b-final"}


def test_an_empty_model_name_is_refused(capsys):
    code, out, err = run_main(capsys, "decode", "--model", "", "--prompt", "x")
    assert code == 2 and error_line(err).startswith("error: --model is empty")


def test_decode_shows_what_the_model_saw_and_where_it_was_cut(capsys, tiny_block_dir):
    code, out, err = run_main(capsys, "decode", "--model", str(tiny_block_dir), "--prompt", "ROMEO. " * 40,
                              "--gen-length", "48")
    assert code == 0 and out.startswith("…") and "ROMEO. " * 40 not in out  # (the prompt's end, as the model saw it)
    assert "note: --gen-length 48 lowered to 16" in err and "loses its beginning" in err  # (one note says both)
    assert "prompt was longer than the context" not in err
    code, out, err = run_main(capsys, "decode", "--model", str(tiny_block_dir), "--prompt", "ROMEO.", "--gen-length",
                              "8", "--json")  # (the micro model writes on: its text is cut at 8 tokens)
    assert json.loads(out)["reached_gen_length"] and json.loads(out)["generated_tokens"] == 8
    code, out, err = run_main(capsys, "decode", "--model", str(tiny_block_dir), "--prompt", "ROMEO.", "--gen-length", "8")
    assert "note: stopped at --gen-length 8, before the end of the text" in err

"""Issue 5: bad input, untrusted files and faults, in the CLI and in the app's API (gradio_client, loopback).

* One table (CASES) holds every bad input of the issue; each row runs through the CLI (`spotviz.cli.main`: exit
  code 2 and one `error: ...` line, nothing on stdout) and through the app's API (the message is in the status
  output, nothing raises, and the next valid run works): the one place for the front ends' bad-input messages.
  The layers' own checks live with them: test_decoders.py (DecodeConfig / encode_prompt), test_trace.py
  (Trace.from_json), test_model.py and test_published.py (the loaders), test_cli.py (argparse, devices, files).
* Untrusted files: pickles are refused unopened (a tripwire pickle would leave a marker), remote code runs only
  for the allow-list, API values outside the menus (model paths, Hub repos) are refused before any load,
  hostile trace labels come back escaped in every output.
* Faults: a cancelled job (the same /cancel request the browser's Stop sends) and a client that disconnects
  mid-stream free the worker (the slowed model stops being called and the next user's job finishes at once); an
  exception inside decoding is shown and the next run works; a default model that fails to load leaves the app
  usable with another one. Two sessions decoding at once get their own traces (the load test: 16+).
"""
from __future__ import annotations

import html
import json
import os
import pickle
import re
import shutil
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytest.importorskip("gradio_client")

from gradio_client import Client, handle_file  # noqa: E402

from spotviz.cli import main  # noqa: E402

from helpers import SlowTarget, free_port  # noqa: E402

TINY, SLOW, FAULTY = "tiny-block", "tiny-slow", "tiny-faulty"
PROMPT = "ROMEO.\nO"
GEN = 8
LONG_PROMPT = "O Romeo, Romeo, wherefore art thou Romeo? " * 50  # ~500 tokens: longer than the 64-token context
SLOW_DELAY = 1.0  # seconds per target pass of the slowed model
SLOW_GEN = 48  # -> ~48 s per slowed run: far longer than any check below waits


class FaultyTarget:
    """Raises inside decoding from its third target pass on."""

    def __init__(self, inner):
        self._inner, self.calls = inner, 0

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def forward(self, *args, **kwargs):
        self.calls += 1
        if self.calls >= 3:
            raise RuntimeError("injected fault in the target forward")
        return self._inner.forward(*args, **kwargs)


class Tripwire:
    """Unpickling this writes `marker`: proves that a pickle was opened."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (Path(self.marker).write_text, ("unpickled!",))


# ------------------------------------------------------------------------------------------- bad files
@pytest.fixture(scope="module")
def files(tmp_path_factory, tiny_block_dir, tiny_block_target):
    """Broken model folders, drafter folders and trace files, by name (see the table)."""
    import torch
    from safetensors.torch import load_file, save_file

    import torch

    from spotviz.drafter.model import DrafterConfig, SpotDrafter
    from spotviz.engine import decode
    from spotviz.samplers.config import DecodeConfig
    from spotviz.trace import MAX_TRACE_BYTES

    root = tmp_path_factory.mktemp("bad")
    out: dict[str, Path] = {"marker": root / "UNPICKLED"}

    def model(name, edit):
        d = root / "models" / name
        shutil.copytree(tiny_block_dir, d)
        edit(d / "model.safetensors")
        out[name] = d

    def nan(w):
        state = load_file(str(w))
        k = sorted(state)[0]
        state[k] = torch.full_like(state[k], float("nan"))
        save_file(state, str(w), metadata={"format": "pt"})

    def incomplete(w):
        state = load_file(str(w))
        save_file({k: v for k, v in state.items() if "layers.1." not in k}, str(w), metadata={"format": "pt"})

    def pickle_only(w):
        w.unlink()
        (w.parent / "pytorch_model.bin").write_bytes(pickle.dumps(Tripwire(str(out["marker"]))))

    def remote_code(w):  # a config that needs its own code, and the code (which would leave a marker)
        cfg = json.loads((w.parent / "config.json").read_text())
        cfg.update(model_type="evil-dlm", architectures=["EvilModel"],
                   auto_map={"AutoConfig": "modeling_evil.EvilConfig", "AutoModelForMaskedLM": "modeling_evil.EvilModel"})
        (w.parent / "config.json").write_text(json.dumps(cfg))
        (w.parent / "modeling_evil.py").write_text(f"open({str(out['marker'])!r}, 'w').write('remote code ran')\n")

    model("weights-missing", lambda w: w.unlink())
    model("weights-truncated", lambda w: w.write_bytes(w.read_bytes()[:1000]))
    model("weights-corrupt", lambda w: w.write_bytes(os.urandom(w.stat().st_size)))
    model("weights-nan", nan)
    model("weights-incomplete", incomplete)
    model("weights-pickle-only", pickle_only)
    model("remote-code", remote_code)

    def drafter_root(name, cfg: DrafterConfig | None, edit=None):
        """A drafter store (DRAFTER_DIR) whose fallback drafter (the micro model has none of its own) is bad."""
        d = root / "drafters" / name
        sub = d / "shakespeare-bd" / "spot"
        if cfg is not None:
            SpotDrafter(cfg).save(sub)
        if edit:
            sub.mkdir(parents=True, exist_ok=True)
            edit(sub)
        out[name] = d

    small = dict(d_model=32, n_layers=1, n_heads=2, d_ff=64)
    drafter_root("drafter-window", DrafterConfig(max_width=8, block_size=8, **small))
    drafter_root("drafter-other-vocab", DrafterConfig(vocab_size=151_936, target="another-model", **small))
    drafter_root("drafter-truncated", DrafterConfig(**small),
                 lambda s: (s / "drafter.safetensors").write_bytes((s / "drafter.safetensors").read_bytes()[:200]))
    drafter_root("drafter-config-not-json", DrafterConfig(**small), lambda s: (s / "drafter.json").write_text("{oops"))
    drafter_root("drafter-pickle-only", None, lambda s: (
        (s / "drafter.json").write_text(json.dumps({"d_model": 32})),
        (s / "drafter.bin").write_bytes(pickle.dumps(Tripwire(str(out["marker"])))),
        (s / "drafter.safetensors.pt").write_bytes(pickle.dumps(Tripwire(str(out["marker"]))))))

    trace = decode(tiny_block_target, PROMPT, DecodeConfig(gen_length=GEN, seed=2))
    good = trace.to_dict()
    tdir = root / "traces"
    tdir.mkdir()

    def tfile(name, content):
        p = tdir / f"{name}.json"
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
        out[name] = p

    tfile("trace-good", json.dumps(good))
    tfile("trace-not-json", "this is not JSON {")
    tfile("trace-binary", os.urandom(3000) + b"\xff")
    # binary whose first bytes are zero: json.loads alone would guess UTF-16 and give a different message
    tfile("trace-binary-zero", b"\x00\x00" + os.urandom(3000) + b"\xff")
    tfile("trace-wrong-version", json.dumps(good | {"version": 99}))
    tfile("trace-wrong-schema", json.dumps({k: v for k, v in good.items() if k != "counters"}))
    tfile("trace-inconsistent", json.dumps(good | {"counters": good["counters"] | {"commits": good["counters"]["commits"] + 1}}))
    body = json.dumps(good)
    tfile("trace-huge", body + " " * (MAX_TRACE_BYTES + 1 - len(body)))
    assert out["trace-huge"].stat().st_size == MAX_TRACE_BYTES + 1
    return out


# --------------------------------------------------------------------------------------------- the app
@pytest.fixture(scope="module")
def targets(tiny_block_target):
    return {TINY: tiny_block_target, SLOW: SlowTarget(tiny_block_target, SLOW_DELAY),
            FAULTY: FaultyTarget(tiny_block_target)}


@pytest.fixture(scope="module")
def app(targets, files, tmp_path_factory):
    from spotviz.registry import load_target
    from spotviz.ui.app import build_app, launch

    calls: list[str] = []

    def loader(name):
        calls.append(name)
        if name in targets:
            return targets[name]
        return load_target(name, device="cpu")  # the model folders of the table: the real registry

    folders = [str(files[k]) for k in files if k.startswith(("weights-", "remote-code"))]
    demo = build_app(loader=loader, models=[TINY, SLOW, FAULTY, *folders], default_model=TINY,
                     trace_dir=tmp_path_factory.mktemp("no-examples"), gpu=False)
    _, url, _ = launch(demo, server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True)
    yield demo, url, calls
    demo.close()


@pytest.fixture(scope="module")
def client(app):
    c = Client(app[1], verbose=False)
    yield c
    c.close()


def run_args(**kw) -> dict:
    args = dict(prompt=PROMPT, model=TINY, mode="exact", tau=0.9, temperature=0.0, seed=1, gen_length=GEN,
                drafter="none", budget=8, coupled=True)
    args.update(kw)
    return args | {"api_name": "/run"}


def text_of(status) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", str(status)))


def assert_app_usable(client):
    out = client.predict(**run_args(gen_length=4, seed=5))
    assert "Done" in out[0], out[0]


# ------------------------------------------------------------------------------------------- the table
@dataclass
class Case:
    id: str
    kind: str  # "decode": CLI decode / app /run; "trace": CLI trace / app /replay
    cli: list = field(default_factory=list)  # decode: extra CLI arguments (override the defaults); trace: []
    app: dict = field(default_factory=dict)  # decode: /run arguments (override the defaults)
    match: str | tuple = ""  # substring of the message; (cli, app) when the wording differs
    expect: str = "error"  # "error" | "drafter-error" (standard decoder still runs in the app) | "truncated" |
    # "lowered" (both run it at the longest length the context leaves after the prompt, and say so)
    file: str | None = None  # a key of the `files` fixture: model folder, drafter store or trace file


CASES = [
    # prompt
    Case("prompt-empty", "decode", ["--prompt", ""], {"prompt": ""}, "prompt is empty"),
    Case("prompt-whitespace", "decode", ["--prompt", " \n\t "], {"prompt": " \n\t "}, "prompt is empty"),
    Case("prompt-over-char-limit", "decode", ["--prompt", "x" * 20_001], {"prompt": "x" * 20_001}, "limit is 20000"),
    Case("prompt-longer-than-context", "decode", ["--prompt", LONG_PROMPT], {"prompt": LONG_PROMPT},
         "prompt was longer than the context", expect="truncated"),
    # generation length
    Case("gen-length-zero", "decode", ["--gen-length", "0"], {"gen_length": 0},
         ("--gen-length must be between 1", "gen_length must be between 1")),
    Case("gen-length-too-long", "decode", ["--gen-length", "5000"], {"gen_length": 5000},
         ("--gen-length must be between 1", "gen_length must be between 1")),
    Case("gen-length-over-context", "decode", ["--gen-length", "64"], {"gen_length": 64},
         ("--gen-length 64 lowered to", "generation length was lowered to"), expect="lowered"),
    Case("gen-length-not-a-number", "decode", ["--gen-length", "many"], {"gen_length": "many"},
         ("invalid int value", "generation length must be a whole number")),
    Case("gen-length-fraction", "decode", ["--gen-length", "1.5"], {"gen_length": 1.5},
         ("invalid int value", "generation length must be a whole number")),
    # budget
    Case("budget-zero", "decode", ["--drafter", "training-free", "--budget", "0"],
         {"drafter": "training-free", "budget": 0}, "budget"),
    Case("budget-too-big", "decode", ["--budget", "100000"], {"budget": 100_000}, "budget"),
    Case("budget-not-a-number", "decode", ["--budget", "lots"], {"budget": "lots"},
         ("--budget must be auto or a whole number between 1 and 256 nodes", "tree budget must be a whole number")),
    # tau
    Case("tau-zero", "decode", ["--mode", "threshold", "--threshold", "0"], {"mode": "threshold", "tau": 0},
         "threshold"),
    Case("tau-above-one", "decode", ["--threshold", "1.5"], {"tau": 1.5}, "threshold"),
    Case("tau-not-a-number", "decode", ["--threshold", "high"], {"tau": "high"},
         ("invalid float value", "tau (threshold) must be a number")),
    # temperature
    Case("temperature-negative", "decode", ["--temperature", "-1"], {"temperature": -1}, "temperature"),
    Case("temperature-too-high", "decode", ["--temperature", "11"], {"temperature": 11}, "temperature"),
    # (JSON has no NaN: an API caller can only send it as a string)
    Case("temperature-nan", "decode", ["--temperature", "nan"], {"temperature": "nan"},
         ("temperature must be between 0 and 10, got nan", "temperature must be a number, got 'nan'")),
    Case("temperature-not-a-number", "decode", ["--temperature", "warm"], {"temperature": "warm"},
         ("invalid float value", "temperature must be a number")),
    # seed
    Case("seed-negative", "decode", ["--seed", "-4"], {"seed": -4}, "seed"),
    Case("seed-too-big", "decode", ["--seed", str(2**70)], {"seed": 2**70}, "seed"),
    Case("seed-not-a-number", "decode", ["--seed", "lucky"], {"seed": "lucky"},
         ("invalid int value", "seed must be a whole number")),
    Case("seed-fraction", "decode", ["--seed", "1.5"], {"seed": 1.5},
         ("invalid int value", "seed must be a whole number")),
    # model
    Case("model-unknown", "decode", ["--model", "no-such-model"], {"model": "no-such-model"}, "unknown model"),
    Case("weights-missing", "decode", match="model.safetensors is missing", file="weights-missing"),
    Case("weights-truncated", "decode", match="corrupt or truncated", file="weights-truncated"),
    Case("weights-corrupt", "decode", match="corrupt or truncated", file="weights-corrupt"),
    Case("weights-nan", "decode", match="NaN or infinite", file="weights-nan"),
    Case("weights-incomplete", "decode", match="does not match config.json", file="weights-incomplete"),
    Case("weights-pickle-only", "decode", match="never unpickles", file="weights-pickle-only"),
    Case("model-needs-remote-code", "decode", match="trust_remote_code", file="remote-code"),
    # drafter: another window; broken or pickled files
    Case("drafter-other-window", "decode", ["--drafter", "spot"], {"drafter": "spot"},
         "handles windows up to 8 positions", expect="drafter-error", file="drafter-window"),
    Case("drafter-truncated", "decode", ["--drafter", "spot"], {"drafter": "spot"}, "corrupt or truncated",
         expect="drafter-error", file="drafter-truncated"),
    Case("drafter-config-not-json", "decode", ["--drafter", "spot"], {"drafter": "spot"}, "not valid JSON",
         expect="drafter-error", file="drafter-config-not-json"),
    Case("drafter-pickle-only", "decode", ["--drafter", "spot"], {"drafter": "spot"}, "no drafter at",
         expect="drafter-error", file="drafter-pickle-only"),
    # trace files
    Case("trace-not-json", "trace", match="not valid JSON", file="trace-not-json"),
    Case("trace-binary", "trace", match=("not valid JSON", "not JSON text"), file="trace-binary"),
    Case("trace-binary-zero", "trace", match=("not valid JSON", "not JSON text"), file="trace-binary-zero"),
    Case("trace-wrong-version", "trace", match="unsupported trace version 99", file="trace-wrong-version"),
    Case("trace-wrong-schema", "trace", match="missing the field 'counters'", file="trace-wrong-schema"),
    Case("trace-huge", "trace", match="the limit is", file="trace-huge"),
    Case("trace-inconsistent-counters", "trace", match="inconsistent counters", file="trace-inconsistent"),
]


def _matches(case: Case, where: str) -> str:
    if isinstance(case.match, tuple):
        return case.match[0] if where == "cli" else case.match[1]
    return case.match


@pytest.fixture
def setup_case(request, files, monkeypatch):
    """Point the drafter store at the case's drafter folder; clear the tripwire."""
    case: Case = request.param
    if files["marker"].exists():
        files["marker"].unlink()
    if case.file and case.file.startswith("drafter-"):
        import spotviz.drafter.store as store

        monkeypatch.setattr(store, "DRAFTER_DIR", files[case.file])
    yield case
    assert not files["marker"].exists(), "a pickle was opened or remote code ran"


def run_cli(capsys, argv) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's own errors (wrong types)
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("setup_case", CASES, ids=[c.id for c in CASES], indirect=True)
def test_bad_input_cli(setup_case, files, tiny_block_dir, capsys):
    case = setup_case
    if case.kind == "trace":
        argv = ["trace", str(files[case.file])]
    else:
        model = str(files[case.file]) if case.file and not case.file.startswith("drafter-") else str(tiny_block_dir)
        opts = {"--model": model, "--prompt": PROMPT, "--gen-length": str(GEN)}
        extra = list(case.cli)
        for i in range(0, len(extra) - 1):
            if extra[i] in opts and not extra[i + 1].startswith("--"):
                opts[extra[i]] = extra[i + 1]
                extra[i] = extra[i + 1] = None
        argv = ["decode"] + [x for kv in opts.items() for x in kv] + [x for x in extra if x is not None]
    code, out, err = run_cli(capsys, argv)
    if case.expect in ("truncated", "lowered"):
        assert code == 0, err
        assert ("prompt was longer than the context" if case.expect == "truncated" else _matches(case, "cli")) in err
        return
    assert code == 2, (code, err[-500:])
    assert out == "", out[:300]
    lines = [ln for ln in err.splitlines() if re.search(r"(^|: )error: ", ln)]
    assert len(lines) == 1, err[-1000:]
    assert err.rstrip("\n").splitlines()[-1] == lines[0], "the error must be the last line"
    assert _matches(case, "cli") in lines[0], lines[0]


@pytest.mark.parametrize("setup_case", CASES, ids=[c.id for c in CASES], indirect=True)
def test_bad_input_app(setup_case, files, client):
    case = setup_case
    if case.kind == "trace":
        out = client.predict(paths=[handle_file(str(files[case.file]))], api_name="/replay")
        status = text_of(out[0])
        assert "Cannot replay" in status and _matches(case, "app") in status, status
        assert_app_usable(client)
        return
    kw = dict(case.app)
    if case.file and not case.file.startswith("drafter-"):
        kw["model"] = str(files[case.file])
    out = client.predict(**run_args(**kw))  # an exception here (AppError) would be a crash of the handler
    status = text_of(out[0])
    if case.expect == "truncated":
        assert "Done" in status and "prompt was longer than the context" in status, status
        assert '"truncated":true' in str(out[1]).replace(" ", "")  # the run's meta in the explainer's timeline
    elif case.expect == "lowered":
        assert "Done" in status and _matches(case, "app") in status, status
    elif case.expect == "drafter-error":  # the drafter run fails with the message; the standard decoder runs
        assert "failed" in status and _matches(case, "app") in status and "Done" in status, status
        assert out[2] and all("-none-" in Path(str(f)).name for f in out[2]), out[2]  # the standard run's trace
    else:
        assert "Cannot run" in status and _matches(case, "app") in status, status
    assert_app_usable(client)


def test_the_table_covers_both_sides_of_every_case():
    assert len({c.id for c in CASES}) == len(CASES)
    for c in CASES:
        if c.kind == "decode" and not c.file:
            assert c.cli and c.app, c.id


# ----------------------------------------------------------------------------- values outside the menus
@pytest.mark.parametrize("kw, match", [
    ({"model": "GSAI-ML/LLaDA-8B-Instruct"}, "unknown model"),  # a published repo that is not in the menu
    ({"model": "/etc"}, "unknown model"),
    ({"model": "../assets/models/shakespeare-bd"}, "unknown model"),
    ({"model": None}, "unknown model"),
    ({"mode": "greedy"}, "mode must be"),
    ({"drafter": "../../evil"}, "unknown drafter"),
    ({"prompt": 42}, "prompt must be text"),
    ({"coupled": "yes"}, "coupled noise must be true or false"),
    ({"prune": 1.5}, "min_path_prob must be in [0, 1)"),
    ({"prune": "lots"}, "prune threshold must be a number"),
    ({"gen_length": None}, "generation length must be a whole number"),
    ({"budget": 3}, "tree budget must be auto or one of"),
    ({"temperature": True}, "temperature must be a number"),
    ({"tau": 10**400}, "tau (threshold) is out of range"),
], ids=lambda v: str(v)[:40])
def test_app_refuses_values_outside_the_menus_before_loading_anything(client, app, kw, match):
    calls = app[2]
    before = list(calls)
    out = client.predict(**run_args(**kw))
    status = text_of(out[0])
    assert "Cannot run" in status and match in status, status
    assert calls == before, "nothing may be loaded for a refused request"


def test_drafter_for_another_vocabulary_is_accepted_and_lossless(files, tiny_block_target, monkeypatch, capsys,
                                                               tiny_block_dir):
    """The drafter reads no token ids (features of the target's distributions only), so a drafter made for another
    vocabulary transfers: the run is exactly the standard decoder's."""
    import spotviz.drafter.store as store
    from spotviz.engine import decode
    from spotviz.samplers.config import DecodeConfig

    monkeypatch.setattr(store, "DRAFTER_DIR", files["drafter-other-vocab"])
    cfg = dict(gen_length=24, seed=4, temperature=1.0, budget=8)
    spot = decode(tiny_block_target, PROMPT, DecodeConfig(drafter="spot", **cfg))
    assert spot.tokens == decode(tiny_block_target, PROMPT, DecodeConfig(**cfg)).tokens
    code, out, err = run_cli(capsys, ["decode", "--model", str(tiny_block_dir), "--prompt", PROMPT, "--drafter",
                                      "spot", "--gen-length", "24", "--seed", "4", "--temperature", "1", "--json"])
    assert code == 0 and json.loads(out)["tokens"] == spot.tokens


def test_cli_trace_command_reads_a_good_trace(files, capsys):
    code, out, _ = run_cli(capsys, ["trace", str(files["trace-good"]), "--json"])
    assert code == 0 and json.loads(out)["target_passes"] == json.loads(files["trace-good"].read_text())[
        "counters"]["target_passes"]


# -------------------------------------------------------------------------------------- untrusted code
def test_no_pickle_loading_and_remote_code_only_behind_the_allow_list():
    """Source check: nothing in the library unpickles; trust_remote_code=True appears once, behind the allow-list."""
    root = Path(__file__).resolve().parent.parent / "spotviz"
    hits = {}
    for p in root.rglob("*.py"):
        src = p.read_text()
        for pat in (r"pickle\.loads?\(", r"torch\.load\(", r"trust_remote_code\s*=\s*True", r"allow_pickle\s*=\s*True"):
            for m in re.finditer(pat, src):
                line = src[:m.start()].count("\n") + 1
                hits.setdefault(pat, []).append((p.relative_to(root).as_posix(), src.splitlines()[line - 1].strip()))
    assert not hits.get(r"pickle\.loads?\(") and not hits.get(r"allow_pickle\s*=\s*True")
    # the only torch.load: resuming our own training checkpoint, tensors only
    assert all(f == "training/target.py" and "weights_only=True" in ln
               for f, ln in hits.get(r"torch\.load\(", [])), hits
    remote = [h for h in hits.get(r"trust_remote_code\s*=\s*True", []) if not h[1].startswith("#")]
    assert [f for f, _ in remote] == ["targets/hub.py"], remote
    from spotviz.targets import hub, published

    src = (root / "targets" / "hub.py").read_text()
    fn = src[src.index("def load_remote_code_model"):]
    fn = fn[:fn.index("\ndef ", 10)]
    assert "trust_remote_code=True" in fn and fn.index("if not remote_code_allowed(repo)") < fn.index(
        "trust_remote_code=True")
    # the allow-list is explicit: published LLaDA repositories only, never a local folder
    assert hub.REMOTE_CODE_ALLOWED == {"GSAI-ML/LLaDA-8B-Instruct", "GSAI-ML/LLaDA-8B-Base"}
    assert hub.REMOTE_CODE_ALLOWED <= {s["repo"] for s in published.PUBLISHED.values()}
    assert not hub.remote_code_allowed(None) and not hub.remote_code_allowed("/tmp/GSAI-ML/LLaDA-8B-Base")


def test_hostile_labels_come_back_escaped_or_as_data(client, tmp_path):
    """A replayed trace is data: the status (HTML) escapes the file name; the explainer's timeline carries token
    labels, model and drafter names and the prompt as JSON strings, unchanged, for the browser to show as text
    (the browser side: the browser test at the end of this file and test_browser.py)."""
    src, evil = _evil_trace_file(tmp_path)
    path = tmp_path / "<img src=x onerror=alert(1)>.json"  # the file name is shown in messages too
    src.rename(path)
    out = client.predict(paths=[handle_file(str(path))], api_name="/replay")
    assert "Replaying" in text_of(out[0]), out[0]
    assert "<img" not in str(out[0]) and "<script" not in str(out[0])
    lines = [json.loads(line) for line in str(out[1]).splitlines() if line.strip()]  # every line is JSON data
    strings = set()

    def walk(v):
        if isinstance(v, str):
            strings.add(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(lines)
    blob = " ".join(strings)
    for label in evil.values():
        assert label in blob, label  # carried as data (not half-escaped, not turned into markup)
    bad = tmp_path / "<script>alert(1)<\\script>.json"
    bad.write_text("not a trace")
    status = client.predict(paths=[handle_file(str(bad))], api_name="/replay")[0]
    assert "Cannot replay" in status and "<script" not in status, status  # (Gradio also strips < > from names)


def test_upload_size_and_session_limits_are_set(app):
    from spotviz.trace import MAX_TRACE_BYTES
    from spotviz.ui.app import MAX_QUEUE, MAX_UPLOAD_BYTES, STATE_SESSIONS

    demo = app[0]
    assert demo.max_file_size == MAX_UPLOAD_BYTES == 2 * MAX_TRACE_BYTES
    assert demo.state_session_capacity == STATE_SESSIONS
    assert demo._queue.max_size == MAX_QUEUE


# ----------------------------------------------------------------------------------------------- faults
def _wait_updates(job, n: int, timeout: float = 60) -> None:
    t0 = time.time()
    while len(job.outputs()) < n:
        assert time.time() - t0 < timeout, "the run did not stream"
        time.sleep(0.05)


def _assert_decoding_stopped(slow: SlowTarget, within: float = 3.0) -> None:
    """The slowed model is no longer called (its passes take SLOW_DELAY; a live run would add several)."""
    time.sleep(within)
    n = slow.calls
    time.sleep(4 * SLOW_DELAY + 0.5)
    assert slow.calls == n, "decoding went on after the run was cancelled"


def _quick_run_is_served_at_once(url: str, limit: float = 20.0) -> None:
    """(limit: a slowed run left running would hold the worker about 35 s more; a quick run on a machine busy with
    other work took 10.1 s)"""
    other = Client(url, verbose=False)
    try:
        t0 = time.time()
        out = other.predict(**run_args(gen_length=4, seed=9))
        took = time.time() - t0
    finally:
        other.close()
    assert "Done" in out[0], out[0]
    assert took < limit, f"the next user waited {took:.1f} s: the worker was not freed"


def test_cancel_mid_run_frees_the_worker(app, client, targets):
    slow = targets[SLOW]
    job = client.submit(**run_args(model=SLOW, gen_length=SLOW_GEN))
    _wait_updates(job, 3)
    assert job.cancel()
    _assert_decoding_stopped(slow)
    _quick_run_is_served_at_once(app[1])


def test_stop_button_cancels_the_run_like_cancel(app, client):
    """The browser's Stop sends the same /cancel request as job.cancel() above (Gradio's `cancels=[run]` is
    carried out by the client); the /stop endpoint itself only answers the status message."""
    deps = app[0].get_config_file()["dependencies"]
    run_id = next(d["id"] for d in deps if d.get("api_name") == "run")
    stop_targets = next(d["targets"] for d in deps if d.get("api_name") == "stop")
    assert any(run_id in (d.get("cancels") or []) and d["targets"] == stop_targets for d in deps)
    assert "Stopped" in text_of(client.predict(api_name="/stop"))


def test_client_that_disconnects_mid_stream_does_not_stall_the_queue(app, targets):
    """A raw client joins the queue, reads a few streamed messages, and drops the connection."""
    import httpx

    demo, url, _ = app
    slow = targets[SLOW]
    fn_index = next(d["id"] for d in demo.get_config_file()["dependencies"] if d.get("api_name") == "run")
    session = uuid.uuid4().hex[:11]
    data = [PROMPT, SLOW, "exact", 0.9, 0.0, 3, SLOW_GEN, "none", 8, True, 0.0, False]  # ui.handlers.CONTROLS
    base = url.rstrip("/") + "/gradio_api"
    r = httpx.post(base + "/queue/join", json={"data": data, "fn_index": fn_index, "session_hash": session},
                   timeout=30)
    assert r.status_code == 200, r.text
    generating = 0
    with httpx.Client(timeout=60) as hc, hc.stream("GET", base + "/queue/data",
                                                    params={"session_hash": session}) as stream:
        for line in stream.iter_lines():
            if '"process_generating"' in line:
                generating += 1
                if generating >= 3:
                    break  # leaving the block closes the connection mid-stream
    assert generating >= 3
    _assert_decoding_stopped(slow)
    _quick_run_is_served_at_once(url)


def test_exception_inside_decoding_is_shown_and_the_next_run_works(client, targets):
    faulty = targets[FAULTY]
    faulty.calls = 0
    out = client.predict(**run_args(model=FAULTY, gen_length=16))
    status = text_of(out[0])
    assert "Cannot run" in status and "RuntimeError: injected fault" in status, status
    assert faulty.calls >= 3  # it failed in the middle of the run, not before
    assert_app_usable(client)
    # with a drafter: the drafter run fails, then the standard decoder (same model) fails too
    out = client.predict(**run_args(model=FAULTY, gen_length=16, drafter="training-free"))
    status = text_of(out[0])
    assert "injected fault" in status and "Cannot run" in status and not out[2], status
    assert_app_usable(client)


def test_default_model_that_fails_to_load_falls_back_to_the_embedded_default(tiny_block_target, monkeypatch,
                                                                             tmp_path, capsys):
    """$SPOTVIZ_MODEL names a folder that does not load: the app starts on the embedded default (here the
    micro model injected under that name) and says why; a run with the page's default model works."""
    from spotviz.registry import DEFAULT_MODEL, load_target
    from spotviz.ui.app import build_app, launch

    monkeypatch.setenv("SPOTVIZ_MODEL", str(tmp_path / "no-such-model"))

    def loader(name):
        return tiny_block_target if name == DEFAULT_MODEL else load_target(name, device="cpu")

    demo = build_app(loader=loader, trace_dir=tmp_path, gpu=False)
    config = demo.get_config_file()
    dropdown = next(c for c in config["components"] if c.get("props", {}).get("elem_id") == "sv-model")
    assert dropdown["props"]["value"] == DEFAULT_MODEL
    banner = next(c for c in config["components"] if c.get("props", {}).get("elem_id") == "sv-model-banner")
    text = text_of(banner["props"]["value"])
    assert "is not available" in text and f"Using {DEFAULT_MODEL} instead" in text
    assert "model folder" in text and "does not exist" in text  # (the folder's own message, not "unknown model")
    # the terminal says so too (a deployment of one's own model looked fine there)
    err = capsys.readouterr().err
    assert err.startswith("warning: The model") and "no-such-model" in err and f"serves {DEFAULT_MODEL} instead" in err
    _, url, _ = launch(demo, server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True)
    try:
        c = Client(url, verbose=False)
        out = c.predict(prompt=PROMPT, gen_length=8, drafter="none", api_name="/run")  # the page's default model
        c.close()
        assert "Done" in out[0], out[0]
    finally:
        demo.close()


def test_the_app_runs_its_model_with_the_drafters_it_was_given(tiny_block_dir, tiny_block_target, monkeypatch,
                                                                 tmp_path):
    """$SPOTVIZ_DRAFTER_DIR: the drafters trained for $SPOTVIZ_MODEL serve its runs, and a standard run needs none;
    a folder that is none stops the app at its start, in one line (every Run would have failed), and so do drafters
    named without the model they are for (they went unused)."""
    import subprocess
    import sys

    import torch

    from spotviz.drafter.model import DrafterConfig, SpotDrafter
    from spotviz.errors import DecodeError
    from spotviz.registry import load_target
    from spotviz.ui.app import build_app, launch

    mine = tmp_path / "my-drafters"
    torch.manual_seed(5)
    SpotDrafter(DrafterConfig()).save(mine / "spot")
    (mine / "calibrated.json").write_text(json.dumps({"rank_probs": [[0.6, 0.2, 0.1]], "set_params": [[8.0, 0.0]]}))
    monkeypatch.setenv("SPOTVIZ_MODEL", str(tiny_block_dir))
    monkeypatch.setenv("SPOTVIZ_DRAFTER_DIR", str(mine))
    demo = build_app(loader=lambda name: load_target(name, device="cpu"), trace_dir=tmp_path, gpu=False)
    banner = next(c for c in demo.get_config_file()["components"]
                  if c.get("props", {}).get("elem_id") == "sv-model-banner")
    assert f"drafters from {mine}" in text_of(banner["props"]["value"])  # (whose drafters its runs use)
    _, url, _ = launch(demo, server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True)
    try:
        c = Client(url, verbose=False)
        outs = [c.predict(prompt=PROMPT, model=str(tiny_block_dir), gen_length=8, drafter=d, budget=4,
                          api_name="/run") for d in ("spot", "none")]
        c.close()
    finally:
        demo.close()
    assert all("Done" in text_of(out[0]) for out in outs), [text_of(out[0]) for out in outs]
    missing = tmp_path / "none"
    monkeypatch.setenv("SPOTVIZ_DRAFTER_DIR", str(missing))
    with pytest.raises(DecodeError, match="is not a folder of trained drafters"):
        build_app(loader=lambda name: load_target(name, device="cpu"), trace_dir=tmp_path, gpu=False)
    monkeypatch.setenv("SPOTVIZ_DRAFTER_DIR", str(mine))  # drafters, but for which model? (they went unused)
    monkeypatch.delenv("SPOTVIZ_MODEL")
    with pytest.raises(DecodeError, match="needs SPOTVIZ_MODEL, the model they were trained for"):
        build_app(loader=lambda name: load_target(name, device="cpu"), trace_dir=tmp_path, gpu=False)
    monkeypatch.setenv("SPOTVIZ_MODEL", str(tiny_block_dir))
    monkeypatch.setenv("SPOTVIZ_DRAFTER_DIR", str(missing))
    env = {**os.environ, "SPOTVIZ_DRAFTER_DIR": str(missing), "GRADIO_SERVER_PORT": str(free_port())}
    root = Path(__file__).resolve().parent.parent
    run = subprocess.run([sys.executable, "app.py"], cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stderr.strip().splitlines() == [
        f"error: SPOTVIZ_DRAFTER_DIR={str(missing)!r} is not a folder of trained drafters (train-drafter --out DIR "
        "makes one)"], run.stderr


def test_injected_default_that_fails_falls_back_to_the_next_model(tiny_block_target, tmp_path):
    from spotviz.registry import ModelLoadError
    from spotviz.ui.app import build_app

    def loader(name):
        if name == TINY:
            return tiny_block_target
        raise ModelLoadError(f"model {name!r} is broken in this test")

    demo = build_app(loader=loader, models=["broken", TINY], default_model="broken", trace_dir=tmp_path, gpu=False)
    props = {c["props"].get("elem_id"): c["props"] for c in demo.get_config_file()["components"] if "props" in c}
    assert props["sv-model"]["value"] == TINY
    banner = text_of(props["sv-model-banner"]["value"])
    assert "is broken in this test" in banner and f"Using {TINY} instead" in banner


def test_concurrent_runs_in_one_process_do_not_mix(client, app, tiny_block_target):
    """Two sessions at once on the same target (the app's concurrency is 1 on CPU; the load test covers 16+)."""
    from spotviz.engine import decode
    from spotviz.samplers.config import DecodeConfig
    from spotviz.trace import Trace

    results = {}

    def go(seed):
        c = Client(app[1], verbose=False)
        try:
            out = c.predict(**run_args(seed=seed, temperature=1.0, gen_length=16))
            results[seed] = [Trace.load(f) for f in out[2] if f.endswith(".json")]
        finally:
            c.close()

    threads = [threading.Thread(target=go, args=(s,)) for s in (11, 12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for seed, traces in results.items():
        want = decode(tiny_block_target, PROMPT, DecodeConfig(seed=seed, temperature=1.0, gen_length=16))
        assert [t.meta.seed for t in traces] == [seed] and traces[0].tokens == want.tokens
    assert len(results) == 2


# ---------------------------------------------------------------------------------------------- browser
def _evil_trace_file(tmp_path) -> tuple[Path, dict]:
    import test_views  # tests/ is on sys.path

    evil = {"img": '<img src=x onerror="window.__xss=1">', "script": "<script>window.__xss=2</script>",
            "bold": "<b onmouseover=window.__xss=3>spot</b>"}
    trace = test_views._tree_trace(model=evil["img"], prompt=evil["script"] + "\n", drafter=evil["bold"])
    trace.token_text["20"] = evil["script"]
    trace.token_text["21"] = evil["img"]
    path = tmp_path / "evil.json"
    trace.save(path)
    return path, evil


@pytest.mark.browser
@pytest.mark.slow
def test_hostile_labels_render_as_text_in_every_view_in_the_browser(app, tmp_path):
    """Token labels, the model and drafter names and the prompt of an uploaded trace show as text in the
    explainer (canvas, counters, commit order, draft tree, speed-up), at every pass; no element or script from
    the trace reaches the page. (test_browser.py checks the canvas and the tree's token labels.)"""
    chromium = os.environ.get("SPOTVIZ_CHROMIUM", "/usr/bin/chromium")
    if not (shutil.which(chromium) or Path(chromium).is_file()):
        pytest.skip(f"no Chromium at {chromium}")
    sync_api = pytest.importorskip("playwright.sync_api")
    path, evil = _evil_trace_file(tmp_path)
    explainer = "#sv-explainer .sve"
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--headless", "--no-sandbox", "--disable-gpu",
                                                                    "--disable-background-networking"])
        try:
            pg = browser.new_page(viewport={"width": 1400, "height": 1600})
            errors = []
            pg.on("pageerror", lambda e: errors.append(str(e)))
            pg.on("dialog", lambda d: (errors.append("dialog: " + d.message), d.dismiss()))
            pg.goto(app[1])
            pg.wait_for_selector("#sv-run", timeout=60_000)
            pg.locator("#sv-replay").get_by_text("Examples, replay and share").click()
            pg.set_input_files("#sv-upload input[type=file]", [str(path)])
            pg.wait_for_function("() => document.querySelector('#sv-status').innerText.includes('Replaying')",
                                 timeout=30_000)
            pg.wait_for_function(f"() => +document.querySelector('{explainer}').dataset.npasses > 0",
                                 timeout=30_000)
            texts = []
            n = int(pg.evaluate(f"() => document.querySelector('{explainer}').dataset.npasses"))
            for k in range(n + 1):  # every pass, and the initial state
                pg.evaluate(f"""() => {{ const s = document.querySelector('{explainer} .sve-scrub');
                    if (s) {{ s.value = '{k}'; s.dispatchEvent(new Event('input', {{bubbles: true}})); }} }}""")
                pg.wait_for_timeout(150)
                texts.append(pg.evaluate(f"() => document.querySelector('{explainer}').textContent"))
            injected = pg.evaluate("""() => document.querySelectorAll(
                'img[src="x"], [onerror], [onmouseover], b[onmouseover]').length""")
            xss = pg.evaluate("() => window.__xss")
        finally:
            browser.close()
    assert xss is None and injected == 0 and not errors, (xss, injected, errors)
    seen = " ".join(texts)
    assert evil["script"] in seen and evil["img"] in seen, "token labels and the prompt show as text"
    assert evil["bold"] in seen, "the drafter's name shows as text"

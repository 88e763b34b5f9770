"""The Gradio app through its API (gradio_client), on a local port, with the tiny model injected."""
from __future__ import annotations

import json
import re
import shutil

import pytest

pytest.importorskip("gradio_client")

from gradio_client import Client, handle_file  # noqa: E402

from helpers import free_port  # noqa: E402

TINY = "tiny-block"
GEN = 24


@pytest.fixture(scope="module")
def example_dir(tmp_path_factory, tiny_block_target, tiny_prompt):
    """A trace folder with one example made by the engine (index.json + two traces)."""
    from spotviz.engine import decode
    from spotviz.samplers.config import DecodeConfig

    d = tmp_path_factory.mktemp("traces")
    decode(tiny_block_target, tiny_prompt, DecodeConfig(gen_length=16, seed=3)).save(d / "ex-standard.json")
    (d / "index.json").write_text(json.dumps({"examples": [{"title": "tiny example", "main": "ex-standard.json",
                                                            "baseline": None}]}))
    return d


@pytest.fixture(scope="module")
def app(tiny_block_target, example_dir):
    from spotviz.registry import ModelLoadError
    from spotviz.ui.app import build_app, launch

    def loader(name):
        if name == TINY:
            return tiny_block_target
        raise ModelLoadError(f"model {name!r} is not available in this test")

    demo = build_app(loader=loader, models=[TINY, "broken-model"], default_model=TINY, trace_dir=example_dir,
                     gpu=False)
    _, url, _ = launch(demo, server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True,
                       quiet=True)
    yield demo, url
    demo.close()


@pytest.fixture(scope="module")
def client(app):
    return Client(app[1], verbose=False)


def _run_args(prompt, drafter, model=TINY, gen=GEN, seed=1, mode="exact", tau=0.9, temperature=0.0, budget=8,
              **extra):
    return dict(prompt=prompt, model=model, mode=mode, tau=tau, temperature=temperature, seed=seed, gen_length=gen,
                drafter=drafter, budget=budget, coupled=True, api_name="/run", **extra)


def _timeline(text: str) -> list[dict]:
    return [json.loads(x) for x in text.splitlines() if x]


def test_streamed_run_matches_direct_engine_run(client, tiny_block_target, tiny_prompt):
    from spotviz.engine import decode
    from spotviz.samplers.config import DecodeConfig
    from spotviz.trace import Trace

    drafter = "training-free"
    job = client.submit(**_run_args(tiny_prompt, drafter))
    updates = list(job)  # every streamed update: (status, explainer timeline, files)
    job.result()
    assert len(updates) >= 3, "the run endpoint should stream several updates"
    assert "decoding" in updates[0][0].lower()
    # the timeline only grows while the run streams (the browser receives appends, never a redraw)
    texts = [u[1] for u in updates if isinstance(u[1], str) and u[1]]
    assert all(b.startswith(a) for a, b in zip(texts, texts[1:]))
    final = updates[-1]
    assert "Done" in final[0], final[0]
    files = final[2]
    assert files and len(files) == 3  # the two traces and the run's page of Plotly figures
    traces = [Trace.load(f) for f in files if f.endswith(".json")]
    page = next(open(f, encoding="utf-8").read() for f in files if f.endswith(".html"))
    assert 'class="sve"' in page and 'id="sv-timeline"' in page and "identical to the standard" in page
    main = next(t for t in traces if t.meta.drafter == drafter)
    direct = decode(tiny_block_target, tiny_prompt, DecodeConfig(gen_length=GEN, seed=1, drafter=drafter, budget=8))
    assert main.tokens == direct.tokens
    for f in ("target_passes", "commits", "generated_tokens", "drafted_nodes", "accepted_drafts",
              "mean_accepted_length", "acceptance_per_depth"):
        assert getattr(main.counters, f) == getattr(direct.counters, f), f
    lines = _timeline(final[1])
    passes = [x for x in lines if x["t"] == "pass" and x["r"] == "main"]
    assert [len(p["c"]) for p in passes] == [len(p.commits) for p in direct.passes]
    base = next(t for t in traces if t.meta.drafter == "none")
    assert base.tokens == main.tokens and "identical" in final[0]
    s = lines[-2]
    assert s["t"] == "sum" and s["identical"] is True and s["base_passes"] == base.counters.target_passes


def test_errors_are_shown_and_the_app_stays_usable(client, tiny_prompt):
    out = client.predict(**_run_args("   ", "none"))
    assert "Cannot run" in out[0] and "prompt is empty" in out[0]
    out = client.predict(**_run_args(tiny_prompt, "none", model="broken-model"))
    assert "Cannot run" in out[0] and "not available in this test" in out[0]
    out = client.predict(**_run_args(tiny_prompt, "none", gen=8))  # still works afterwards
    assert "Done" in out[0]


def test_failing_drafter_still_runs_the_standard_decoder(client, tiny_prompt, monkeypatch):
    # a drafter that breaks (here: its weights cannot be read) must not take the run down: the app runs in this
    # process, so the failure is injected where the speculative sampler loads its proposer
    import spotviz.samplers.spot as spot

    def broken(*args, **kwargs):
        raise RuntimeError("drafter weights unreadable (injected by the test)")

    monkeypatch.setattr(spot, "load_proposer", broken)
    out = client.predict(**_run_args(tiny_prompt, "spot", gen=8))
    status = out[0]
    assert "failed" in status and "Done" in status
    assert any(x["t"] == "run" and x["r"] == "base" for x in _timeline(out[1]))  # the standard decoder ran


def test_replay_upload_sets_the_controls_and_bad_files_get_plain_messages(client, example_dir, tmp_path, tiny_prompt):
    out = client.predict(paths=[handle_file(str(example_dir / "ex-standard.json"))], api_name="/replay")
    assert "Replaying" in out[0]
    lines = _timeline(out[1])
    assert [x["t"] for x in lines[:2]] == ["session", "run"] and any(x["t"] == "pass" for x in lines)
    # outputs: status, explainer, files (the shown-run state is not part of the API), then the controls of /run
    prompt, model, mode, tau, temperature, seed, gen_length, drafter = out[3:11]
    gen_length = gen_length["value"] if isinstance(gen_length, dict) else gen_length
    prompt = prompt["value"] if isinstance(prompt, dict) else prompt  # (with its note: the model's)
    assert (prompt, seed, gen_length, drafter, mode) == (tiny_prompt, 3, 16, "none", "exact")
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something-else"}')
    out = client.predict(paths=[handle_file(str(bad))], api_name="/replay")
    assert "Cannot replay bad.json" in out[0] and "not a spotviz trace" in out[0]
    trunc = tmp_path / "trunc.json"
    shutil.copy(example_dir / "ex-standard.json", trunc)
    trunc.write_text(trunc.read_text()[:200])
    out = client.predict(paths=[handle_file(str(trunc))], api_name="/replay")
    assert "not valid JSON" in out[0]
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(bytes(range(128, 256)) * 4)
    out = client.predict(paths=[handle_file(str(garbage))], api_name="/replay")
    assert "Cannot replay garbage.json" in out[0] and "not a spotviz trace" in out[0] and "codec" not in out[0]


def test_example_trace_loads(client):
    out = client.predict(title="tiny example", api_name="/example")
    assert "Recorded example" in out[0]
    lines = _timeline(out[1])
    assert lines[0]["t"] == "session" and lines[0]["play"] is True
    assert sum(x["t"] == "pass" for x in lines) > 1


def test_length_slider_is_capped_at_the_context_minus_the_prompt(app, tiny_block_target, tiny_prompt):
    from spotviz.ui.app import Handlers

    demo = app[0]
    slider = next(c for c in demo.get_config_file()["components"]
                  if c.get("props", {}).get("elem_id") == "sv-gen-length")
    n_prompt = len(tiny_block_target.encode("ROMEO.\n"))
    assert slider["props"]["maximum"] <= tiny_block_target.info.max_length - n_prompt
    handlers = next(fn for fn in demo.fns.values() if getattr(fn.fn, "__name__", "") == "cap_length").fn
    assert isinstance(handlers.__self__, Handlers)
    long_prompt = "ROMEO.\nO Romeo, wherefore art thou?"
    upd = handlers(long_prompt, TINY, 48)
    room = tiny_block_target.info.max_length - len(tiny_block_target.encode(long_prompt))
    assert 8 <= room < 48 and upd["maximum"] == room - room % 8 and upd["value"] == upd["maximum"]


def test_app_starts_without_a_model(example_dir):
    """The shipped weights may be missing: the app still builds and says so."""
    from spotviz.registry import ModelLoadError
    from spotviz.ui.app import build_app

    def loader(name):
        raise ModelLoadError(f"embedded model {name!r} is missing")

    demo = build_app(loader=loader, models=["shakespeare-bd"], trace_dir=example_dir, gpu=False)
    config = str(demo.get_config_file())
    assert "is not available" in config and "is missing" in config


def test_a_race_decodes_every_drafter_on_one_prompt(client, tiny_prompt):
    """One Run with race: SPOT (or, without its weights, the next drafter), training-free, calibrated and the
    standard decoder on the same prompt and seed, each a lane of the one timeline, all with the same text."""
    from spotviz.trace import Trace

    out = client.predict(**_run_args(tiny_prompt, "none", gen=16, race=True))
    assert "Done" in out[0], out[0]
    lines = _timeline(out[1])
    lanes = [r for r, _ in lines[0]["runs"]]
    assert lanes[-1] == "base" and lanes[0] == "main" and {"training-free", "calibrated"} <= set(lanes) | {
        next(x["meta"]["drafter"] for x in lines if x["t"] == "run" and x["r"] == "main")}
    ran = {x["r"] for x in lines if x["t"] == "run"}
    traces = [Trace.load(f) for f in out[2] if f.endswith(".json")]
    assert len(traces) == len(ran) >= 3 and len({tuple(t.tokens) for t in traces}) == 1  # lossless, every lane
    s = next(x for x in lines if x["t"] == "sum")
    assert s["kpis"][1]["big"].startswith("race: ") and len(s["race"]) == len(ran)
    assert "identical" in out[0] and "A race gives" not in out[0]  # (a fixed budget: nothing to add)
    assert {t.meta.budget for t in traces if t.meta.drafter != "none"} == {8}
    # budget auto would size each lane's trees by that lane's own timings: a race runs at one budget, and says so
    auto = client.predict(**_run_args(tiny_prompt, "none", gen=16, race=True, budget="auto"))
    assert "Done" in auto[0] and "A race gives every drafter tree budget 16" in auto[0], auto[0]
    assert "target passes by " in auto[0]  # (the lane the first count belongs to, the others named after it)
    ran = [Trace.load(f) for f in auto[2] if f.endswith(".json")]
    assert {(t.meta.budget, t.meta.budget_auto) for t in ran if t.meta.drafter != "none"} == {(16, False)}
    assert 'class="sv-act"' not in auto[0]  # (no larger trees to offer)


def test_a_prompt_longer_than_the_context_runs_and_says_so(app, client, tiny_block_target):
    from spotviz.ui.app import Handlers

    demo = app[0]
    cap = next(fn for fn in demo.fns.values() if getattr(fn.fn, "__name__", "") == "cap_length").fn
    long_prompt = "ROMEO.\n" + "O Romeo, wherefore art thou Romeo? " * 150  # 5,000+ characters
    upd = cap(long_prompt, TINY, 24)
    assert upd["maximum"] >= 8 and upd["value"] <= upd["maximum"]  # never below the slider's minimum (HTTP 500)
    assert isinstance(cap.__self__, Handlers)
    out = client.predict(**_run_args(long_prompt, "none", gen=16))
    assert "Done" in out[0] and "beginning was dropped" in out[0], out[0]
    run = next(x for x in _timeline(out[1]) if x["t"] == "run")
    assert run["meta"]["prompt"].startswith("…") and len(run["meta"]["prompt"]) < 2000  # the kept tokens only


def test_switching_the_model_updates_banner_prompt_and_menu(app):
    from spotviz.ui.inputs import CODE_PROMPTS, PROMPT_EXAMPLES

    demo = app[0]
    on_model = next(fn for fn in demo.fns.values() if getattr(fn.fn, "__name__", "") == "on_model").fn
    banner, prompt, menu = on_model("broken-model", PROMPT_EXAMPLES[0])
    assert "not available" in banner and "broken-model" in banner
    banner, prompt, menu = on_model(TINY, "my own prompt")
    assert "Model ready" in banner and TINY in banner
    assert "value" not in prompt  # the visitor's own prompt stays (no value sent)
    # the note under the prompt box follows the model (it went on describing math-bd's word problems)
    assert on_model("python-bd", "my own prompt")[1]["info"].startswith("python-bd continues Python code")
    assert on_model(TINY, "my own prompt")[1]["info"] == ""
    ctx = on_model.__self__.ctx
    ctx.models.append("python-code")
    try:
        _, prompt, menu = on_model("python-code", PROMPT_EXAMPLES[0])
        assert prompt["value"] == CODE_PROMPTS[0] and menu["choices"] == CODE_PROMPTS
    finally:
        ctx.models.remove("python-code")


def test_a_number_typed_outside_a_sliders_range_is_put_back_with_a_note(app):
    """Temperature 5 typed in its box: the page ran T = 2 while the box still said 5. Let go, it becomes 2 and the
    note says why; in range, the usual note comes back and no value is sent (a drag is never moved back)."""
    from spotviz.ui.inputs import TEMPERATURE_INFO, TEMPERATURE_MAX

    h = next(fn for fn in app[0].fns.values() if getattr(fn.fn, "__name__", "") == "on_model").fn.__self__
    up = h.typed_in_range(5, 0.0, TEMPERATURE_MAX, TEMPERATURE_INFO)
    assert up["value"] == 2.0 and up["info"] == "lowered to 2, the most it offers (you chose 5)"
    up = h.typed_in_range(-1, 0.0, TEMPERATURE_MAX, TEMPERATURE_INFO)
    assert up["value"] == 0.0 and up["info"] == "raised to 0, the least it offers (you chose -1)"
    assert h.typed_in_range(0.7, 0.0, TEMPERATURE_MAX, TEMPERATURE_INFO) == {"__type__": "update", "info": TEMPERATURE_INFO}
    for junk in ("5", None, True, float("nan")):
        assert h.typed_in_range(junk, 0.0, TEMPERATURE_MAX, TEMPERATURE_INFO) == {"__type__": "update"}  # (skip)


def test_an_example_of_another_model_brings_its_banner_and_prompt_menu(app, example_dir):
    """Showing a recorded example switches the model menu; the model's banner and its prompts to try follow (they
    stayed the previous model's, so a prompt picked next went to the wrong kind of model). Showing it loads no
    model: a model not loaded yet gets a banner that says its first Run loads it."""
    from dataclasses import replace

    from spotviz.ui.examples import list_examples, load_example
    from spotviz.ui.handlers import controls_of
    from spotviz.ui.inputs import prompts_for

    demo = app[0]
    h = next(fn for fn in demo.fns.values() if getattr(fn.fn, "__name__", "") == "on_model").fn.__self__
    main, _ = load_example(list_examples(example_dir)[0])
    c = controls_of(replace(main.meta, model="broken-model"), h.ctx)
    assert "loaded by its first Run" in c["model_banner"] and "broken-model" in c["model_banner"]
    assert not h.ctx.store.loaded("broken-model")
    assert c["prompt_pick"]["choices"] == prompts_for("broken-model") and c["prompt_pick"]["value"] is None
    assert "Model ready" in controls_of(replace(main.meta, model=TINY), h.ctx)["model_banner"]
    # a fixed budget taken from the run shown says so beside the menu (it stays for the visitor's later runs)
    b = controls_of(replace(main.meta, budget_auto=False, budget=8), h.ctx)["budget"]
    assert b["value"] == 8 and b["info"].startswith("8: as the run shown was recorded")
    b = controls_of(replace(main.meta, budget_auto=True), h.ctx)["budget"]
    assert b["value"] == "auto" and b["info"].startswith("auto: sized per pass")
    # tau comes from a threshold run; an exact run's (exact mode never reads it) leaves the slider's
    t = controls_of(replace(main.meta, mode="threshold", threshold=0.95), h.ctx)["tau"]
    assert (t["value"], t["visible"]) == (0.95, True)
    t = controls_of(replace(main.meta, mode="exact", threshold=0.9), h.ctx)["tau"]
    assert "value" not in t and t["visible"] is False


def test_showing_a_replay_loads_no_model_and_a_load_holds_up_only_its_own_model(tiny_block_target, example_dir):
    """A replay of a model not loaded yet loads nothing, not even for the length slider (its cap is the app's
    limit until a Run loads the model); a model that loads for minutes does not hold up another model's load."""
    import threading
    from dataclasses import replace

    from spotviz.ui.examples import list_examples, load_example
    from spotviz.ui.files import TraceFiles
    from spotviz.ui.handlers import AppContext, controls_of
    from spotviz.ui.runner import ModelStore

    calls, gate, started = [], threading.Event(), threading.Event()

    def loader(name):
        calls.append(name)
        if name == "slow":
            started.set()
            assert gate.wait(30)
        return tiny_block_target

    store = ModelStore(loader)
    ctx = AppContext(store=store, store_key=0, models=[TINY, "slow", "other", "math-bd"], default_model=TINY,
                     budgets=[8], gen_limit=256, examples=[], files=TraceFiles())
    main, _ = load_example(list_examples(example_dir)[0])
    c = controls_of(replace(main.meta, model="other"), ctx)
    assert calls == [] and not store.loaded("other") and c["gen_length"]["maximum"] == 256
    assert "loaded by its first Run" in c["model_banner"]
    # an embedded model (a second to load, a short context) is loaded for its cap: the slider never offers a length
    # its context cannot hold
    c = controls_of(replace(main.meta, model="math-bd", prompt="ROMEO.\n"), ctx)
    assert calls == ["math-bd"] and c["gen_length"]["maximum"] < 256
    calls.clear()
    slow = threading.Thread(target=store.get, args=("slow",))
    slow.start()
    try:
        assert started.wait(10)
        assert store.get("other") is tiny_block_target and store.loaded("other") and not store.loaded("slow")
    finally:
        gate.set()
        slow.join(10)
    assert store.loaded("slow") and calls.count("slow") == 1
    room = tiny_block_target.info.max_length - len(tiny_block_target.encode("ROMEO.\n"))
    assert ctx.gen_cap("other", "ROMEO.\n") == min(256, room)  # loaded now: its context counts


def test_a_run_cut_at_the_length_limit_says_so(client, tiny_prompt, tiny_block_target):
    from spotviz.trace import Trace

    out = client.predict(**_run_args(tiny_prompt, "training-free", gen=8))
    trace = Trace.load(next(f for f in out[2] if f.endswith(".json")))
    cut = len(trace.tokens) >= 8  # (no end of text within 8 tokens)
    assert ("cut at the length limit (8 tokens)" in out[0]) == cut, out[0]
    c = trace.counters
    assert f"{c.generated_tokens} tokens" in out[0] and f"in {c.target_passes} target passes" in out[0]
    assert (f"then end-of-text: {c.commits} slots in" in out[0]) == (c.commits != c.generated_tokens), out[0]


def test_switching_the_model_replaces_a_recorded_examples_prompt_and_keeps_the_visitors_own(app, tiny_prompt):
    """The example on screen filled the prompt box; another model gets its own first prompt instead of the
    example's (a Python model on a word problem writes nonsense), while a prompt the visitor typed stays."""
    from spotviz.ui.inputs import CODE_PROMPTS

    demo = app[0]
    on_model = next(fn for fn in demo.fns.values() if getattr(fn.fn, "__name__", "") == "on_model").fn
    ctx = on_model.__self__.ctx
    assert tiny_prompt in ctx.example_prompts()  # (read from the example traces' headers)
    ctx.models.append("python-code")
    try:
        _, prompt, _ = on_model("python-code", tiny_prompt)
        assert prompt["value"] == CODE_PROMPTS[0]
        _, prompt, _ = on_model("python-code", tiny_prompt + " and more")
        assert "value" not in prompt  # (the visitor's own text stays)
    finally:
        ctx.models.remove("python-code")


def test_the_length_slider_keeps_the_visitors_length_across_a_long_prompt(app, tiny_block_target):
    """A long prompt lowers the length to what the context leaves (and the slider's note says so); a short one
    gives the length the visitor chose back; the slider never offers less than a quarter of the context."""
    demo = app[0]
    cap = next(fn for fn in demo.fns.values() if getattr(fn.fn, "__name__", "") == "cap_length").fn
    ctx_len = tiny_block_target.info.max_length
    short, long_ = "ROMEO.\n", "ROMEO.\n" + "O Romeo, wherefore art thou Romeo? " * 40
    top = cap(short, TINY, 24, None)["maximum"]
    wanted = top - 8
    low = cap(long_, TINY, wanted, wanted)
    assert low["maximum"] < wanted and low["value"] == low["maximum"] >= ctx_len // 4 - 8
    assert "lowered to" in low["info"] and str(wanted) in low["info"]
    back = cap(short, TINY, low["value"], wanted)
    assert back["value"] == wanted and "lowered" not in back["info"]
    # more than any prompt leaves: the note does not promise that a shorter prompt gives it back
    most = cap("", TINY, 24, None)["maximum"]
    beyond = cap(long_, TINY, low["value"], most + 8)
    assert "gives it back" not in beyond["info"] and f"{most} with the shortest prompt" in beyond["info"]
    # a length the slider offers, typed after one it did not: only the usual note (no value: a drag is not undone)
    from spotviz.ui.handlers import GEN_INFO

    typed = next(fn for fn in demo.fns.values() if getattr(fn.fn, "__name__", "") == "typed_length").fn
    assert typed(short, TINY, 16, 16) == ({"__type__": "update", "info": GEN_INFO}, 16)
    assert "raised to" in typed(short, TINY, 3, 3)[0]["info"]
    # the length released is the choice, whatever the last key's input left (its answer may not have come back)
    assert typed(short, TINY, 40, 4) == ({"__type__": "update", "info": GEN_INFO}, 40)
    # nothing to change: no value is sent, so a length typed while this answer was on its way is not overwritten
    same = cap(short, TINY, wanted, wanted)
    assert "value" not in same and same["maximum"] == top


def test_live_token_texts_are_the_traces_mask_and_end_of_text_marks(tiny_block_target, tiny_prompt):
    """A streaming run names tokens as its trace does: "[MASK]", and one mark "∎" for end of text (a stopped run
    shows only the live strings, so they must not fall back to the raw tag)."""
    from spotviz.samplers.config import DecodeConfig
    from spotviz.ui.runner import _one_run

    info = tiny_block_target.info
    shown = tiny_block_target.display_strings([info.mask_id, *info.eos_ids, 5])
    assert shown[info.mask_id] == "[MASK]" and all(shown[e] == "∎" for e in info.eos_ids)
    assert shown[5] == tiny_block_target.token_strings([5])[5]
    eos = info.eos_ids[0]
    prompt = tiny_prompt + tiny_block_target.decode([eos]) + "\n"  # end of text among the prompt's tokens
    assert eos in tiny_block_target.encode(prompt)
    live, trace = {}, None
    for ev in _one_run(tiny_block_target, prompt, DecodeConfig(gen_length=16, seed=2), "main"):
        live.update(ev.get("token_text", {}))
        trace = ev.get("trace", trace)
    assert live[str(eos)] == "∎" and live[str(info.mask_id)] == "[MASK]"
    assert live == {k: trace["token_text"][k] for k in live}


def test_the_page_opens_on_the_default_models_example_and_keeps_a_model_without_one(app, monkeypatch):
    """With $SPOTVIZ_MODEL a model of one's own, the opening example (another model's) switched the menu, banner and
    prompts away from it: they now stay; a default model with an example of its own opens on that one."""
    import gradio as gr

    from spotviz.ui.handlers import SHOW_OUTPUTS

    h = next(fn for fn in app[0].fns.values() if getattr(fn.fn, "__name__", "") == "on_model").fn.__self__
    out = h.first_example()  # (the default, TINY, has no example: the example is the micro model's, by its own name)
    for name in ("model", "model_banner", "prompt_pick", "prompt"):  # (Run decodes the model's own prompt)
        assert out[SHOW_OUTPUTS.index(name)] == gr.skip(), name
    title, _, model = h.ctx.example_headers()[0]
    status = out[SHOW_OUTPUTS.index("status")]
    assert "Recorded example of another model" in status and f"prompt box on {h.ctx.default_model}" in status
    assert model in status
    from spotviz.ui.inputs import prompts_for  # the length offered is one the default model has room for

    top = h.ctx.gen_top(h.ctx.default_model, prompts_for(h.ctx.default_model)[0])
    assert out[SHOW_OUTPUTS.index("gen_length")]["maximum"] == top
    monkeypatch.setattr(h.ctx, "default_model", model)
    monkeypatch.setattr(h.ctx, "models", [*h.ctx.models, model])
    assert h.first_example()[SHOW_OUTPUTS.index("model")] == model


def test_a_zerogpu_call_asks_for_the_gpu_time_its_runs_need(tiny_block_dir):
    """ZeroGPU refuses a call that asks for more than a visitor's remaining quota: the request follows the plan
    (runs x slots, a published model's loading), bounded."""
    from spotviz.samplers.config import DecodeConfig
    from spotviz.ui.inputs import RunPlan
    from spotviz.ui.runner import GPU_SECONDS_MAX, gpu_seconds

    alone = gpu_seconds(0, "math-bd", "q", RunPlan(DecodeConfig(drafter="none", gen_length=96)))
    paired = gpu_seconds(0, "math-bd", "q", RunPlan(DecodeConfig(drafter="spot", gen_length=96)))
    race = gpu_seconds(0, "math-bd", "q", RunPlan(DecodeConfig(drafter="spot", gen_length=96),
                                                 race=("training-free", "calibrated")))
    longer = gpu_seconds(0, "math-bd", "q", RunPlan(DecodeConfig(drafter="spot", gen_length=512)))
    published = gpu_seconds(0, "JetLM/SDAR-1.7B-Chat", "q", RunPlan(DecodeConfig(drafter="spot", gen_length=96)))
    huge = gpu_seconds(0, "JetLM/SDAR-1.7B-Chat", "q", RunPlan(DecodeConfig(drafter="spot", gen_length=1024),
                                                               race=("training-free", "calibrated")))
    assert 10 <= alone < paired < race < 60 and paired < longer and paired < published
    assert huge == GPU_SECONDS_MAX
    assert all(isinstance(s, int) for s in (alone, paired, race, longer, published, huge))
    # a model of one's own that train-target wrote is priced as the embedded model it is, not as a published one
    assert gpu_seconds(0, str(tiny_block_dir), "q", RunPlan(DecodeConfig(drafter="spot", gen_length=96))) == paired


def test_the_apps_drafter_folder_serves_every_lane_of_a_race_whatever_the_drafter_menu_says(tmp_path):
    """$SPOTVIZ_DRAFTER_DIR's folder goes into the run's config also with drafter `none`: a race copies that config
    into its SPOT, training-free and calibrated lanes, which must use the folder the banner names."""
    from spotviz.ui.inputs import parse_run_inputs, plan_run

    folder = tmp_path / "mine"
    folder.mkdir()
    for drafter in ("none", "spot"):
        cfg = parse_run_inputs("Sam has 8 marbles.", TINY, "exact", 0.9, 0.0, 0, 16, drafter, 4, True,
                               models=[TINY], budgets=[4], gen_max=64, drafter_dirs={TINY: str(folder)})
        plan = plan_run(cfg, race=True)
        assert [c.drafter_dir for _, c in plan.runs] == [str(folder)] * len(plan.runs), drafter


def test_a_run_that_has_its_models_cost_curve_measured_first_says_so_until_its_first_pass(app, tiny_prompt,
                                                                                          monkeypatch):
    """Budget auto needs the model's cost curve; where it is not known yet (a model's first auto run on this
    machine: seconds for an embedded model, up to a minute for a large one) the status says what the wait before the
    first pass is, and goes back to "Decoding" when the first run starts; a fixed budget measures nothing."""
    from spotviz.samplers import forward_cost
    from spotviz.ui.handlers import RUN_OUTPUTS

    h = next(fn for fn in app[0].fns.values() if getattr(fn.fn, "__name__", "") == "on_model").fn.__self__
    status = RUN_OUTPUTS.index("status")
    measured = []
    real, real_known = forward_cost.cost_curve, forward_cost.known_curve
    monkeypatch.setattr(forward_cost, "known_curve", lambda target: None)  # (as on a machine new to the model)
    monkeypatch.setattr(forward_cost, "cost_curve", lambda target, **k: measured.append(1) or real(target, **k))

    def statuses(budget):
        outs = list(h.run(tiny_prompt, TINY, "exact", 0.9, 0.0, 1, GEN, "training-free", budget, True, 0.0, False))
        return [o[status] for o in outs if isinstance(o[status], str)]

    said = statuses("auto")
    timing = [i for i, s in enumerate(said) if "First it times a pass of tiny-block over 1, 2, 4" in s]
    assert len(timing) == 1 and len(measured) >= 1, said  # (once, before the first pass)
    assert "Decoding" in said[timing[0] + 1] and "times a pass" not in said[timing[0] + 1] and "Done" in said[-1]
    measured.clear()
    said = statuses(8)
    assert not any("times a pass" in s for s in said) and not measured
    monkeypatch.setattr(forward_cost, "known_curve", real_known)  # (the curve known: nothing said, nothing waited)
    said = statuses("auto")
    assert not any("times a pass" in s for s in said) and "Done" in said[-1]
    # a measurement that fails is said once and not tried again by the run
    monkeypatch.setattr(forward_cost, "known_curve", lambda target: None)
    monkeypatch.setattr(forward_cost, "cost_curve", lambda target, **k: measured.append(1) or 1 / 0)
    measured.clear()
    said = statuses("auto")
    assert len(measured) == 1 and "ZeroDivisionError" in said[-1], said


def test_a_run_decodes_at_most_the_length_the_slider_offers_for_its_prompt(app, tiny_prompt):
    """A Run pressed right after a long prompt was pasted (before the prompt box's blur capped the slider) decoded
    the longer length, cutting more of the prompt, and then the slider said less was the most: the run now takes
    the slider's maximum for its prompt and says so; a run cut at that maximum is not told to ask for more."""
    from spotviz.ui.handlers import RUN_OUTPUTS

    h = next(fn for fn in app[0].fns.values() if getattr(fn.fn, "__name__", "") == "on_model").fn.__self__
    status = RUN_OUTPUTS.index("status")
    long_prompt = tiny_prompt + " O Romeo, wherefore art thou Romeo?" * 40
    top = h.ctx.gen_top(TINY, long_prompt)
    assert top < h.ctx.gen_limit
    outs = list(h.run(long_prompt, TINY, "exact", 0.9, 0.0, 1, top + 16, "none", 8, True, 0.0, False))
    said = outs[-1][status]
    assert "Done" in said and f"The generation length was lowered to {top}" in said, said
    assert f"cut at the length limit ({top} tokens)" not in said or "the most this prompt leaves room for" in said
    assert "a longer generation length lets it finish" not in said
    outs = list(h.run(long_prompt, TINY, "exact", 0.9, 0.0, 1, top, "none", 8, True, 0.0, False))
    assert "lowered" not in outs[-1][status]


def test_a_run_whose_auto_trees_stayed_small_offers_the_same_run_with_larger_trees(app, tiny_prompt, monkeypatch):
    """After a run whose budget auto kept its trees small (or drafted none), the page shows a button that runs it
    again at a fixed budget, and its status says so; a run at a fixed budget (the visitor chose the size) offers
    none, and every run hides the button while it decodes."""
    import gradio as gr

    import spotviz.ui.session as session
    from spotviz.ui.handlers import RUN_OUTPUTS

    h = next(fn for fn in app[0].fns.values() if getattr(fn.fn, "__name__", "") == "on_model").fn.__self__
    at, status = RUN_OUTPUTS.index("larger"), RUN_OUTPUTS.index("status")

    def offered(budget):
        outs = list(h.run(tiny_prompt, TINY, "exact", 0.9, 0.0, 1, GEN, "training-free", budget, True, 0.0, False))
        assert outs[0][at] == gr.update(visible=False) and "Done" in outs[-1][status]
        said = "larger trees often save passes (not always) but cost more time here" in outs[-1][status]
        button = '<button type="button" class="sv-act" data-sv-click="#sv-larger">Run it again with larger trees ' \
                 '(budget 16)</button></div>' in outs[-1][status]  # (at the end of the line that says why)
        assert outs[-1][at] == gr.update(visible=said) and button == said  # (the button and the status agree)
        return said

    assert offered(8) is False
    offered("auto")  # (the tiny model's trees: whatever auto chose here, the two agree)
    small = session.small_trees_note  # trees kept small (as on a CPU with a confident model's costs)
    monkeypatch.setattr(session, "small_trees_note", lambda trace: small(trace) or (
        "" if not trace.meta.budget_auto else ". Budget auto kept its trees small: larger trees often save passes (not always) but cost "
                                              "more time here"))
    assert offered("auto") is True and offered(8) is False
    from spotviz.ui.layout import LARGER_TREES, larger_budget  # the button sets the budget on every click, not once

    first = larger_budget()
    first.pop("value")  # (as Gradio's postprocessing does with the update it is given)
    assert larger_budget()["value"] == LARGER_TREES


def test_a_threshold_run_that_left_nothing_to_draft_offers_the_same_run_at_a_stricter_tau(app, tiny_prompt,
                                                                                           monkeypatch):
    """A threshold run whose every pass filled its window by itself (a confident model at tau 0.9: SPOT-Sets had
    nothing to guess, the same passes as the standard decoder) says so and ends in a button that runs it again at
    tau 0.99; a run that drafted, a run at 0.99 and the standard decoder alone offer none."""
    import gradio as gr

    import spotviz.ui.session as session
    from spotviz.trace import Trace
    from spotviz.ui.handlers import RUN_OUTPUTS
    from spotviz.views.headline import nothing_to_draft

    h = next(fn for fn in app[0].fns.values() if getattr(fn.fn, "__name__", "") == "on_model").fn.__self__
    at, status, files = RUN_OUTPUTS.index("stricter"), RUN_OUTPUTS.index("status"), RUN_OUTPUTS.index("files")

    def offered(tau, drafter="training-free"):
        outs = list(h.run(tiny_prompt, TINY, "threshold", tau, 0.0, 1, GEN, drafter, 8, True, 0.0, False))
        assert outs[0][at] == gr.update(visible=False) and "Done" in outs[-1][status]
        said = "every pass committed all the masked slots of the block it was decoding at once" in outs[-1][status]
        button = ('<button type="button" class="sv-act" data-sv-click="#sv-stricter">Run it again at tau 0.99'
                  '</button></div>') in outs[-1][status]
        assert outs[-1][at] == gr.update(visible=said) and button == said  # (the button and the status agree)
        main = next(t for t in map(Trace.load, (f for f in outs[-1][files] if f.endswith(".json")))
                    if t.meta.drafter == drafter)
        return said, nothing_to_draft(main)

    said, idle = offered(0.05)  # (whatever the tiny model's confidences: the offer is the run's own verdict)
    assert said == idle
    monkeypatch.setattr(session, "nothing_to_draft", lambda trace, idle=None: True)  # (as math-bd at tau 0.9)
    assert offered(0.9)[0] is True
    assert offered(0.99)[0] is False and offered(0.9, "none")[0] is False
    from spotviz.ui.layout import stricter_tau  # the button sets tau on every click, not once

    first = stricter_tau()
    first.pop("value")
    assert stricter_tau()["value"] == 0.99


def test_a_run_at_another_budget_or_tau_is_compared_with_the_visitors_run_before(app, tiny_prompt):
    """The page keeps the figures of the visitor's last finished run (a state, not one of /run's parameters): the
    next run of the same prompt and settings at another tree budget or tau says how its passes and wall-clock compare
    (what the larger-trees and stricter-tau offers raise); a run that differs in anything else, or in nothing, or a
    race, compares with nothing."""
    client = Client(app[1], verbose=False)  # (a page of its own: its state starts empty)
    said = "Against your run before"
    first = client.predict(**_run_args(tiny_prompt, "training-free", budget=4))[0]
    assert "Done" in first and said not in first
    again = client.predict(**_run_args(tiny_prompt, "training-free", budget=8))[0]
    assert f"{said} at budget 4: " in again, again
    passes = lambda status: int(re.search(r" in (\d+) target passes", status).group(1))  # noqa: E731
    assert (f": {passes(again)} passes instead of {passes(first)} (" in again if passes(again) != passes(first)
            else f": the same {passes(first)} passes (" in again)
    assert re.search(r"\(wall-clock, one timing each\)", again)
    assert said not in client.predict(**_run_args(tiny_prompt, "training-free", budget=8))[0]  # (nothing changed)
    assert said not in client.predict(**_run_args(tiny_prompt, "training-free", budget=4, seed=2))[0]  # (the seed)
    assert said not in client.predict(**_run_args(tiny_prompt, "training-free", budget=8, seed=2, race=True))[0]
    assert said not in client.predict(**_run_args(tiny_prompt, "training-free", budget=4, seed=2))[0]  # (race before)
    # threshold mode: tau is the setting that changed (the standard decoder's passes change with it, and it says so)
    client.predict(**_run_args(tiny_prompt, "training-free", mode="threshold", tau=0.5, budget=4))
    out = client.predict(**_run_args(tiny_prompt, "training-free", mode="threshold", tau=0.95, budget=4))[0]
    assert f"{said} at tau 0.5: " in out, out


def test_the_comparison_with_the_run_before_says_each_runs_speed_as_its_headline_did():
    """A run that drafted nothing had "the same work as standard" in its headline, not a ratio (timing noise): the
    next run's comparison quotes it the same way; the standard decoder's passes are named when tau changed them."""
    from spotviz.ui.comparison import RunFigures

    before = RunFigures(("same",), "auto", 0.9, 4, 4, 1 / 1.94, drafted=False)
    now = RunFigures(("same",), "auto", 0.99, 4, 6, 1 / 1.30)
    text = now.against(before)
    assert text.startswith(". Against your run before at tau 0.9: the same 4 passes (1.50× fewer than the "
                           "standard decoder instead of 1.00×: the standard decoder took 6 passes now, 4 then)"), text
    assert "1.30× slower where the run before drafted nothing (wall-clock, one timing each)" in text
    assert "1.94" not in text
    # (what did not change is said once: "4 passes instead of 4" read as if something had)
    same = RunFigures(("same",), "16", 0.99, 4, 6, 1 / 1.30).against(now)
    assert ": the same 4 passes (1.50× fewer than the standard decoder both times), 1.30× slower both times (" in same
    none = RunFigures(("same",), "16", 0.9, 4, 4, 1.0, drafted=False).against(before)
    assert ": the same 4 passes (as many as the standard decoder both times), the same work as standard both " in none
    assert now.against(RunFigures(("other",), "16", None, 4, 4, 1.0)) == ""  # (other settings: nothing compared)
    assert now.against(RunFigures(("same",), "auto", 0.99, 5, 6, 1.0)) == ""  # (nothing changed: nothing compared)


def test_the_app_measures_its_default_models_cost_curve_ahead_when_asked(tiny_block_dir, example_dir, monkeypatch):
    """`python app.py` builds the app with curve_ahead: the default model's cost curve (what budget auto sizes trees
    by) is measured in the background at start, so a fresh Space's first auto Run does not wait for it; the tests'
    apps leave it off; a known curve is not measured again."""
    import threading

    from spotviz.registry import load_embedded
    from spotviz.samplers import forward_cost
    from spotviz.ui.app import build_app

    calls = []
    real = forward_cost.measure
    monkeypatch.setattr(forward_cost, "measure", lambda target, **k: calls.append(1) or real(
        target, sizes=(1, 2), rounds=1, per_round=1, fused_sizes=(1,)))
    target = load_embedded(tiny_block_dir, device="cpu")  # (a new target object: no curve in memory)

    def build(ahead):
        build_app(loader=lambda name: target, models=[TINY], default_model=TINY, trace_dir=example_dir, gpu=False,
                  curve_ahead=ahead)
        for t in threading.enumerate():
            if t.name == "spotviz-cost-curve":
                t.join(60)

    build(False)
    assert not calls and forward_cost.known_curve(target) is None
    build(True)
    assert len(calls) == 1 and forward_cost.known_curve(target) is not None
    build(True)
    assert len(calls) == 1


def test_a_run_pressed_while_the_curve_is_measured_ahead_waits_for_it(tiny_block_dir, example_dir, tiny_prompt,
                                                                      monkeypatch):
    """A run pressed while the app's start-up measurement runs (any run: a fixed budget too) waits for it, saying so,
    so that no decode runs beside the measurement (it would skew the curve and the run's own timings); while it
    waits it yields again and again, so that a Stop reaches it (Gradio cancels a run between its yields: a run held
    inside one long call kept the page's Run button pending after Stop, and the next Run press did nothing)."""
    import threading

    from spotviz.registry import load_embedded
    from spotviz.samplers import forward_cost
    from spotviz.ui.app import build_app
    from spotviz.ui.handlers import RUN_OUTPUTS

    release, order = threading.Event(), []
    real = forward_cost.measure

    def measure(target, **k):
        release.wait(30)
        order.append("measured")
        return real(target, sizes=(1, 2), rounds=1, per_round=1, fused_sizes=(1,))

    monkeypatch.setattr(forward_cost, "measure", measure)
    target = load_embedded(tiny_block_dir, device="cpu")
    demo = build_app(loader=lambda name: target, models=[TINY], default_model=TINY, trace_dir=example_dir,
                     gpu=False, curve_ahead=True)
    h = next(fn for fn in demo.fns.values() if getattr(fn.fn, "__name__", "") == "on_model").fn.__self__
    status = RUN_OUTPUTS.index("status")
    run = h.run(tiny_prompt, TINY, "exact", 0.9, 0.0, 1, GEN, "training-free", 8, True, 0.0, False)
    said = [next(run)[status], next(run)[status]]  # (Decoding..., then the wait)
    assert "First it times a pass of tiny-block" in said[1], said
    threading.Timer(1.0, lambda: (order.append("released"), release.set())).start()
    waiting = 0
    for out in run:
        waiting += "measured" not in order
        last = out
    assert order == ["released", "measured"] and "Done" in last[status]
    assert waiting >= 2  # (a yield every HEARTBEAT_S while it waited about a second)


def test_a_drafter_of_ones_own_joins_the_menu_and_runs(tiny_block_target, tiny_prompt, tmp_path):
    """A drafter registered before the app is built (app.py: $SPOTVIZ_PLUGINS) is in the Drafter menu with its own
    note, choosing it moves the mode to one it drafts in, and a run with it is checked against the standard decoder."""
    import numpy as np

    from spotviz.drafter.proposers.common import Context
    from spotviz.drafter.registry import register_proposer, unregister_proposer
    from spotviz.drafter.tree import Proposer
    from spotviz.ui.app import build_app, launch
    from spotviz.ui.handlers import Handlers

    class RightToLeft(Proposer):
        def prepare(self, view, max_depth):
            return Context(view, max_depth)

        def children(self, ctx, view, node, remaining):
            d = ctx.d(node)
            o = int(np.flatnonzero(remaining)[-1])
            return [((o,), (int(ctx.tok1[d, o]),), 0.8)]

    register_proposer("right-to-left", lambda target, mode, folder: RightToLeft(), help="the last masked slot next")
    try:
        demo = build_app(loader=lambda name: tiny_block_target, models=[TINY], default_model=TINY, trace_dir=tmp_path,
                         gpu=False)
        menu = next(c for c in demo.get_config_file()["components"]
                    if c.get("props", {}).get("elem_id") == "sv-drafter")
        choices = [c[0] if isinstance(c, (list, tuple)) else c for c in menu["props"]["choices"]]
        assert choices[-2:] == ["right-to-left", "none"]
        from spotviz.samplers.config import DecodeConfig
        from spotviz.ui.inputs import plan_run

        # a race gives it a lane in the modes it drafts in
        race = plan_run(DecodeConfig(drafter="spot"), race=True).race
        assert race == ("training-free", "calibrated", "right-to-left")
        assert "right-to-left" not in plan_run(DecodeConfig(mode="threshold", drafter="spot-sets"), race=True).race
        _, fix = Handlers.on_mode("threshold", "right-to-left")  # (exact only: the mode's learned drafter instead)
        assert fix["value"] == "spot-sets"
        info, mode, _ = Handlers.on_drafter("right-to-left", "threshold")
        assert mode["value"] == "exact"
        assert info["info"] == "the last masked slot next · a drafter of your own (exact mode)"
        _, url, _ = launch(demo, server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True,
                           quiet=True)
        try:
            c = Client(url, verbose=False)
            out = c.predict(**_run_args(tiny_prompt, "right-to-left", gen=16, budget=4))
            c.close()
        finally:
            demo.close()
        assert "Done" in out[0] and "output identical" in out[0], out[0]
        runs = [x for x in _timeline(out[1]) if x["t"] == "run"]
        assert {x["meta"]["drafter"] for x in runs} == {"right-to-left", "none"}, runs
    finally:
        unregister_proposer("right-to-left")


def test_a_plugin_file_that_fails_stops_the_app_at_its_start_in_one_line(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    bad = tmp_path / "my_drafters.py"
    bad.write_text("raise ImportError('no module named mylib')\n")
    env = {**os.environ, "SPOTVIZ_PLUGINS": str(bad), "GRADIO_SERVER_PORT": str(free_port())}
    run = subprocess.run([sys.executable, "app.py"], cwd=Path(__file__).resolve().parent.parent, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stderr.strip().splitlines() == [
        f"error: SPOTVIZ_PLUGINS: {bad} failed: ImportError: no module named mylib"], run.stderr

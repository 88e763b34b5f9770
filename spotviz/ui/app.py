"""The Gradio app: live SPOT decoding with animated views, compare, replay and share.

    from spotviz.ui.app import build_app, launch
    demo = build_app()                        # the embedded default model
    demo = build_app(loader=my_load_fn, models=["tiny"])   # tests: inject the model loader
    launch(demo)

The UI only calls `runner.decode_events` (which calls spotviz.engine.decode_stream) and renders views
(spotviz.views) of the traces; a replayed trace needs no model.
"""
from __future__ import annotations

import os
import tempfile
import time
import uuid
from pathlib import Path
from typing import Callable

import gradio as gr

from ..engine import DRAFTERS
from ..registry import DEFAULT_MODEL, EMBEDDED
from ..samplers.common import BUDGETS, MAX_GEN_LENGTH
from ..trace import Trace, TraceError
from ..views import CANVAS_CSS, TABLE_CSS, commit_order_figure, counters_html, empty_canvas, speedup_figure, \
    trace_canvas, tree_figure
from ..views.common import esc
from .examples import list_examples, load_example, pair_traces
from .live import LiveRun, run_title
from .player import PlotlyPlayer
from .runner import ModelStore, decode_events, has_gpu, register_store

PROMPT_EXAMPLES = ["ROMEO.\n", "HAMLET.\nTo be", "KING LEAR.\n", "JULIET.\nO Romeo,", "MACBETH.\nIs this a"]
DRAFTER_ORDER = [d for d in ("spot", "spot-sets", "training-free", "calibrated", "none") if d in DRAFTERS]
DRAFTER_HELP = {
    "spot": "SPOT: the learned drafter predicts the commit order (exact mode)",
    "spot-sets": "SPOT-Sets: drafts whole commit sets (threshold mode)",
    "training-free": "baseline: order by the stale confidence of the previous pass",
    "calibrated": "baseline: a static draft-graph template calibrated offline",
    "none": "the standard decoder (one decision per pass)",
}
VIEW_MAIN, VIEW_BASE = "drafter run", "standard run"
LIVE_CANVAS_EVERY_S = 0.08  # at most ~12 streamed canvas updates per second
LIVE_FIGURES_EVERY_S = 1.5  # players are redrawn from the partial trace this often while decoding

HEADER = """
<div style="display:flex;align-items:baseline;gap:14px;flex-wrap:wrap">
  <h1 style="margin:0;font-size:26px">spotviz</h1>
  <span style="color:var(--body-text-color-subdued,#666)">lossless speculative decoding for diffusion language
  models by speculating the position order (SPOT) — watch the target commit tokens, the drafter's tree, and
  the speed-up over standard decoding, pass by pass.</span>
</div>
"""

APP_CSS = """
.sv-status { font-size: 14px; padding: 6px 10px; border-radius: 8px; }
.sv-status.ok { background: #eef7ee; color: #1b5e20; }
.sv-status.err { background: #fdecea; color: #8e1b10; }
.sv-status.info { background: #eef3fb; color: #1a3d6d; }
"""


def _status(message: str, kind: str = "info") -> str:
    return f'<div class="sv-status {kind}">{esc(message)}</div>'


def _status_html(parts: list[tuple[str, str]]) -> str:
    return "".join(_status(m, k) for m, k in parts)


class _Outputs:
    """Positions of the shared outputs of run / replay handlers."""

    names = ("status", "canvas_main", "canvas_base", "counters", "order", "tree", "speedup", "files", "state")


def _figures(trace: Trace | None, base: Trace | None, which: str = VIEW_MAIN):
    """(order, tree, speed-up) figure dicts for the chosen run."""
    if trace is None and base is None:
        return None, None, None
    shown = base if (which == VIEW_BASE and base is not None) or trace is None else trace
    ref = trace if trace is not None else base
    return commit_order_figure(shown), tree_figure(shown), speedup_figure(ref, base if ref is not base else None)


class TraceFiles:
    """Trace downloads: JSON files in one temporary folder; files older than an hour are removed."""

    def __init__(self):
        self.folder = Path(tempfile.gettempdir()) / "spotviz-traces"

    def write(self, traces: list[Trace]) -> list[str]:
        self.folder.mkdir(parents=True, exist_ok=True)
        now = time.time()
        for old in self.folder.glob("*.json"):
            try:
                if now - old.stat().st_mtime > 3600:
                    old.unlink()
            except OSError:
                pass
        paths = []
        tag = uuid.uuid4().hex[:6]
        for t in traces:
            m = t.meta
            safe_model = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in Path(m.model).name)[:40]
            safe_drafter = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in m.drafter)
            sub = self.folder / tag
            sub.mkdir(exist_ok=True)
            p = sub / f"spotviz-{safe_model}-{safe_drafter}-seed{m.seed}.json"
            t.save(p)
            paths.append(str(p))
        return paths


def default_models(extra: str | None = None) -> list[str]:
    from ..targets.published import PUBLISHED

    models = []
    if extra:
        models.append(extra)
    models += [m for m in EMBEDDED if m not in models]
    if has_gpu():
        models += [m for m in PUBLISHED if m not in models]
    return models


def build_app(loader: Callable[[str], object] | None = None, models: list[str] | None = None,
              default_model: str | None = None, trace_dir: str | Path | None = None,
              gpu: bool | None = None, check_model: bool = True) -> gr.Blocks:
    """The Gradio Blocks app.

    loader: name -> target (default spotviz.registry.load_target); models: the model dropdown (default: the
    embedded models, $SPOTVIZ_MODEL first if set, and the published DLMs when a GPU is present);
    trace_dir: the example traces (default assets/traces); gpu: override device detection for the defaults."""
    env_model = os.environ.get("SPOTVIZ_MODEL") or None
    models = list(models) if models else default_models(env_model)
    default_model = default_model or env_model or (DEFAULT_MODEL if DEFAULT_MODEL in models else models[0])
    if default_model not in models:
        models.insert(0, default_model)
    gpu = has_gpu() if gpu is None else gpu
    store = ModelStore(loader)
    store_key = register_store(store)
    files = TraceFiles()
    examples = list_examples(trace_dir)
    example_titles = [e["title"] for e in examples]

    # smaller defaults on CPU
    gen_default, gen_max = (128, 512) if gpu else (64, 256)
    budget_default = 32 if gpu else 16
    budgets = [b for b in BUDGETS if b >= 2]

    if check_model:
        try:
            banner = _status("Model ready: " + store.describe(default_model), "ok")
        except Exception as e:  # noqa: BLE001 - any load problem is shown, the app still starts
            banner = _status(f"The model {default_model!r} is not available: {e}. "
                             "You can still replay the example traces and trace files below.", "err")
    else:
        banner = _status(f"Model {default_model} loads on the first run.", "info")

    # ------------------------------------------------------------------------------------------ handlers
    def render(trace, base, status_parts, which=VIEW_MAIN, write_files=True, main_note="—"):
        order, tree, speed = _figures(trace, base, which)
        shown_main = trace if trace is not None else base
        canvas_main = trace_canvas(trace, title=run_title(trace.meta, "Drafter run" if trace.meta.drafter != "none"
                                                          else "Standard decoder")) if trace else None
        if base is not None:
            canvas_base = trace_canvas(base, title=run_title(base.meta, "Standard decoder (same prompt, seed)"))
        else:
            canvas_base = empty_canvas("No standard-decoder run to compare with"
                                       + (" (this run is the standard decoder)." if shown_main is not None
                                          and shown_main.meta.drafter == "none" else "."))
        table = counters_html(shown_main, base if shown_main is not base else None)
        paths = files.write([t for t in (trace, base) if t is not None]) if write_files else None
        state = {"main": trace, "base": base}
        return [_status_html(status_parts), canvas_main if canvas_main else empty_canvas(main_note), canvas_base, table,
                order, tree, speed, paths, state]

    def run(prompt, model, mode, tau, temperature, seed, gen_length, drafter, budget, coupled):
        skip = gr.skip()
        try:
            cfg = {"mode": str(mode), "threshold": float(tau), "temperature": float(temperature),
                   "seed": int(seed if seed is not None else 0), "gen_length": int(gen_length),
                   "drafter": str(drafter), "budget": int(budget), "coupled_noise": bool(coupled)}
        except (TypeError, ValueError) as e:
            yield [_status(f"Invalid setting: {e}", "err")] + [skip] * 8
            return
        yield [_status(f"Loading {model} and decoding {cfg['gen_length']} tokens with "
                       f"{'the standard decoder' if drafter == 'none' else 'drafter ' + drafter}…"),
               empty_canvas("waiting for the first target pass…"), skip, skip, skip, skip, skip, None, skip]
        live: dict[str, LiveRun] = {}
        done: dict[str, Trace] = {}
        notes: list[tuple[str, str]] = []
        last_canvas = last_figs = 0.0
        role = {"main": "Drafter run" if drafter != "none" else "Standard decoder",
                "baseline": "Standard decoder (same prompt, seed)"}
        for ev in decode_events(store_key, model, prompt, cfg, True):
            kind, which = ev["type"], ev["run"]
            now = time.perf_counter()
            if kind == "error":
                if ev["where"] in ("input", "model") or (which == "main" and drafter == "none"):
                    yield [_status_html(notes + [(f"Cannot run: {ev['message']}", "err")])] + [skip] * 8
                    return
                what = f"drafter {drafter!r}" if which == "main" else "the standard decoder"
                notes.append((f"{what} failed: {ev['message']}"
                              + (" — the standard decoder still runs below." if which == "main" else ""), "err"))
                out = [_status_html(notes), skip, skip, skip, skip, skip, skip, skip, skip]
                if which == "main":
                    out[1] = empty_canvas(f"{what} failed: {ev['message']}")
                yield out
                continue
            if kind == "start":
                live[which] = LiveRun(ev, role[which])
                out = [_status_html(notes + [(f"Decoding: {role[which].lower()}…", "info")]), skip, skip, skip,
                       skip, skip, skip, skip, skip]
                out[1 if which == "main" else 2] = live[which].canvas()
                if which == "main" and drafter != "none":
                    out[2] = empty_canvas("the standard decoder runs next, on the same prompt and seed…")
                yield out
                last_canvas = now
                continue
            lr = live[which]
            if kind == "pass":
                lr.add(ev)
                if now - last_canvas < LIVE_CANVAS_EVERY_S and len(lr.passes) > 1:
                    continue
                last_canvas = now
                out = [_status_html(notes + [(f"Decoding: {role[which].lower()} — pass {len(lr.passes)}, "
                                              f"{lr.counters.commits} of {lr.meta.gen_length} positions committed",
                                              "info")]), skip, skip, skip, skip, skip, skip, skip, skip]
                out[1 if which == "main" else 2] = lr.canvas()
                main_t = live["main"].partial_trace() if "main" in live else None
                base_t = live["baseline"].partial_trace() if "baseline" in live else None
                out[3] = counters_html(main_t or base_t, base_t if main_t else None, live=True)
                if which == "main" and now - last_figs > LIVE_FIGURES_EVERY_S:
                    last_figs = now
                    t = lr.partial_trace()
                    out[4], out[5] = commit_order_figure(t), tree_figure(t)
                yield out
                continue
            if kind == "done":
                trace = Trace.from_dict(ev["trace"])
                lr.finish(trace)
                done[which] = trace
                if which == "main" and drafter != "none":  # views of the drafter run at once
                    out = [_status_html(notes + [("Drafter run finished; now the standard decoder…", "info")]),
                           lr.canvas(), skip, counters_html(trace, None), commit_order_figure(trace),
                           tree_figure(trace), speedup_figure(trace), skip, skip]
                    yield out
        main_t, base_t = done.get("main"), done.get("baseline")
        if main_t is None and base_t is None:
            yield [_status_html(notes + [("No run finished.", "err")])] + [skip] * 8
            return
        final = notes[:]
        shown = main_t or base_t
        c = shown.counters
        msg = (f"Done: {c.generated_tokens} tokens in {c.target_passes} target passes "
               f"({c.mean_accepted_length:.2f} commits per pass, {c.tokens_per_s:.1f} tokens/s)")
        if main_t is not None and base_t is not None:
            same = main_t.tokens == base_t.tokens
            msg += (f"; standard decoder: {base_t.counters.target_passes} passes → "
                    f"{base_t.counters.target_passes / max(c.target_passes, 1):.2f}× fewer passes; output "
                    + ("identical ✓" if same else "DIFFERS ✗"))
        final.append((msg, "ok"))
        failed = next((m for m, k in notes if k == "err"), "the drafter run did not finish")
        yield render(main_t, base_t, final, main_note=failed)

    def replay(paths):
        """Replay uploaded trace file(s); the upload box is cleared so the next upload starts afresh."""
        skip = gr.skip()
        if not paths:
            return [skip] * 9 + [skip]
        if isinstance(paths, (str, Path)):
            paths = [paths]
        traces = []
        name = ""
        try:
            for p in paths:
                name = Path(str(p)).name
                traces.append(Trace.load(p))
            main, base = pair_traces(traces)
        except TraceError as e:
            return [_status(f"Cannot replay {name}: {e}", "err")] + [skip] * 8 + [None]
        what = "Replaying " + (f"{main.meta.drafter} run" if main.meta.drafter != "none" else "a standard run")
        what += " with its standard-decoder comparison" if base else ""
        return render(main, base, [(f"{what} (no model needed): {main.meta.model}, seed {main.meta.seed}.",
                                    "ok")]) + [None]

    def load_example_cb(title):
        skip = gr.skip()
        entry = next((e for e in examples if e["title"] == title), None)
        if entry is None:
            return [_status("No example traces are shipped in this build.", "info")] + [skip] * 8
        try:
            main, base = load_example(entry)
        except TraceError as e:
            return [_status(f"Cannot load the example {title!r}: {e}", "err")] + [skip] * 8
        return render(main, base, [(f"Example trace: {title} (recorded with the real engine; replayed, no model "
                                    "needed). Press ▶ Play on a view, or Run your own prompt.", "ok")],
                      write_files=True)

    def switch_view(which, state):
        if not state or not (state.get("main") or state.get("base")):
            return gr.skip(), gr.skip()
        order, tree, _ = _figures(state.get("main"), state.get("base"), which)
        return order, tree

    def stop():
        return _status("Stopped. The canvas shows the passes decoded before Stop; Run again to start over.", "info")

    def on_mode(mode, drafter):
        fix = gr.skip()
        if mode == "threshold" and drafter == "spot":
            fix = gr.update(value="spot-sets")
        elif mode == "exact" and drafter == "spot-sets":
            fix = gr.update(value="spot")
        return gr.update(visible=mode == "threshold"), fix

    def on_drafter(drafter, mode):
        info = gr.update(info=DRAFTER_HELP.get(drafter, ""))
        if drafter == "spot" and mode != "exact":
            return info, gr.update(value="exact")
        if drafter == "spot-sets" and mode != "threshold":
            return info, gr.update(value="threshold")
        return info, gr.skip()

    # ------------------------------------------------------------------------------------------ layout
    with gr.Blocks(title="spotviz — SPOT speculative decoding for diffusion LMs") as demo:
        gr.HTML(HEADER, js_on_load=None)
        gr.HTML(banner, js_on_load=None, css_template=APP_CSS, elem_id="sv-model-banner")
        with gr.Row(equal_height=False):
            with gr.Column(scale=1, min_width=300):
                prompt = gr.Textbox(label="Prompt", value=PROMPT_EXAMPLES[0], lines=3, max_lines=8,
                                    elem_id="sv-prompt")
                gr.Examples(examples=[[p] for p in PROMPT_EXAMPLES], inputs=[prompt], label="Example prompts")
                model = gr.Dropdown(models, value=default_model, label="Model", elem_id="sv-model",
                                    allow_custom_value=False)
                drafter = gr.Dropdown(DRAFTER_ORDER, value="spot" if "spot" in DRAFTER_ORDER else "none",
                                      label="Drafter", info=DRAFTER_HELP.get("spot", ""), elem_id="sv-drafter")
                budget = gr.Dropdown(budgets, value=budget_default, label="Tree budget (nodes per pass)",
                                     elem_id="sv-budget")
                mode = gr.Radio(["exact", "threshold"], value="exact", label="Decoding mode",
                                info="exact: one position per pass; threshold: every position with confidence ≥ tau",
                                elem_id="sv-mode")
                tau = gr.Slider(0.05, 1.0, value=0.9, step=0.01, label="tau (threshold)", visible=False,
                                elem_id="sv-tau")
                temperature = gr.Slider(0.0, 2.0, value=0.0, step=0.05, label="Temperature",
                                        elem_id="sv-temperature")
                seed = gr.Number(value=0, precision=0, minimum=0, label="Seed", elem_id="sv-seed")
                gen_length = gr.Slider(8, min(gen_max, MAX_GEN_LENGTH), value=gen_default, step=8,
                                       label="Generation length (tokens)", elem_id="sv-gen-length")
                with gr.Accordion("Advanced", open=False):
                    coupled = gr.Checkbox(value=True, label="Coupled noise (the drafter shares the target's "
                                                           "Gumbel noise; off = ablation at T > 0)")
                with gr.Row():
                    run_btn = gr.Button("Run", variant="primary", elem_id="sv-run")
                    stop_btn = gr.Button("Stop", variant="stop", elem_id="sv-stop")
            with gr.Column(scale=3):
                status = gr.HTML(_status("Type a prompt and press Run, or load an example trace below."),
                                 js_on_load=None, css_template=APP_CSS, elem_id="sv-status")
                with gr.Row(equal_height=False):
                    canvas_main = gr.HTML(empty_canvas("The drafter run appears here."), css_template=CANVAS_CSS,
                                          js_on_load=None, elem_id="sv-canvas-main")
                    canvas_base = gr.HTML(empty_canvas("The standard decoder on the same prompt and seed "
                                                       "appears here."), css_template=CANVAS_CSS,
                                          js_on_load=None, elem_id="sv-canvas-base")
                counters = gr.HTML(counters_html(None), css_template=TABLE_CSS, js_on_load=None,
                                   elem_id="sv-counters")
        gr.Markdown("### Animated views\nEach view has ▶ Play / ❚❚ Pause, a step slider (one step per target "
                    "pass) and ◀ prev / next ▶ buttons. Hover for details.")
        view_sel = gr.Radio([VIEW_MAIN, VIEW_BASE], value=VIEW_MAIN, label="Commit order and draft tree show",
                            elem_id="sv-view-sel")
        with gr.Row(equal_height=False):
            with gr.Column(scale=1):
                gr.Markdown("**Commit order** — position × target pass; colour = decision step; the current "
                            "pass is outlined.")
                order_player = PlotlyPlayer(placeholder="Run a prompt or load a trace to see the commit order.",
                                            elem_id="sv-order")
            with gr.Column(scale=1):
                gr.Markdown("**Speed-up** — cumulative commits vs target passes, drafter run and standard "
                            "decoder; bars: commits per pass.")
                speed_player = PlotlyPlayer(placeholder="Run a prompt or load a trace to see the speed-up.",
                                            elem_id="sv-speedup")
        gr.Markdown("**Draft tree of each pass** — nodes `position:token`; green: the accepted path; grey: "
                    "rejected branches; ★: the bonus decision (the target's own decision where the walk stopped).")
        tree_player = PlotlyPlayer(placeholder="Run a prompt with a drafter, or load a trace, to see the draft trees.",
                                   elem_id="sv-tree")
        with gr.Accordion("Replay and share", open=True):
            with gr.Row(equal_height=False):
                files_out = gr.File(label="Download this run's traces (JSON)", file_count="multiple",
                                    interactive=False, elem_id="sv-download")
                upload = gr.File(label="Replay: upload trace file(s) (.json; add the standard run's trace to "
                                       "compare)", file_count="multiple", file_types=[".json"], type="filepath",
                                 elem_id="sv-upload")
                with gr.Column():
                    example_dd = gr.Dropdown(example_titles, value=example_titles[0] if example_titles else None,
                                             label="Example traces (shipped)", elem_id="sv-example")
                    example_btn = gr.Button("Load example", elem_id="sv-load-example")
        state = gr.State(None)

        outputs = [status, canvas_main, canvas_base, counters, order_player, tree_player, speed_player, files_out,
                   state]
        inputs = [prompt, model, mode, tau, temperature, seed, gen_length, drafter, budget, coupled]
        run_ev = run_btn.click(run, inputs, outputs, api_name="run", show_progress="hidden",
                               concurrency_id="decode")
        stop_btn.click(stop, None, [status], cancels=[run_ev], api_name="stop", queue=False)
        upload.upload(replay, [upload], outputs + [upload], api_name="replay", concurrency_limit=4,
                      concurrency_id="replay", show_progress="minimal")
        example_btn.click(load_example_cb, [example_dd], outputs, api_name="example", concurrency_limit=4,
                          concurrency_id="replay", show_progress="minimal")
        view_sel.change(switch_view, [view_sel, state], [order_player, tree_player], api_name=False,
                        concurrency_limit=4, concurrency_id="replay", show_progress="hidden")
        mode.change(on_mode, [mode, drafter], [tau, drafter], api_name=False, queue=False)
        drafter.change(on_drafter, [drafter, mode], [drafter, mode], api_name=False, queue=False)
        if examples:
            demo.load(load_example_cb, [example_dd], outputs, api_name=False, concurrency_limit=4,
                      concurrency_id="replay", show_progress="hidden")
    demo.queue(default_concurrency_limit=2 if gpu else 1, max_size=32)
    return demo


def launch(demo: gr.Blocks, **kwargs):
    """Launch with the app's CSS and without SSR (SSR has broken custom JS on Spaces)."""
    kwargs.setdefault("ssr_mode", False)
    kwargs.setdefault("css", APP_CSS)
    kwargs.setdefault("show_error", True)
    return demo.launch(**kwargs)

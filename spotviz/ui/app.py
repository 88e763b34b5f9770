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
from ..samplers.common import BUDGETS, MAX_GEN_LENGTH, DecodeError
from ..trace import MAX_TRACE_BYTES, Trace, TraceError
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
# Limits (docs/SECURITY.md). Past MAX_QUEUE waiting events Gradio answers "queue full" (HTTP 503; the browser
# shows "This application is currently busy").
MAX_QUEUE = 32
TEMPERATURE_MAX = 2.0  # the temperature slider's range; the engine accepts up to 10
STATE_SESSIONS = 256  # sessions whose last outputs and traces the server keeps (oldest dropped first)
STATE_TTL_S = 3600  # a session's traces (for the view switch) are dropped an hour after its last update
MAX_UPLOAD_BYTES = 2 * MAX_TRACE_BYTES  # bigger uploads are refused before they are stored
CACHE_CLEANUP = (1800, 3600)  # Gradio's file cache (uploads, downloads): every 30 min, files older than 1 h

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


def _number(name: str, v, whole: bool = False):
    """A finite int/float from the API (never a bool or a string); whole numbers for integer settings."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
        raise DecodeError(f"{name} must be a {'whole ' if whole else ''}number, got {v!r}")
    if whole:
        if isinstance(v, float) and not v.is_integer():
            raise DecodeError(f"{name} must be a whole number, got {v!r}")
        return int(v)
    try:
        return float(v)
    except OverflowError:  # an int too large for a float
        raise DecodeError(f"{name} is out of range (a {len(str(v))}-digit number)") from None


def parse_run_inputs(prompt, model, mode, tau, temperature, seed, gen_length, drafter, budget, coupled, prune=None,
                     *, models: list[str], budgets: list[int], gen_max: int) -> dict:
    """Check the raw values of the run endpoint (the event runs with preprocess=False, so API callers get these
    messages in the status instead of Gradio's component errors) and return the DecodeConfig fields.

    The model must be one of the menu's (nothing else is ever loaded: no arbitrary folders or Hub repos); the
    ranges are the UI's (generation length up to gen_max, budgets from the menu, temperature up to
    TEMPERATURE_MAX); the engine checks the rest (prompt, context, tau)."""
    if prompt is not None and not isinstance(prompt, str):
        raise DecodeError(f"the prompt must be text, got {type(prompt).__name__}")
    if not isinstance(model, str) or model not in models:
        raise DecodeError(f"unknown model {model!r}; choose one of: {', '.join(models)}")
    if mode not in ("exact", "threshold"):
        raise DecodeError(f"mode must be 'exact' or 'threshold', got {mode!r}")
    if drafter not in DRAFTER_ORDER:
        raise DecodeError(f"unknown drafter {drafter!r}; choose one of: {', '.join(DRAFTER_ORDER)}")
    tau = _number("tau (threshold)", tau)
    if not 0.0 < tau <= 1.0:
        raise DecodeError(f"tau (threshold) must be in (0, 1], got {tau:g}")
    temperature = _number("temperature", temperature)
    if not 0.0 <= temperature <= TEMPERATURE_MAX:
        raise DecodeError(f"temperature must be between 0 and {TEMPERATURE_MAX:g}, got {temperature:g}")
    seed = 0 if seed is None else _number("seed", seed, whole=True)
    if not 0 <= seed < 2**63:
        raise DecodeError(f"seed must be between 0 and 2**63-1, got {seed}")
    gen_length = _number("generation length", gen_length, whole=True)
    if not 1 <= gen_length <= gen_max:
        raise DecodeError(f"generation length must be between 1 and {gen_max} tokens, got {gen_length}")
    budget = _number("tree budget", budget, whole=True)
    if budget not in budgets:
        raise DecodeError(f"tree budget must be one of {', '.join(map(str, budgets))}, got {budget}")
    if coupled is None:
        coupled = True
    if not isinstance(coupled, bool):
        raise DecodeError(f"coupled noise must be true or false, got {coupled!r}")
    prune = 0.0 if prune is None else _number("prune threshold", prune)
    if not 0.0 <= prune < 1.0:
        raise DecodeError(f"prune threshold (path probability) must be in [0, 1), got {prune:g}")
    return {"mode": mode, "threshold": tau, "temperature": temperature, "seed": seed, "gen_length": gen_length,
            "drafter": drafter, "budget": budget, "coupled_noise": coupled, "min_path_prob": prune}


def compact_session(demo: gr.Blocks, request: gr.Request | None) -> int:
    """Drop the component copies that Gradio 6.31 leaves in a session after each run; returns how many.

    A skipped output (gr.skip()) makes Gradio construct a new instance of the component for the session; when
    the next update of that output carries a value, the instance is also stored under its own new id, with the
    value, in the session's config. Those ids are not part of the page, nothing reads them, and they piled up
    with every run of a session (about 1 MB per run here). Called at the start of each handler; it only removes
    ids that are not in the app's own config."""
    try:
        session = demo.state_holder.session_data.get(request.session_hash) if request is not None else None
        if session is None:
            return 0
        known = demo.default_config.blocks
        blocks = session.blocks_config.blocks
        stale = [k for k in list(blocks) if k not in known]
        for k in stale:
            blocks.pop(k, None)
            session.config_values.pop(k, None)
        return len(stale)
    except Exception:  # noqa: BLE001 - Gradio internals: never let the workaround break a request
        return 0


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
    """Trace downloads: JSON files in per-run subfolders of one temporary folder; files older than
    `max_age_s` (and the subfolders they leave empty) are removed whenever new ones are written."""

    def __init__(self, folder: str | Path | None = None, max_age_s: float = 3600):
        self.folder = Path(folder) if folder else Path(tempfile.gettempdir()) / "spotviz-traces"
        self.max_age_s = max_age_s

    def cleanup(self) -> None:
        now = time.time()
        for old in list(self.folder.glob("*.json")) + list(self.folder.glob("*/*.json")):
            try:
                if now - old.stat().st_mtime > self.max_age_s:
                    old.unlink()
            except OSError:
                pass
        for sub in self.folder.iterdir():
            try:  # only old subfolders: a new one may be about to receive its files
                if sub.is_dir() and now - sub.stat().st_mtime > self.max_age_s and not any(sub.iterdir()):
                    sub.rmdir()
            except OSError:
                pass

    def write(self, traces: list[Trace]) -> list[str]:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.cleanup()
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
              gpu: bool | None = None, check_model: bool = True, max_queue: int = MAX_QUEUE,
              concurrency: int | None = None) -> gr.Blocks:
    """The Gradio Blocks app.

    loader: name -> target (default spotviz.registry.load_target); models: the model dropdown (default: the
    embedded models, $SPOTVIZ_MODEL first if set, and the published DLMs when a GPU is present);
    trace_dir: the example traces (default assets/traces); gpu: override device detection for the defaults;
    max_queue: the waiting line (Gradio's queue max_size); concurrency: decodes at a time (default 1 on a CPU,
    2 on a GPU). If the default model cannot be loaded, the first other model of the menu that loads (the
    embedded default first; never a published one) becomes the default, and the banner says so."""
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
    gen_limit = min(gen_max, MAX_GEN_LENGTH)
    budget_default = 32 if gpu else 16
    budgets = [b for b in BUDGETS if b >= 2]

    if check_model:
        try:
            banner = _status("Model ready: " + store.describe(default_model), "ok")
        except Exception as e:  # noqa: BLE001 - any load problem is shown, the app still starts
            problem = f"The model {default_model!r} is not available: {e}."
            banner = _status(problem + " You can still replay the example traces and trace files below.", "err")
            from ..targets.published import PUBLISHED

            fallbacks = sorted((m for m in models if m != default_model and m not in PUBLISHED),
                               key=lambda m: (m != DEFAULT_MODEL, m not in EMBEDDED))
            for fb in fallbacks:
                try:
                    ready = store.describe(fb)
                except Exception:  # noqa: BLE001 - try the next one
                    continue
                banner = _status_html([(problem, "err"), (f"Using {fb} instead. Model ready: {ready}", "ok")])
                default_model = fb
                break
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

    def run(prompt, model, mode, tau, temperature, seed, gen_length, drafter, budget, coupled, prune=None,
            request: gr.Request = None):
        skip = gr.skip()
        compact_session(demo, request)
        try:  # raw values (preprocess=False): checked here, so every bad input gets a message in the status
            cfg = parse_run_inputs(prompt, model, mode, tau, temperature, seed, gen_length, drafter, budget,
                                   coupled, prune, models=models, budgets=budgets, gen_max=gen_limit)
        except DecodeError as e:
            yield [_status(f"Cannot run: {e}", "err")] + [skip] * 8
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
        if shown.meta.prompt_truncated:
            final.append(("The prompt was longer than the context allows: its beginning was dropped "
                          f"(kept its last {len(shown.meta.prompt_tokens)} tokens).", "info"))
        failed = next((m for m, k in notes if k == "err"), "the drafter run did not finish")
        yield render(main_t, base_t, final, main_note=failed)

    def replay(paths, request: gr.Request = None):
        """Replay uploaded trace file(s); the upload box is cleared so the next upload starts afresh."""
        skip = gr.skip()
        compact_session(demo, request)
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

    def load_example_cb(title, request: gr.Request = None):
        skip = gr.skip()
        compact_session(demo, request)
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
    with gr.Blocks(title="spotviz — SPOT speculative decoding for diffusion LMs", delete_cache=CACHE_CLEANUP) as demo:
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
                gen_length = gr.Slider(8, gen_limit, value=gen_default, step=8,
                                       label="Generation length (tokens)", elem_id="sv-gen-length")
                with gr.Accordion("Advanced", open=False):
                    coupled = gr.Checkbox(value=True, label="Coupled noise (the drafter shares the target's "
                                                           "Gumbel noise; off = ablation at T > 0)")
                    prune = gr.Slider(0.0, 0.9, value=0.0, step=0.05, elem_id="sv-prune",
                                      label="Prune draft nodes below this path probability",
                                      info="0 fills the budget every pass; higher values verify fewer, likelier "
                                           "states (cheaper passes on a CPU)")
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
        state = gr.State(None, time_to_live=STATE_TTL_S)

        outputs = [status, canvas_main, canvas_base, counters, order_player, tree_player, speed_player, files_out,
                   state]
        inputs = [prompt, model, mode, tau, temperature, seed, gen_length, drafter, budget, coupled, prune]
        run_ev = run_btn.click(run, inputs, outputs, api_name="run", show_progress="hidden",
                               concurrency_id="decode", preprocess=False)
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
    demo.queue(default_concurrency_limit=concurrency or (2 if gpu else 1), max_size=max_queue)
    return demo


def launch(demo: gr.Blocks, **kwargs):
    """Launch with the app's CSS and without SSR (SSR has broken custom JS on Spaces), and the limits of
    docs/SECURITY.md (upload size, sessions kept in memory)."""
    kwargs.setdefault("ssr_mode", False)
    kwargs.setdefault("max_file_size", MAX_UPLOAD_BYTES)
    kwargs.setdefault("state_session_capacity", STATE_SESSIONS)
    kwargs.setdefault("css", APP_CSS)
    kwargs.setdefault("show_error", True)
    return demo.launch(**kwargs)

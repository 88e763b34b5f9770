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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import gradio as gr

from ..engine import DRAFTERS
from ..registry import DEFAULT_MODEL, EMBEDDED
from ..samplers.common import AUTO, BUDGETS, MAX_GEN_LENGTH, DecodeConfig, DecodeError, Limits
from ..trace import MAX_TRACE_BYTES, Trace, TraceError
from ..views.common import esc
from ..views.timeline import timeline
from .examples import list_examples, load_example, pair_traces
from .explainer import Explainer
from .runner import ModelStore, decode_events, has_gpu, register_store
from .session import LiveSession

PROMPT_EXAMPLES = ["ROMEO.\n", "HAMLET.\nTo be", "KING LEAR.\n", "JULIET.\nO Romeo,", "MACBETH.\nIs this a"]
CODE_PROMPTS = ["def fibonacci(n):\n", "def is_prime(n):\n    \"\"\"", "class Stack:\n", "def quicksort(items):\n",
                "import os\n\n\ndef main():\n"]


def prompts_for(model: str) -> list[str]:
    """Prompts to try with `model`: code for a code model (its name says python or code), else play text."""
    name = str(model).lower()
    return CODE_PROMPTS if "python" in name or "code" in name else PROMPT_EXAMPLES
DRAFTER_ORDER = [d for d in ("spot", "spot-sets", "training-free", "calibrated", "none") if d in DRAFTERS]
DRAFTER_HELP = {
    "spot": "SPOT: the learned drafter predicts the commit order (exact mode)",
    "spot-sets": "SPOT-Sets: drafts whole commit sets (threshold mode)",
    "training-free": "baseline: order by the stale confidence of the previous pass",
    "calibrated": "baseline: a static draft-graph template calibrated offline",
    "none": "the standard decoder (one decision per pass)",
}
# Limits (docs/SECURITY.md). Past MAX_QUEUE waiting events Gradio answers "queue full" (HTTP 503; the browser
# shows "This application is currently busy").
MAX_QUEUE = 32
TEMPERATURE_MAX = 2.0  # the temperature slider's range (the library's limit, samplers.common.MAX_TEMPERATURE, is higher)
STATE_SESSIONS = 256  # sessions whose last outputs and traces the server keeps (oldest dropped first)
STATE_TTL_S = 3600  # a session's shown-run settings (for "Run this yourself") are dropped after an hour
MAX_UPLOAD_BYTES = 2 * MAX_TRACE_BYTES  # bigger uploads are refused before they are stored
CACHE_CLEANUP = (1800, 3600)  # Gradio's file cache (uploads, downloads): every 30 min, files older than 1 h

HEADER = """
<div class="sv-header"><b>spotviz</b> <span>lossless speculative decoding for diffusion language models: a small
drafter guesses which slots the model will fill next, and one model pass checks all the guesses at once.</span></div>
"""

APP_CSS = """
.sv-header { font-size: 14px; color: var(--body-text-color-subdued, #666); }
.sv-header b { font-size: 22px; color: var(--body-text-color, #222); margin-right: 8px; }
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
                     *, models: list[str], budgets: list, gen_max: int) -> DecodeConfig:
    """The run's DecodeConfig from the raw values of the run endpoint (the event runs with preprocess=False, so
    API callers get these messages in the status instead of Gradio's component errors).

    Here only what the API can send that the UI cannot: a model outside the menu (nothing else is ever loaded:
    no arbitrary folders or Hub repos) and values of the wrong type (numbers as text, fractions for whole
    numbers). The ranges are checked by DecodeConfig's one validator when it is made, with the UI's limits
    (generation length up to gen_max, the menu's budgets and drafters, temperature up to TEMPERATURE_MAX); the
    engine checks the prompt and the context."""
    if prompt is not None and not isinstance(prompt, str):
        raise DecodeError(f"the prompt must be text, got {type(prompt).__name__}")
    if not isinstance(model, str) or model not in models:
        raise DecodeError(f"unknown model {model!r}; choose one of: {', '.join(models)}")
    limits = Limits(gen_max=gen_max, temperature_max=TEMPERATURE_MAX,
                    budgets=tuple(b for b in budgets if b != AUTO), drafters=tuple(DRAFTER_ORDER))
    return DecodeConfig(mode=mode, threshold=_number("tau (threshold)", tau),
                        temperature=_number("temperature", temperature),
                        seed=0 if seed is None else _number("seed", seed, whole=True),
                        gen_length=_number("generation length", gen_length, whole=True), drafter=drafter,
                        budget=budget if budget == AUTO else _number("tree budget", budget, whole=True),
                        coupled_noise=True if coupled is None else coupled,
                        min_path_prob=0.0 if prune is None else _number("prune threshold", prune), limits=limits)


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


class TraceFiles:
    """Run downloads in per-run subfolders of one temporary folder: the traces (JSON) and a page of the run's
    animated Plotly figures (views/report.py, plotly.js linked from its CDN); files older than `max_age_s` (and the
    subfolders they leave empty) are removed whenever new ones are written."""

    def __init__(self, folder: str | Path | None = None, max_age_s: float = 3600):
        self.folder = Path(folder) if folder else Path(tempfile.gettempdir()) / "spotviz-traces"
        self.max_age_s = max_age_s

    def cleanup(self) -> None:
        now = time.time()
        for old in [p for p in list(self.folder.glob("*")) + list(self.folder.glob("*/*")) if p.is_file()]:
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

    def write(self, traces: list[Trace], page: bool = False) -> list[str]:
        """Save the traces; with `page`, also the run's figures page (for a live run; examples and replays skip
        it, so showing them costs no rendering)."""
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
        if page and traces:  # the first trace is the run shown; a second one is its standard run
            from ..views.report import report_html

            page = Path(paths[0]).with_suffix(".html")
            page.write_text(report_html(traces[0], traces[1] if len(traces) > 1 else None, plotlyjs="cdn"),
                            encoding="utf-8")
            paths.append(str(page))
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


CONTROLS = ("prompt", "model", "mode", "tau", "temperature", "seed", "gen_length", "drafter", "budget", "coupled",
            "prune")  # the run's inputs, in the order of the /run endpoint
RUN_OUTPUTS = ("status", "explainer", "files")
SHOW_OUTPUTS = RUN_OUTPUTS + ("shown",) + CONTROLS  # an example or a replay also sets the controls
GEN_STEP = 8

LAYOUT_CSS = """
#sv-main-row { align-items: flex-start; }
#sv-head-line h1 { margin: 0; font-size: 22px; }
#sv-run-row { gap: 8px; }
#sv-explainer .html-container { padding-top: 2px; }
@media (max-width: 760px) {
  #sv-main-row { flex-direction: column; flex-wrap: nowrap; }
  #sv-controls { display: contents; }
  #sv-prompt, #sv-run-row, #sv-run-this { order: 1; }
  #sv-out { order: 2; width: 100%; min-width: 0 !important; }
  #sv-settings, #sv-replay { order: 3; width: 100%; }
  #sv-explainer .html-container { padding-left: 2px; padding-right: 2px; }
  #sv-out, #sv-explainer { padding-left: 0 !important; padding-right: 0 !important; }
}
"""
# outside Gradio's scoped CSS (launch css is prefixed with the app container): the page margins on a phone
PAGE_HEAD = ("<style>@media (max-width: 760px) { .app.fillable { padding-left: 6px !important; "
             "padding-right: 6px !important; } }</style>")


@dataclass
class Outputs:
    """Every output an event can set; unset ones are skipped. `values(names)` lines them up with components."""

    status: object = field(default_factory=gr.skip)
    explainer: object = field(default_factory=gr.skip)
    files: object = field(default_factory=gr.skip)
    shown: object = field(default_factory=gr.skip)
    controls: dict = field(default_factory=dict)  # control name -> value or gr.update

    def values(self, names: tuple[str, ...]) -> list:
        return [getattr(self, n) if hasattr(self, n) and n != "controls" else self.controls.get(n, gr.skip())
                for n in names]


@dataclass
class AppContext:
    """What the handlers need: the model store, the menus and limits, the example traces, the download folder."""

    store: ModelStore
    store_key: int
    models: list[str]
    default_model: str
    budgets: list
    gen_limit: int
    examples: list[dict]
    files: TraceFiles
    demo: gr.Blocks | None = None

    def gen_cap(self, model: str, prompt: str) -> int:
        """The longest generation the model's context leaves room for after `prompt` (and the app's limit)."""
        try:
            target = self.store.get(model)
            n_prompt = len(target.encode(prompt)) if isinstance(prompt, str) and prompt.strip() else 1
            room = int(target.info.max_length) - max(n_prompt, 1)
        except Exception:  # noqa: BLE001 - an unknown or broken model: keep the app's limit
            return self.gen_limit
        return max(1, min(self.gen_limit, room))


def controls_of(trace: Trace, ctx: AppContext) -> dict:
    """The control values that reproduce `trace` (models or budgets the menus lack are left as they are)."""
    m = trace.meta
    model = m.model if m.model in ctx.models else ctx.default_model
    cap = ctx.gen_cap(model, m.prompt)  # the recorded length, if the model that will run has room for it
    top = max(GEN_STEP, cap - cap % GEN_STEP) if cap >= GEN_STEP else cap
    out = {"prompt": m.prompt, "mode": m.mode, "tau": m.threshold, "temperature": min(m.temperature, TEMPERATURE_MAX),
           "seed": m.seed, "gen_length": gr.update(value=min(m.gen_length, top), maximum=top),
           "drafter": m.drafter if m.drafter in DRAFTER_ORDER else gr.skip(), "coupled": m.coupled_noise,
           "prune": m.min_path_prob}
    out["model"] = m.model if m.model in ctx.models else gr.skip()
    budget = AUTO if m.budget_auto else m.budget
    out["budget"] = budget if budget in ctx.budgets else gr.skip()
    out["tau"] = gr.update(value=m.threshold, visible=m.mode == "threshold")
    return out


class Handlers:
    """The app's event handlers over one AppContext."""

    def __init__(self, ctx: AppContext):
        self.ctx = ctx

    # ---------------------------------------------------------------------------------------- run / stop
    def run(self, prompt, model, mode, tau, temperature, seed, gen_length, drafter, budget, coupled, prune=None,
            request: gr.Request = None):
        ctx = self.ctx
        compact_session(ctx.demo, request)
        try:  # raw values (preprocess=False): checked here, so every bad input gets a message in the status
            cfg = parse_run_inputs(prompt, model, mode, tau, temperature, seed, gen_length, drafter, budget,
                                   coupled, prune, models=ctx.models, budgets=ctx.budgets, gen_max=ctx.gen_limit)
        except DecodeError as e:
            yield Outputs(status=_status(f"Cannot run: {e}", "err")).values(RUN_OUTPUTS)
            return
        session = LiveSession()
        what = "the standard decoder" if drafter == "none" else f"drafter {drafter}, then the standard decoder"
        # the views change with the first run's start: a run refused before it starts leaves them as they were
        yield Outputs(status=_status(f"Decoding {cfg.gen_length} tokens with {model}: {what}…"),
                      files=None).values(RUN_OUTPUTS)
        for ev in decode_events(ctx.store_key, model, prompt, cfg, True):
            session.event(ev)
            if ev["type"] == "error" and (ev["where"] in ("input", "model") or drafter == "none"):
                break
            if ev["type"] in ("start", "done") or session.due():
                yield Outputs(explainer=session.text).values(RUN_OUTPUTS)
        final = session.finish()
        traces = [t for t in (session.main, session.base) if t is not None]
        kind = "ok" if traces and not any(k == "err" for _, k in session.notes) else "err"
        if not traces:
            final = "Cannot run: " + final.removeprefix("Cannot run: ")
        started = bool(session.passes)  # a run's start event arrived (its header is on screen)
        yield Outputs(status=_status(final if final.endswith(".") else final + ".", kind),
                      explainer=session.text if started else gr.skip(),
                      files=ctx.files.write(traces, page=True) if traces else None).values(RUN_OUTPUTS)

    @staticmethod
    def stop():
        return _status("Stopped. The views show the passes decoded before Stop; Run starts over.", "info")

    # ------------------------------------------------------------------------------------ example / replay
    def show(self, main: Trace, base: Trace | None, message: str, source: str, play: bool = False) -> list:
        ctx = self.ctx
        return Outputs(status=_status(message, "ok"),
                       explainer=timeline(main, base, session=uuid.uuid4().hex[:10], play=play, source=source),
                       files=ctx.files.write([t for t in (main, base) if t is not None]),
                       shown={"main": main.meta.__dict__.copy()}, controls=controls_of(main, ctx)).values(SHOW_OUTPUTS)

    def replay(self, paths, request: gr.Request = None):
        """Replay uploaded trace file(s); the upload box is cleared so the next upload starts afresh."""
        compact_session(self.ctx.demo, request)
        if not paths:
            return Outputs().values(SHOW_OUTPUTS) + [gr.skip()]
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
            msg = str(e)
            if "codec can't decode" in msg or "invalid start byte" in msg:
                msg = "this is not a spotviz trace (the file is not JSON text)"
            return Outputs(status=_status(f"Cannot replay {name}: {msg}", "err")).values(SHOW_OUTPUTS) + [None]
        what = "Replaying " + (f"{main.meta.drafter} run" if main.meta.drafter != "none" else "a standard run")
        what += " with its standard-decoder comparison" if base else ""
        msg = (f"{what} (no model needed): {main.meta.model}, seed {main.meta.seed}. The controls now hold its "
               "settings: Run decodes it again live.")
        return self.show(main, base, msg, "replay") + [None]

    def example(self, title, request: gr.Request = None):
        compact_session(self.ctx.demo, request)
        entry = next((e for e in self.ctx.examples if e["title"] == title), None)
        if entry is None:
            return Outputs(status=_status("No example traces are shipped in this build.", "info")).values(SHOW_OUTPUTS)
        try:
            main, base = load_example(entry)
        except TraceError as e:
            return Outputs(status=_status(f"Cannot load the example {title!r}: {e}", "err")).values(SHOW_OUTPUTS)
        return self.show(main, base, f"Recorded example (replayed without a model): {title}. “Run this example "
                                     "yourself” decodes it live.", "example", play=True)

    def first_example(self, request: gr.Request = None):
        """The page opens on the first example, playing by itself."""
        if not self.ctx.examples:
            return Outputs().values(SHOW_OUTPUTS)
        return self.example(self.ctx.examples[0]["title"], request)

    # --------------------------------------------------------------------------------------------- controls
    def fill(self, shown):
        """"Run this yourself": the controls of the run on screen (an example or a replay)."""
        meta = (shown or {}).get("main") if isinstance(shown, dict) else None
        if not meta:
            return [gr.skip()] * len(CONTROLS)
        from ..trace import RunMeta

        try:
            trace_meta = RunMeta(**meta)
        except TypeError:
            return [gr.skip()] * len(CONTROLS)
        holder = Trace(meta=trace_meta, passes=[], tokens=[], text="", counters=None)  # type: ignore[arg-type]
        c = controls_of(holder, self.ctx)
        return [c.get(n, gr.skip()) for n in CONTROLS]

    def cap_length(self, prompt, model, gen_length):
        """The length slider's maximum: the context minus the prompt (and at most the app's limit)."""
        cap = self.ctx.gen_cap(model, prompt)
        top = max(GEN_STEP, cap - cap % GEN_STEP) if cap >= GEN_STEP else cap
        value = gen_length if isinstance(gen_length, (int, float)) and gen_length <= top else top
        return gr.update(maximum=top, value=value)

    @staticmethod
    def on_mode(mode, drafter):
        fix = gr.skip()
        if mode == "threshold" and drafter == "spot":
            fix = gr.update(value="spot-sets")
        elif mode == "exact" and drafter == "spot-sets":
            fix = gr.update(value="spot")
        return gr.update(visible=mode == "threshold"), fix

    @staticmethod
    def on_drafter(drafter, mode):
        info = gr.update(info=DRAFTER_HELP.get(drafter, ""))
        budget = gr.update(interactive=drafter != "none")
        if drafter == "spot" and mode != "exact":
            return info, gr.update(value="exact"), budget
        if drafter == "spot-sets" and mode != "threshold":
            return info, gr.update(value="threshold"), budget
        return info, gr.skip(), budget


def _banner(store: ModelStore, models: list[str], default_model: str, check_model: bool) -> tuple[str, str]:
    """The model banner and the default model (the first other model that loads if the default does not)."""
    if not check_model:
        return _status(f"Model {default_model} loads on the first run.", "info"), default_model
    try:
        return _status("Model ready: " + store.describe(default_model), "ok"), default_model
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
            return _status_html([(problem, "err"), (f"Using {fb} instead. Model ready: {ready}", "ok")]), fb
        return banner, default_model


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
    gen_default, gen_max = (128, 512) if gpu else (64, 256)
    budgets = [AUTO] + [b for b in BUDGETS if b >= 2]
    banner, default_model = _banner(store, models, default_model, check_model)
    ctx = AppContext(store=store, store_key=register_store(store), models=models, default_model=default_model,
                     budgets=budgets, gen_limit=min(gen_max, MAX_GEN_LENGTH), examples=list_examples(trace_dir),
                     files=TraceFiles())
    h = Handlers(ctx)
    example_titles = [e["title"] for e in ctx.examples]
    first_prompt = prompts_for(default_model)[0]
    gen_top = ctx.gen_cap(default_model, first_prompt) if check_model else ctx.gen_limit
    gen_top = max(GEN_STEP, gen_top - gen_top % GEN_STEP)

    with gr.Blocks(title="spotviz — SPOT speculative decoding for diffusion LMs", delete_cache=CACHE_CLEANUP,
                   analytics_enabled=False) as demo:
        ctx.demo = demo
        gr.HTML(HEADER, js_on_load=None, elem_id="sv-head-line")
        with gr.Row(equal_height=False, elem_id="sv-main-row"):
            with gr.Column(scale=1, min_width=290, elem_id="sv-controls"):
                prompt = gr.Textbox(label="Prompt", value=first_prompt, lines=3, max_lines=12,
                                    elem_id="sv-prompt")
                with gr.Row(elem_id="sv-run-row"):
                    run_btn = gr.Button("Run", variant="primary", elem_id="sv-run", min_width=80)
                    stop_btn = gr.Button("Stop", variant="stop", elem_id="sv-stop", min_width=80)
                run_this = gr.Button("Run this example yourself", size="sm", elem_id="sv-run-this")
                with gr.Accordion("Settings", open=True, elem_id="sv-settings"):
                    drafter = gr.Dropdown(DRAFTER_ORDER, value="spot" if "spot" in DRAFTER_ORDER else "none",
                                          label="Drafter", info=DRAFTER_HELP.get("spot", ""), elem_id="sv-drafter")
                    gen_length = gr.Slider(GEN_STEP, gen_top, value=min(gen_default, gen_top), step=GEN_STEP,
                                           label="Generation length (tokens)", elem_id="sv-gen-length",
                                           info="at most the model's context minus the prompt")
                    budget = gr.Dropdown(budgets, value=AUTO, elem_id="sv-budget",
                                         label="Tree budget (states checked per pass)",
                                         info="auto: chosen per pass from the model's measured cost per state")
                    mode = gr.Radio(["exact", "threshold"], value="exact", label="Decoding mode",
                                    info="exact: one decision per pass; threshold: every slot with confidence ≥ tau",
                                    elem_id="sv-mode")
                    tau = gr.Slider(0.05, 1.0, value=0.9, step=0.01, label="tau (threshold)", visible=False,
                                    elem_id="sv-tau")
                    temperature = gr.Slider(0.0, TEMPERATURE_MAX, value=0.0, step=0.05, label="Temperature",
                                            elem_id="sv-temperature")
                    seed = gr.Number(value=0, precision=0, minimum=0, label="Seed", elem_id="sv-seed")
                    model = gr.Dropdown(models, value=default_model, label="Model", elem_id="sv-model",
                                        allow_custom_value=False)
                    gr.HTML(banner, js_on_load=None, css_template=APP_CSS, elem_id="sv-model-banner")
                    with gr.Accordion("Advanced", open=False):
                        coupled = gr.Checkbox(value=True, label="Coupled noise (the drafter shares the target's "
                                                               "Gumbel noise; off = ablation at T > 0)")
                        prune = gr.Slider(0.0, 0.9, value=0.0, step=0.05, elem_id="sv-prune",
                                          label="Prune draft nodes below this path probability",
                                          info="0 fills the budget every pass; higher values verify fewer, likelier "
                                               "states (cheaper passes on a CPU)")
                with gr.Accordion("Examples, replay and share", open=False, elem_id="sv-replay"):
                    example_dd = gr.Dropdown(example_titles, value=example_titles[0] if example_titles else None,
                                             label="Recorded examples", elem_id="sv-example")
                    example_btn = gr.Button("Show this example", size="sm", elem_id="sv-load-example")
                    prompt_pick = gr.Dropdown(prompts_for(default_model), value=None, label="Prompts to try",
                                              elem_id="sv-prompt-pick")
                    upload = gr.File(label="Replay trace file(s) (.json; add the standard run's trace to compare)",
                                     file_count="multiple", file_types=[".json"], type="filepath",
                                     elem_id="sv-upload")
                    files_out = gr.File(label="This run's traces (JSON) and animated figures (HTML)", file_count="multiple",
                                        interactive=False, elem_id="sv-download")
            with gr.Column(scale=3, min_width=320, elem_id="sv-out"):
                status = gr.HTML(_status("Loading the example…" if ctx.examples else
                                         "Type a prompt and press Run."), js_on_load=None, css_template=APP_CSS,
                                 elem_id="sv-status")
                explainer = Explainer(elem_id="sv-explainer")
        shown = gr.State(None, time_to_live=STATE_TTL_S)

        ui = {"status": status, "explainer": explainer, "files": files_out, "shown": shown, "prompt": prompt,
              "model": model, "mode": mode, "tau": tau, "temperature": temperature, "seed": seed,
              "gen_length": gen_length, "drafter": drafter, "budget": budget, "coupled": coupled, "prune": prune}
        outs = lambda names: [ui[n] for n in names]  # noqa: E731
        inputs = outs(CONTROLS)
        run_ev = run_btn.click(h.run, inputs, outs(RUN_OUTPUTS), api_name="run", show_progress="hidden",
                               concurrency_id="decode", preprocess=False,
                               js="(...a) => { window.__svStart && window.__svStart(); return a; }")
        stop_btn.click(h.stop, None, [status], cancels=[run_ev], api_name="stop", queue=False,
                       js="() => { window.__svStop && window.__svStop(); }")
        run_this.click(h.fill, [shown], inputs, api_name=False, queue=False).then(
            h.run, inputs, outs(RUN_OUTPUTS), api_name=False, show_progress="hidden", concurrency_id="decode",
            preprocess=False, js="(...a) => { window.__svStart && window.__svStart(); return a; }")
        upload.upload(h.replay, [upload], outs(SHOW_OUTPUTS) + [upload], api_name="replay", concurrency_limit=4,
                      concurrency_id="replay", show_progress="minimal")
        example_btn.click(h.example, [example_dd], outs(SHOW_OUTPUTS), api_name="example", concurrency_limit=4,
                          concurrency_id="replay", show_progress="hidden")
        mode.change(h.on_mode, [mode, drafter], [tau, drafter], api_name=False, queue=False)
        drafter.change(h.on_drafter, [drafter, mode], [drafter, mode, budget], api_name=False, queue=False)
        prompt_pick.input(lambda p: p if p else gr.skip(), [prompt_pick], [prompt], api_name=False, queue=False).then(
            h.cap_length, [prompt, model, gen_length], [gen_length], api_name=False, queue=False)
        model.change(lambda m: gr.update(choices=prompts_for(m), value=None), [model], [prompt_pick], api_name=False,
                     queue=False)
        for src in (prompt.blur, model.change):
            src(h.cap_length, [prompt, model, gen_length], [gen_length], api_name=False, queue=False)
        if ctx.examples:
            demo.load(h.first_example, None, outs(SHOW_OUTPUTS), api_name=False, concurrency_limit=4,
                      concurrency_id="replay", show_progress="hidden")
    demo.queue(default_concurrency_limit=concurrency or (2 if gpu else 1), max_size=max_queue)
    return demo


def launch(demo: gr.Blocks, **kwargs):
    """Launch with the app's CSS and without SSR (SSR has broken custom JS on Spaces), and the limits of
    docs/SECURITY.md (upload size, sessions kept in memory)."""
    kwargs.setdefault("ssr_mode", False)
    kwargs.setdefault("max_file_size", MAX_UPLOAD_BYTES)
    kwargs.setdefault("state_session_capacity", STATE_SESSIONS)
    kwargs.setdefault("css", APP_CSS + LAYOUT_CSS)
    kwargs.setdefault("head", PAGE_HEAD)
    kwargs.setdefault("show_error", True)
    return demo.launch(**kwargs)

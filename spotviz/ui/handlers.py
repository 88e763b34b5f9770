"""The app's event handlers: Run (a live decode streamed as a timeline), Stop, examples and replays, and the
controls that follow each other (mode and drafter, model and prompt, prompt and length).

Handlers receive the run's settings once, as a validated DecodeConfig (inputs.parse_run_inputs), and pass that
object on (runner, session, downloads)."""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path

import gradio as gr

from ..drafter.registry import PROPOSERS, learned_drafter
from ..registry import DEFAULT_MODEL, EMBEDDED
from ..samplers.config import DecodeError, longest_generation
from ..trace import Trace, TraceError
from ..views.common import esc
from ..views.headline import drafter_name
from ..views.timeline import timeline
from .examples import load_example
from .files import TraceFiles, load_uploads
from .inputs import AUTO, GEN_STEP, LARGER_TREES, MODEL_ABOUT, STRICTER_TAU, TAU_INFO, TEMPERATURE_INFO, \
    TEMPERATURE_MAX, drafter_help, drafter_order, parse_run_inputs, plan_run, prompt_info, prompts_for
from .comparison import RunsBefore
from .runner import ModelStore, decode_events
from .session import LiveSession

CONTROLS = ("prompt", "model", "mode", "tau", "temperature", "seed", "gen_length", "drafter", "budget", "coupled",
            "prune", "race")  # the run's inputs, in the order of the /run endpoint
# larger, stricter: the hidden buttons that run it again with larger trees / a stricter tau (available or not)
RUN_OUTPUTS = ("status", "explainer", "files", "larger", "stricter")
FILL_OUTPUTS = CONTROLS + ("wanted_length",)  # "Run this yourself" sets the controls before the run reads them
# an example or a replay sets the controls, and the model's banner and prompt menu with them
SHOW_OUTPUTS = RUN_OUTPUTS + ("shown",) + CONTROLS + ("wanted_length", "model_banner", "prompt_pick")


GEN_INFO = "at most the model's context minus the prompt"
BUDGET_INFO = ("auto: sized per pass from this machine's measured cost per state and live timings, so the passes can "
               "differ a little between runs (the text never)")


def status_html(message: str, kind: str = "info", action: str = "", target: str = "#sv-larger",
                run_this: str = "") -> str:
    """The status line; action: the label of a button at its end that presses a hidden button (target: the
    larger-trees or the stricter-tau one), so the offer and the button to take it are one line, wherever the page
    has put the controls (PAGE_HEAD's click). run_this: a sentence about "Run this example yourself", which goes
    with the button when the visitor types a prompt of their own (layout.OWN_PROMPT_JS)."""
    act = (f' <button type="button" class="sv-act" data-sv-click="{esc(target)}">{esc(action)}</button>'
           if action else "")
    own = f' <span class="sv-run-this-note">{esc(run_this)}</span>' if run_this else ""
    return f'<div class="sv-status {kind}">{esc(message)}{own}{act}</div>'


def measuring_text(model: str, decoding: str) -> str:
    """The status while the model's cost curve (budget auto's) is measured before the first pass."""
    return (f"{decoding.removesuffix('…')}. First it times a pass of {model} over 1, 2, 4, … states, once (later "
            f"runs reuse it): tree budget auto sizes each tree by that cost. Seconds for an embedded model, a minute "
            f"or more for a large one…")


def statuses_html(parts: list[tuple[str, str]]) -> str:
    return "".join(status_html(m, k) for m, k in parts)


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


@dataclass
class Outputs:
    """Every output an event can set; unset ones are skipped. `values(names)` lines them up with components."""

    status: object = field(default_factory=gr.skip)
    explainer: object = field(default_factory=gr.skip)
    files: object = field(default_factory=gr.skip)
    larger: object = field(default_factory=gr.skip)
    stricter: object = field(default_factory=gr.skip)
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
    runs_before: RunsBefore = field(default_factory=RunsBefore)  # each page's last finished run, compared with its next
    drafters: list = field(default_factory=drafter_order)  # the Drafter menu, as the registry was when the app was
    # built
    demo: gr.Blocks | None = None
    _example_headers: list | None = field(default=None, repr=False)

    def gen_cap(self, model: str, prompt: str) -> int:
        """The longest generation the model's context leaves room for after `prompt` (and the app's limit):
        samplers/config.longest_generation (a prompt too long loses its beginning, and the run says so). A
        published model not loaded yet is not loaded for this (a replay needs none, and it takes minutes; its
        context is long): the app's limit until its first Run loads it. An embedded model (a second to load, a
        short context) is."""
        from ..registry import is_embedded

        if not self.store.loaded(model) and not is_embedded(model):
            return self.gen_limit
        try:
            return max(GEN_STEP, longest_generation(self.store.get(model), prompt, self.gen_limit))
        except Exception:  # noqa: BLE001 - an unknown or broken model: keep the app's limit
            return self.gen_limit

    def example_headers(self) -> list[tuple[str, str, str]]:
        """(title, prompt, model) of every recorded example (read once from the traces' headers)."""
        if self._example_headers is None:
            found = []
            for e in self.examples:
                try:
                    meta = json.loads(Path(e["main"]).read_text(encoding="utf-8"))["meta"]
                    found.append((e["title"], str(meta["prompt"]), str(meta["model"])))
                except (OSError, ValueError, KeyError, TypeError):
                    continue
            self._example_headers = found
        return self._example_headers

    def example_prompts(self) -> dict[str, str]:
        """The recorded examples' prompts and their models."""
        return {prompt: model for _, prompt, model in self.example_headers()}

    def gen_top(self, model: str, prompt: str) -> int:
        """The length slider's maximum: gen_cap rounded down to the slider's step, and above the slider's minimum
        (Gradio refuses a slider whose maximum is not above its minimum: the page got HTTP 500)."""
        cap = self.gen_cap(model, prompt)
        return max(2 * GEN_STEP, cap - cap % GEN_STEP)


def sentence(text: str) -> str:
    """`text` ending as a sentence: a full stop added unless it ends with one already (or "...", "…", "?", "!")."""
    return text if text.rstrip().endswith((".", "…", "?", "!")) else text + "."


def controls_of(meta, ctx: AppContext, race: bool = False) -> dict:
    """The control values that reproduce the run of `meta` (models or budgets the menus lack are left as they are)."""
    model = meta.model if meta.model in ctx.models else ctx.default_model
    top = ctx.gen_top(model, meta.prompt)  # the recorded length, if the model that will run has room for it
    # (the prompt's note: the model the menu will show; the slider notes: their usual ones, not a "lowered to")
    out = {"prompt": gr.update(value=meta.prompt, info=prompt_info(meta.model)) if meta.model in ctx.models
           else gr.update(value=meta.prompt), "mode": meta.mode,
           "temperature": gr.update(value=min(meta.temperature, TEMPERATURE_MAX), info=TEMPERATURE_INFO),
           "seed": meta.seed, "gen_length": gr.update(value=min(meta.gen_length, top), maximum=top, info=GEN_INFO),
           "wanted_length": meta.gen_length,
           "drafter": meta.drafter if meta.drafter in ctx.drafters else gr.skip(), "coupled": meta.coupled_noise,
           "prune": meta.min_path_prob, "race": race,
           "model": meta.model if meta.model in ctx.models else gr.skip(),
           # (exact mode never reads tau: an exact run's leaves the slider's as it is)
           "tau": (gr.update(value=meta.threshold, visible=True, info=TAU_INFO) if meta.mode == "threshold"
                   else gr.update(visible=False))}
    budget = AUTO if meta.budget_auto else meta.budget
    # (a fixed budget taken from the run shown says so: it stays for the visitor's later runs, where auto would size
    # trees for this machine; the note goes when they choose a budget themselves)
    out["budget"] = gr.update(value=budget, info=BUDGET_INFO if budget == AUTO else f"{budget}: as the run shown was "
                              f"recorded; {BUDGET_INFO}") if budget in ctx.budgets else gr.skip()
    if meta.model in ctx.models:  # (the menu's model changes: its banner and its prompts to try follow)
        # a replay needs no model, so showing one loads none (a published model takes minutes): the banner of a
        # model not loaded yet says when it will be
        out["model_banner"] = (banner_for(ctx.store, meta.model) if ctx.store.loaded(meta.model) else
                               status_html(f"Model {meta.model}: loaded by its first Run (a replay needs no model).",
                                           "info"))
        out["prompt_pick"] = gr.update(choices=prompts_for(meta.model), value=None)
    return out


def banner_for(store: ModelStore, model: str) -> str:
    try:
        about = store.describe(model)
        plain = f" {model} {MODEL_ABOUT[model]}" if model in MODEL_ABOUT else ""
        return status_html("Model ready: " + (about if about.startswith(model) else f"{model} ({about})") + "." + plain,
                           "ok")
    except Exception as e:  # noqa: BLE001 - any load problem is shown
        return status_html(f"The model {model!r} is not available: {e}. You can still replay the example traces "
                           "and trace files below.", "err")


class Handlers:
    """The app's event handlers over one AppContext."""

    def __init__(self, ctx: AppContext):
        self.ctx = ctx

    # ---------------------------------------------------------------------------------------- run / stop
    def run(self, prompt, model, mode, tau, temperature, seed, gen_length, drafter, budget, coupled, prune=None,
            race=None, request: gr.Request = None):
        """A live decode, streamed as a timeline; its status compares it with the page's last finished run where only
        the tree budget or tau differs (AppContext.runs_before)."""
        ctx = self.ctx
        compact_session(ctx.demo, request)
        try:  # raw values (preprocess=False): checked here, so every bad input gets a message in the status
            cfg = parse_run_inputs(prompt, model, mode, tau, temperature, seed, gen_length, drafter, budget,
                                   coupled, prune, models=ctx.models, budgets=ctx.budgets, gen_max=ctx.gen_limit,
                                   drafter_dirs=ctx.store.drafter_dirs, drafters=ctx.drafters)
            if race is not None and not isinstance(race, bool):
                raise DecodeError(f"race must be true or false, got {race!r}")
        except DecodeError as e:
            yield Outputs(status=status_html(f"Cannot run: {e}", "err")).values(RUN_OUTPUTS)
            return
        top = ctx.gen_top(model, prompt)  # (the slider's maximum: a Run pressed before the prompt's blur capped it
        lowered = cfg.gen_length > top    # would have decoded more than the slider then offers for this prompt)
        if lowered:
            cfg = replace(cfg, gen_length=top)
        plan = plan_run(cfg, bool(race), ctx.drafters)
        if lowered:
            plan = replace(plan, note=plan.note + f". The generation length was lowered to {top}, the most this "
                                                  "model's context leaves after this prompt")
        why_most = ("the longest this app offers" if top >= ctx.gen_limit - GEN_STEP + 1 else
                    "the most this prompt leaves room for (a shorter prompt leaves more)")
        session = LiveSession(plan, longest=(top, why_most))
        names = ", ".join("the standard decoder" if c.drafter == "none" else drafter_name(c.drafter)
                          for _, c in plan.runs)
        # the views change with the first run's start: a run refused before it starts leaves them as they were
        decoding = f"Decoding {cfg.gen_length} tokens with {model}: {names}…"
        yield Outputs(status=status_html(decoding), files=None, larger=gr.update(visible=False),
                      stricter=gr.update(visible=False)).values(RUN_OUTPUTS)
        measuring = False
        for ev in decode_events(ctx.store_key, model, prompt, plan):
            if ev["type"] == "measure":  # (before the first pass: the status says why none has come yet; then a
                # yield that changes nothing, every heartbeat, so that a Stop reaches the run: runner._while_running)
                yield Outputs(status=gr.skip() if measuring else status_html(measuring_text(model, decoding))
                              ).values(RUN_OUTPUTS)
                measuring = True
                continue
            session.event(ev)
            if ev["type"] == "error" and (ev["where"] in ("input", "model") or cfg.drafter == "none"):
                break
            if ev["type"] in ("start", "done") or session.due():
                status = status_html(decoding) if measuring else gr.skip()
                measuring = False
                yield Outputs(status=status, explainer=session.text).values(RUN_OUTPUTS)
        page = getattr(request, "session_hash", None)  # (one per page load: the browser's and an API client's)
        final = session.finish(ctx.runs_before.get(page))
        traces = [t for t in [session.main, *session.race, session.base] if t is not None]
        kind = "ok" if traces and not any(k == "err" for _, k in session.notes) else "err"
        if not traces:
            final = "Cannot run: " + final.removeprefix("Cannot run: ")
        started = bool(session.passes)  # a run's start event arrived (its header is on screen)
        larger, stricter = session.small_trees(), session.window_filled()  # (never both: stricter drafted nothing)
        action, target = ((f"Run it again with larger trees (budget {LARGER_TREES})", "#sv-larger") if larger else
                          (f"Run it again at tau {STRICTER_TAU:g}", "#sv-stricter") if stricter else ("", ""))
        ctx.runs_before.put(page, session.figures())  # (before the last yield: a page that goes now still has it)
        yield Outputs(status=status_html(final if final.endswith(".") else final + ".", kind, action, target),
                      explainer=session.text if started else gr.skip(),
                      files=ctx.files.write(traces, page=True) if traces else None,
                      larger=gr.update(visible=larger), stricter=gr.update(visible=stricter)).values(RUN_OUTPUTS)

    # ------------------------------------------------------------------------------------ example / replay
    def show(self, main: Trace, base: Trace | None, message: str, source: str, play: bool = False,
             race: list | None = None, run_this: str = "") -> list:
        ctx = self.ctx
        return Outputs(status=status_html(message, "ok", run_this=run_this),
                       explainer=timeline(main, base, race=race, session=uuid.uuid4().hex[:10], play=play,
                                          source=source),
                       files=ctx.files.write([t for t in (main, *(race or []), base) if t is not None], page=True),
                       shown={"main": main.meta.__dict__.copy(), "race": bool(race)}, larger=gr.update(visible=False),
                       stricter=gr.update(visible=False),
                       controls=controls_of(main.meta, ctx, bool(race))).values(SHOW_OUTPUTS)

    def replay(self, paths, request: gr.Request = None):
        """Replay uploaded trace file(s); the upload box is cleared so the next upload starts afresh."""
        compact_session(self.ctx.demo, request)
        if not paths:
            return Outputs().values(SHOW_OUTPUTS) + [gr.skip()]
        try:
            main, base, race = load_uploads(paths)
        except TraceError as e:
            return Outputs(status=status_html(f"Cannot replay {e}", "err")).values(SHOW_OUTPUTS) + [None]
        what = "Replaying " + (f"a {drafter_name(main.meta.drafter)} run" if main.meta.drafter != "none"
                               else "a standard run")
        what += f" against {', '.join(t.meta.drafter for t in race)}" if race else ""
        what += " with its standard-decoder comparison" if base else ""
        msg = (f"{what} (no model needed): {main.meta.model}, seed {main.meta.seed}. The controls now hold its "
               "settings: Run decodes it again live.")
        return self.show(main, base, msg, "replay", race=race) + [None]

    def example(self, title, request: gr.Request = None):
        compact_session(self.ctx.demo, request)
        got = self._load_example(title)
        if not isinstance(got, tuple):
            return got
        main, base = got
        budget = "auto" if main.meta.budget_auto else str(main.meta.budget)
        # (the title's run, not its figure or prompt: the prompt is in the prompt box, the figure in the headline below,
        # and on a phone every line here pushes the views down)
        run = title.split(" — ")[0].rsplit(": ", 1)[0]
        out = self.show(main, base, f"Recorded example (replayed without a model): {sentence(run)}", "example",
                        play=True, run_this=f"“Run this example yourself” decodes it live as recorded (tree budget "
                                            f"{budget}); Run uses the settings.")
        # an example leaves the tree budget as it is (auto, sized for this machine): the examples were recorded at a
        # fixed budget for their trees, which on a CPU makes a live run slower than the standard decoder ("Run this
        # example yourself" still takes the example's, as the status says)
        out[SHOW_OUTPUTS.index("budget")] = gr.skip()
        return out

    def _load_example(self, title):
        """(main, baseline) traces of the example called `title`, or the outputs that say why it cannot be shown."""
        entry = next((e for e in self.ctx.examples if e["title"] == title), None)
        if entry is None:
            return Outputs(status=status_html("No example traces are shipped in this build.", "info")).values(
                SHOW_OUTPUTS)
        try:
            return load_example(entry)
        except TraceError as e:
            return Outputs(status=status_html(f"Cannot load the example {title!r}: {e}", "err")).values(SHOW_OUTPUTS)

    def first_example(self, request: gr.Request = None):
        """The page opens on the first example of the default model, playing by itself; where that model has none
        (a model of one's own, $SPOTVIZ_MODEL), on the first example, with the menu, its banner, its prompts and the
        prompt box left the default model's (Run decodes that model's own prompt, at a length it has room for)."""
        ctx = self.ctx
        if not ctx.examples:
            return Outputs().values(SHOW_OUTPUTS)
        own = [title for title, _, model in ctx.example_headers() if model == ctx.default_model]
        if own:
            out = self.example(own[0], request)
        else:
            compact_session(ctx.demo, request)
            title = ctx.examples[0]["title"]
            got = self._load_example(title)
            if not isinstance(got, tuple):
                return got
            main, base = got
            out = self.show(main, base, "", "example", play=True)
            for name in ("model", "model_banner", "prompt_pick", "prompt"):
                out[SHOW_OUTPUTS.index(name)] = gr.skip()
            top = ctx.gen_top(ctx.default_model, prompts_for(ctx.default_model)[0])
            out[SHOW_OUTPUTS.index("gen_length")] = gr.update(value=min(main.meta.gen_length, top), maximum=top,
                                                              info=GEN_INFO)
            out[SHOW_OUTPUTS.index("status")] = status_html(
                f"Recorded example of another model ({main.meta.model}), replayed without a model: {sentence(title)} Run "
                f"decodes the prompt box on {ctx.default_model}.", "info",
                run_this="“Run this example yourself” decodes the example live.")
            out[SHOW_OUTPUTS.index("budget")] = gr.skip()  # (as example() leaves it)
        return out

    # --------------------------------------------------------------------------------------------- controls
    def fill(self, shown):
        """"Run this yourself": the controls of the run on screen (an example or a replay), and its length as the
        one the visitor chose (FILL_OUTPUTS)."""
        meta = (shown or {}).get("main") if isinstance(shown, dict) else None
        if not meta:
            return [gr.skip()] * len(FILL_OUTPUTS)
        from ..trace import RunMeta

        try:
            run_meta = RunMeta(**meta)
        except TypeError:
            return [gr.skip()] * len(FILL_OUTPUTS)
        c = controls_of(run_meta, self.ctx, bool(shown.get("race")))
        return [c.get(n, gr.skip()) for n in FILL_OUTPUTS]

    @staticmethod
    def typed_in_range(value, lo: float, hi: float, info: str):
        """A slider let go (its box left, the slider released) with a raw value: a number typed outside the range
        [lo, hi] is put back in it and the note says so (the page sent the clamped number while the box still showed
        the typed one: 5 typed, T = 2 run); in range, the slider's usual note (no value: a drag is never moved back)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            return gr.skip()
        if lo <= value <= hi:
            return gr.update(info=info)
        low = value < lo
        to = lo if low else hi
        return gr.update(value=to, info=f"{'raised' if low else 'lowered'} to {to:g}, the {'least' if low else 'most'} "
                                        f"it offers (you chose {value:g})")

    def chosen_length(self, value):
        """The generation length the visitor chose (a raw slider value; typed, it may be outside the slider's range:
        cap_length then says what it became), kept for cap_length; anything else: no change."""
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 1 <= value <= 1e6:
            return int(value)
        return gr.skip()

    def cap_length(self, prompt, model, gen_length, wanted=None):
        """The length slider's maximum: the context minus the prompt (and at most the app's limit). Its value is the
        length the visitor last chose (`wanted`, else the slider's value), lowered to the maximum while the prompt
        leaves less room and restored when it leaves more; the slider's note says when it was lowered. Where the value
        stays as it is, none is sent: the prompt's blur fires as the visitor moves to the length box, and its answer,
        read before they typed, must not overwrite what they typed."""
        top = self.ctx.gen_top(model, prompt)
        want = next((v for v in (wanted, gen_length) if isinstance(v, (int, float)) and not isinstance(v, bool)), top)
        if want < GEN_STEP:
            return gr.update(maximum=top, value=GEN_STEP,
                             info=f"raised to {GEN_STEP}, the least it offers (you chose {int(want)})")
        if want <= top:
            if want == gen_length:  # (no value sent: a length typed meanwhile, while this call was on its way, stays)
                return gr.update(maximum=top, info=GEN_INFO)
            return gr.update(maximum=top, value=want, info=GEN_INFO)
        if top >= self.ctx.gen_limit - GEN_STEP + 1:  # (the app's limit binds, not the prompt)
            return gr.update(maximum=top, value=top, info=f"lowered to {top}, this app's limit (you chose {int(want)})")
        most = self.ctx.gen_top(model, "")  # (what the shortest prompt leaves)
        if want > most:  # (no prompt gives it back)
            return gr.update(maximum=top, value=top, info=f"lowered to {top}, the most this model's context leaves"
                             + (f" after this prompt; {most} with the shortest prompt" if most > top else "")
                             + f" (you chose {int(want)})")
        return gr.update(maximum=top, value=top,
                         info=f"lowered to {top}, the most this model's context leaves after this prompt (you chose "
                              f"{int(want)}: a shorter prompt gives it back)")

    def typed_length(self, prompt, model, gen_length, wanted=None):
        """When the visitor let go of the length (left its box, released the slider): the length they chose is the
        released value (not `wanted`, the last key's input, whose answer may still be on its way when the box is
        left at once). Where it is outside what the slider offers (a number typed in its box), what it became and
        why (cap_length); else only the slider's usual note (no value, so a slider being dragged is never moved
        back). Returns (the slider's update, the chosen length kept for cap_length)."""
        chosen = self.chosen_length(gen_length)
        if isinstance(chosen, int):
            wanted = chosen
        top = self.ctx.gen_top(model, prompt)
        if isinstance(wanted, (int, float)) and not isinstance(wanted, bool) and not GEN_STEP <= wanted <= top:
            return self.cap_length(prompt, model, gen_length, wanted), chosen
        return gr.update(info=GEN_INFO), chosen  # (a note that said what an earlier choice became goes)

    def on_model(self, model, prompt):
        """A new model: its banner, its prompts to try and, if the prompt is one of another model's prompts to try
        or recorded examples, this model's first one."""
        prompts = prompts_for(model)
        others = ({p for m in self.ctx.models for p in prompts_for(m)}
                  | {p for p, m in self.ctx.example_prompts().items() if m != model}) - set(prompts)
        replace_it = not isinstance(prompt, str) or not prompt.strip() or prompt in others
        new_prompt = gr.update(value=prompts[0], info=prompt_info(model)) if replace_it \
            else gr.update(info=prompt_info(model))  # (the visitor's own prompt stays: no value sent)
        return (banner_for(self.ctx.store, model), new_prompt, gr.update(choices=prompts, value=None))

    @staticmethod
    def on_mode(mode, drafter):
        # (a drafter for the other mode only, SPOT's two or one of your own: the learned drafter of this mode)
        spec = PROPOSERS.get(drafter)
        fix = gr.update(value=learned_drafter(mode)) if spec is not None and mode not in spec.modes else gr.skip()
        return gr.update(visible=mode == "threshold"), fix

    @staticmethod
    def on_drafter(drafter, mode):
        info = gr.update(info=drafter_help(drafter))
        budget = gr.update(interactive=drafter != "none")
        spec = PROPOSERS.get(drafter)  # (a drafter for one mode only, SPOT's two or one of your own: that mode)
        if spec is not None and mode not in spec.modes:
            return info, gr.update(value=spec.modes[0]), budget
        return info, gr.skip(), budget


def startup_banner(store: ModelStore, models: list[str], default_model: str,
                   check_model: bool) -> tuple[str, str, str | None]:
    """The model banner, the default model (the first other model that loads if the default does not) and, where
    the default did not load, why (else None)."""
    if not check_model:
        return status_html(f"Model {default_model} loads on the first run.", "info"), default_model, None
    try:
        return status_html("Model ready: " + store.describe(default_model), "ok"), default_model, None
    except Exception as e:  # noqa: BLE001 - any load problem is shown, the app still starts
        problem = f"The model {default_model!r} is not available: {e}."
        banner = status_html(problem + " You can still replay the example traces and trace files below.", "err")
        from ..targets.published import PUBLISHED

        fallbacks = sorted((m for m in models if m != default_model and m not in PUBLISHED),
                           key=lambda m: (m != DEFAULT_MODEL, m not in EMBEDDED))
        for fb in fallbacks:
            try:
                ready = store.describe(fb)
            except Exception:  # noqa: BLE001 - try the next one
                continue
            return statuses_html([(problem, "err"), (f"Using {fb} instead. Model ready: {ready}", "ok")]), fb, problem
        return banner, default_model, problem


__all__ = ["AUTO", "AppContext", "CONTROLS", "Handlers", "Outputs", "RUN_OUTPUTS", "SHOW_OUTPUTS", "compact_session",
           "controls_of", "startup_banner", "status_html"]

"""The app's layout: the Blocks, the components and the events that wire them to the handlers.

    demo = build_app()                        # the embedded default model
    demo = build_app(loader=my_load_fn, models=["tiny"])   # tests: inject the model loader
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable

import gradio as gr

from ..drafter.registry import PROPOSERS, registered
from ..errors import DecodeError
from ..registry import DEFAULT_MODEL, EMBEDDED
from ..samplers.config import BUDGETS, MAX_GEN_LENGTH
from ..trace import MAX_TRACE_BYTES
from .examples import list_examples
from .explainer import Explainer
from .files import TraceFiles
from .handlers import (BUDGET_INFO, CONTROLS, FILL_OUTPUTS, GEN_INFO, RUN_OUTPUTS, SHOW_OUTPUTS, AppContext, Handlers,
                       startup_banner, status_html)
from .inputs import APP_TAU, AUTO, BASELINE_GLOSS, GEN_STEP, LARGER_TREES, RACE_BASELINES, STRICTER_TAU, TAU_INFO, \
    TEMPERATURE_INFO, TEMPERATURE_MAX, drafter_help, prompt_info, prompts_for
from .runner import ModelStore, has_gpu, measure_cost_curve_ahead, register_store

# Limits (docs/SECURITY.md). Past MAX_QUEUE waiting events Gradio answers "queue full" (HTTP 503; the browser
# shows "This application is currently busy").
MAX_QUEUE = 32
STATE_SESSIONS = 256  # sessions whose last outputs and traces the server keeps (oldest dropped first)
STATE_TTL_S = 3600  # a session's shown-run settings (for "Run this yourself") are dropped after an hour
MAX_UPLOAD_BYTES = 2 * MAX_TRACE_BYTES  # bigger uploads are refused before they are stored
CACHE_CLEANUP = (1800, 3600)  # Gradio's file cache (uploads, downloads): every 30 min, files older than 1 h
# a live run: "Run this example yourself" goes (it would run the example or replay that is no longer on screen)
# on a phone the status and the views come under the buttons: they are brought up so the run is seen as it streams
# (with "Run this example yourself" or the status line's button focused when it goes, focus moves to Stop, not to
# the page's start; scrolling is instant for a visitor who asks for reduced motion)
START_JS = """(...a) => { window.__svStart && window.__svStart();
  const b = document.querySelector('#sv-run-this'), g = document.querySelector('#sv-status .sv-act');
  if ((b && b.contains(document.activeElement)) || (g && g.contains(document.activeElement))) {
    const stop = document.querySelector('#sv-stop'), btn = stop && (stop.matches('button') ? stop : stop.querySelector('button'));
    if (btn) btn.focus(); }
  if (b) b.style.display = 'none';
  const s = document.querySelector('#sv-status');
  const how = matchMedia('(prefers-reduced-motion: reduce)').matches ? 'auto' : 'smooth';
  if (s && window.innerWidth <= 760) s.scrollIntoView({behavior: how, block: 'start'}); return a; }"""
# on a phone the settings open closed (they come before the views, which would otherwise start a screen further down;
# Gradio's Accordion cannot be told the page's width)
NARROW_JS = """() => { if (window.innerWidth > 760) return;
  const s = document.querySelector('#sv-settings'), b = s && s.querySelector('button.label-wrap, .label-wrap');
  if (b && (b.classList.contains('open') || b.getAttribute('aria-expanded') === 'true')) b.click(); }"""
# Gradio's dropdown has no placeholder: the empty menu under the prompt says what it holds
PICK_JS = """() => { const i = document.querySelector('#sv-prompt-pick input');
  if (i && !i.placeholder) i.placeholder = 'Pick one to fill the prompt box'; }"""
# a prompt typed or picked: "Run this example yourself" goes until an example or a replay is shown again (it would put
# the example's prompt in the box, over the visitor's own; Run decodes theirs), and the status line's sentence on it
# (a listener on the page: Gradio's own input event missed text inserted without key presses, as an input method or
# a test's insert_text does)
OWN_PROMPT_JS = """() => { window.__svOwnPrompt = () => { const b = document.querySelector('#sv-run-this');
    if (b) b.style.display = 'none';
    for (const n of document.querySelectorAll('#sv-status .sv-run-this-note')) n.style.display = 'none'; };
  document.addEventListener('input', (e) => { if (e.target.closest && e.target.closest('#sv-prompt')) window.__svOwnPrompt(); },
                            true); }"""
# an example or a replay on screen: "Run this example yourself" shown with it
RUN_THIS_BACK = "const b = document.querySelector('#sv-run-this'); if (b) b.style.display = '';"
# after an example or a replay, chosen far down the page: bring the status line (and the views under it) into view
SHOW_JS = "() => { " + RUN_THIS_BACK + """
  const e = document.querySelector('#sv-status'); if (!e) return;
  const top = e.getBoundingClientRect().top;
  const how = matchMedia('(prefers-reduced-motion: reduce)').matches ? 'auto' : 'smooth';
  if (top < 0 || top > window.innerHeight * 0.6) e.scrollIntoView({behavior: how, block: 'start'}); }"""

HEADER = """
<div class="sv-header"><h1 class="sv-title">spotviz</h1> <span>watch <b>SPOT</b>
(<a href="https://arxiv.org/abs/2610.22543" target="_blank" rel="noopener" title="the paper, on arXiv">Speculating
Positions Order Trajectory</a>), lossless speculative decoding for diffusion language models: a small drafter
guesses which slots the model will fill next, and one model pass checks all the guesses at once.</span></div>
"""

APP_CSS = """
.sv-header { font-size: 14px; color: var(--body-text-color-subdued, #52525b); }
.sv-header a { padding: 0 !important; margin: 0 !important; color: inherit; text-decoration: underline dotted; }
.sv-header .sv-title { display: inline; font-size: 22px; font-weight: 700; margin: 0 8px 0 0; padding: 0; border: 0;
  color: var(--body-text-color, #222); }
.sv-status { font-size: 14px; padding: 6px 10px; border-radius: 8px; }
.sv-status.ok { background: #eef7ee; color: #1b5e20; }
.sv-status.err { background: #fdecea; color: #8e1b10; }
.sv-status.info { background: #eef3fb; color: #1a3d6d; }
.sv-status .sv-act { font: inherit; font-weight: 600; color: #fff; background: #1b5e20; border: 0; border-radius: 6px;
  padding: 3px 10px; margin: 4px 0 0; cursor: pointer; }
.sv-status .sv-act:hover { background: #134516; }
.sv-status .sv-act:focus-visible { outline: 2px solid #1a3d6d; outline-offset: 2px; }
"""
LAYOUT_CSS = """
#sv-main-row { align-items: flex-start; }
#sv-head-line h1 { margin: 0; font-size: 22px; }
/* a visible focus ring on the controls whose own (Gradio's) changes nothing a keyboard user can see */
#sv-main-row input:is([type=radio], [type=range], [type=checkbox]):focus-visible { outline: 2px solid #1a3d6d;
  outline-offset: 2px; }
#sv-run-row { gap: 8px; }
/* the larger-trees and stricter-tau buttons are pressed from the status line that offers them (on a phone Run is
   a screen above) */
#sv-larger, #sv-stricter { display: none !important; }
#sv-explainer .html-container { padding-top: 2px; }
/* the status line says what happened in its own words (errors included); Gradio's own "Error" badge on it (and,
   hidden but read by a screen reader, in the views) appeared once in about ten Stops of a live run (a cancelled
   event), with no error to report */
#sv-status .error, #sv-explainer .error { display: none !important; }
/* the status line keeps its room while a run's figures come, and while a run stopped before them is shown
   (explainer.js holdHeights): its box fills the room rather than leaving a gap under it */
#sv-status.sve-room, #sv-status.sve-room > .html-container, #sv-status.sve-room .prose { display: flex;
  flex-direction: column; }
#sv-status.sve-room > .html-container, #sv-status.sve-room .prose, #sv-status.sve-room .sv-status:last-child {
  flex: 1 1 auto; }
/* a download's whole name, its extension right after it (Gradio puts the extension in a column of its own) */
#sv-download td.filename { display: table-cell !important; font-size: 0 !important; }   /* (0: the space between
   Gradio's name and extension spans is not drawn: "seed0 .json" read as two names) */
#sv-download td.filename .stem, #sv-download td.filename .ext { display: inline !important;
  font-size: var(--text-md, 14px) !important; }
#sv-download td.filename, #sv-download td.filename .stem { white-space: normal !important; overflow: visible !important;
  text-overflow: clip !important; overflow-wrap: anywhere; max-width: none !important; }
/* a long choice ends in "…" before the menu's arrow (it ran under it) */
#sv-prompt-pick input, #sv-example input { text-overflow: ellipsis; padding-right: 1.6em !important; }
/* the run's downloads are the app's to list: no "Remove this file" beside them */
#sv-download button[aria-label="Remove this file"] { display: none !important; }
/* on a touch screen, finger-sized controls (Gradio's are 16-26 px tall): the race checkbox, the accordions'
   headers, number boxes and their reset buttons, "Run this example yourself" */
@media (pointer: coarse) {
  #sv-main-row input[type=checkbox] { width: 22px; height: 22px; }
  #sv-race label { min-height: 40px; align-items: center; }
  #sv-controls .label-wrap { min-height: 44px; align-items: center; }
  #sv-controls input[type=number] { min-height: 36px; padding-top: 0; padding-bottom: 0; line-height: 36px; }
  #sv-controls .tab-like-container { height: 36px; }   /* (the slider's number box: Gradio's is 24 px and clips) */
  #sv-controls button.reset-button { min-width: 36px; min-height: 36px; }
  #sv-run-this { min-height: 40px; }
  .sv-status .sv-act { min-height: 40px; }
}
@media (max-width: 760px) {
  /* one column in the page's order, which is also the tab order: the prompt, Run, the settings (closed at first:
     NARROW_JS), the examples, then the status and the views */
  #sv-main-row { flex-direction: column; flex-wrap: nowrap; }
  #sv-controls, #sv-out { width: 100%; min-width: 0 !important; }
  #sv-race .info-text { display: none; }   /* (the list of lanes: a race shows them) */
  #sv-explainer .html-container, #sv-status .html-container, #sv-head-line .html-container { padding-left: 2px;
    padding-right: 2px; }
  #sv-out, #sv-explainer { padding-left: 0 !important; padding-right: 0 !important; }
}
"""


def app_theme():
    """Gradio's default theme with readable secondary text: its subdued colour (setting help, the views' captions
    and counters) is neutral-400, #bbbbc2, a contrast of 1.9:1 on white; neutral-600 is 7.7:1 (dark mode keeps
    Gradio's own); and a Run button whose white label reaches 4.5:1 (Stop is a secondary button: dark on grey,
    and told apart from Run at a glance)."""
    return gr.themes.Default().set(body_text_color_subdued="*neutral_600", body_text_color_subdued_dark="*neutral_400",
                                   # white on Run's orange-500 was 2.8:1: orange-700 5.2:1
                                   button_primary_background_fill="*primary_700",
                                   button_primary_background_fill_hover="*primary_800")


# outside Gradio's scoped CSS (launch css is prefixed with the app container): the page margins on a phone; the
# prompt box's Ctrl+Enter; the status line's button; dropdowns closed when Tab leaves them
PAGE_HEAD = ("<style>@media (max-width: 760px) { .app.fillable { padding-left: 6px !important; "
             "padding-right: 6px !important; } }</style>"
             # Ctrl+Enter (Cmd+Enter) in the prompt box runs, as in most prompt boxes (Enter is a new line)
             "<script>document.addEventListener('keydown', (e) => { if (e.key !== 'Enter' || !(e.ctrlKey || e.metaKey)"
             " || !e.target || !e.target.closest || !e.target.closest('#sv-prompt')) return;"
             " const b = document.querySelector('#sv-run'), btn = b && (b.matches('button') ? b : b.querySelector('button'));"
             " if (btn && !btn.disabled) { e.preventDefault(); btn.click(); } });"
             # a button in the status line presses the control it names (the larger-trees or stricter-tau button)
             " document.addEventListener('click', (e) => { const a = e.target && e.target.closest &&"
             " e.target.closest('.sv-act[data-sv-click]'); const t = a && document.querySelector(a.dataset.svClick);"
             " const btn = t && (t.matches('button') ? t : t.querySelector('button')); if (btn) btn.click(); });"
             # a Gradio dropdown left with Tab kept its list open over the controls below: it is told it lost focus
             " document.addEventListener('focusout', (e) => { const t = e.target;"
             " if (!e.isTrusted || !t || !t.matches || !t.matches('input[role=combobox]')) return;"
             " setTimeout(() => { if (document.activeElement !== t && t.getAttribute('aria-expanded') === 'true')"
             " t.dispatchEvent(new FocusEvent('blur')); }, 0); });</script>")


def default_models(extra: str | None = None) -> list[str]:
    from ..targets.published import PUBLISHED

    models = []
    if extra:
        models.append(extra)
    models += [m for m in EMBEDDED if m not in models]
    if has_gpu():
        models += [m for m in PUBLISHED if m not in models]
    return models


def larger_budget():
    """The budget the larger-trees button sets, with a note that says where it came from (a new update each click:
    Gradio takes the value out of the update it is given)."""
    return gr.update(value=LARGER_TREES, info=f"{LARGER_TREES}: set by the larger-trees button. {BUDGET_INFO}")


TAU_RANGE = (0.05, 1.0)  # the tau slider's


def stricter_tau():
    """The tau the stricter-tau button sets (a new update each click, as larger_budget)."""
    return gr.update(value=STRICTER_TAU, info=TAU_INFO)


def build_app(loader: Callable[[str], object] | None = None, models: list[str] | None = None,
              default_model: str | None = None, trace_dir: str | Path | None = None,
              gpu: bool | None = None, check_model: bool = True, max_queue: int = MAX_QUEUE,
              concurrency: int | None = None, curve_ahead: bool = False) -> gr.Blocks:
    """The Gradio Blocks app.

    loader: name -> target (default spotviz.registry.load_target); models: the model dropdown (default: the
    embedded models, $SPOTVIZ_MODEL first if set, and the published DLMs when a GPU is present);
    trace_dir: the example traces (default assets/traces); gpu: override device detection for the defaults;
    max_queue: the waiting line (Gradio's queue max_size); concurrency: decodes at a time (default 1 on a CPU,
    2 on a GPU); curve_ahead: measure the default model's cost curve (budget auto's) in the background now, so the
    first Run does not wait for it (the app's entry point; tests leave it off). If the default model cannot be
    loaded, the first other model of the menu that loads (the embedded default first; never a published one)
    becomes the default, and the banner says so."""
    env_model = os.environ.get("SPOTVIZ_MODEL") or None
    models = list(models) if models else default_models(env_model)
    default_model = default_model or env_model or (DEFAULT_MODEL if DEFAULT_MODEL in models else models[0])
    if default_model not in models:
        models.insert(0, default_model)
    gpu = has_gpu() if gpu is None else gpu
    own_drafters = os.environ.get("SPOTVIZ_DRAFTER_DIR") or None  # (the drafters of $SPOTVIZ_MODEL, if it has its own)
    if own_drafters and not Path(own_drafters).expanduser().is_dir():  # (else every Run would fail, one by one)
        raise DecodeError(f"SPOTVIZ_DRAFTER_DIR={own_drafters!r} is not a folder of trained drafters "
                          "(train-drafter --out DIR makes one)")
    if own_drafters and not env_model:  # (drafters are trained for one model: say which, or they would go unused)
        raise DecodeError(f"SPOTVIZ_DRAFTER_DIR={own_drafters!r} needs SPOTVIZ_MODEL, the model they were trained for "
                          f"(SPOTVIZ_MODEL={DEFAULT_MODEL} for the default one)")
    drafter_dirs = {env_model: own_drafters} if env_model and own_drafters else {}
    store = ModelStore(loader, drafter_dirs)  # (its banner says whose drafters run; runs use them)
    gen_default, gen_max = (128, 512) if gpu else (64, 256)
    budgets = [AUTO] + [b for b in BUDGETS if b >= 2]
    asked = default_model
    banner, default_model, problem = startup_banner(store, models, default_model, check_model)
    if problem:  # (said on the terminal too: there a deployment of a model that does not load looked fine)
        served = f"the app serves {default_model} instead" if default_model != asked else "no other model loads either"
        print(f"warning: {' '.join(problem.split()).rstrip('.')}; {served} (the page's banner says so too)",
              file=sys.stderr, flush=True)  # (it stays in the menu: a model that appears later, e.g. when its
        # training ends, loads when chosen; ModelStore does not remember failures)
    if curve_ahead:
        measure_cost_curve_ahead(store, default_model)
    ctx = AppContext(store=store, store_key=register_store(store), models=models, default_model=default_model,
                     budgets=budgets, gen_limit=min(gen_max, MAX_GEN_LENGTH), examples=list_examples(trace_dir),
                     files=TraceFiles())
    h = Handlers(ctx)
    example_titles = [e["title"] for e in ctx.examples]
    first_prompt = prompts_for(default_model)[0]
    gen_top = ctx.gen_top(default_model, first_prompt) if check_model else ctx.gen_limit

    with gr.Blocks(title="spotviz — SPOT speculative decoding for diffusion LMs", delete_cache=CACHE_CLEANUP,
                   analytics_enabled=False) as demo:
        ctx.demo = demo
        gr.HTML(HEADER, js_on_load=None, elem_id="sv-head-line")
        with gr.Row(equal_height=False, elem_id="sv-main-row"):
            with gr.Column(scale=1, min_width=290, elem_id="sv-controls"):
                prompt = gr.Textbox(label="Prompt", value=first_prompt, lines=3, max_lines=12, elem_id="sv-prompt",
                                    info=prompt_info(default_model))
                prompt_pick = gr.Dropdown(prompts_for(default_model), value=None, label="Prompts to try",
                                          elem_id="sv-prompt-pick")
                with gr.Row(elem_id="sv-run-row"):
                    run_btn = gr.Button("Run", variant="primary", elem_id="sv-run", min_width=80)
                    stop_btn = gr.Button("Stop", variant="secondary", elem_id="sv-stop", min_width=80)
                run_this = gr.Button("Run this example yourself", size="sm", elem_id="sv-run-this")
                # (after a run whose budget auto kept its trees small: the same run at a fixed budget, SPOT's trees;
                # never seen: the status line that says why has the button that presses it, status_html's action)
                larger = gr.Button(f"Run it again with larger trees (tree budget {LARGER_TREES})", size="sm",
                                   visible=False, elem_id="sv-larger")
                # (after a threshold run whose every pass filled its window by itself: the same run at a stricter
                # tau, where SPOT-Sets has slots to guess; pressed from the status line too)
                stricter = gr.Button(f"Run it again at tau {STRICTER_TAU:g}", size="sm", visible=False,
                                     elem_id="sv-stricter")
                race = gr.Checkbox(value=False, label="Race the drafters on this prompt", elem_id="sv-race",
                                   info="one lane each: " + ", ".join(
                                       ["SPOT (SPOT-Sets in threshold mode)"]
                                       + [BASELINE_GLOSS.get(d, d) for d in RACE_BASELINES]
                                       + [f"{n} (yours, {' or '.join(PROPOSERS[n].modes)} mode)" for n in ctx.drafters
                                          if n in registered()])
                                   + " and the standard decoder",
                                   visible=bool(RACE_BASELINES))
                with gr.Accordion("Settings", open=True, elem_id="sv-settings"):
                    drafter = gr.Dropdown(ctx.drafters, value="spot" if "spot" in ctx.drafters else "none",
                                          label="Drafter", info=drafter_help("spot"), elem_id="sv-drafter")
                    gen_length = gr.Slider(GEN_STEP, gen_top, value=min(gen_default, gen_top), step=GEN_STEP,
                                           label="Generation length (tokens)", elem_id="sv-gen-length",
                                           info=GEN_INFO)
                    wanted_length = gr.State(None)  # the length the visitor last chose (cap_length restores it)
                    budget = gr.Dropdown(budgets, value=AUTO, elem_id="sv-budget",
                                         label="Tree budget (states checked per pass)",
                                         info=BUDGET_INFO)
                    mode = gr.Radio(["exact", "threshold"], value="exact", label="Decoding mode",
                                    info="exact: one decision per pass; threshold: every slot with confidence ≥ tau",
                                    elem_id="sv-mode")
                    tau = gr.Slider(*TAU_RANGE, value=APP_TAU, step=0.01, label="tau (threshold)", visible=False,
                                    info=TAU_INFO, elem_id="sv-tau")
                    temperature = gr.Slider(0.0, TEMPERATURE_MAX, value=0.0, step=0.05, label="Temperature",
                                            info=TEMPERATURE_INFO, elem_id="sv-temperature")
                    seed = gr.Number(value=0, precision=0, minimum=0, label="Seed", elem_id="sv-seed",
                                     info="at T > 0 the seed fixes the sampling noise; SPOT and the standard decoder "
                                          "share it, so each seed gives one text, the same for both")
                    model = gr.Dropdown(models, value=default_model, label="Model", elem_id="sv-model",
                                        allow_custom_value=False)
                    model_banner = gr.HTML(banner, js_on_load=None, css_template=APP_CSS, elem_id="sv-model-banner")
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
                    upload = gr.File(label="Replay trace file(s) (.json; add the standard run's trace to compare)",
                                     file_count="multiple", file_types=[".json"], type="filepath",
                                     elem_id="sv-upload")
                    files_out = gr.File(label="This run's traces (JSON) and its page of animated views (HTML, offline)",
                                        file_count="multiple", interactive=False, elem_id="sv-download")
            with gr.Column(scale=3, min_width=320, elem_id="sv-out"):
                status = gr.HTML(status_html("Loading the example…" if ctx.examples else
                                         "Type a prompt and press Run."), js_on_load=None, css_template=APP_CSS,
                                 elem_id="sv-status")
                explainer = Explainer(elem_id="sv-explainer")
        shown = gr.State(None, time_to_live=STATE_TTL_S)
        stop_note = gr.HTML("", visible=False, js_on_load=None)  # what /stop answers an API caller

        ui = {"status": status, "explainer": explainer, "files": files_out, "shown": shown, "prompt": prompt,
              "model": model, "mode": mode, "tau": tau, "temperature": temperature, "seed": seed,
              "gen_length": gen_length, "drafter": drafter, "budget": budget, "coupled": coupled, "prune": prune,
              "race": race, "wanted_length": wanted_length, "model_banner": model_banner, "prompt_pick": prompt_pick,
              "larger": larger, "stricter": stricter}
        outs = lambda names: [ui[n] for n in names]  # noqa: E731
        inputs = outs(CONTROLS)
        run_ev = run_btn.click(h.run, inputs, outs(RUN_OUTPUTS), api_name="run", show_progress="hidden",
                               concurrency_id="decode", preprocess=False, js=START_JS)
        # the same run from other buttons, the controls set first ("Run this example yourself": the example's; the
        # larger-trees button: the budget; the stricter-tau button: tau)
        def then_run(button, fn, fn_in, fn_out):
            return button.click(fn, fn_in, fn_out, api_name=False, queue=False).then(
                h.run, inputs, outs(RUN_OUTPUTS), api_name=False, show_progress="hidden", concurrency_id="decode",
                preprocess=False, js=START_JS)

        run_this_ev = then_run(run_this, h.fill, [shown], outs(FILL_OUTPUTS))
        larger_ev = then_run(larger, larger_budget, None, [budget])
        stricter_ev = then_run(stricter, stricter_tau, None, [tau])
        # Stop cancels a live run and the page says where it stopped; a finished run's status stays as it is
        stop_btn.click(lambda: status_html("Stopped. The views show the passes decoded before Stop. Press Run to start "
                                           "again."),
                       None, [stop_note], cancels=[run_ev, run_this_ev, larger_ev, stricter_ev], api_name="stop",
                       queue=False, js="() => { window.__svStop && window.__svStop(); }")
        upload.upload(h.replay, [upload], outs(SHOW_OUTPUTS) + [upload], api_name="replay", concurrency_limit=4,
                      concurrency_id="replay", show_progress="minimal").then(None, js=SHOW_JS, queue=False)
        example_btn.click(h.example, [example_dd], outs(SHOW_OUTPUTS), api_name="example", concurrency_limit=4,
                          concurrency_id="replay", show_progress="hidden").then(None, js=SHOW_JS, queue=False)
        mode.change(h.on_mode, [mode, drafter], [tau, drafter], api_name=False, queue=False)
        budget.input(lambda: gr.update(info=BUDGET_INFO), None, [budget], api_name=False, queue=False)
        drafter.change(h.on_drafter, [drafter, mode], [drafter, mode, budget], api_name=False, queue=False)
        # the length slider: capped to what the prompt leaves, back to the visitor's choice when it leaves more
        capping = [prompt, model, gen_length, wanted_length]
        # a prompt picked fills the prompt box, and the menu goes back to empty (it showed the pick, stale once edited)
        prompt_pick.input(lambda p: (p, None) if p else (gr.skip(), gr.skip()), [prompt_pick], [prompt, prompt_pick],
                          api_name=False, queue=False,
                          js="(...a) => { window.__svOwnPrompt && window.__svOwnPrompt(); return a; }").then(
            h.cap_length, capping, [gen_length], api_name=False, queue=False)
        model.input(h.on_model, [model, prompt], [model_banner, prompt, prompt_pick], api_name=False).then(
            h.cap_length, capping, [gen_length], api_name=False, queue=False)
        prompt.blur(h.cap_length, capping, [gen_length], api_name=False, queue=False)
        # (raw values: a number typed above the maximum reaches here before Gradio clamps it, and its preprocessing
        # would refuse it with HTTP 500; the page says it was lowered. Each key typed is an input; the length is
        # checked on release, when the box loses focus or the slider is let go: checked at every key, "40" typed
        # became 8 at the "4", then 80)
        gen_length.input(h.chosen_length, [gen_length], [wanted_length], api_name=False, queue=False,
                         preprocess=False)
        gen_length.release(h.typed_length, capping, [gen_length, wanted_length], api_name=False, queue=False,
                           preprocess=False)
        # (a number typed outside a slider's range: put back in it, and its note says so)
        temperature.release(lambda v: h.typed_in_range(v, 0.0, TEMPERATURE_MAX, TEMPERATURE_INFO), [temperature],
                            [temperature], api_name=False, queue=False, preprocess=False)
        tau.release(lambda v: h.typed_in_range(v, *TAU_RANGE, TAU_INFO), [tau], [tau], api_name=False, queue=False,
                    preprocess=False)
        demo.load(None, js=NARROW_JS, queue=False)
        demo.load(None, js=PICK_JS, queue=False)
        demo.load(None, js=OWN_PROMPT_JS, queue=False)
        if ctx.examples:
            # (the example's prompt fills the box: "Run this example yourself" is shown with it, also where a key
            # typed while it loaded had hidden it)
            demo.load(h.first_example, None, outs(SHOW_OUTPUTS), api_name=False, concurrency_limit=4,
                      concurrency_id="replay", show_progress="hidden").then(
                None, js="() => { " + RUN_THIS_BACK + " }", queue=False)
    demo.queue(default_concurrency_limit=concurrency or (2 if gpu else 1), max_size=max_queue)
    return demo



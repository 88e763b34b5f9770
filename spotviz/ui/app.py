"""The Gradio app: live SPOT decoding with animated views, a race of drafters, replay and share.

    from spotviz.ui.app import build_app, launch
    demo = build_app()                        # the embedded default model
    demo = build_app(loader=my_load_fn, models=["tiny"])   # tests: inject the model loader
    launch(demo)

The package's rooms, one job each: inputs.py (menus; the run's raw values -> one validated DecodeConfig),
runner.py (the only code that touches the model), session.py (engine events -> timeline lines), handlers.py
(the events), files.py (downloads and uploads), layout.py (the Blocks), explainer.py (the browser side, whose
files live with the views in spotviz/views/static: one Plotly view layer, also inlined in the downloaded page),
examples.py (the shipped traces).
"""
from __future__ import annotations

from .explainer import Explainer
from .files import TraceFiles
from .handlers import AppContext, Handlers, controls_of
from .inputs import TEMPERATURE_MAX, drafter_order, parse_run_inputs, plan_run, prompts_for
from .layout import APP_CSS, CACHE_CLEANUP, LAYOUT_CSS, MAX_QUEUE, MAX_UPLOAD_BYTES, PAGE_HEAD, STATE_SESSIONS, \
    STATE_TTL_S, app_theme, build_app, default_models

__all__ = ["APP_CSS", "AppContext", "CACHE_CLEANUP", "Explainer", "Handlers", "LAYOUT_CSS", "MAX_QUEUE",
           "MAX_UPLOAD_BYTES", "STATE_SESSIONS", "STATE_TTL_S", "TEMPERATURE_MAX", "TraceFiles", "build_app",
           "controls_of", "default_models", "drafter_order", "launch", "parse_run_inputs", "plan_run", "prompts_for"]


def launch(demo, **kwargs):
    """Launch with the app's CSS and without SSR (SSR has broken custom JS on Spaces), and the limits of
    docs/SECURITY.md (upload size, sessions kept in memory)."""
    kwargs.setdefault("ssr_mode", False)
    kwargs.setdefault("max_file_size", MAX_UPLOAD_BYTES)
    kwargs.setdefault("state_session_capacity", STATE_SESSIONS)
    kwargs.setdefault("css", APP_CSS + LAYOUT_CSS)
    kwargs.setdefault("head", PAGE_HEAD)
    kwargs.setdefault("theme", app_theme())
    kwargs.setdefault("show_error", True)
    return demo.launch(**kwargs)

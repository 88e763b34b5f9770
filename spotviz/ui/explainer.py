"""The explainer: one Gradio component that draws every view of a run from its timeline (spotviz.views.timeline)
with a single pass scrubber.

Its value is the timeline text, JSON lines that only grow while a run streams. Gradio sends a growing string as
an "append" edit, so each streamed update carries the new passes only. The browser side lives in real files in
spotviz/views/static/ (served by the app itself, never from a CDN): timeline.js builds the run state from the
lines, views/*.js draw the Plotly figures (one file per view: draft tree, race, acceptance per depth, commit
order), explainer.js runs the scrubber, the token canvases and the headline, explainer.html/.css are the
markup; views/common.js holds what the views share. plotly.js is the vendored basic bundle
(views/static/vendor/plotly-basic.min.js; the installed `plotly` package's full bundle only where it is missing). The
downloaded page (views/report.py) inlines the same files, so the app and the page draw every view with the same code.
"""
from __future__ import annotations

import gradio as gr

from ..views.static_files import served_paths, static_text


def head_html() -> str:
    """Script tags for plotly.js and the explainer's files, from the app's own file route (no CDN)."""
    return "".join(f'<script src="/gradio_api/file={p}"></script>' for p in served_paths())


class Explainer(gr.HTML):
    """The explainer component; its value is a timeline (spotviz.views.timeline.timeline / encode)."""

    def __init__(self, value: str = "", **kwargs):
        gr.set_static_paths(paths=served_paths())
        super().__init__(value=value, html_template=static_text("explainer.html"),
                         css_template=static_text("explainer.css"), head=head_html(),
                         js_on_load="window.SpotvizExplainer(element, props, watch);", **kwargs)

    def api_info(self):
        return {"type": "string", "description": "the run's timeline: one JSON object per line"}

    def example_payload(self):
        return ""

    def example_value(self):
        return ""

"""A run as one standalone HTML page: the app's explainer (token canvases, draft trees, race, acceptance per
depth, commit order, one pass scrubber) over the run's timeline, with plotly.js and the explainer's files
inlined, so it opens in any browser without spotviz, a model or the network.

The page draws every view with the same files as the app (spotviz/views/static): each view is a pure function of
the timeline at pass k that sets every trace of its figure, so no pass shows anything of another. It opens at
pass 1; ▶ plays one pass per 450 ms while the trees change and 300 ms for the rest (the app's pace at 1x).
"""
from __future__ import annotations

import json

from .common import esc
from .headline import drafter_name, identical_output
from .timeline import timeline

PAGE_CSS = """
body { font-family: system-ui, -apple-system, Segoe UI, Roboto, sans-serif; margin: 0 auto; max-width: 1280px;
  padding: 12px 16px; color: #222; background: #fff; }
h1 { font-size: 19px; margin: 4px 0 2px; }
.sv-meta { color: #555; font-size: 13px; margin: 2px 0 8px; }
"""


def _json_in_script(text: str) -> str:
    """`text` as a JSON string literal that cannot end the <script> element it sits in."""
    return json.dumps(text, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def report_html(trace, baseline=None, race: list | None = None) -> str:
    """The page for `trace` (with the standard run `baseline` of the same prompt and seed and, for a race, the
    other drafters' traces `race`)."""
    from ..trace import Trace
    from .static_files import SCRIPTS, static_text

    for what, t in (("trace", trace), ("baseline", baseline), *((f"race[{i}]", r) for i, r in enumerate(race or []))):
        if t is not None and not isinstance(t, Trace):
            raise TypeError(f"report_html: {what} must be a Trace (spotviz.trace.Trace.load reads a file), got "
                            f"{type(t).__name__}")
    m = trace.meta
    same = identical_output(trace, baseline)
    verdict = ("" if same is None else " · output identical to the standard decoder" if same else
               " · output differs from the standard decoder")
    title = f"spotviz: {drafter_name(m.drafter)} on {m.model}"
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">', f"<title>{esc(title)}</title>",
             f"<style>{PAGE_CSS}{static_text('explainer.css')}</style></head><body>",
             f"<h1>{esc(title)}</h1>",
             f'<p class="sv-meta">{esc(m.mode)} decoding · temperature {m.temperature:g} · seed {m.seed} · '
             f"{m.gen_length} slots{esc(verdict)}</p>",
             f'<div id="sv-page">{static_text("explainer.html")}</div>',
             f'<script id="sv-timeline" type="application/json">'
             f"{_json_in_script(timeline(trace, baseline, race=race, source='page', session='page'))}</script>",
             f"<script>{static_text('plotly.js')}</script>"]
    parts += [f"<script>{static_text(s)}</script>" for s in SCRIPTS + ("page.js",)]
    parts.append("</body></html>")
    return "\n".join(parts)

"""A run as one standalone HTML page with the animated Plotly figures: counters, the token canvas, commit order,
the draft trees and the speed-up against the standard run (each figure with its own play button and slider).

The app's explainer draws the same views live with one shared timeline; this page is the portable record of a
finished run: it opens in any browser, without spotviz or a model. `plotlyjs="inline"` embeds plotly.js (the
page works offline, ~4.6 MB); `"cdn"` links it (~0.2 MB, needs the network when opened).
"""
from __future__ import annotations

from .canvas import CANVAS_CSS, trace_canvas
from .commit_order import commit_order_figure
from .common import esc
from .speedup import TABLE_CSS, counters_html, identical_output, run_label, speedup_figure
from .tree import tree_figure

PLOTLY_SOURCES = ("inline", "cdn")

PAGE_CSS = """
body { font-family: system-ui, -apple-system, Segoe UI, Roboto, sans-serif; margin: 0 auto; max-width: 1100px;
  padding: 16px; color: #222; }
h1 { font-size: 20px; margin: 4px 0 2px; } h2 { font-size: 16px; margin: 22px 0 4px; }
.sv-meta, .sv-read { color: #555; font-size: 13px; margin: 2px 0 8px; }
.sv-ok { color: #1a7f37; } .sv-bad { color: #b42318; }
"""

SECTIONS = (
    ("order", "Commit order",
     "Which position (row) was committed at which target pass (column); colour = decision step. Where the "
     "speculative run commits several positions in one pass, the column holds several cells."),
    ("tree", "Draft trees",
     "Each pass's draft tree: nodes are drafted decisions (position:token), the thick path is the branch the "
     "target's own decisions accepted, and the final node is the pass's bonus decision, which the target adds "
     "for free."),
    ("speedup", "Speed-up",
     "Positions committed against target passes, for this run and the standard decoder (one commit per pass); "
     "the gap is the passes saved."),
)


def report_html(trace, baseline=None, plotlyjs: str = "inline") -> str:
    """The page for `trace` (and the standard run `baseline` of the same prompt and seed, if given)."""
    import plotly.io as pio

    if plotlyjs not in PLOTLY_SOURCES:
        raise ValueError(f"plotlyjs must be one of {', '.join(PLOTLY_SOURCES)}, got {plotlyjs!r}")
    m = trace.meta
    figures = {"order": commit_order_figure(trace), "tree": tree_figure(trace),
               "speedup": speedup_figure(trace, baseline)}
    same = identical_output(trace, baseline)
    verdict = ("" if same is None else
               '<span class="sv-ok">output identical to the standard decoder</span>' if same else
               '<span class="sv-bad">output differs from the standard decoder</span>')
    if not m.identity_guaranteed:
        verdict += " (identity not guaranteed on the device and dtype of this run)"
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>spotviz: {esc(run_label(trace))}</title>",
             f"<style>{PAGE_CSS}{CANVAS_CSS}{TABLE_CSS}</style></head><body>",
             f"<h1>spotviz run: {esc(run_label(trace))}</h1>",
             f'<p class="sv-meta">model {esc(m.model)} · {esc(m.mode)} decoding · temperature {m.temperature:g} · '
             f"seed {m.seed} · drafter {esc(m.drafter)} · {verdict}</p>",
             counters_html(trace, baseline),
             "<h2>Tokens</h2>", '<p class="sv-read">Each generated token coloured by the pass that committed it; '
             "hover a token for its position, pass and decision step.</p>", trace_canvas(trace)]
    include = "cdn" if plotlyjs == "cdn" else True
    for key, title, how in SECTIONS:
        if key == "tree" and not any(p.tree for p in trace.passes):
            continue  # a standard run drafts nothing
        parts += [f"<h2>{title}</h2>", f'<p class="sv-read">{how}</p>',
                  pio.to_html(figures[key], include_plotlyjs=include, full_html=False, validate=False,
                              auto_play=False, div_id=f"sv-{key}")]
        include = False  # plotly.js once per page
    parts.append("</body></html>")
    return "\n".join(parts)

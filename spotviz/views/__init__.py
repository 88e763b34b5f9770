"""Views: pure functions of a Trace (spotviz.trace), never importing the engine (a saved trace renders without
a model).

* timeline.py: the app's timeline, one JSON line per target pass (the explainer component draws it);
* canvas / commit_order / tree / speedup: HTML and Plotly figure dicts (with `frames`) of the same views, for
  notebooks and scripts.
"""
from .canvas import CANVAS_CSS, Cell, canvas_html, empty_canvas, trace_canvas, trace_cells
from .commit_order import commit_order_figure
from .common import empty_figure
from .speedup import TABLE_CSS, counters_html, identical_output, same_run, speedup_figure, speedup_numbers
from .tree import tree_figure

__all__ = [
    "CANVAS_CSS", "TABLE_CSS", "Cell", "canvas_html", "commit_order_figure", "counters_html", "empty_canvas",
    "empty_figure", "identical_output", "same_run", "speedup_figure", "speedup_numbers", "trace_canvas",
    "trace_cells", "tree_figure", "all_figures",
]


def all_figures(trace, baseline=None) -> dict:
    """The three animated figures of a run: commit order, draft tree, speed-up."""
    return {"order": commit_order_figure(trace), "tree": tree_figure(trace),
            "speedup": speedup_figure(trace, baseline)}

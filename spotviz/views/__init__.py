"""Views: pure functions of a Trace (spotviz.trace), never importing the engine (a saved trace renders without
a model).

* timeline.py: a run as JSON lines, one per target pass: what the browser's views draw (spotviz/views/static);
* headline.py: the comparison with the standard decoder (passes saved, wall-clock and its ceiling);
* report.py: the standalone page of a run (the app's explainer over the embedded timeline, offline).
"""
from .headline import identical_output, same_run, summary
from .report import report_html
from .timeline import timeline, trace_lines

__all__ = ["identical_output", "report_html", "same_run", "summary", "timeline", "trace_lines"]

"""The views' browser side as real files (spotviz/views/static: the JavaScript views, the explainer's markup and
styles) and plotly.js: what the app serves from its own file route (never a CDN) and what the downloaded page
(report.py) inlines; the app's Explainer (ui/explainer.py) serves them. Paths only: nothing here imports the UI.

plotly.js is Plotly's basic bundle (`plotly.js-basic-dist-min` from npm, MIT, the same plotly.js version as the
`plotly` package: see static/vendor/README.md). It holds the trace types the views draw (scatter, bar; also pie)
in a quarter of the full bundle's size: a browser parses it in ~0.3 s instead of 1.5-3 s on a loaded 2-core
machine, and a downloaded page weighs ~1.3 MB instead of ~5 MB. Without the vendored file the `plotly`
package's full bundle is used."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

STATIC = Path(__file__).resolve().parent / "static"
VIEW_FILES = ("views/common.js", "views/tree.js", "views/race.js", "views/depth.js", "views/commit_order.js")
SCRIPTS = ("timeline.js",) + VIEW_FILES + ("explainer.js",)  # load order
PLOTLY_BASIC = STATIC / "vendor" / "plotly-basic.min.js"
PLOTLY_BASIC_TRACES = ("scatter", "bar", "pie")  # what the basic bundle can draw


def plotly_js_path() -> Path:
    """plotly.js as served and inlined: the vendored basic bundle, else the full one of the `plotly` package."""
    if PLOTLY_BASIC.is_file():
        return PLOTLY_BASIC
    import plotly

    return Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"


@lru_cache(maxsize=None)
def static_text(name: str) -> str:
    """A file of spotviz/views/static, or "plotly.js" (plotly_js_path)."""
    path = plotly_js_path() if name == "plotly.js" else STATIC / name
    return path.read_text(encoding="utf-8")


def served_paths() -> list[str]:
    """The files the app serves to the browser, in load order (gr.set_static_paths allows exactly these)."""
    return [str(plotly_js_path())] + [str(STATIC / s) for s in SCRIPTS]

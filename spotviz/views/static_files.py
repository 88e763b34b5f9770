"""The views' browser side as real files (spotviz/ui/static: the JavaScript views, the explainer's markup and
styles) and plotly.js from the installed `plotly` package: what the app serves from its own file route (never a
CDN) and what the downloaded page (report.py) inlines. Paths only: nothing here imports the UI."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

STATIC = Path(__file__).resolve().parent.parent / "ui" / "static"
VIEW_FILES = ("views/common.js", "views/tree.js", "views/race.js", "views/depth.js", "views/commit_order.js")
SCRIPTS = ("timeline.js",) + VIEW_FILES + ("explainer.js",)  # load order


def plotly_js_path() -> Path:
    """plotly.min.js as the installed `plotly` package ships it."""
    import plotly

    return Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"


@lru_cache(maxsize=None)
def static_text(name: str) -> str:
    """A file of spotviz/ui/static, or "plotly.min.js"."""
    path = plotly_js_path() if name == "plotly.min.js" else STATIC / name
    return path.read_text(encoding="utf-8")


def served_paths() -> list[str]:
    """The files the app serves to the browser, in load order (gr.set_static_paths allows exactly these)."""
    return [str(plotly_js_path())] + [str(STATIC / s) for s in SCRIPTS]

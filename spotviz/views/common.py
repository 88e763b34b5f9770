"""Shared pieces of the views: escaping, token display strings, colours, the animation controls.

Figures are plain dicts in Plotly's JSON schema (go.Figure validation is too slow for hundreds of frames).
Every label that comes from a trace is HTML-escaped: Plotly renders a subset of HTML in text and hover
labels, and the canvas is HTML, so a token such as ``<script>`` must arrive as ``&lt;script&gt;``.
"""
from __future__ import annotations

import html

# Colours (colour-blind safe where it matters: accepted = green/blue family, rejected = grey, bonus = orange).
ACCEPTED = "#1a9850"
REJECTED = "#9e9e9e"
BONUS = "#f46d43"
ROOT = "#4575b4"
HIGHLIGHT = "#d62728"
DRAFTER_LINE = "#1a9850"
BASELINE_LINE = "#4575b4"

# Cyclic pass colours for the token canvas (light enough for dark text; neighbouring passes differ).
PASS_COLORS = (
    "#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
    "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f",
)

# Sequential scale for decision steps (Viridis stops).
VIRIDIS = [
    [0.0, "#440154"], [0.111, "#482878"], [0.222, "#3e4989"], [0.333, "#31688e"], [0.444, "#26828e"],
    [0.556, "#1f9e89"], [0.667, "#35b779"], [0.778, "#6ece58"], [0.889, "#b5de2b"], [1.0, "#fde725"],
]

FONT = {"family": "Inter, Helvetica, Arial, sans-serif", "size": 12}


def esc(text) -> str:
    """HTML-escape any value (quotes included)."""
    return html.escape(str(text), quote=True)


def visible_token(text: str, limit: int = 14) -> str:
    """A token's text with whitespace made visible (raw, not escaped): newline -> ↵, tab -> ⇥, space -> ·."""
    s = str(text).replace("\r", "\\r").replace("\n", "↵").replace("\t", "⇥").replace(" ", "·")
    if not s:
        s = "∅"
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return s


def token_label(trace, token: int, limit: int = 14) -> str:
    """Escaped, whitespace-visible display string of a token id of `trace`."""
    return esc(visible_token(trace.label(token), limit))


def pass_color(index: int) -> str:
    return PASS_COLORS[index % len(PASS_COLORS)]


DRAW_MS = 17  # a frame takes about one display refresh to draw (headless Chromium, this machine)


def frame_duration(n_frames: int, total_ms: float = 1200.0) -> int:
    """Milliseconds to wait after each frame is drawn so that playing all frames takes about `total_ms`.

    Plotly starts the next frame on the first display refresh after the wait, so the wait is the target
    interval less the drawing time (0 for long traces: they play as fast as frames can be drawn)."""
    if n_frames <= 1:
        return 500
    return int(max(0, min(500, total_ms / n_frames - DRAW_MS)))


CONTROLS_PX = 78  # room under the plot area for the play/pause buttons and the step slider
AXIS_TITLE_PX = 44  # room under the plot area for the x tick labels and the axis title


def bottom_margin() -> int:
    return AXIS_TITLE_PX + CONTROLS_PX + 8


def animation_controls(names: list[str], active: int, prefix: str, duration: int | None = None,
                       height: int = 420, top: int = 40, redraw: bool = True) -> dict:
    """Layout `updatemenus` (play / pause) and `sliders` (one step per frame) for frames named `names`,
    placed under the x axis title of a figure of `height` px with margins `top` and `bottom_margin()`.

    `redraw`: heatmaps need a full redraw per frame; scatter-only figures animate without one (2-3x faster),
    as long as frames only change data (bars keep their count: see speedup.py)."""
    duration = frame_duration(len(names)) if duration is None else duration
    plot_h = max(height - top - bottom_margin(), 50)
    y = -AXIS_TITLE_PX / plot_h
    play = {"frame": {"duration": duration, "redraw": redraw}, "fromcurrent": True,
            "transition": {"duration": 0}, "mode": "immediate"}
    pause = {"frame": {"duration": 0, "redraw": False}, "transition": {"duration": 0}, "mode": "immediate"}
    jump = {"frame": {"duration": 0, "redraw": redraw}, "transition": {"duration": 0}, "mode": "immediate"}
    return {
        "updatemenus": [{
            "type": "buttons", "direction": "left", "showactive": False, "x": 0.0, "xanchor": "left",
            "y": y, "yanchor": "top", "pad": {"r": 8, "t": 0},
            "buttons": [
                {"label": "▶ Play", "method": "animate", "args": [None, play]},
                {"label": "❚❚ Pause", "method": "animate", "args": [[None], pause]},
            ],
        }],
        "sliders": [{
            "active": max(0, min(active, len(names) - 1)), "x": 0.16, "len": 0.84, "xanchor": "left",
            "y": y, "yanchor": "top", "pad": {"t": 0, "b": 0},
            "currentvalue": {"prefix": prefix, "visible": True, "xanchor": "left", "font": {"size": 12}},
            "transition": {"duration": 0},
            "steps": [{"label": n, "method": "animate", "args": [[n], jump]} for n in names],
        }],
    }


def empty_figure(message: str, height: int = 320) -> dict:
    """A figure with no data and a centred note (no frames)."""
    return {
        "data": [],
        "layout": {
            "height": height, "font": FONT, "margin": {"l": 20, "r": 20, "t": 20, "b": 20},
            "xaxis": {"visible": False}, "yaxis": {"visible": False},
            "annotations": [{"text": esc(message), "showarrow": False, "xref": "paper", "yref": "paper",
                             "x": 0.5, "y": 0.5, "font": {"size": 14, "color": "#666"}}],
            "plot_bgcolor": "rgba(0,0,0,0)", "paper_bgcolor": "rgba(0,0,0,0)",
        },
        "frames": [],
    }


def commit_text(trace, position: int, token: int) -> str:
    """`position:token` label (escaped)."""
    return f"{position}:{token_label(trace, token)}"

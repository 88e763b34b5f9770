"""Commit order: a position x pass heatmap, each cell coloured by the decision step that committed it, animated
one frame per target pass (the current pass outlined).

The cells are drawn as square markers of a scatter trace (a heatmap drawn with markers) rather than a Plotly
`heatmap` trace: a heatmap frame needs a full redraw (`redraw: true`, ~45 ms a frame in headless Chromium
here), while scatter frames animate without one (~16 ms), which keeps a 128-token trace playing in a couple of
seconds. The player sizes the squares to the cells (layout.meta.cell_trace); the Python default assumes a
~900 px wide plot.

Cells are ordered by pass, so frame k is a prefix of that order: a frame carries only x, y and the colour (the
decision step) of the cells committed so far; the hover texts live once in the trace and line up by index.
"""
from __future__ import annotations

from .common import FONT, HIGHLIGHT, VIRIDIS, animation_controls, bottom_margin, empty_figure, esc, \
    frame_duration, visible_token


def commit_order_figure(trace, title: str | None = None, height: int = 480) -> dict:
    m = trace.meta
    passes = trace.passes
    if not passes:
        return empty_figure("no target passes in this trace")
    start = len(m.prompt_tokens)
    n_pos = max(m.gen_length, 1)
    n_pass = len(passes)
    cells = [(c, p.index) for p in passes for c in p.commits]  # pass order
    max_step = max((c.step for c, _ in cells), default=0)
    pos_lo = min([start] + [c.position for c, _ in cells])  # a fused pass may commit early positions
    pos_hi = max([start + n_pos - 1] + [c.position for c, _ in cells])
    lo_x, hi_x = pos_lo - 0.5, pos_hi + 0.5

    xs = [c.position for c, _ in cells]
    ys = [k for _, k in cells]
    steps = [c.step for c, _ in cells]
    tokens = [esc(visible_token(trace.label(c.token), 24)) for c, _ in cells]
    details = [f"id {c.token} · confidence {c.confidence:.3f} · "
               + ("drafted, accepted from the tree" if c.drafted else "target decision") for c, _ in cells]

    frames = []
    shown = 0
    for p in passes:
        k = p.index
        shown += len(p.commits)
        cur_x = [c.position for c in p.commits]
        frames.append({
            "name": str(k),
            "data": [
                {"x": xs[:shown], "y": ys[:shown], "marker": {"color": steps[:shown]}},
                {"x": [lo_x, hi_x, hi_x, lo_x, lo_x], "y": [k - 0.5, k - 0.5, k + 0.5, k + 0.5, k - 0.5]},
                {"x": cur_x, "y": [k] * len(cur_x)},
            ],
            "traces": [0, 1, 2],
        })
    last = frames[-1]["data"]
    plot_w = 900 - 60 - 110  # assumed plot area width (px) for the default square size
    plot_h = height - 40 - bottom_margin()
    size = max(2.0, min(plot_w / (hi_x - lo_x), 3 * plot_h / max(n_pass, 1)) * 0.92)
    data = [
        {"type": "scatter", "mode": "markers", "name": "commits", "x": last[0]["x"], "y": last[0]["y"],
         "text": tokens, "customdata": details,
         "hovertemplate": "position %{x} · pass %{y} · step %{marker.color}<br>token %{text}<br>"
                          "%{customdata}<extra></extra>",
         "marker": {"symbol": "square", "size": size, "color": last[0]["marker"]["color"], "colorscale": VIRIDIS,
                    "cmin": 0, "cmax": max(max_step, 1), "showscale": True, "line": {"width": 0},
                    "colorbar": {"title": {"text": "step"}, "thickness": 12, "len": 0.8}}},
        {"type": "scatter", "mode": "lines", "name": "current pass", "x": last[1]["x"], "y": last[1]["y"],
         "line": {"color": HIGHLIGHT, "width": 2}, "hoverinfo": "skip"},
        {"type": "scatter", "mode": "markers", "name": "committed this pass", "x": last[2]["x"],
         "y": last[2]["y"], "marker": {"symbol": "square-open", "size": size + 3, "color": HIGHLIGHT,
                                       "line": {"width": 2}}, "hoverinfo": "skip"},
    ]
    names = [f["name"] for f in frames]
    kind = "SPOT" if any(p.tree for p in passes) else "standard"
    layout = {
        "title": {"text": esc(title) if title is not None else
                  f"Commit order — {n_pass} target passes ({esc(m.drafter)} · {esc(m.mode)})",
                  "font": {"size": 14}, "x": 0.01, "xanchor": "left"},
        "height": height, "font": FONT, "margin": {"l": 60, "r": 20, "t": 40, "b": bottom_margin()},
        "xaxis": {"title": {"text": "position"}, "range": [lo_x, hi_x], "autorange": False, "zeroline": False,
                  "showgrid": False},
        "yaxis": {"title": {"text": "target pass"}, "range": [n_pass - 0.5, -0.5], "autorange": False,
                  "zeroline": False, "showgrid": False},
        "plot_bgcolor": "#f4f4f4", "showlegend": False, "hovermode": "closest",
        "meta": {"view": "commit_order", "passes": n_pass, "kind": kind, "redraw": False,
                 "cell_trace": 0, "cell_ring_trace": 2},
        **animation_controls(names, len(names) - 1, "pass ", frame_duration(len(names)), height=height,
                             redraw=False),
    }
    return {"data": data, "layout": layout, "frames": frames}

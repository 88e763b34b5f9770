"""Commit order: a position x pass heatmap, each cell coloured by the decision step that committed it, animated
one frame per target pass (the current pass outlined).

The heatmap is given in column form (1-D x, y, z): one cell per commit plus a few empty "pad" cells that pin
the grid to every position and every pass, so cells keep their size and place from frame to frame. x, y and
the hover texts are fixed; a frame only sets z (the steps of the cells committed so far, null for the rest),
so a frame is O(commits) numbers and a 128-token trace stays small.
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
    committed = {}  # (position, pass) -> commit
    for p in passes:
        for c in p.commits:
            committed[(c.position, p.index)] = c
    max_step = max((c.step for c in committed.values()), default=0)
    pos_lo = min([start] + [c.position for c in committed.values()])  # a fused pass may commit early positions
    pos_hi = max([start + n_pos - 1] + [c.position for c in committed.values()])
    lo_x, hi_x = pos_lo - 0.5, pos_hi + 0.5
    positions = list(range(pos_lo, pos_hi + 1))

    # pad cells: every position and every pass appears once, never on a committed cell
    pads = []
    rows = [p.index for p in passes]
    for i in range(max(len(positions), n_pass)):
        x = positions[i % len(positions)]
        y = rows[i % n_pass]
        if (x, y) in committed:
            y = next((r for r in rows if (x, r) not in committed), None)
            if y is None:
                continue
        pads.append((x, y))

    def hover(c, k):
        how = "drafted, accepted" if c.drafted else "target decision"
        tok = esc(visible_token(trace.label(c.token), 24))
        return (f"position {c.position}<br>token {tok} (id {c.token})<br>pass {k} · step {c.step}"
                f"<br>confidence {c.confidence:.3f}<br>{how}")

    # fixed cell order for every frame: all commits (pass order), then the pads; frames only change z
    cells = [(c, p.index) for p in passes for c in p.commits]
    xs = [c.position for c, _ in cells] + [x for x, _ in pads]
    ys = [k for _, k in cells] + [y for _, y in pads]
    texts = [hover(c, k) for c, k in cells] + [""] * len(pads)
    z_all = [c.step for c, _ in cells]
    n_pad = len(pads)
    frames = []
    shown = 0
    for p in passes:
        k = p.index
        shown += len(p.commits)
        cur_x = [c.position for c in p.commits]
        frames.append({
            "name": str(k),
            "data": [
                {"z": z_all[:shown] + [None] * (len(z_all) - shown + n_pad)},
                {"x": [lo_x, hi_x, hi_x, lo_x, lo_x], "y": [k - 0.5, k - 0.5, k + 0.5, k + 0.5, k - 0.5]},
                {"x": cur_x, "y": [k] * len(cur_x)},
            ],
            "traces": [0, 1, 2],
        })
    last = frames[-1]["data"]
    data = [
        {"type": "heatmap", "name": "commits", "x": xs, "y": ys, "z": last[0]["z"],
         "hovertext": texts, "hoverinfo": "text", "hoverongaps": False,
         "colorscale": VIRIDIS, "zmin": 0, "zmax": max(max_step, 1), "zauto": False,
         "colorbar": {"title": {"text": "step"}, "thickness": 12, "len": 0.8}, "xgap": 1, "ygap": 1},
        {"type": "scatter", "mode": "lines", "name": "current pass", "x": last[1]["x"], "y": last[1]["y"],
         "line": {"color": HIGHLIGHT, "width": 2}, "hoverinfo": "skip", "showlegend": False},
        {"type": "scatter", "mode": "markers", "name": "committed this pass", "x": last[2]["x"],
         "y": last[2]["y"], "marker": {"symbol": "square-open", "size": 9, "color": HIGHLIGHT,
                                       "line": {"width": 2}}, "hoverinfo": "skip", "showlegend": False},
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
        "meta": {"view": "commit_order", "passes": n_pass, "kind": kind},
        **animation_controls(names, len(names) - 1, "pass ", frame_duration(len(names)), height=height),
    }
    return {"data": data, "layout": layout, "frames": frames}

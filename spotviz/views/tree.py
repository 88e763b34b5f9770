"""The draft tree of each target pass, animated one frame per pass.

Nodes are laid out by depth (x) and leaf order (y); each is labelled with its drafted decision
`position:token`. The accepted path (the acceptance walk) is highlighted, rejected branches are dimmed, and the
bonus decision -- the target's own decision at the node where the walk stopped (the pass's commit with
drafted=False) -- is drawn as a star attached to that node. Hover shows the drafter's probabilities and the
target's decision at the node. Passes without a tree show an empty frame with a note.
"""
from __future__ import annotations

from .common import ACCEPTED, BONUS, FONT, REJECTED, animation_controls, bottom_margin, commit_text, \
    empty_figure, esc, frame_duration, token_label

N_TRACES = 7  # rejected edges, accepted edges, rejected nodes, accepted nodes, bonus edge, bonus node, note


def _decision_text(trace, positions, tokens, limit: int = 3) -> str:
    items = [commit_text(trace, p, t) for p, t in zip(positions, tokens)]
    if len(items) > limit:
        return " ".join(items[:limit]) + f" +{len(items) - limit}"
    return " ".join(items) if items else "∅"


def layout_tree(nodes) -> tuple[dict[int, tuple[float, float]], int]:
    """(x, y) of every node id (x = depth, y = leaf order; parents centred on children) and the leaf count."""
    by_id = {n.id: n for n in nodes}
    children: dict[int, list] = {}
    roots = []
    for n in nodes:
        if n.parent in by_id and n.parent != n.id:
            children.setdefault(n.parent, []).append(n)
        else:
            roots.append(n)
    for ch in children.values():
        ch.sort(key=lambda c: (not c.accepted, -c.path_prob, c.id))
    pos: dict[int, tuple[float, float]] = {}
    leaf = 0
    seen = set()
    for r in roots:
        stack = [(r, False)]
        while stack:  # iterative post-order (trees can be deep)
            n, done = stack.pop()
            if done:
                ch = [c for c in children.get(n.id, []) if c.id in pos]
                y = (pos[ch[0].id][1] + pos[ch[-1].id][1]) / 2 if ch else float(leaf)
                if not ch:
                    leaf += 1
                pos[n.id] = (float(n.depth), y)
                continue
            if n.id in seen:
                continue
            seen.add(n.id)
            stack.append((n, True))
            for c in reversed(children.get(n.id, [])):
                stack.append((c, False))
    return pos, max(leaf, 1)


def _node_hover(trace, n, on_path: bool, is_root: bool) -> str:
    if is_root:
        head = "root: the state after the previous decision (its first decision is free)"
    else:
        head = f"node {n.id} · depth {n.depth}<br>drafted {_decision_text(trace, n.positions, n.tokens, 8)}"
    lines = [head]
    if not is_root:
        lines.append(f"drafter probability {n.prob:.3f} · path probability {n.path_prob:.3f}")
    if n.target_positions:
        lines.append("target decision here: " + _decision_text(trace, n.target_positions, n.target_tokens, 8))
    else:
        lines.append("target decision here: — (not walked to, or the window was complete)")
    lines.append("on the accepted path ✓" if on_path else "rejected ✗")
    return "<br>".join(lines)


def tree_figure(trace, title: str | None = None) -> dict:
    passes = trace.passes
    if not passes:
        return empty_figure("no target passes in this trace")
    layouts = {}
    max_depth, max_leaves = 0, 1
    for p in passes:
        if p.tree:
            pos, leaves = layout_tree(p.tree)
            layouts[p.index] = pos
            max_depth = max(max_depth, max(n.depth for n in p.tree))
            max_leaves = max(max_leaves, leaves)
    x_range = [-0.6, max_depth + 1.9]
    y_range = [max_leaves - 0.4, -1.1]  # reversed: first leaf on top; room for the note above
    note_x, note_y = -0.55, -0.85

    frames = []
    for p in passes:
        k = p.index
        if not p.tree:
            what = "standard decoding" if p.kind == "decode" and not any(q.tree for q in passes) else p.kind
            msg = (f"pass {k} ({esc(what)}): no draft tree · committed "
                   + _decision_text(trace, [c.position for c in p.commits], [c.token for c in p.commits], 6))
            frames.append({"name": str(k), "traces": list(range(N_TRACES)), "data": [
                {"x": [], "y": []}, {"x": [], "y": []},
                {"x": [], "y": [], "text": [], "hovertext": [], "customdata": []},
                {"x": [], "y": [], "text": [], "hovertext": [], "customdata": [], "marker": {"symbol": []}},
                {"x": [], "y": []}, {"x": [], "y": [], "text": [], "hovertext": []},
                {"x": [note_x], "y": [note_y], "text": [msg]},
            ]})
            continue
        pos = layouts[k]
        by_id = {n.id: n for n in p.tree}
        path = [i for i in p.accepted_path if i in by_id] or [p.tree[0].id]
        on_path = set(path)
        ex_r, ey_r, ex_a, ey_a = [], [], [], []
        nodes_r = {"x": [], "y": [], "text": [], "hovertext": [], "customdata": []}
        nodes_a = {"x": [], "y": [], "text": [], "hovertext": [], "customdata": [], "marker": {"symbol": []}}
        for n in p.tree:
            x, y = pos.get(n.id, (float(n.depth), 0.0))
            is_root = n.parent not in by_id
            if not is_root:
                px, py = pos.get(n.parent, (x - 1, y))
                if n.id in on_path and n.parent in on_path:
                    ex_a += [px, x, None]
                    ey_a += [py, y, None]
                else:
                    ex_r += [px, x, None]
                    ey_r += [py, y, None]
            label = "root" if is_root else _decision_text(trace, n.positions, n.tokens)
            tgt = nodes_a if n.id in on_path else nodes_r
            tgt["x"].append(x)
            tgt["y"].append(y)
            tgt["text"].append(label)
            tgt["hovertext"].append(_node_hover(trace, n, n.id in on_path, is_root))
            tgt["customdata"].append(n.id)
            if tgt is nodes_a:
                tgt["marker"]["symbol"].append("diamond" if is_root else "circle")
        bonus = [c for c in p.commits if not c.drafted]
        stop = by_id[path[-1]]
        sx, sy = pos.get(stop.id, (0.0, 0.0))
        if bonus:
            bx, by = sx + 1, sy - 0.45
            blabel = "★ " + _decision_text(trace, [c.position for c in bonus], [c.token for c in bonus])
            bhover = ("bonus decision: the target's own decision at the node where the walk stopped, "
                      "committed by this pass without being drafted<br>"
                      + "<br>".join(f"position {c.position} token {token_label(trace, c.token, 24)} "
                                    f"(step {c.step}, confidence {c.confidence:.3f})" for c in bonus))
            bonus_edge = {"x": [sx, bx], "y": [sy, by]}
            bonus_node = {"x": [bx], "y": [by], "text": [blabel], "hovertext": [bhover]}
        else:
            bonus_edge = {"x": [], "y": []}
            bonus_node = {"x": [], "y": [], "text": [], "hovertext": []}
        n_acc = sum(c.drafted for c in p.commits)
        msg = (f"pass {k}: {len(p.tree) - 1} drafted nodes ({p.states} states verified) · "
               f"{n_acc} accepted + {'bonus' if bonus else 'no bonus'} → {len(p.commits)} commits")
        frames.append({"name": str(k), "traces": list(range(N_TRACES)), "data": [
            {"x": ex_r, "y": ey_r}, {"x": ex_a, "y": ey_a}, nodes_r, nodes_a, bonus_edge, bonus_node,
            {"x": [note_x], "y": [note_y], "text": [msg]},
        ]})

    last = frames[-1]["data"]
    text_font = {"size": 11}
    data = [
        {"type": "scatter", "mode": "lines", "name": "rejected edges", "x": last[0]["x"], "y": last[0]["y"],
         "line": {"color": REJECTED, "width": 1}, "opacity": 0.5, "hoverinfo": "skip"},
        {"type": "scatter", "mode": "lines", "name": "accepted path", "x": last[1]["x"], "y": last[1]["y"],
         "line": {"color": ACCEPTED, "width": 3.5}, "hoverinfo": "skip"},
        {"type": "scatter", "mode": "markers+text", "name": "rejected", **last[2],
         "marker": {"color": REJECTED, "size": 9, "opacity": 0.45}, "textposition": "top center",
         "textfont": {**text_font, "color": "#9e9e9e"}, "hoverinfo": "text", "cliponaxis": False},
        {"type": "scatter", "mode": "markers+text", "name": "accepted", **{k: v for k, v in last[3].items()
                                                                            if k != "marker"},
         "marker": {"color": ACCEPTED, "size": 12, "symbol": last[3]["marker"]["symbol"],
                    "line": {"color": "#0b5d2a", "width": 1}},
         "textposition": "top center", "textfont": {**text_font, "color": "#0b5d2a"}, "hoverinfo": "text",
         "cliponaxis": False},
        {"type": "scatter", "mode": "lines", "name": "bonus edge", **last[4],
         "line": {"color": BONUS, "width": 2, "dash": "dot"}, "hoverinfo": "skip"},
        {"type": "scatter", "mode": "markers+text", "name": "bonus decision", **last[5],
         "marker": {"color": BONUS, "size": 16, "symbol": "star", "line": {"color": "#a33", "width": 1}},
         "textposition": "middle right", "textfont": {**text_font, "color": "#b3431b"}, "hoverinfo": "text",
         "cliponaxis": False},
        {"type": "scatter", "mode": "text", "name": "note", **last[6], "textposition": "middle right",
         "textfont": {"size": 12, "color": "#555"}, "hoverinfo": "skip", "cliponaxis": False},
    ]
    names = [f["name"] for f in frames]
    height = int(min(960, max(380, 200 + 26 * max_leaves)))
    m = trace.meta
    layout = {
        "title": {"text": esc(title) if title is not None else
                  f"Draft tree per pass — {esc(m.drafter)}, budget {m.budget}", "font": {"size": 14},
                  "x": 0.01, "xanchor": "left"},
        "height": height, "font": FONT, "margin": {"l": 30, "r": 30, "t": 40, "b": bottom_margin()},
        "xaxis": {"title": {"text": "depth (drafted decisions after the free first one)"}, "range": x_range,
                  "autorange": False, "zeroline": False, "showgrid": False, "dtick": 1},
        "yaxis": {"range": y_range, "autorange": False, "visible": False},
        **({"xaxis": {"range": x_range, "autorange": False, "visible": False}} if not layouts else {}),
        "plot_bgcolor": "rgba(0,0,0,0)", "showlegend": False,
        "hovermode": "closest",
        "meta": {"view": "tree", "passes": len(passes), "max_depth": max_depth, "max_leaves": max_leaves,
                 "redraw": False},
        "annotations": [{  # a fixed legend (the automatic one drops traces that are empty in the first frame)
            "xref": "paper", "yref": "paper", "x": 1, "y": 1.01, "xanchor": "right", "yanchor": "bottom",
            "showarrow": False, "font": {"size": 11},
            "text": (f'<span style="color:{ACCEPTED}">◆ ● accepted path</span>   '
                     f'<span style="color:{REJECTED}">● rejected branch</span>   '
                     f'<span style="color:{BONUS}">★ bonus decision</span>'),
        }],
        **animation_controls(names, len(names) - 1, "pass ", frame_duration(len(names)), height=height,
                             redraw=False),
    }
    return {"data": data, "layout": layout, "frames": frames}

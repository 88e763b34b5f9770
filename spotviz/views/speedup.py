"""Speed-up counters: cumulative commits vs target passes for the drafter run and the standard decoder on the
same prompt and seed (animated: one frame per pass of the drafter run, then a few frames striding over the
passes the standard decoder still needs), commits per pass, and a table with mean accepted length, tokens/s,
speed-up x and the identical-output check (DESIGN.md sections 6 and 7).
"""
from __future__ import annotations

from .common import BASELINE_LINE, DRAFTER_LINE, FONT, animation_controls, bottom_margin, empty_figure, esc, \
    frame_duration

SAME_RUN_FIELDS = ("model", "prompt", "seed", "mode", "threshold", "temperature", "gen_length")

TABLE_CSS = """
.sv-counters { font-family: var(--font, sans-serif); font-size: 13px; }
.sv-counters table { border-collapse: collapse; width: 100%; }
.sv-counters th, .sv-counters td { padding: 3px 8px; border-bottom: 1px solid var(--border-color-primary, #e3e3e3); text-align: right; }
.sv-counters th:first-child, .sv-counters td:first-child { text-align: left; }
.sv-counters .sv-big { font-size: 20px; font-weight: 600; }
.sv-counters .sv-ok { color: #1a7f37; font-weight: 600; }
.sv-counters .sv-bad { color: #c62828; font-weight: 600; }
.sv-counters .sv-muted { color: var(--body-text-color-subdued, #888); }
.sv-counters .sv-kpis { display: flex; gap: 22px; flex-wrap: wrap; margin: 4px 0 8px; }
.sv-counters .sv-kpi span { display: block; font-size: 11px; color: var(--body-text-color-subdued, #777); }
"""


def run_label(trace) -> str:
    m = trace.meta
    if m.drafter == "none":
        return f"standard ({m.mode})"
    return f"{m.drafter} (budget {m.budget})"


def same_run(a, b) -> bool:
    """True if `a` and `b` decoded the same prompt with the same settings (so their outputs must agree)."""
    return all(getattr(a.meta, f) == getattr(b.meta, f) for f in SAME_RUN_FIELDS)


def identical_output(trace, baseline) -> bool | None:
    """Tokens equal to the standard run's (None when there is no comparable baseline)."""
    if baseline is None or not same_run(trace, baseline):
        return None
    return list(trace.tokens) == list(baseline.tokens)


def speedup_numbers(trace, baseline) -> dict:
    c = trace.counters
    out = {"passes": c.target_passes, "commits": c.commits, "mean_accepted_length": c.mean_accepted_length,
           "tokens_per_s": c.tokens_per_s, "wall_s": c.wall_s}
    if baseline is not None and c.target_passes and c.wall_s > 0:
        b = baseline.counters
        out["speedup_passes"] = b.target_passes / c.target_passes
        out["speedup_wall"] = b.wall_s / c.wall_s if c.wall_s > 0 else None
        out["identical"] = identical_output(trace, baseline)
    return out


TAIL_FRAMES = 20


def frame_passes(n_main: int, n_max: int, tail: int = TAIL_FRAMES) -> list[int]:
    """The pass index of each frame: every pass of the drafter run, then at most `tail` frames striding over
    the passes the standard decoder still needs (so a long baseline does not slow the animation down)."""
    points = list(range(n_main))
    rest = n_max - n_main
    if rest > 0:
        step = -(-rest // tail)
        points += list(range(n_main - 1 + step, n_max - 1, step)) + [n_max - 1]
    return sorted(set(points))


def _cumulative(trace) -> tuple[list[int], list[int]]:
    xs, ys, total = [0], [0], 0
    for p in trace.passes:
        total += len(p.commits)
        xs.append(p.index + 1)
        ys.append(total)
    return xs, ys


def speedup_figure(trace, baseline=None, height: int = 520) -> dict:
    """Cumulative commits vs target passes (top) and commits per pass (bottom), animated pass by pass."""
    if not trace.passes:
        return empty_figure("no target passes in this trace")
    runs = [trace] + ([baseline] if baseline is not None and baseline is not trace else [])
    curves = [_cumulative(t) for t in runs]
    n_max = max(len(t.passes) for t in runs)
    max_x = n_max
    points = frame_passes(len(trace.passes), n_max)
    n_frames = len(points)
    max_y = max(max(ys) for _, ys in curves)
    per_pass = [len(p.commits) for p in trace.passes]
    base_pp = [len(p.commits) for p in baseline.passes] if len(runs) > 1 else []
    max_pp = max(per_pass + base_pp + [1])
    colors = [DRAFTER_LINE if t.meta.drafter != "none" else BASELINE_LINE for t in runs]
    if len(runs) > 1:
        colors[1] = BASELINE_LINE

    frames = []
    for k in points:
        fdata = []
        for (xs, ys) in curves:
            j = min(k + 2, len(xs))
            fdata.append({"x": xs[:j], "y": ys[:j]})
        j = min(k + 1, len(per_pass))  # bars keep their count (zeros ahead) so frames animate without redraw
        fdata.append({"y": per_pass[:j] + [0] * (len(per_pass) - j)})
        frames.append({"name": str(k), "data": fdata, "traces": list(range(len(fdata)))})

    data = []
    last = frames[-1]["data"]
    for i, t in enumerate(runs):
        c = t.counters
        data.append({
            "type": "scatter", "mode": "lines+markers", "name": esc(f"{run_label(t)}: {c.target_passes} passes"),
            "x": last[i]["x"], "y": last[i]["y"], "line": {"color": colors[i], "width": 2.5,
                                                        "shape": "hv"},
            "marker": {"size": 4}, "hovertemplate": "after %{x} passes: %{y} commits<extra>"
            + esc(run_label(t)) + "</extra>", "xaxis": "x", "yaxis": "y",
        })
    data.append({
        "type": "bar", "name": "commits per pass (" + esc(run_label(trace)) + ")", "x": list(range(len(per_pass))),
        "y": last[-1]["y"], "marker": {"color": colors[0]}, "xaxis": "x2", "yaxis": "y2",
        "hovertemplate": "pass %{x}: %{y} commits<extra></extra>", "showlegend": False,
    })
    names = [f["name"] for f in frames]
    layout = {
        "title": {"text": "Commits vs target passes (NFE)", "font": {"size": 14}, "x": 0.01, "xanchor": "left"},
        "height": height, "font": FONT, "margin": {"l": 60, "r": 20, "t": 40, "b": bottom_margin()},
        "xaxis": {"title": {"text": "target passes"}, "range": [0, max_x + 0.5], "autorange": False,
                  "domain": [0, 1], "anchor": "y"},
        "yaxis": {"title": {"text": "tokens committed"}, "range": [0, max_y * 1.05 + 1], "autorange": False,
                  "domain": [0.5, 1], "anchor": "x"},
        "xaxis2": {"title": {"text": "pass (" + esc(run_label(trace)) + ")"}, "range": [-0.5, max_x - 0.5],
                   "autorange": False, "domain": [0, 1], "anchor": "y2"},
        "yaxis2": {"title": {"text": "commits"}, "range": [0, max_pp + 0.5], "autorange": False,
                   "domain": [0, 0.27], "anchor": "x2"},
        "legend": {"x": 0.99, "y": 0.52, "xanchor": "right", "yanchor": "bottom", "bgcolor": "rgba(255,255,255,0.7)"},
        "hovermode": "closest", "bargap": 0.15,
        "meta": {"view": "speedup", "passes": len(trace.passes), "frames": n_frames, "redraw": False},
        **animation_controls(names, len(names) - 1, "pass ", frame_duration(len(names)), height=height,
                             redraw=False),
    }
    return {"data": data, "layout": layout, "frames": frames}


def _fmt(v, spec=".2f", none="—"):
    if v is None:
        return none
    if isinstance(v, int):
        return str(v)
    return format(v, spec)


def counters_html(trace, baseline=None, live: bool = False, note: str = "") -> str:
    """The counters table (drafter run next to the standard run) with the headline numbers."""
    if trace is None:
        return '<div class="sv-counters sv-muted">No run yet.</div>'
    runs = [trace] + ([baseline] if baseline is not None else [])
    nums = speedup_numbers(trace, baseline)
    kpis = []
    if "speedup_passes" in nums and not live:
        kpis.append(f'<div class="sv-kpi"><span>speed-up (target passes)</span>'
                    f'<b class="sv-big">{nums["speedup_passes"]:.2f}×</b></div>')
        if nums.get("speedup_wall") is not None:
            kpis.append(f'<div class="sv-kpi"><span>speed-up (wall time)</span>'
                        f'<b class="sv-big">{nums["speedup_wall"]:.2f}×</b></div>')
        ident = nums.get("identical")
        if ident is None:
            cell = '<b class="sv-big sv-muted">n/a</b>'
        elif ident:
            cell = '<b class="sv-big sv-ok">✓ identical</b>'
        else:
            cell = '<b class="sv-big sv-bad">✗ differs</b>'
        kpis.append(f'<div class="sv-kpi"><span>output vs standard decoder</span>{cell}</div>')
    kpis.append(f'<div class="sv-kpi"><span>mean accepted length (commits / pass)</span>'
                f'<b class="sv-big">{trace.counters.mean_accepted_length:.2f}</b></div>')
    rows = [
        ("target passes (NFE)", lambda c: _fmt(c.target_passes)),
        ("commits", lambda c: _fmt(c.commits)),
        ("generated tokens", lambda c: _fmt(c.generated_tokens)),
        ("mean accepted length", lambda c: _fmt(c.mean_accepted_length)),
        ("drafted nodes", lambda c: _fmt(c.drafted_nodes)),
        ("accepted drafts", lambda c: _fmt(c.accepted_drafts)),
        ("acceptance per depth", lambda c: (" ".join(f"{a:.2f}" for a in c.acceptance_per_depth[:8])
                                            + (" …" if len(c.acceptance_per_depth) > 8 else "")) or "—"),
        ("wall time (s)", lambda c: _fmt(c.wall_s, ".3f")),
        ("tokens / s", lambda c: _fmt(c.tokens_per_s, ".1f")),
    ]
    head = "".join(f"<th>{esc(run_label(t))}</th>" for t in runs)
    body = "".join(f"<tr><td>{name}</td>" + "".join(f"<td>{esc(f(t.counters))}</td>" for t in runs) + "</tr>"
                   for name, f in rows)
    extra = ""
    if live:
        extra = '<div class="sv-muted">running… (counters so far)</div>'
    if note:
        extra += f'<div class="sv-muted">{esc(note)}</div>'
    return (f'<div class="sv-counters"><div class="sv-kpis">{"".join(kpis)}</div>'
            f"<table><thead><tr><th></th>{head}</tr></thead><tbody>{body}</tbody></table>{extra}</div>")

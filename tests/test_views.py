"""The figure builders (spotviz.views): one frame per pass, fixed axes, accepted path colouring, escaping."""
from __future__ import annotations

import json

import pytest

from spotviz.trace import Commit, Counters, PassRecord, RunMeta, Trace, TreeNode
from spotviz.views import (canvas_html, commit_order_figure, counters_html, identical_output, speedup_figure,
                           trace_canvas, tree_figure)
from spotviz.views.canvas import Cell
from spotviz.views.common import ACCEPTED, BONUS, REJECTED

EVIL = "<script>alert(1)</script>"
EVIL_IMG = '<img src=x onerror="alert(2)">'


def _meta(**kw) -> RunMeta:
    d = dict(model="hand-made", tokenizer="hand-made", attention="block", mode="exact", threshold=0.9,
             temperature=0.0, seed=0, drafter="spot", budget=8, block_size=4, gen_length=8, prompt="ROMEO.\n",
             prompt_tokens=[10, 11], mask_id=1)
    d.update(kw)
    return RunMeta(**d)


def _tree_trace(**meta) -> Trace:
    """Three passes over positions 2..9: a prefill, a SPOT pass with a tree (accepted path 0 -> 1 -> 3, bonus),
    and a pass without a tree. Token 20 displays as a <script> tag, token 21 as an <img> tag."""
    p0 = PassRecord(index=0, kind="decode", window=[0, 4], states=1, commits=[Commit(2, 20, 0, 0.9)])
    tree = [
        TreeNode(id=0, parent=-1, depth=0, positions=[], tokens=[], accepted=True, target_positions=[3],
                 target_tokens=[21]),
        TreeNode(id=1, parent=0, depth=1, positions=[3], tokens=[21], prob=0.7, path_prob=0.7, accepted=True,
                 target_positions=[4], target_tokens=[22]),
        TreeNode(id=2, parent=0, depth=1, positions=[4], tokens=[22], prob=0.2, path_prob=0.2),
        TreeNode(id=3, parent=1, depth=2, positions=[4], tokens=[22], prob=0.6, path_prob=0.42, accepted=True,
                 target_positions=[5], target_tokens=[23]),
        TreeNode(id=4, parent=1, depth=2, positions=[5], tokens=[24], prob=0.3, path_prob=0.21),
        TreeNode(id=5, parent=3, depth=3, positions=[6], tokens=[25], prob=0.5, path_prob=0.21),
    ]
    p1 = PassRecord(index=1, kind="verify", window=[0, 8], states=6,
                    commits=[Commit(3, 21, 1, 0.8, True), Commit(4, 22, 2, 0.7, True), Commit(5, 23, 3, 0.6)],
                    tree=tree, accepted_path=[0, 1, 3])
    p2 = PassRecord(index=2, kind="decode", window=[4, 8], states=1,
                    commits=[Commit(6, 26, 4, 0.5), Commit(7, 27, 4, 0.5), Commit(8, 28, 4, 0.5),
                             Commit(9, 0, 4, 0.5)])
    passes = [p0, p1, p2]
    commits = sum(len(p.commits) for p in passes)
    counters = Counters(target_passes=3, commits=commits, generated_tokens=7, drafted_nodes=5, accepted_drafts=2,
                        mean_accepted_length=commits / 3, acceptance_per_depth=[1.0, 1.0, 0.0], wall_s=0.01,
                        tokens_per_s=700.0)
    text = {str(i): f"t{i}" for i in range(20, 29)}
    text.update({"20": EVIL, "21": EVIL_IMG, "0": "<|endoftext|>", "10": "ROMEO", "11": ".\n", "1": "[MASK]"})
    trace = Trace(meta=_meta(**meta), passes=passes, tokens=[20, 21, 22, 23, 26, 27, 28], text="x",
                  counters=counters, token_text=text)
    trace.validate()
    return trace


def _standard_trace(n: int = 6, tokens=None, **meta) -> Trace:
    tokens = tokens or [30 + i for i in range(n)]
    passes = [PassRecord(index=i, kind="decode", window=[0, 8], states=1, commits=[Commit(2 + (i * 5) % n, t, i)])
              for i, t in enumerate(tokens)]
    counters = Counters(target_passes=n, commits=n, generated_tokens=n, mean_accepted_length=1.0, wall_s=0.02,
                        tokens_per_s=n / 0.02)
    return Trace(meta=_meta(drafter="none", budget=0, gen_length=n, **meta), passes=passes, tokens=list(tokens),
                 text="y", counters=counters, token_text={str(t): f"w{t}" for t in tokens})


def _axis_ranges(fig):
    return {k: v.get("range") for k, v in fig["layout"].items() if k.startswith(("xaxis", "yaxis"))}


# -------------------------------------------------------------------------------------------- commit order
def test_commit_order_one_frame_per_pass_and_fixed_axes():
    for trace in (_tree_trace(), _standard_trace(7)):
        fig = commit_order_figure(trace)
        assert len(fig["frames"]) == len(trace.passes)
        assert [f["name"] for f in fig["frames"]] == [str(p.index) for p in trace.passes]
        ranges = _axis_ranges(fig)
        assert ranges["xaxis"] and ranges["yaxis"]
        assert fig["layout"]["xaxis"]["autorange"] is False and fig["layout"]["yaxis"]["autorange"] is False
        for f in fig["frames"]:
            assert "layout" not in f or not any(k.startswith(("xaxis", "yaxis")) for k in f["layout"])
        # every committed cell lies inside the fixed ranges
        x0, x1 = sorted(ranges["xaxis"])
        y0, y1 = sorted(ranges["yaxis"])
        for p in trace.passes:
            for c in p.commits:
                assert x0 < c.position < x1 and y0 < p.index < y1
        # slider: one step per frame; play button animates all frames with redraw
        steps = fig["layout"]["sliders"][0]["steps"]
        assert [s["args"][0][0] for s in steps] == [f["name"] for f in fig["frames"]]
        play = fig["layout"]["updatemenus"][0]["buttons"][0]
        assert play["args"][0] is None and play["args"][1]["fromcurrent"] is True


def test_commit_order_frames_reveal_commits_pass_by_pass():
    trace = _tree_trace()
    fig = commit_order_figure(trace)
    cells = fig["data"][0]
    assert cells["mode"] == "markers" and cells["marker"]["symbol"] == "square"
    n_cells = sum(len(p.commits) for p in trace.passes)
    assert len(cells["text"]) == len(cells["customdata"]) == n_cells  # hover texts once, aligned by index
    shown = 0
    for p, f in zip(trace.passes, fig["frames"]):
        d = f["data"][0]
        shown += len(p.commits)
        assert len(d["x"]) == len(d["y"]) == len(d["marker"]["color"]) == shown
        got = sorted(zip(d["x"], d["y"], d["marker"]["color"]))
        want = sorted((c.position, q.index, c.step) for q in trace.passes[: p.index + 1] for c in q.commits)
        assert got == want  # exactly the commits of passes <= this one, coloured by step
        assert "text" not in d  # frames stay small
        # the current pass is outlined
        assert f["data"][1]["y"][0] == p.index - 0.5
        assert sorted(f["data"][2]["x"]) == sorted(c.position for c in p.commits)
    assert cells["marker"]["cmin"] == 0
    assert cells["marker"]["cmax"] >= max(c.step for p in trace.passes for c in p.commits)
    assert "t22" in cells["text"]


# ---------------------------------------------------------------------------------------------------- tree
def test_tree_accepted_path_rejected_branches_and_bonus():
    trace = _tree_trace()
    fig = tree_figure(trace)
    assert len(fig["frames"]) == len(trace.passes)
    names = [d["name"] for d in fig["data"]]
    acc_i, rej_i, bonus_i = names.index("accepted"), names.index("rejected"), names.index("bonus decision")
    assert fig["data"][acc_i]["marker"]["color"] == ACCEPTED
    assert fig["data"][rej_i]["marker"]["color"] == REJECTED
    assert fig["data"][rej_i]["marker"]["opacity"] < 1  # dimmed
    assert fig["data"][bonus_i]["marker"]["color"] == BONUS
    frame = fig["frames"][1]["data"]  # the pass with the tree
    assert frame[acc_i]["customdata"] == [0, 1, 3]  # the accepted path, root first
    assert sorted(frame[rej_i]["customdata"]) == [2, 4, 5]
    assert frame[acc_i]["text"][0] == "root"
    assert frame[acc_i]["text"][1].startswith("3:")  # position:token
    # the bonus is the commit with drafted=False (position 5, token 23), hung off the stop node (id 3)
    assert "5:t23" in frame[bonus_i]["text"][0]
    stop_xy = (frame[acc_i]["x"][2], frame[acc_i]["y"][2])
    assert (frame[bonus_i - 1]["x"][0], frame[bonus_i - 1]["y"][0]) == stop_xy
    # hover: drafter probability and the target's decision
    hover = " ".join(frame[acc_i]["hovertext"] + frame[rej_i]["hovertext"])
    assert "drafter probability 0.700" in hover and "path probability 0.420" in hover
    assert "target decision here: 4:t22" in hover
    # the passes without a tree: empty node traces and a note
    for k in (0, 2):
        f = fig["frames"][k]["data"]
        assert f[acc_i]["x"] == [] and f[rej_i]["x"] == [] and f[bonus_i]["x"] == []
        assert "no draft tree" in f[-1]["text"][0]
    # fixed axes across frames
    assert fig["layout"]["xaxis"]["autorange"] is False and fig["layout"]["yaxis"]["autorange"] is False
    assert all("layout" not in f for f in fig["frames"])
    x0, x1 = fig["layout"]["xaxis"]["range"]
    for f in fig["frames"]:
        for tr in f["data"]:
            for x in tr.get("x", []):
                assert x is None or x0 < x < x1


def test_tree_of_standard_run_is_all_notes():
    trace = _standard_trace(5)
    fig = tree_figure(trace)
    assert len(fig["frames"]) == 5
    assert all("no draft tree" in f["data"][-1]["text"][0] for f in fig["frames"])


# ------------------------------------------------------------------------------------------------ speed-up
def test_speedup_frames_counters_and_identical_check():
    base = _standard_trace(7, tokens=[20, 21, 22, 23, 26, 27, 28])
    base.meta.gen_length = 8
    spot = _tree_trace()
    fig = speedup_figure(spot, base)
    assert len(fig["frames"]) == max(len(spot.passes), len(base.passes))
    lines = fig["data"][:2]
    assert lines[0]["x"][-1] == 3 and lines[0]["y"][-1] == spot.counters.commits
    assert lines[1]["x"][-1] == 7 and lines[1]["y"][-1] == base.counters.commits
    assert fig["layout"]["xaxis"]["range"][1] >= 7 and fig["layout"]["yaxis"]["range"][1] >= spot.counters.commits
    for k, f in enumerate(fig["frames"]):
        assert f["data"][0]["x"][-1] == min(k + 1, 3)
    assert identical_output(spot, base) is True
    # a long baseline: every drafter pass has a frame, then a few frames stride to the baseline's last pass
    long_base = _standard_trace(60)
    fig = speedup_figure(spot, long_base)
    names = [int(f["name"]) for f in fig["frames"]]
    assert names[:3] == [0, 1, 2] and names[-1] == 59 and len(names) <= 3 + 21 and names == sorted(set(names))
    assert fig["frames"][-1]["data"][1]["x"][-1] == 60  # the baseline curve ends at its last pass
    html = counters_html(spot, base)
    assert "identical" in html and "2.33×" in html  # 7 passes / 3 passes
    other = _standard_trace(7, tokens=[20, 21, 22, 23, 26, 27, 99])
    other.meta.gen_length = 8
    assert identical_output(spot, other) is False
    assert "differs" in counters_html(spot, other)
    other.meta.seed = 5  # different settings: no verdict
    assert identical_output(spot, other) is None


# ---------------------------------------------------------------------------------------------------- escaping
def test_labels_are_escaped_everywhere():
    trace = _tree_trace(model="<b>model</b>", prompt="<script>p()</script>\n")
    base = _standard_trace(3)
    figs = [commit_order_figure(trace), tree_figure(trace), speedup_figure(trace, base)]
    blob = json.dumps(figs)
    for bad in ("<script", "<img", "<b>model"):
        assert bad not in blob
    assert "&lt;script&gt;" in blob and "&lt;img" in blob
    for html in (trace_canvas(trace), counters_html(trace, base)):
        assert "<script" not in html and "<img" not in html and "<b>model" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in trace_canvas(trace)


def test_canvas_masked_positions_and_colours():
    cells = {3: Cell(3, "a", 0, 0), 5: Cell(5, "\n", 1, 1, drafted=True)}
    html = canvas_html("P", 2, 6, cells, latest_pass=1)
    assert html.count('class="sv-tok sv-mask"') == 4  # positions 2, 4, 6, 7
    assert 'data-pos="3" data-pass="0"' in html and 'data-pos="5" data-pass="1"' in html
    assert "sv-new" in html.split('data-pos="5"')[0].rsplit("<span", 1)[1]  # latest pass outlined
    assert "↵" in html


# ---------------------------------------------------------------------------------------- real engine traces
@pytest.fixture(scope="module")
def real_traces(tiny_block_target, tiny_prompt):
    from spotviz.engine import decode
    from spotviz.samplers.common import DecodeConfig

    base = decode(tiny_block_target, tiny_prompt, DecodeConfig(gen_length=24, seed=1))
    try:
        spot = decode(tiny_block_target, tiny_prompt, DecodeConfig(gen_length=24, seed=1, drafter="training-free",
                                                                    budget=8))
    except (ImportError, ValueError) as e:  # the drafters land separately
        pytest.skip(f"training-free drafter unavailable: {e}")
    return spot, base


def test_views_of_real_traces(real_traces):
    spot, base = real_traces
    order, tree, speed = commit_order_figure(spot), tree_figure(spot), speedup_figure(spot, base)
    assert len(order["frames"]) == len(tree["frames"]) == len(spot.passes)
    assert len(speed["frames"]) == max(len(spot.passes), len(base.passes))
    names = [d["name"] for d in tree["data"]]
    acc_i = names.index("accepted")
    for p, f in zip(spot.passes, tree["frames"]):
        if p.tree:
            assert f["data"][acc_i]["customdata"] == p.accepted_path
    assert identical_output(spot, base) is True
    json.dumps([order, tree, speed])  # plain JSON


# ------------------------------------------------------------------------------------------------- timeline
def _lines(text: str) -> list[dict]:
    assert text.endswith("\n")
    return [json.loads(s) for s in text.splitlines()]


def test_timeline_one_line_per_pass_and_the_tree_fitted_per_pass():
    from spotviz.views.timeline import timeline

    trace = _tree_trace()
    lines = _lines(timeline(trace, session="s1", source="replay"))
    kinds = [x["t"] for x in lines]
    assert kinds == ["session", "run", "pass", "pass", "pass", "end", "sum"]
    p0, p1, p2 = lines[2:5]
    assert p0["tree"] is None and p2["tree"] is None  # no tree drawn where the pass verified none
    tree = p1["tree"]
    # fitted to this pass: 3 leaves (nodes 2, 4, 5) -> 3 rows; depths 0..3 -> 4 columns
    assert tree["rows"] == 3 and tree["cols"] == 4 and tree["size"] == 6
    by_id = {n[0]: n for n in tree["nodes"]}
    assert [i for i, n in by_id.items() if n[6]] == [0, 1, 3]  # the accepted path
    assert by_id[3][7] == [3, 4] and by_id[5][7] == [3, 4, 6]  # slots on the path (hover highlights them)
    assert len({(n[2], n[3]) for n in tree["nodes"]}) == len(tree["nodes"])  # no two nodes share a grid cell
    assert tree["stop"] == 3 and tree["depth"] == 2
    assert tree["bonus"][2] == [5]  # the target's own decision where the walk stopped
    assert tree["expect"] == [3, 4, 6]  # the drafter's most likely path: 1 (0.7), 3 (0.6), 5
    assert [c[0] for c in p1["c"]] == [3, 4, 5] and [c[3] for c in p1["c"]] == [1, 1, 0]
    assert [p["n"] for p in (p0, p1, p2)] == [1, 4, 8]  # slots committed so far


def test_timeline_stale_right_final_slots_and_headline():
    from spotviz.views.timeline import stale_right, timeline

    trace = _tree_trace()
    # pass 1's tree drafted slot 3 = 21, 4 = 22 (final), 5 = 24 (final is 23), 6 = 25 (final is 26)
    assert stale_right(trace) == [[], [3, 4], []]
    base = _standard_trace(8, tokens=trace.tokens + [0])
    base.meta.gen_length = trace.meta.gen_length
    lines = _lines(timeline(trace, base))
    end = next(x for x in lines if x["t"] == "end" and x["r"] == "main")
    assert end["final"][0] == EVIL and end["end"] == len(trace.tokens) and len(end["final"]) == 8
    s = lines[-1]
    assert s["t"] == "sum" and s["saved"] == 8 - 3 and s["ratio"] == round(8 / 3, 3)


def test_timeline_keeps_code_text_and_never_html():
    """Token text travels verbatim (newlines, runs of spaces) as JSON strings; the browser inserts it as text."""
    from spotviz.views.timeline import timeline

    trace = _tree_trace()
    trace.token_text["22"] = "\n    return"
    text = timeline(trace)
    lines = _lines(text)
    p1 = lines[3]
    assert p1["c"][1][1] == "\n    return"
    assert any("<script>" in c[1] for c in lines[2]["c"])  # raw: escaping happens in the browser's textContent
    tree_labels = [n[4] for n in p1["tree"]["nodes"]]
    assert "↵····return" in tree_labels  # tree labels make whitespace visible


def test_live_session_lines_equal_the_replayed_trace(tiny_block_target, tiny_prompt):
    """The app's live session turns engine events into the same pass lines as the finished trace."""
    from spotviz.samplers.common import DecodeConfig
    from spotviz.ui.runner import ModelStore, decode_events, register_store
    from spotviz.ui.session import LiveSession
    from spotviz.views.timeline import trace_lines

    key = register_store(ModelStore(lambda name: tiny_block_target))
    cfg = DecodeConfig(gen_length=16, seed=4, drafter="training-free", budget=8)
    session = LiveSession()
    for ev in decode_events(key, "tiny", tiny_prompt, cfg, True):
        session.event(ev)
    session.finish()
    live = [x for x in _lines(session.text) if x["t"] == "pass" and x["r"] == "main"]
    replayed = [x for x in trace_lines(session.main, "main") if x["t"] == "pass"]
    for a, b in zip(live, replayed):
        a.pop("wall"), b.pop("wall")
    assert live == json.loads(json.dumps(replayed))
    assert _lines(session.text)[-1]["final"] is True


# --------------------------------------------------------------------------------------------- report page
def test_report_page_holds_every_view_escaped_and_plotly_once(real_traces):
    from spotviz.views.report import report_html

    spot, base = real_traces
    page = report_html(spot, base)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    for key in ("order", "tree", "speedup"):
        assert page.count(f'id="sv-{key}"') == 1
    assert page.count("plotly.js v") == 1  # plotly.js embedded once (the page opens offline)
    assert "identical to the standard decoder" in page and 'class="sv-canvas"' in page
    assert page.count("Plotly.addFrames") == 3  # every figure animated
    linked = report_html(base, plotlyjs="cdn")
    assert "cdn.plot.ly" in linked and "plotly.js v" not in linked and 'id="sv-tree"' not in linked
    with pytest.raises(ValueError, match="plotlyjs"):
        report_html(base, plotlyjs="web")


def test_report_page_escapes_labels():
    from spotviz.views.report import report_html

    page = report_html(_tree_trace(model="<b>model</b>", prompt="<script>p()</script>\n"), plotlyjs="cdn")
    assert "<script>p()" not in page and "<b>model" not in page and EVIL not in page and EVIL_IMG not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page

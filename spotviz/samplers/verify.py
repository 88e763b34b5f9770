"""The verifier: one batched target pass over a draft tree, the acceptance walk, the bonus and the fused step.

Given the node states of a tree rooted at s1 (node 0) and one target pass over all of them (but the known states,
whose window's logits an earlier pass of the window stored: they are decided from those, the same numbers):
- every node's decision d(n) is computed from n's own logits with the noise of its step (step(n) = step(s1) +
  depth(n)), in one batched call for the evaluated nodes and one for the known states;
- the acceptance walk starts at s1: at node n, move to the child whose drafted edge equals d(n), else stop.
  Every decision on the walk is the target's own, so the trajectory is exactly the standard decoder's;
- the bonus is d(stop), the stop node's own decision, already computed by the same pass.
The fused pass: if some node completes the window, the pass evaluates the next window too, for every node it
evaluates (a known state never completes the window). A node
that completes the window then decides in the next window (its first decision there, or a later one for a node the
tree drafted on into that window); the walk goes on across the boundary, and a bonus in the next window makes the
decoder add the finished window's keys/values to the cache. These are the standard decoder's numbers only where a
window's logits do not depend on how far a call reaches (info.blockwise_exact: the embedded models compute a
call's last block apart); elsewhere the decoder keeps trees inside their window.
Decisions per pass = accepted edges + 1 (a decision commits one position in exact mode, a set in threshold mode).
Why the walk stopped (`walk_end`, recorded per pass; trace.WALK_ENDS): the stop completed the window and the tree
held nothing past it ("window"), the text was complete ("end"), the target's decision was a guess the budget left
out or the stop never got guesses ("budget"), the stop's guesses named other positions ("position") or the right
positions with other tokens ("token").
What the walk did not use is kept for the window's later passes: samplers/known_states.py.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..decision import Decision, decide, masked_log_softmax
from ..drafter.tree import DraftNode
from ..targets.base import ForwardOutput
from ..targets.invariance import check_pass
from ..trace import TreeNode


@dataclass
class Verified:
    """One verification pass: the forward, the target's decision at every node (None where nothing is left to
    decide) with the start of the window it was made in, and whether the pass also evaluated the next window."""

    out: ForwardOutput
    decisions: list[Decision | None]
    fused: bool
    forward_s: float  # time of the target pass (on the run's pass clock, DecodeState.clock)
    check_s: float = 0.0  # time of the batch-invariance check (once per batch shape; not the pass's own cost)
    lows: list[int] | None = None  # the start of the window of each decision (None: all in this pass's window)
    complete: list[bool] | None = None  # per node: it completes the window (fused passes only)
    rows: list[int | None] | None = None  # per node: its row of `out` (None: a known state, left out of the batch);
    # None: node i is row i
    steps: list[int] | None = None  # per node: the decision index of its decision (step(s1) + depth)

    def low(self, node_id: int, lo: int) -> int:
        return lo if self.lows is None else self.lows[node_id]

    def row(self, node_id: int) -> int | None:
        """The node's row of the pass's output (None for a known state, whose logits an earlier pass computed)."""
        return node_id if self.rows is None else self.rows[node_id]

    @property
    def batch(self) -> int:
        """States the pass evaluated."""
        return self.out.logits.shape[0]


def verify(st, rows: torch.Tensor, nodes: list[DraftNode], lo: int, hi: int, next_hi: int | None) -> Verified:
    """One target pass over the node states (and over the next window too, if some node completes this one). A
    known state (node.stored: its window's logits from an earlier pass) is left out of the batch and decided from
    those logits: the same numbers (a window's logits depend only on the tokens that condition it). A tree of known
    states alone still has its last node evaluated."""
    masked = rows[:, lo:hi] == st.mask_id
    done = ~masked.any(1)  # nodes that complete the window (never a known state: it has something left to decide)
    fused = next_hi is not None and bool(done.any())
    known = [n.id for n in nodes if n.stored is not None]
    if len(known) == len(nodes):  # (a pass evaluates something: here the last node, the likeliest deepest)
        known.pop()
    batch, where = rows, None
    if known:
        ev = sorted(set(range(len(nodes))) - set(known))
        batch, where = rows[ev], [None] * len(nodes)
        for r, i in enumerate(ev):
            where[i] = r
    t0, w0 = st.clock(), st.synced_wall()
    out = st.target.forward(batch, lo, next_hi if fused else hi, st.cache)
    t1, w1 = st.clock(), st.synced_wall()
    st.forward_wall = w1 - w0
    st.calls_outside += check_pass(st.target, batch, lo, next_hi if fused else hi, st.cache, out.logits)
    check_s = st.clock() - t1
    st.checks_s += st.wall() - w1  # (one-time: kept out of the pass's and the run's wall time)
    steps = [st.step + n.depth for n in nodes]
    if known:
        decisions: list = [None] * len(nodes)
        for ids, logits in ((ev, out.logits[:, : hi - lo]), (known, torch.stack([nodes[i].stored for i in known]))):
            for i, d in zip(ids, decide(logits, masked[ids], [steps[i] for i in ids], lo, st.rule, st.noise,
                                        st.mask_id)):
                decisions[i] = d
    else:
        decisions = decide(out.logits[:, : hi - lo], masked, steps, lo, st.rule, st.noise, st.mask_id)
    v = Verified(out, decisions, fused, t1 - t0, check_s, None, done.tolist() if fused else None, where, steps)
    if fused:  # nodes that complete the window and have children in the next one decide there (the walk may go on;
        # a stop node's first decision there is the bonus's business)
        ahead = [i for i in done.nonzero().flatten().tolist()
                 if nodes[i].children and not st.finished_with_eos(hi, rows[i])]
        if ahead:
            nmask = rows[ahead, hi:next_hi] == st.mask_id
            there = decide(out.logits[[v.row(i) for i in ahead], hi - lo:], nmask, [steps[i] for i in ahead], hi,
                           st.rule, st.noise, st.mask_id)
            v.lows = [lo] * len(nodes)
            for i, d in zip(ahead, there):
                decisions[i], v.lows[i] = d, hi
    return v


def accept_walk(nodes: list[DraftNode], v: Verified, lo: int, step: int):
    """Walk from s1 along the edges that equal the target's decisions. Returns (node ids walked, drafted commits).
    Edges are keyed by offsets from lo; a decision made in the next window is moved there first. Where no drafted
    edge of a node equals its decision, the walk still moves if the state it leads to is in the tree on another
    branch (another order of the same commits, one step deeper: found_state)."""
    n, walk, accepted = nodes[0], [0], []
    states = None  # (drafted commits, depth) -> node id, built at the first miss
    while (d := v.decisions[n.id]) is not None:
        base = v.low(n.id, lo)
        key = decision_key(v, n.id, lo)
        if (child := n.children.get(key)) is None:
            states = states if states is not None else {(m.state, m.depth): m.id for m in nodes}
            if (child := found_state(states, n, key)) is None:
                break
        accepted += d.commits(base, step + n.depth, drafted=True)
        n = nodes[child]
        walk.append(n.id)
    return walk, accepted


def decision_key(v: Verified, node_id: int, lo: int) -> tuple:
    """The target's decision at a node as a tree edge key: (offsets from the tree's lo, tokens)."""
    d, base = v.decisions[node_id], v.low(node_id, lo)
    offsets, tokens = d.key
    return (tuple(o + base - lo for o in offsets), tokens) if base != lo else d.key


def walk_end(stop: DraftNode, v: Verified, lo: int, bonus_made: bool) -> str:
    """Why the acceptance walk stopped at `stop` (module docstring; trace.WALK_ENDS): compares the target's
    decision there with the guesses the tree builder had for that node (`stop.proposals`, kept or not).
    `bonus_made`: the pass still made a decision after a stop whose own decision is None (the next window's first)."""
    if v.decisions[stop.id] is None:
        return "window" if bonus_made else "end"
    key = decision_key(v, stop.id, lo)
    guesses = [(o, t) for o, t, _ in stop.proposals]  # (tuples, as the tree builder keeps them)
    if not guesses or key in guesses:
        return "budget"
    return "token" if any(set(o) == set(key[0]) for o, _ in guesses) else "position"


def found_state(states: dict, n: DraftNode, key: tuple) -> int | None:
    """The node whose state is n's plus the decision `key` ((offsets, tokens) from the tree's lo), one step deeper,
    if the tree holds it: its logits are that state's at that step, so the walk goes on there exactly as along a
    drafted edge (docs/DESIGN.md section 3). None if no branch drafted that state."""
    return states.get((n.state | frozenset(zip(*key)), n.depth + 1))


def tree_record(nodes: list[DraftNode], walk: list[int], v: Verified, lo: int) -> list[TreeNode]:
    """The tree as the trace stores it; the target's decision is recorded at the nodes of the walk. A node that the
    walk entered through a merged edge (another drafted order of the same commits) is recorded under the parent the
    walk came from, with that edge's decision; its other parents are listed in merged_from."""
    on_walk = set(walk)
    came_from = dict(zip(walk[1:], walk[:-1]))
    out = []
    for n in nodes:
        d = v.decisions[n.id] if n.id in on_walk else None
        base = v.low(n.id, lo)
        parent, offsets, tokens, prob = n.parent, n.offsets, n.tokens, n.prob
        found = False
        if came_from.get(n.id, parent) != parent:  # entered through a merged edge: draw the edge walked
            parent = came_from[n.id]
            edge = _edge_into(nodes[parent], n.id)
            if edge is None:  # no drafted edge: the walk found the state on another branch (the target's decision)
                found, (offs, toks), shift = True, v.decisions[parent].key, v.low(parent, lo) - lo
                edge = ((tuple(o + shift for o in offs), toks), 0.0)
            (offsets, tokens), prob = edge
        others = sorted({n.parent, *n.merged_from} - {parent}) if n.merged_from or found else []
        out.append(TreeNode(id=n.id, parent=parent, depth=n.depth, positions=[lo + o for o in offsets],
                            tokens=list(tokens), prob=float(prob), path_prob=float(n.path_prob),
                            accepted=n.id in on_walk, target_positions=[base + o for o in d.offsets] if d else [],
                            target_tokens=list(d.tokens) if d else [], merged_from=others,
                            known=parent >= 0 and nodes[parent].decided and not found, found=found,
                            near=parent >= 0 and not found and nodes[parent].near == (tuple(offsets), tuple(tokens)),
                            reused=v.row(n.id) is None))
    return out


def _edge_into(parent: DraftNode, child: int):
    """((offsets, tokens), drafter probability) of parent's drafted edge into child; None if it drafted none."""
    key = next((k for k, c in parent.children.items() if c == child), None)
    return None if key is None else (key, parent.edge_prob[key])


def bonus(st, v: Verified, nodes: list[DraftNode], stop: DraftNode, lo: int, hi: int, next_window,
          crossing: bool = False):
    """The pass's own decision at the stop node: in this window, or in the next one when the stop node completes
    this window (the fused pass; the caller then adds the finished window's keys/values to the cache: a pure
    function).

    Returns (decision or None, the window it was made in, the next window's log-probabilities for the next pass's
    ahead view when `crossing`, else None); the decision's log-probabilities are the next root's. The ahead view
    comes from a fused pass whose bonus stays in this window: the next window as the likeliest node below the stop
    that completes this window saw it (its drafted commits may well be the ones to come), else as the stop saw it."""
    d = v.decisions[stop.id]
    if d is None and v.fused and not st.finished_with_eos(hi):  # the stop completes the window: the next one's first
        nlo, nhi = next_window
        d = decide(v.out.logits[v.row(stop.id), hi - lo:].unsqueeze(0), st.masked(nlo, nhi).unsqueeze(0),
                   [st.step + stop.depth], nlo, st.rule, st.noise, st.mask_id)[0]
        return d, (nlo, nhi), None
    if d is None:
        return None, (lo, hi), None
    if v.low(stop.id, lo) != lo:
        return d, tuple(next_window), None
    ahead = None
    if v.fused and crossing:  # (nodes are in best-first order: the first such node is the likeliest)
        src = next((n.id for n in nodes if n.id != stop.id and v.complete[n.id] and _below(nodes, n, stop.id)),
                   stop.id)
        if v.row(src) is not None:  # (a known stop the pass did not evaluate has no view of the next window)
            ahead = masked_log_softmax(v.out.logits[v.row(src), hi - lo:], st.mask_id)
    return d, (lo, hi), ahead


def _below(nodes: list[DraftNode], n: DraftNode, ancestor: int) -> bool:
    """Whether `ancestor` is on n's first path from s1."""
    while n.parent >= 0:
        if n.parent == ancestor:
            return True
        n = nodes[n.parent]
    return False

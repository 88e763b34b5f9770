"""The verifier: one batched target pass over a draft tree, the acceptance walk, the bonus and the fused step.

Given the node states of a tree rooted at s1 (node 0) and one target pass over all of them:
- every node's decision d(n) is computed in one batched call, from n's own logits with the noise of its step
  (step(n) = step(s1) + depth(n));
- the acceptance walk starts at s1: at node n, move to the child whose drafted edge equals d(n), else stop.
  Every decision on the walk is the target's own, so the trajectory is exactly the standard decoder's;
- the bonus is d(stop), the stop node's own decision, already computed by the same pass. If the stop node
  completes the window and the pass also evaluated the next window (the fused pass), the bonus is the first
  decision of the next window instead (the decoder then adds the finished window's keys/values to the cache).
Commits per pass = accepted edges + 1.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from ..decision import Decision, decide
from ..drafter.tree import DraftNode
from ..targets.base import ForwardOutput
from ..targets.invariance import check_pass
from ..trace import TreeNode


@dataclass
class Verified:
    """One verification pass: the forward, the target's decision at every node (None where the node's window
    is complete) and whether the pass also evaluated the next window (fused)."""

    out: ForwardOutput
    decisions: list[Decision | None]
    fused: bool
    forward_s: float  # wall time of the target pass
    check_s: float = 0.0  # wall time of the batch-invariance check (once per batch shape; not the pass's own cost)


def verify(st, rows: torch.Tensor, nodes: list[DraftNode], lo: int, hi: int, next_hi: int | None) -> Verified:
    """One target pass over every node state (and over the next window too, if some node completes this one)."""
    masked = rows[:, lo:hi] == st.mask_id
    fused = next_hi is not None and not bool(masked.any(1).all())  # some node completes the window
    t0 = time.perf_counter()
    out = st.target.forward(rows, lo, next_hi if fused else hi, st.cache)
    t1 = time.perf_counter()
    st.calls_outside += check_pass(st.target, rows, lo, next_hi if fused else hi, st.cache, out.logits)
    check_s = time.perf_counter() - t1
    steps = [st.step + n.depth for n in nodes]
    decisions = decide(out.logits[:, : hi - lo], masked, steps, lo, st.rule, st.noise, st.mask_id)
    return Verified(out, decisions, fused, t1 - t0, check_s)


def accept_walk(nodes: list[DraftNode], decisions: list[Decision | None], lo: int, step: int):
    """Walk from s1 along the edges that equal the target's decisions. Returns (node ids walked, drafted commits)."""
    n, walk, accepted = nodes[0], [0], []
    while (d := decisions[n.id]) is not None and (child := n.children.get(d.key)) is not None:
        accepted += d.commits(lo, step + n.depth, drafted=True)
        n = nodes[child]
        walk.append(n.id)
    return walk, accepted


def tree_record(nodes: list[DraftNode], walk: list[int], decisions: list[Decision | None], lo: int) -> list[TreeNode]:
    """The tree as the trace stores it; the target's decision is recorded at the nodes of the walk. A node that the
    walk entered through a merged edge (another drafted order of the same commits) is recorded under the parent the
    walk came from, with that edge's decision; its other parents are listed in merged_from."""
    on_walk = set(walk)
    came_from = dict(zip(walk[1:], walk[:-1]))
    out = []
    for n in nodes:
        d = decisions[n.id] if n.id in on_walk else None
        parent, offsets, tokens, prob = n.parent, n.offsets, n.tokens, n.prob
        if came_from.get(n.id, parent) != parent:  # entered through a merged edge: draw the edge walked
            parent = came_from[n.id]
            (offsets, tokens), prob = _edge_into(nodes[parent], n.id)
        others = sorted({n.parent, *n.merged_from} - {parent}) if n.merged_from else []
        out.append(TreeNode(id=n.id, parent=parent, depth=n.depth, positions=[lo + o for o in offsets],
                            tokens=list(tokens), prob=float(prob), path_prob=float(n.path_prob),
                            accepted=n.id in on_walk, target_positions=[lo + o for o in d.offsets] if d else [],
                            target_tokens=list(d.tokens) if d else [], merged_from=others))
    return out


def _edge_into(parent: DraftNode, child: int):
    """((offsets, tokens), drafter probability) of parent's drafted edge into child."""
    key = next(k for k, c in parent.children.items() if c == child)
    return key, parent.edge_prob[key]


def bonus(st, v: Verified, stop: DraftNode, lo: int, hi: int, next_window):
    """The pass's own decision at the stop node: its decision in this window, or (fused pass, window complete)
    the first decision of the next window (whose keys/values the caller then adds to the cache: a pure function).

    Returns (decision or None, the window it was made in); the decision's log-probabilities are the next root's."""
    d = v.decisions[stop.id]
    if d is not None:
        return d, (lo, hi)
    if v.fused and not st.finished_with_eos(hi):
        nlo, nhi = next_window
        logits = v.out.logits[stop.id, hi - lo :]
        d = decide(logits.unsqueeze(0), st.masked(nlo, nhi).unsqueeze(0), [st.step + stop.depth], nlo, st.rule,
                   st.noise, st.mask_id)[0]
        return d, (nlo, nhi)
    return None, (lo, hi)

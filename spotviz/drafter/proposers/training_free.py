"""The training-free proposer: the root's stale confidences give the order, its predictions the tokens."""
from __future__ import annotations

from ..numpy_forward import stale_inclusion
from ..tree import Proposer
from .common import Context, exact_children, set_children, stale_keep


class TrainingFree(Proposer):
    """Order by the root's stale confidence; tokens from the root's predictions (with the coupled noise).

    Exact mode: the next position is drawn in proportion to its stale confidence, with a runner-up token where
    the two stale probabilities are close; threshold mode: the next set is the positions whose stale confidence
    clears tau (else the top one), with single flips and a runner-up twin as alternatives."""

    def __init__(self, token_branching: bool = True):
        self.token_branching = token_branching

    def prepare(self, view, max_depth):
        return Context(view, max_depth)

    def children(self, ctx, view, node, remaining):
        d = ctx.d(node)
        c = ctx.conf[d] * remaining
        keep = stale_keep(ctx, d, remaining) if self.token_branching else None
        if view.rule.mode == "exact":
            return exact_children(ctx, node, c / c.sum(), keep, self.branch_positions)
        return set_children(ctx, node, stale_inclusion(c, view.rule.threshold), remaining, keep)

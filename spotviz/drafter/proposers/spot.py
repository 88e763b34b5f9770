"""The learned SPOT proposer: the drafter's pointer head orders positions (exact mode), its set head proposes
commit sets (SPOT-Sets, threshold mode); one drafter forward per pass, in numpy."""
from __future__ import annotations

import numpy as np

from ..features import np_position_features
from ..model import SpotDrafter
from ..numpy_forward import NumpyDrafter, np_set_inclusion, np_sigmoid
from ..tree import DraftNode, Proposer
from .common import Context, exact_children, set_children, stale_keep


class SpotProposer(Proposer):
    """The learned SPOT drafter: pointer head for exact mode, set head for SPOT-Sets (threshold mode).

    One drafter forward per pass; a node's scores are the depth's base scores plus the pairwise terms of the
    drafted commits on its path (summed once per node, kept in node.memo)."""

    def __init__(self, drafter: SpotDrafter, token_branching: bool = True, fast: NumpyDrafter | None = None):
        self.drafter = drafter
        self.token_branching = token_branching
        self.fast = fast or NumpyDrafter(drafter)  # the same forward in numpy: inference runs it once per pass

    def prepare(self, view, max_depth):
        ctx = Context(view, max_depth)
        out = self.fast(np_position_features(view, self.drafter.cfg.topk), view.rule.mode)
        if view.rule.mode == "threshold":  # set inclusion does not depend on the path: every depth computed so far
            ctx.set_q = np_set_inclusion(out, ctx.logc, view.rule.threshold)

            def grown(start, ctx=ctx, out=out, tau=view.rule.threshold):
                ctx.set_q = np.concatenate([ctx.set_q, np_set_inclusion(out, ctx.logc[start:], tau, start)])

            ctx.grown = grown
        else:
            ctx.base, ctx.pair, ctx.alpha = out["base"], out["pair"], out["alpha"]
            ctx.rank_bias, ctx.mix, ctx.runner_up = out["rank_bias"], out["mix"], out["runner_up"]
            ctx.keep_base, ctx.keep_rel = out["keep_base"], out["keep_rel"]
        return ctx

    @staticmethod
    def _path_terms(ctx, node: DraftNode):
        if node.memo is None:
            path = list(node.path)
            node.memo = (ctx.pair[:, path].sum(-1), ctx.keep_rel[:, path].sum(-1))
        return node.memo

    def pointer(self, ctx, node: DraftNode, remaining: np.ndarray) -> np.ndarray:
        """P(the decision at `node` commits position j), [W]: the learned pointer (depth scores + coupled-token
        and stale-rank terms + the pairwise terms of the path) mixed with the stale-confidence order. The same
        distribution as model.teacher_forced_pointer at training time (tests/test_engine_fast.py checks it)."""
        d = ctx.d(node)
        dd = min(d, ctx.base.shape[0] - 1)
        pair, _ = self._path_terms(ctx, node)
        c = np.where(remaining, ctx.logc[d], -np.inf)
        ranks = np.argsort(np.argsort(-c, kind="stable"), kind="stable")
        s = ctx.base[dd] + ctx.alpha * ctx.logc[d] + ctx.rank_bias[ranks] + pair
        s = np.where(remaining, s, -np.inf)
        e = np.exp(s - s.max())
        stale = np.exp(c - c.max())  # the training-free order: proportional to the stale confidence
        return ctx.mix * e / e.sum() + (1 - ctx.mix) * stale / stale.sum()

    def children(self, ctx, view, node, remaining):
        if view.rule.mode == "exact":
            probs = self.pointer(ctx, node, remaining)
            keep = np_sigmoid(ctx.keep_base + self._path_terms(ctx, node)[1]) if self.token_branching else None
            return exact_children(ctx, node, probs, keep, self.branch_positions, ctx.runner_up)
        d = ctx.d(node)  # (first: it may compute deeper depths, set_q included)
        keep = stale_keep(ctx, d, remaining) if self.token_branching else None  # (the set head has no keep head)
        return set_children(ctx, node, ctx.set_q[d], remaining, keep)

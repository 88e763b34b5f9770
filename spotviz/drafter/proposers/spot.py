"""The learned SPOT proposer: the drafter's pointer head orders positions (exact mode), its set head proposes
commit sets (SPOT-Sets, threshold mode); one drafter forward per pass, in numpy.

A partner hedges the learned heads: the proposer's children are the mixture (1 - w) P_learned + w P_partner of its
own candidates and a baseline partner's (tree.mix_candidates), so a tree holds the likeliest
alternatives of both and best-first growth spends the budget where their mixture puts the mass. Partners: the
calibrated rank template of the drafter's folder in exact mode, the stale threshold rule in threshold mode.
Why: the learned heads are best on what they were trained on and do not generalise everywhere (on math-bd's
held-out phrasings and families SPOT-Sets' set head alone is behind the stale rule); the two experts err on
different passes. Measured on 40 validation problems drawn like the bench's held-out set with another seed
(budget 32, passes cut vs the standard decoder, T = 0 / T = 1; math-bd's third training run and its drafters):

    exact      SPOT alone 4.02x / 3.92x   calibrated 3.59x / 3.72x   mixture w = 0.3: 4.10x / 4.15x
               w = 0.5: 4.13x / 4.16x     w = 0.7: 4.01x / 4.11x     (training-free as partner, w = 0.5: 3.77x / 4.17x)
    threshold  SPOT-Sets alone 1.60x / 1.65x   training-free 1.62x / 1.68x
               mixture w = 0.3: 1.74x / 1.82x   w = 0.5: 1.73x / 1.82x   w = 0.7: 1.74x / 1.80x

and at budget 4 (exact): alone 2.24x / 2.25x, calibrated 2.16x / 2.24x, w = 0.5: 2.25x / 2.31x. Hence w = 0.5.

A one-guess tree is the partner's. At budget 2 the tree holds s1 and one drafted node: the likeliest first
decision, which the mixture and its partner almost always agree on, so the drafter's forward (with its features,
1.5-2 ms a pass on these CPUs, a third of a target pass: drafter forward 1.0, features 0.3, context 0.3 ms on
math-bd, session 37) would buy nothing there; the proposer hands such trees to
its partner. Measured on math-bd (40 validation problems drawn like the bench's with another seed, 128 tokens,
release 10, passes; the standard decoder 1,492):

    budget 2   exact      T = 0: SPOT 923, calibrated 920         T = 1: 920 / 916
               threshold  T = 0: SPOT-Sets 269, training-free 269  T = 1: 264 / 267   (the standard: 329 / 323)
    budget 3   exact      T = 0: SPOT 747, calibrated 758         T = 1: 745 / 749
               threshold  T = 0: SPOT-Sets 248, training-free 253  T = 1: 244 / 249
    budget 4   exact      T = 0: SPOT 671, calibrated 683         T = 1: 668 / 670

From three nodes on, the learned heads pay for their forward in passes."""
from __future__ import annotations

import numpy as np

from ..features import np_position_features
from ..model import SpotDrafter
from ..numpy_forward import NumpyDrafter, np_set_inclusion, np_sigmoid
from ..tree import ONE_GUESS, DraftNode, Proposer, mix_candidates
from .common import Context, exact_children, set_children, stale_keep

PARTNER_WEIGHT = 0.5  # the partner's share of a node's candidates (module docstring)


class SpotProposer(Proposer):
    """The learned SPOT drafter: pointer head for exact mode, set head for SPOT-Sets (threshold mode).

    One drafter forward per pass; a node's scores are the depth's base scores plus the pairwise terms of the
    drafted commits on its path (summed once per node, kept in node.memo)."""

    def __init__(self, drafter: SpotDrafter, token_branching: bool = True, fast: NumpyDrafter | None = None,
                 partner: Proposer | None = None, partner_weight: float = PARTNER_WEIGHT):
        self.drafter = drafter
        self.token_branching = token_branching
        self.partner = partner  # a baseline proposer (calibrated template, stale rule) mixed in (None: the heads alone)
        self.partner_weight = partner_weight
        self.fast = fast or NumpyDrafter(drafter)  # the same forward in numpy: inference runs it once per pass

    def for_budget(self, budget: int):
        """Trees of at most 2 nodes (one guess) are the partner's (module docstring); larger ones are this
        proposer's."""
        return self.partner if budget <= ONE_GUESS and self.partner is not None else self

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
        distribution as losses.teacher_forced_pointer at training time (tests/test_engine_fast.py checks it)."""
        d = ctx.d(node)
        dd = min(d, ctx.base.shape[0] - 1)
        pair, _ = self._path_terms(ctx, node)
        c = np.where(remaining, ctx.logc[d], -np.inf)
        order = np.argsort(-c, kind="stable")
        ranks = np.empty_like(order)
        ranks[order] = np.arange(len(order))  # (each position's rank in that order: the inverse permutation)
        s = ctx.base[dd] + ctx.alpha * ctx.logc[d] + ctx.rank_bias[ranks] + pair
        s = np.where(remaining, s, -np.inf)
        e = np.exp(s - s.max())
        stale = np.exp(c - c.max())  # the training-free order: proportional to the stale confidence
        return ctx.mix * e / e.sum() + (1 - ctx.mix) * stale / stale.sum()

    def children(self, ctx, view, node, remaining):
        own = self.own_children(ctx, view, node, remaining)
        w = self.partner_weight
        if self.partner is None or w <= 0:
            return own
        # the partner reads the same context (root confidences, coupled tokens): it needs nothing of its own
        return mix_candidates((1 - w, own), (w, self.partner.children(ctx, view, node, remaining)))

    def own_children(self, ctx, view, node, remaining):
        """The learned heads' candidates alone."""
        if view.rule.mode == "exact":
            probs = self.pointer(ctx, node, remaining)
            keep = np_sigmoid(ctx.keep_base + self._path_terms(ctx, node)[1]) if self.token_branching else None
            return exact_children(ctx, node, probs, keep, self.branch_positions, ctx.runner_up)
        d = ctx.d(node)  # (first: it may compute deeper depths, set_q included)
        keep = stale_keep(ctx, d, remaining) if self.token_branching else None  # (the set head has no keep head)
        return set_children(ctx, node, ctx.set_q[d], remaining, keep)

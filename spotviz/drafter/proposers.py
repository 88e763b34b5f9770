"""Proposers (candidate generators) for draft trees: training-free, calibrated, and the learned SPOT drafter.

All of them read only the root's output distributions (and the step-indexed noise), and all are verified by
the same one-pass verifier, so every one of them is lossless; they differ only in how many commits a pass makes.
Per-node work runs in numpy on window-sized vectors (tree building is on the hot path of every pass).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from .features import RootView, coupled_candidates, np_position_features
from .model import SpotDrafter
from .numpy_forward import NumpyDrafter, np_set_inclusion, np_sigmoid, stale_inclusion
from .tree import DraftNode, Proposer


class _Context:
    """Per-pass arrays: the coupled-noise tokens (best, runner-up) and root confidences per depth, computed for the
    first depths at once and for deeper ones only when a node that deep is expanded (their noise costs)."""

    FIRST_DEPTHS = 4

    def __init__(self, view: RootView, max_depth: int):
        self.view = view
        self.max_depth = max(max_depth, 1)
        w = view.width
        self.tok1 = self.tok2 = np.zeros((0, w), np.int64)
        self.logc = self.conf = self.conf2 = np.zeros((0, w), np.float32)
        self._grow(min(self.max_depth, self.FIRST_DEPTHS))

    def _grow(self, depths: int) -> None:
        n = len(self.tok1)
        tok1, tok2, logc = coupled_candidates(self.view, depths, start=n)
        p2 = self.view.logp.gather(-1, tok2.T.contiguous()).T  # [new depths, w] root prob of the runner-up
        self.tok1 = np.concatenate([self.tok1, tok1.cpu().numpy()])
        self.tok2 = np.concatenate([self.tok2, tok2.cpu().numpy()])
        self.logc = np.concatenate([self.logc, logc.float().cpu().numpy()])
        self.conf = np.exp(self.logc)
        self.conf2 = np.concatenate([self.conf2, p2.exp().float().cpu().numpy()])
        self.grown(n)

    def grown(self, start: int) -> None:
        """Hook: depths start.. were just added (proposers with per-depth arrays extend theirs)."""

    def d(self, node: DraftNode) -> int:  # depth index of the decision at `node`
        d = min(node.depth, self.max_depth - 1)
        if d >= len(self.tok1):
            self._grow(min(self.max_depth, max(2 * len(self.tok1), d + 1)))
        return d


def _exact_children(ctx: _Context, node: DraftNode, probs: np.ndarray, keep: np.ndarray | None, k: int,
                    runner_up: float = 1.0):
    """Top-k positions by `probs`; each with the coupled token (prob*keep) and, if keep < 1, the runner-up token
    (prob*(1-keep)*runner_up: runner_up = P(the replacement of a stale token is the runner-up))."""
    d = ctx.d(node)
    nz = int((probs > 0).sum())
    top = np.argsort(-probs, kind="stable")[: min(k, nz)]
    out = []
    for j in top.tolist():
        p = float(probs[j])
        kp = 1.0 if keep is None else float(keep[j])
        out.append(((j,), (int(ctx.tok1[d, j]),), p * kp))
        if keep is not None and kp < 0.999:
            out.append(((j,), (int(ctx.tok2[d, j]),), p * (1 - kp) * runner_up))
    return out


def _set_children(ctx: _Context, node: DraftNode, q: np.ndarray, remaining: np.ndarray, n_flip: int = 3,
                  n_single: int = 4):
    """Candidate commit sets from per-position inclusion probabilities q.

    If some positions are likely in the set: the likeliest set and single flips of its most borderline positions.
    If none is (the rule then commits only its most confident position): the likeliest singletons. A set is
    never empty. Probabilities are normalised over the candidates."""
    d = ctx.d(node)
    idx = np.flatnonzero(remaining)
    qr = np.clip(q[idx], 1e-6, 1 - 1e-6)
    base = qr > 0.5
    sets = []
    if base.any():
        sets.append((base, float(np.exp(np.log(np.where(base, qr, 1 - qr)).sum()))))
        for b in np.argsort(np.abs(qr - 0.5), kind="stable")[:n_flip].tolist():
            s = base.copy()
            s[b] = not s[b]
            if s.any():
                sets.append((s, float(np.exp(np.log(np.where(s, qr, 1 - qr)).sum()))))
    else:
        for j in np.argsort(-qr, kind="stable")[:n_single].tolist():
            s = np.zeros_like(base)
            s[j] = True
            sets.append((s, float(qr[j])))
    out, seen = [], set()
    for s, p in sets:
        offs = tuple(idx[s].tolist())
        if offs in seen:
            continue
        seen.add(offs)
        out.append((offs, tuple(int(ctx.tok1[d, j]) for j in offs), p))
    total = sum(p for *_, p in out)
    return [(o, t, p / total) for o, t, p in out]


class TrainingFree(Proposer):
    """Order by the root's stale confidence; tokens from the root's predictions (with the coupled noise).

    Exact mode: the next position is drawn in proportion to its stale confidence, with a runner-up token where
    the two stale probabilities are close; threshold mode: the next set is the positions whose stale confidence
    clears tau (else the top one), with single flips as alternatives."""

    def __init__(self, token_branching: bool = True):
        self.token_branching = token_branching

    def prepare(self, view, max_depth):
        return _Context(view, max_depth)

    def children(self, ctx, view, node, remaining):
        d = ctx.d(node)
        c = ctx.conf[d] * remaining
        if view.rule.mode == "exact":
            keep = None
            if self.token_branching:
                keep = c / np.maximum(c + ctx.conf2[d] * remaining, 1e-9)
            return _exact_children(ctx, node, c / c.sum(), keep, self.branch_positions)
        return _set_children(ctx, node, stale_inclusion(c, view.rule.threshold), remaining)


class Calibrated(Proposer):
    """A static draft-graph template: the probability that the true decision at depth d is the r-th ranked
    remaining position (by stale confidence) with the stale token, calibrated offline on calibration prompts.
    Best-first growth with these static probabilities maximises the expected accepted length under the budget
    (assuming independent acceptances). Threshold mode: inclusion q = sigmoid(a_d * (log c - log tau) + b_d)."""

    def __init__(self, table: dict):
        self.rank_probs = [np.asarray(r, dtype=np.float64) for r in table["rank_probs"]]  # [depth][rank]
        self.set_params = table.get("set_params") or [[8.0, 0.0]]  # [depth][a, b]
        if not self.rank_probs or any(r.ndim != 1 for r in self.rank_probs):
            raise ValueError("rank_probs must be a non-empty list of per-depth lists of probabilities")
        if np.asarray(self.set_params, dtype=np.float64).ndim != 2 or len(self.set_params[0]) != 2:
            raise ValueError("set_params must be a list of [a, b] pairs")

    @classmethod
    def load(cls, path: str | Path) -> "Calibrated":
        p = Path(path)
        try:
            return cls(json.loads(p.read_text()))
        except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise ValueError(f"calibration file {p} is missing or malformed: {e}") from None

    def prepare(self, view, max_depth):
        return _Context(view, max_depth)

    def children(self, ctx, view, node, remaining):
        d = ctx.d(node)
        if view.rule.mode == "exact":
            row = self.rank_probs[min(d, len(self.rank_probs) - 1)]
            c = np.where(remaining, ctx.conf[d], -1.0)
            order = np.argsort(-c, kind="stable")[: min(int(remaining.sum()), len(row))]
            probs = np.zeros_like(c)
            probs[order] = row[: len(order)]
            return _exact_children(ctx, node, probs, None, self.branch_positions)
        a, b = self.set_params[min(d, len(self.set_params) - 1)]
        return _set_children(ctx, node, np_sigmoid(a * (ctx.logc[d] - math.log(view.rule.threshold)) + b), remaining)


class SpotProposer(Proposer):
    """The learned SPOT drafter: pointer head for exact mode, set head for SPOT-Sets (threshold mode).

    One drafter forward per pass; a node's scores are the depth's base scores plus the pairwise terms of the
    drafted commits on its path (summed once per node, kept in node.memo)."""

    def __init__(self, drafter: SpotDrafter, token_branching: bool = True, fast: NumpyDrafter | None = None):
        self.drafter = drafter
        self.token_branching = token_branching
        self.fast = fast or NumpyDrafter(drafter)  # the same forward in numpy: inference runs it once per pass

    def prepare(self, view, max_depth):
        ctx = _Context(view, max_depth)
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
            return _exact_children(ctx, node, probs, keep, self.branch_positions, ctx.runner_up)
        d = ctx.d(node)  # (first: it may compute deeper depths, set_q included)
        return _set_children(ctx, node, ctx.set_q[d], remaining)

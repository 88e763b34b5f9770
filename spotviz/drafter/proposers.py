"""Proposers (candidate generators) for draft trees: training-free, calibrated, and the learned SPOT drafter.

All of them read only the root's output distributions (and the step-indexed noise), and all are verified by
the same one-pass verifier, so every one of them is lossless; they differ only in how many commits a pass makes.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import torch

from .features import RootView, coupled_candidates, position_features
from .model import SpotDrafter
from .tree import DraftNode, Proposer


class _Context:
    def __init__(self, view: RootView, max_depth: int):
        self.tok1, self.tok2, self.logc = coupled_candidates(view, max(max_depth, 1))
        self.max_depth = max(max_depth, 1)

    def d(self, node: DraftNode) -> int:  # depth index of the decision at `node`
        return min(node.depth, self.max_depth - 1)


def _exact_children(ctx: _Context, node: DraftNode, probs: torch.Tensor, keep: torch.Tensor | None, k: int):
    """Top-k positions by `probs`; each with the coupled token (prob*keep) and, if keep < 1, the runner-up token."""
    d = ctx.d(node)
    top = probs.topk(min(k, int((probs > 0).sum()))).indices.tolist()
    out = []
    for j in top:
        p = float(probs[j])
        kp = 1.0 if keep is None else float(keep[j])
        out.append(((j,), (int(ctx.tok1[d, j]),), p * kp))
        if keep is not None and kp < 0.999:
            out.append(((j,), (int(ctx.tok2[d, j]),), p * (1 - kp)))
    return out


def _set_children(ctx: _Context, node: DraftNode, q: torch.Tensor, remaining: torch.Tensor, n_flip: int = 3):
    """Candidate commit sets from per-position inclusion probabilities q: the likeliest set and single flips of
    its most borderline positions. A set is never empty (the rule always commits the top position)."""
    d = ctx.d(node)
    idx = remaining.nonzero().flatten()
    qr = q[idx].clamp(1e-6, 1 - 1e-6)
    base = qr > 0.5
    if not bool(base.any()):
        base[qr.argmax()] = True
    sets = [base]
    border = (qr - 0.5).abs().argsort()[:n_flip].tolist()
    for b in border:
        s = base.clone()
        s[b] = ~s[b]
        if bool(s.any()):
            sets.append(s)
    out, seen = [], set()
    for s in sets:
        offs = tuple(idx[s].tolist())
        if offs in seen:
            continue
        seen.add(offs)
        p = float(torch.where(s, qr, 1 - qr).log().sum().exp())
        out.append((offs, tuple(int(ctx.tok1[d, j]) for j in offs), p))
    total = sum(p for *_, p in out)
    return [(o, t, p / total) for o, t, p in out]


class TrainingFree(Proposer):
    """Order by the root's stale confidence; tokens from the root's predictions (with the coupled noise).

    Exact mode: the next position is drawn in proportion to its stale confidence; threshold mode: the next set is
    the positions whose stale confidence clears tau (else the top one), with single flips as alternatives."""

    name = "training-free"

    def __init__(self, token_branching: bool = True):
        self.token_branching = token_branching

    def prepare(self, view, max_depth):
        return _Context(view, max_depth)

    def children(self, ctx, view, node, remaining):
        d = ctx.d(node)
        c = ctx.logc[d].exp() * remaining
        if view.rule.mode == "exact":
            probs = c / c.sum()
            keep = None
            if self.token_branching:  # split by the stale probabilities of the two tokens
                p2 = view.logp.gather(-1, ctx.tok2[d].unsqueeze(-1)).squeeze(-1).exp()
                keep = c / (c + p2 * remaining).clamp_min(1e-9)
            return _exact_children(ctx, node, probs, keep, self.branch_positions)
        q = torch.sigmoid(8 * (c - view.rule.threshold))
        return _set_children(ctx, node, q, remaining)


class Calibrated(Proposer):
    """A static draft-graph template: the probability that the true decision at depth d is the r-th ranked
    remaining position (by stale confidence) with the stale token, calibrated offline on calibration prompts.
    Best-first growth with these static probabilities maximises the expected accepted length under the budget
    (assuming independent acceptances). Threshold mode: inclusion q = sigmoid(a_d * (log c - log tau) + b_d)."""

    name = "calibrated"

    def __init__(self, table: dict):
        self.rank_probs = table["rank_probs"]  # [depth][rank]
        self.set_params = table.get("set_params", [[8.0, 0.0]])  # [depth][a, b]

    @classmethod
    def load(cls, path: str | Path) -> "Calibrated":
        p = Path(path)
        try:
            return cls(json.loads(p.read_text()))
        except (OSError, json.JSONDecodeError, KeyError) as e:
            raise ValueError(f"calibration file {p} is missing or malformed: {e}") from None

    def prepare(self, view, max_depth):
        return _Context(view, max_depth)

    def children(self, ctx, view, node, remaining):
        d = ctx.d(node)
        c = ctx.logc[d].exp() * remaining
        if view.rule.mode == "exact":
            row = self.rank_probs[min(d, len(self.rank_probs) - 1)]
            order = c.argsort(descending=True)[: int(remaining.sum())].tolist()
            probs = torch.zeros_like(c)
            for r, j in enumerate(order[: len(row)]):
                probs[j] = row[r]
            return _exact_children(ctx, node, probs, None, self.branch_positions)
        a, b = self.set_params[min(d, len(self.set_params) - 1)]
        q = torch.sigmoid(a * (ctx.logc[d] - math.log(view.rule.threshold)) + b)
        return _set_children(ctx, node, q, remaining)


class SpotProposer(Proposer):
    """The learned SPOT drafter: pointer head for exact mode, set head for SPOT-Sets (threshold mode)."""

    name = "spot"

    def __init__(self, drafter: SpotDrafter, token_branching: bool = True):
        self.drafter = drafter
        self.token_branching = token_branching

    def prepare(self, view, max_depth):
        ctx = _Context(view, max_depth)
        feats = position_features(view).unsqueeze(0)
        with torch.no_grad():
            out = self.drafter(feats)
        ctx.base = out["base"][0]
        ctx.pair = out["pair"][0]
        ctx.alpha = float(out["alpha"].detach())
        ctx.keep_base = out["keep_base"][0]
        ctx.keep_rel = out["keep_rel"]  # [W, W], shared by the batch
        ctx.set_base = out["set_base"][0]
        ctx.set_alpha = float(out["set_alpha"].detach())
        ctx.set_temp = float(out["set_temp"].detach())
        return ctx

    def children(self, ctx, view, node, remaining):
        d = ctx.d(node)
        dd = min(d, ctx.base.shape[0] - 1)
        path = list(node.path)
        if view.rule.mode == "exact":
            s = ctx.base[dd] + ctx.alpha * ctx.logc[d]
            if path:
                s = s + ctx.pair[:, path].sum(-1)
            probs = torch.softmax(s.masked_fill(~remaining, float("-inf")), -1)
            keep = None
            if self.token_branching:
                kl = ctx.keep_base + (ctx.keep_rel[:, path].sum(-1) if path else 0)
                keep = torch.sigmoid(kl)
            return _exact_children(ctx, node, probs, keep, self.branch_positions)
        z = ctx.set_base[dd] + ctx.set_alpha * (ctx.logc[d] - math.log(view.rule.threshold))
        q = torch.sigmoid(z / max(ctx.set_temp, 1e-3))
        return _set_children(ctx, node, q, remaining)

"""What a drafter sees: the target's output distributions at the root, never token identities or hidden states.

Features are computed from the root's window logits (the "stale" distributions of the pass that ended at the
root r), the state s1 = r + d(r) and the position of the free first decision. Because they contain no token
identities, a drafter trained on one target can be used on another.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..decision import DecisionRule
from ..noise import GumbelNoise

N_FEATURES = 23
TOPK = 8
TEMPERATURE_FEATURE = N_FEATURES - 1  # column holding the decoding temperature (clipped to [0, 2])


@dataclass
class RootView:
    """Everything a proposer may use to draft a tree rooted at s1 (one window [lo, hi))."""

    lo: int
    hi: int
    state: torch.Tensor  # s1, the full token row (long)
    logp: torch.Tensor  # [w, V] log-probabilities at the root r (MASK suppressed), float32
    masked: torch.Tensor  # [w] bool: masked in s1
    first: list[int]  # window offsets committed by the free first decision d(r)
    step: int  # decision index of the first drafted decision (depth 1)
    rule: DecisionRule
    noise: GumbelNoise | None  # the noise the drafter uses (the target's own when coupled)

    @property
    def width(self) -> int:
        return self.hi - self.lo


def position_features(view: RootView) -> torch.Tensor:
    """[w, N_FEATURES] per-position features of a root view."""
    logp, w = view.logp, view.width
    p = logp.exp()
    top = p.topk(min(TOPK, p.shape[-1]), dim=-1).values
    if top.shape[-1] < TOPK:
        top = torch.cat([top, top.new_zeros(w, TOPK - top.shape[-1])], -1)
    ent = -(p * logp.clamp_min(-1e4)).sum(-1) / math.log(p.shape[-1])
    margin = top[:, 0] - top[:, 1]
    masked = view.masked.float()
    idx = torch.arange(w, dtype=torch.float32)
    first = torch.zeros(w)
    if view.first:
        first[view.first] = 1.0
        anchor = torch.tensor(view.first, dtype=torch.float32)
        d = idx.unsqueeze(1) - anchor.unsqueeze(0)
        dist = d.gather(1, d.abs().argmin(1, keepdim=True)).squeeze(1)
    else:
        dist = torch.full((w,), float(w))
    committed = 1.0 - masked
    left = torch.cat([torch.ones(1), committed[:-1]])
    right = torch.cat([committed[1:], torch.ones(1)])
    conf = torch.where(view.masked, top[:, 0], torch.full_like(top[:, 0], -1.0))
    rank = conf.argsort(descending=True).argsort().float()
    tau = float(view.rule.threshold)
    f = torch.stack([
        *top.T,
        ent,
        margin,
        top[:, 0].clamp_min(1e-9).log() / 10,
        masked,
        first,
        idx / w,
        (dist / w).clamp(-1, 1),
        (dist.abs() == 1).float(),
        left,
        right,
        masked.mean().expand(w),
        rank / w,
        (top[:, 0] >= tau).float(),
        top[:, 0] - tau,
        torch.full((w,), min(float(view.rule.temperature), 2.0)),
    ], dim=-1)
    return f.float()


def coupled_candidates(view: RootView, depths: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Drafted tokens for each depth 1..depths with the step-indexed noise the target will use.

    Returns (tok1 [depths, w], tok2 [depths, w], logc1 [depths, w]): the best and second-best token under
    argmax(log p_root / T + g_step) and the root log-probability of the best one. At T = 0 they are the same
    at every depth (greedy)."""
    logp, w = view.logp, view.width
    if view.rule.temperature == 0 or view.noise is None:
        t2 = logp.topk(2, dim=-1)
        tok1 = t2.indices[:, 0].expand(depths, w)
        tok2 = t2.indices[:, 1].expand(depths, w)
        logc = t2.values[:, 0].expand(depths, w)
        return tok1, tok2, logc
    scores = torch.stack([
        logp / view.rule.temperature + view.noise.block(view.step + d, range(view.lo, view.hi)).to(logp.device)
        for d in range(depths)
    ])  # [depths, w, V]
    t2 = scores.topk(2, dim=-1).indices
    tok1, tok2 = t2[..., 0], t2[..., 1]
    logc = logp.unsqueeze(0).expand(depths, -1, -1).gather(-1, tok1.unsqueeze(-1)).squeeze(-1)
    return tok1, tok2, logc

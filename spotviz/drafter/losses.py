"""The SPOT drafter's training objectives (teacher-forced): the pointer distribution and its loss, the keep head's
logits, the set head's inclusion probabilities. Batched torch, as training/drafter.py uses them; inference computes
the same distributions per node in numpy (drafter/proposers/spot.py, tied to these by tests/test_engine_fast.py)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .model import DrafterOutput
from .numpy_forward import stale_inclusion


def stale_ranks(logc: torch.Tensor, remaining: torch.Tensor) -> torch.Tensor:
    """Rank (0 = most confident) of each position's coupled-token root confidence among the remaining positions
    (ties: lowest position first); positions not remaining rank last."""
    c = logc.masked_fill(~remaining, float("-inf"))
    return torch.argsort(torch.argsort(c, dim=-1, descending=True, stable=True), dim=-1, stable=True)


def teacher_forced_scores(out: DrafterOutput, logc: torch.Tensor, order: torch.Tensor,
                          remaining: torch.Tensor) -> torch.Tensor:
    """Pointer scores [B, D, W] at every depth, given the true commits at earlier depths (teacher forcing).

    logc [B, D, W]: root log-prob of the coupled token per depth; order [B, D]: the true position at depth d
    (offset; -1 past the end); remaining [B, D, W]: masked and not yet committed before depth d."""
    b, dmax, w = logc.shape
    base = out["base"][:, :dmax, :w] + out["alpha"] * logc
    rb = out["rank_bias"].unsqueeze(1).expand(b, dmax, -1)
    base = base + rb.gather(-1, stale_ranks(logc, remaining))
    onehot = F.one_hot(order.clamp_min(0), w).float() * (order >= 0).unsqueeze(-1)  # [B, D, W]
    prior = torch.cumsum(onehot, 1) - onehot  # commits strictly before depth d
    pair_term = torch.einsum("bji,bdi->bdj", out["pair"], prior)
    return (base + pair_term).masked_fill(~remaining, -1e9)


def teacher_forced_pointer(out: DrafterOutput, logc: torch.Tensor, order: torch.Tensor,
                           remaining: torch.Tensor) -> torch.Tensor:
    """Log-probabilities [B, D, W] of the pointer: the learned distribution mixed with the stale confidences
    (the training-free order), weighted by out["mix"]; see teacher_forced_scores for the arguments."""
    learned = torch.log_softmax(teacher_forced_scores(out, logc, order, remaining), -1)
    stale = torch.log_softmax(logc.masked_fill(~remaining, -1e9), -1)  # proportional to the confidence
    lam = out["mix"].clamp(1e-4, 1 - 1e-4)
    return torch.logaddexp(learned + lam.log(), stale + (1 - lam).log())


def pointer_loss(out: DrafterOutput, logc: torch.Tensor, order: torch.Tensor, remaining: torch.Tensor,
                 depth_valid: torch.Tensor) -> torch.Tensor:
    """Teacher-forced pointer loss (see teacher_forced_pointer); depth_valid [B, D]."""
    logp = teacher_forced_pointer(out, logc, order, remaining)
    nll = -logp.gather(-1, order.clamp_min(0).unsqueeze(-1)).squeeze(-1)
    return (nll * depth_valid).sum() / depth_valid.sum().clamp_min(1)


def keep_logits(out: DrafterOutput, order: torch.Tensor) -> torch.Tensor:
    """Keep-head logits [B, D] at the true positions, conditioned on earlier commits on the path."""
    b, dmax = order.shape
    w = out["keep_base"].shape[1]
    onehot = F.one_hot(order.clamp_min(0), w).float() * (order >= 0).unsqueeze(-1)
    prior = torch.cumsum(onehot, 1) - onehot  # [B, D, W(i)]
    rel = torch.einsum("bji,bdi->bdj", out["keep_rel"].expand(b, -1, -1), prior)  # [B, D, W(j)]
    logits = out["keep_base"].unsqueeze(1) + rel
    return logits.gather(-1, order.clamp_min(0).unsqueeze(-1)).squeeze(-1)


def set_inclusion(out: DrafterOutput, logc: torch.Tensor, tau: float) -> torch.Tensor:
    """Probability [B, D, W] that each position is in the commit set at depth d: the set head mixed with the
    stale rule (weight out["set_mix"]). logc [B, D, W]: root log-prob of the coupled token per depth."""
    rows = torch.arange(logc.shape[1], device=logc.device).clamp(max=out["set_base"].shape[1] - 1)  # deeper: last
    z = (out["set_base"][:, rows] + out["set_alpha"] * (logc - math.log(tau))) / out["set_temp"].clamp_min(1e-3)
    lam = out["set_mix"]
    return lam * torch.sigmoid(z) + (1 - lam) * stale_inclusion(logc.exp(), tau)

"""The target's decision rule d(state, logits, step): pure and deterministic (DESIGN.md section 2).

- candidate token x_i = argmax logits_i at T = 0, else argmax(log_softmax(logits_i) / T + g_step,i) (Gumbel-max);
- confidence c_i = softmax(logits_i)[x_i] (un-noised);
- exact mode: commit the one masked position with the highest c_i (ties: lowest position);
- threshold mode: commit every masked window position with c_i >= tau, and at least the top one.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .noise import GumbelNoise

MODES = ("exact", "threshold")


@dataclass(frozen=True)
class DecisionRule:
    mode: str = "exact"
    temperature: float = 0.0
    threshold: float = 0.9

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if not (0.0 <= float(self.temperature) <= 10.0):
            raise ValueError(f"temperature must be in [0, 10], got {self.temperature}")
        if not (0.0 < float(self.threshold) <= 1.0):
            raise ValueError(f"threshold (tau) must be in (0, 1], got {self.threshold}")


def candidates(logits: torch.Tensor, steps, lo: int, rule: DecisionRule, noise: GumbelNoise | None,
               mask_id: int | None = None):
    """Candidate tokens and confidences for a batch of window logits.

    logits: [n, w, V] (float32, window positions lo..lo+w-1); steps: the decision index of each row.
    The MASK token is never a candidate (its logit is set to -inf before the softmax).
    Returns (tokens [n, w] long, confidence [n, w] float32, logp [n, w, V]).
    """
    logits = logits.float()
    if mask_id is not None and 0 <= mask_id < logits.shape[-1]:
        logits = logits.clone()
        logits[..., mask_id] = float("-inf")
    logp = torch.log_softmax(logits, dim=-1)
    if rule.temperature == 0:
        tokens = logp.argmax(-1)
    else:
        n, w, _ = logits.shape
        g = torch.stack([noise.block(int(s), range(lo, lo + w)) for s in steps]).to(logp.device)
        tokens = (logp / rule.temperature + g).argmax(-1)
    conf = logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1).exp()
    return tokens, conf, logp


def select(conf: torch.Tensor, masked: torch.Tensor, rule: DecisionRule) -> list[int]:
    """Window offsets to commit for one state. conf, masked: [w]. Requires at least one masked position."""
    c = torch.where(masked, conf, torch.full_like(conf, -1.0))
    top = int(torch.argmax(c))  # first maximum: ties go to the lowest position
    if not bool(masked[top]):
        raise ValueError("decision on a window with no masked position")
    if rule.mode == "exact":
        return [top]
    chosen = (masked & (conf >= rule.threshold)).nonzero().flatten().tolist()
    return chosen if top in chosen else sorted(chosen + [top])

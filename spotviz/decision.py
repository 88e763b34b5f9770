"""The target's decision rule d(state, logits, step): pure and deterministic (DESIGN.md section 2).

- log p_i = log_softmax(logits_i) with MASK excluded (its logit is -inf: MASK is never a candidate);
- candidate token x_i = argmax log p_i at T = 0, else argmax(log p_i / T + g_step,i) (Gumbel-max);
- confidence c_i = p_i[x_i] (un-noised);
- exact mode: commit the one masked position with the highest c_i (ties: lowest position);
- threshold mode: commit every masked window position with c_i >= tau, and at least the top one.

`decide` applies the rule to a batch of states in one call (the standard decoder's one state, or every node of
a SPOT tree); the noise is drawn only at masked positions, the only ones a decision can commit.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .noise import GumbelNoise, gumbel_scores
from .trace import Commit

MODES = ("exact", "threshold")


@dataclass(frozen=True)
class DecisionRule:
    """The rule's parameters (made from a checked DecodeConfig: DecodeConfig.rule)."""

    mode: str = "exact"
    temperature: float = 0.0
    threshold: float = 0.9


@dataclass
class Decision:
    """The target's decision at one state: window offsets (ascending), their tokens and confidences."""

    offsets: list[int]
    tokens: list[int]
    confidences: list[float]
    window_conf: list[float] = field(default_factory=list, repr=False)  # c_i at every window offset
    logp: torch.Tensor | None = field(default=None, repr=False, compare=False)  # [w, V]: the state's log p

    @property
    def key(self) -> tuple:
        """What a draft edge must equal for this decision to be accepted: (offsets, tokens)."""
        return tuple(self.offsets), tuple(self.tokens)

    def commits(self, lo: int, step: int, drafted: bool = False) -> list[Commit]:
        """The decision as the trace records it, in a window starting at `lo`, made at decision index `step`."""
        return [Commit(lo + o, t, step, c, drafted) for o, t, c in zip(self.offsets, self.tokens, self.confidences)]


def masked_log_softmax(logits: torch.Tensor, mask_id: int | None) -> torch.Tensor:
    """float32 log-probabilities over the vocabulary with MASK's logit set to -inf (the one place this is done)."""
    logits = logits.float()
    if mask_id is not None and 0 <= mask_id < logits.shape[-1]:
        logits = logits.index_fill(-1, torch.tensor([mask_id], device=logits.device), float("-inf"))
    return torch.log_softmax(logits, dim=-1)


def first_argmax(x: torch.Tensor) -> torch.Tensor:
    """argmax over the last dimension, ties to the first index (as torch's). On a CPU through numpy, whose
    argmax is about ten times faster on these shapes and returns the same indices."""
    if x.device.type == "cpu":
        return torch.from_numpy(x.detach().numpy().argmax(-1))
    return x.argmax(-1)


def candidates(logits: torch.Tensor, steps, lo: int, rule: DecisionRule, noise: GumbelNoise | None,
               mask_id: int | None = None, masked: torch.Tensor | None = None):
    """Candidate tokens and confidences for a batch of window logits.

    logits: [n, w, V] (window positions lo..lo+w-1); steps: the decision index of each row; masked: [n, w] bool,
    the positions that need noise (default: all; elsewhere the candidate is the noiseless argmax).
    Returns (tokens [n, w] long, confidence [n, w] float32, logp [n, w, V]). Noise is drawn per step, once for
    the rows that share it, and added only where it is needed."""
    logp = masked_log_softmax(logits, mask_id)
    tokens = first_argmax(logp)
    if rule.temperature > 0:
        n, w, _ = logp.shape
        need = torch.ones(n, w, dtype=torch.bool) if masked is None else masked.cpu()
        rows_of: dict[int, list[int]] = {}
        for r, s in enumerate(steps):
            rows_of.setdefault(int(s), []).append(r)
        for s, rows in rows_of.items():  # rows of one step share its noise (the union of their masked positions)
            offs = need[rows].any(0).nonzero().flatten().tolist()
            if offs:
                g = noise.block(s, [lo + o for o in offs]).to(logp.device)  # [len(offs), V]
                r_idx = torch.tensor(rows, device=logp.device).unsqueeze(1)
                o_idx = torch.tensor(offs, device=logp.device).unsqueeze(0)
                tokens[r_idx, o_idx] = first_argmax(gumbel_scores(logp[r_idx, o_idx], rule.temperature, g))
    conf = logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1).exp()
    return tokens, conf, logp


def decide(logits: torch.Tensor, masked: torch.Tensor, steps, lo: int, rule: DecisionRule,
           noise: GumbelNoise | None, mask_id: int | None) -> list[Decision | None]:
    """d(state, logits, step) for a batch of states: logits [n, w, V], masked [n, w] bool, steps [n].

    One decision per row; None for a row with no masked position (nothing to decide), computed for the other rows
    only (a SPOT tree's nodes that complete their window, and in threshold mode often the whole batch: a free
    decision that commits the window's last set). A decision keeps its state's log-probabilities (a view of the
    batch's): the next pass's root distributions when it is a bonus."""
    has = masked.any(-1)
    if not bool(has.all()):  # (each row's decision depends on its own row alone: the others' are the same numbers)
        out: list[Decision | None] = [None] * len(steps)
        rows = has.nonzero().flatten().tolist()
        if rows:
            idx = torch.tensor(rows, device=logits.device)
            for r, d in zip(rows, decide(logits[idx], masked[has], [steps[r] for r in rows], lo, rule, noise,
                                         mask_id)):
                out[r] = d
        return out
    tokens, conf, logp = candidates(logits, steps, lo, rule, noise, mask_id, masked)
    masked = masked.to(conf.device)
    top = torch.where(masked, conf, torch.full_like(conf, -1.0)).argmax(-1)  # first maximum: lowest position
    chosen = torch.zeros_like(masked).scatter_(1, top.unsqueeze(1), True)
    if rule.mode == "threshold":
        chosen |= masked & (conf >= rule.threshold)
    decisions: list[Decision | None] = []
    for r, (row, toks, cs) in enumerate(zip(chosen.tolist(), tokens.tolist(), conf.tolist())):
        offs = [o for o, c in enumerate(row) if c]
        decisions.append(Decision(offs, [toks[o] for o in offs], [cs[o] for o in offs], cs, logp[r]))
    return decisions


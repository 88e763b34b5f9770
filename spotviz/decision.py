"""The target's decision rule d(state, logits, step): pure and deterministic (DESIGN.md section 2).

- log p_i = log_softmax(logits_i) with MASK excluded (its logit is -inf: MASK is never a candidate);
- candidate token x_i = argmax log p_i at T = 0, else argmax(log p_i / T + g_step,i) (Gumbel-max);
- confidence c_i = p_i[x_i] (un-noised);
- exact mode: commit the one masked position with the highest c_i (ties: lowest position);
- threshold mode: commit every masked window position with c_i >= tau, and at least the top one.

`decide` applies the rule to a batch of states in one call (the standard decoder's one state, or every node of
a SPOT tree). Only the masked positions, the only ones a decision can commit, get log-probabilities, noise and
candidates; a state's whole-window log-probabilities are computed when asked (Decision.logp: the bonus decision's,
which the drafter reads as the next root's).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
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
    window_conf: list[float] = field(default_factory=list, repr=False)  # c_i at every masked window offset (else 0)
    logits: torch.Tensor | None = field(default=None, repr=False, compare=False)  # [w, V]: the state's window logits
    mask_id: int | None = field(default=None, repr=False, compare=False)
    masked_offsets: list[int] = field(default_factory=list, repr=False, compare=False)  # the state's masked offsets
    masked_logp: torch.Tensor | None = field(default=None, repr=False, compare=False)  # [m, V]: their log p (decide's)
    masked_tokens: list[int] = field(default_factory=list, repr=False, compare=False)  # the candidate at each of them
    _logp: torch.Tensor | None = field(default=None, init=False, repr=False, compare=False)  # (logp, once computed)

    @property
    def key(self) -> tuple:
        """What a draft edge must equal for this decision to be accepted: (offsets, tokens)."""
        return tuple(self.offsets), tuple(self.tokens)

    @property
    def logp(self) -> torch.Tensor | None:
        """[w, V] the state's log-probabilities (MASK excluded), computed when first asked: a bonus decision's are
        the next root's distributions, which the drafter reads; other decisions never need them. The masked rows are
        the rule's own (masked_logp: computed once, so a proposer reading either sees the same numbers); only the
        committed positions' rows are computed here."""
        if self._logp is None and self.logits is not None:
            w = self.logits.shape[0]
            have = set(self.masked_offsets)
            rest = [o for o in range(w) if o not in have]
            logp = torch.empty(self.logits.shape, dtype=torch.float32, device=self.logits.device)
            if self.masked_offsets:
                logp[self.masked_offsets] = self.masked_logp
            if rest:  # (the indexing makes a copy: MASK's column is filled in place there)
                logp[rest] = masked_log_softmax(self.logits[rest], self.mask_id, owned=True)
            self._logp = logp
        return self._logp

    def commits(self, lo: int, step: int, drafted: bool = False) -> list[Commit]:
        """The decision as the trace records it, in a window starting at `lo`, made at decision index `step`."""
        return [Commit(lo + o, t, step, c, drafted) for o, t, c in zip(self.offsets, self.tokens, self.confidences)]


def masked_log_softmax(logits: torch.Tensor, mask_id: int | None, owned: bool = False) -> torch.Tensor:
    """float32 log-probabilities over the vocabulary with MASK's logit set to -inf (the one place this is done).
    owned: `logits` is the caller's own float32 copy, whose MASK column may be overwritten (no second copy)."""
    if mask_id is not None and 0 <= mask_id < logits.shape[-1]:
        if not (owned and logits.dtype == torch.float32):
            logits = logits.to(torch.float32, copy=True)
        logits.select(-1, mask_id).fill_(float("-inf"))  # (a fill in place costs a third of index_fill's copy)
    return torch.log_softmax(logits.float(), dim=-1)


def first_argmax(x: torch.Tensor) -> torch.Tensor:
    """argmax over the last dimension, ties to the first index (as torch's). On a CPU through numpy, whose
    argmax is about ten times faster on these shapes and returns the same indices."""
    if x.device.type == "cpu":
        return torch.from_numpy(x.detach().numpy().argmax(-1))
    return x.argmax(-1)


def first_two(a: np.ndarray) -> np.ndarray:
    """The indices of the two largest entries over the last dimension of a numpy array, int64 [..., 2], ties to the
    first index (two argmaxes: about a third of torch's topk(2) on a SPOT tree's [depths, positions, V] on a CPU;
    `a` is left as it was)."""
    a = a.copy()
    i1 = a.argmax(-1)[..., None]
    np.put_along_axis(a, i1, -np.inf, axis=-1)
    return np.concatenate([i1, a.argmax(-1)[..., None]], axis=-1)


def candidates(logits: torch.Tensor, steps, lo: int, rule: DecisionRule, noise: GumbelNoise | None,
               mask_id: int | None, masked: torch.Tensor, keep_logp: list | None = None):
    """Candidate tokens and confidences of a batch of window logits at its masked positions.

    logits: [n, w, V] (window positions lo..lo+w-1); steps: the decision index of each row; masked: [n, w] bool.
    Returns (rows, offsets, tokens, confidences), four lists over the masked (row, offset) pairs in row-major order.
    Only those positions' log-probabilities are computed (the rule reads nothing else), each the same numbers
    whichever other positions and rows come with it (keep_logp: a list that receives them, [M, V]); the noise is
    drawn once per (step, position) pair, all of a batch's pairs together."""
    rows, offs = masked.to(logits.device).nonzero(as_tuple=True)
    logp = masked_log_softmax(logits[rows, offs], mask_id, owned=True)  # [M, V] (the indexing made a copy)
    if keep_logp is not None:
        keep_logp.append(logp)
    if rule.temperature > 0 and len(rows):
        row_steps = [int(s) for s in steps]
        g = noise.pairs([row_steps[r] for r in rows.tolist()], [lo + o for o in offs.tolist()])  # [M, V]
        if logp.device.type == "cpu":  # (in numpy: the same numbers, without torch's per-call cost)
            tokens = torch.from_numpy(gumbel_scores(logp.numpy(), rule.temperature, g.numpy()).argmax(-1))
        else:
            tokens = first_argmax(gumbel_scores(logp, rule.temperature, g.to(logp.device)))
    else:
        tokens = first_argmax(logp)
    conf = logp.gather(-1, tokens.to(logp.device).unsqueeze(-1)).squeeze(-1).exp()
    return rows.tolist(), offs.tolist(), tokens.tolist(), conf.tolist()


def choose(offsets: list[int], tokens: list[int], confidences: list[float], rule: DecisionRule) -> Decision:
    """The rule's choice among one state's candidates at its masked offsets (ascending): the most confident (the
    first, i.e. lowest, at a tie), and in threshold mode every one at or above tau (compared in float32, as the
    confidences are)."""
    top = max(range(len(offsets)), key=confidences.__getitem__)  # (max keeps the first of equal maxima)
    if rule.mode == "threshold":
        tau = float(np.float32(rule.threshold))
        chosen = [i for i, c in enumerate(confidences) if i == top or c >= tau]
    else:
        chosen = [top]
    return Decision([offsets[i] for i in chosen], [tokens[i] for i in chosen], [confidences[i] for i in chosen])


def decide(logits: torch.Tensor, masked: torch.Tensor, steps, lo: int, rule: DecisionRule,
           noise: GumbelNoise | None, mask_id: int | None) -> list[Decision | None]:
    """d(state, logits, step) for a batch of states: logits [n, w, V], masked [n, w] bool, steps [n].

    One decision per row; None for a row with no masked position (nothing to decide: a SPOT tree's nodes that
    complete their window, and in threshold mode often the whole batch: a free decision that commits the window's
    last set). Each row's decision depends on its own row alone. A decision keeps its state's logits (a view of
    the batch's), from which its log-probabilities come when asked (the next pass's root distributions when it is a
    bonus), and the log-probabilities and candidate tokens at its masked offsets, which the rule computed (a one-guess
    tree needs no more; a store of evaluated states takes the candidates from them: known_states.KnownStates.add)."""
    n, w = masked.shape
    kept: list = []
    rows, offs, toks, confs = candidates(logits, steps, lo, rule, noise, mask_id, masked, kept)
    per_row: list[list[int]] = [[] for _ in range(n)]
    for i, r in enumerate(rows):
        per_row[r].append(i)
    decisions: list[Decision | None] = []
    for r, idx in enumerate(per_row):
        if not idx:
            decisions.append(None)
            continue
        a, b = idx[0], idx[-1] + 1  # (row-major: a row's pairs are consecutive)
        d = choose(offs[a:b], toks[a:b], confs[a:b], rule)
        window = [0.0] * w
        for o, c in zip(offs[a:b], confs[a:b]):
            window[o] = c
        d.window_conf, d.logits, d.mask_id = window, logits[r], mask_id
        d.masked_offsets, d.masked_logp, d.masked_tokens = offs[a:b], kept[0][a:b], toks[a:b]
        decisions.append(d)
    return decisions

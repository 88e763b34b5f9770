"""What a drafter sees: the target's output distributions at the root, never token identities or hidden states.

Features are computed from the root's window logits (the "stale" distributions of the pass that ended at the
root r), the state s1 = r + d(r) and the position of the free first decision. Because they contain no token
identities, a drafter trained on one target can be used on another.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..decision import DecisionRule, first_argmax, first_two
from ..noise import GumbelNoise, gumbel_scores

TOPK = 8  # the root's top-k probabilities a drafter reads by default (the paper's drafter reads the top 32)
N_SHAPE_FEATURES = 15  # the features after the top-k probabilities
N_FEATURES = TOPK + N_SHAPE_FEATURES
TEMPERATURE_FEATURE = -1  # the last column holds the decoding temperature (clipped to [0, 2])


TOPK_RANGE = (2, 64)  # the input widths a drafter may have


def check_topk(topk) -> int:
    """`topk` if it is a valid input width, else ValueError (the one place the range is checked)."""
    if isinstance(topk, bool) or not isinstance(topk, int) or not TOPK_RANGE[0] <= topk <= TOPK_RANGE[1]:
        raise ValueError(f"topk must be a whole number from {TOPK_RANGE[0]} to {TOPK_RANGE[1]}, got {topk!r}")
    return topk


def n_features(topk: int = TOPK) -> int:
    """Features per position for a drafter that reads the root's top-`topk` probabilities."""
    return topk + N_SHAPE_FEATURES


def topk_of(n: int) -> int:
    """The top-k a drafter with `n` features per position reads (inverse of n_features)."""
    return n - N_SHAPE_FEATURES


@dataclass
class RootView:
    """Everything a proposer may use to draft a tree rooted at s1 (one window [lo, hi)); `ahead`, when set, is the
    next window's view (its stale distributions from the pass that ended at the root, every position masked), so
    that a tree may go on past the state that completes this window (drafter/tree.py)."""

    lo: int
    hi: int
    state: torch.Tensor  # s1, the full token row (long)
    logp: torch.Tensor | None  # [w, V] log-probabilities at the root r (MASK suppressed), float32; None: root's
    masked: torch.Tensor  # [w] bool: masked in s1
    first: list[int]  # window offsets committed by the free first decision d(r)
    step: int  # decision index of the first drafted decision (depth 1)
    rule: DecisionRule
    noise: GumbelNoise | None  # the noise the drafter uses (the target's own when coupled)
    ahead: "RootView | None" = None  # the next window [hi, hi + w'), drafted only after this one is complete
    eos_ids: tuple = ()  # end-of-text tokens: a drafted one ends the text, so nothing is drafted ahead of it
    known: object = None  # samplers/known_states.KnownStates: logits at states a pass already evaluated (exact decisions)
    root: object = None  # decision.Decision at r, whose log-probabilities `logp` is when not given

    @property
    def width(self) -> int:
        return self.hi - self.lo

    def window_logp(self) -> torch.Tensor:
        """[w, V] the root's log-probabilities over the window (the root decision's, computed when first asked)."""
        if self.logp is None:
            self.logp = self.root.logp
        return self.logp

    def masked_rows(self, offsets: list[int]) -> tuple[list[int], torch.Tensor]:
        """The root's log-probabilities at (at least) these masked offsets: (the offsets given, [m, V] their rows),
        the root decision's own rows where it has them (every masked offset of r, no copy; the same numbers as
        window_logp's rows), else window_logp's rows at `offsets`."""
        root = self.root
        if self.logp is None and root is not None and root.masked_logp is not None \
                and set(offsets) <= set(root.masked_offsets):
            return root.masked_offsets, root.masked_logp
        return offsets, self.window_logp()[offsets]


def position_features(view: RootView, topk: int = TOPK) -> torch.Tensor:
    """[w, n_features(topk)] per-position features of a root view (a tensor; see np_position_features)."""
    return torch.from_numpy(np_position_features(view, topk))


def np_position_features(view: RootView, topk: int = TOPK) -> np.ndarray:
    """[w, n_features(topk)] float32 per-position features of a root view, in numpy (the same function at
    training and inference time): the root's top-`topk` probabilities (zero-padded past the vocabulary),
    normalised entropy, top-2 margin, log top-1, masked, free-decision flag, relative position, signed distance to the free decision, its neighbour flag, committed
    left / right neighbours, masked fraction, stale-confidence rank among masked positions, top-1 >= tau,
    top-1 - tau, and the temperature (clipped to [0, 2])."""
    logp = view.window_logp().detach().float().cpu().numpy()
    w, v = logp.shape
    p = np.exp(logp)
    k = min(topk, v)
    # the k largest, descending: exact copies (a partition, then a sort of those k: a quarter of torch.topk's time)
    top = np.sort(np.partition(p, v - k, axis=-1)[:, v - k:], axis=-1)[:, ::-1]
    if k < topk:
        top = np.concatenate([top, np.zeros((w, topk - k), np.float32)], -1)
    ent = -(p * np.maximum(logp, -1e4)).sum(-1) / math.log(v)
    masked_b = view.masked.cpu().numpy()
    masked = masked_b.astype(np.float32)
    idx = np.arange(w, dtype=np.float32)
    first = np.zeros(w, np.float32)
    if view.first:
        first[view.first] = 1.0
        dd = idx[:, None] - np.asarray(view.first, np.float32)[None, :]
        dist = dd[np.arange(w), np.abs(dd).argmin(1)]
    else:
        dist = np.full(w, float(w), np.float32)
    committed = 1.0 - masked
    left = np.concatenate([[1.0], committed[:-1]])
    right = np.concatenate([committed[1:], [1.0]])
    conf = np.where(masked_b, top[:, 0], -1.0)
    rank = np.argsort(np.argsort(-conf, kind="stable"), kind="stable").astype(np.float32)
    tau = float(view.rule.threshold)
    shape = [ent, top[:, 0] - top[:, 1], np.log(np.maximum(top[:, 0], 1e-9)) / 10, masked, first, idx / w,
             np.clip(dist / w, -1, 1), (np.abs(dist) == 1).astype(np.float32), left, right, masked.mean(), rank / w,
             (top[:, 0] >= tau).astype(np.float32), top[:, 0] - tau, min(float(view.rule.temperature), 2.0)]
    f = np.empty((w, topk + len(shape)), np.float32)
    f[:, :topk] = top
    for i, col in enumerate(shape):  # (column by column into float32: cheaper than stacking them)
        f[:, topk + i] = col
    return f


def first_depth_candidates(view: RootView, offsets: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """coupled_candidates' first depth at these masked offsets alone: (tok1 [m] int64, logc1 [m] float32 numpy),
    from the root's rows there (RootView.masked_rows): the same numbers, without the window's other positions (the
    best token by an argmax: a top-2's first but where two tokens score exactly alike)."""
    have, logp = view.masked_rows(offsets)
    pick = [have.index(o) for o in offsets] if have is not offsets else None
    greedy = view.rule.temperature == 0 or view.noise is None
    if greedy and logp.device.type == "cpu":  # (in numpy: 8 us against 25 us in torch, one pass's rows on a CPU)
        a = logp.detach().numpy()
        a = a[pick] if pick is not None else a
        tok1 = a.argmax(-1)
        return tok1.astype(np.int64), a[np.arange(len(tok1)), tok1].astype(np.float32)
    if pick is not None:  # (only the offsets asked for: noise is drawn per position)
        logp = logp[pick]
    if greedy:
        tok1 = first_argmax(logp)
    else:
        g = view.noise.block(view.step, [view.lo + o for o in offsets]).to(logp.device)
        tok1 = first_argmax(gumbel_scores(logp, view.rule.temperature, g))
    tok1 = tok1.to(logp.device)
    return tok1.cpu().numpy(), logp.gather(-1, tok1.unsqueeze(-1)).squeeze(-1).float().cpu().numpy()


def coupled_candidates(view: RootView, depths: int, start: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Drafted tokens for each depth start+1..depths with the step-indexed noise the target will use.

    Returns (tok1 [n, w], tok2 [n, w], logc1 [n, w]), n = depths - start: the best and second-best token under
    argmax(log p_root / T + g_step) and the root log-probability of the best one. At T = 0 they are the same
    at every depth (greedy). Noise is drawn, and the scores computed, only at the positions masked in s1 (the only
    ones drafted); elsewhere the tokens are the noiseless ones."""
    logp, w = view.window_logp(), view.width
    n = depths - start
    if logp.device.type == "cpu" and logp.dtype == torch.float32:
        return _coupled_candidates_numpy(view, logp.detach().numpy(), depths, start)
    t2 = logp.topk(2, dim=-1)
    if view.rule.temperature == 0 or view.noise is None:
        tok1 = t2.indices[:, 0].expand(n, w)
        tok2 = t2.indices[:, 1].expand(n, w)
        logc = t2.values[:, 0].expand(n, w)
        return tok1, tok2, logc
    tok1, tok2 = t2.indices[:, 0].repeat(n, 1), t2.indices[:, 1].repeat(n, 1)
    offs = view.masked.nonzero().flatten().tolist()
    if offs:
        g = view.noise.grid(range(view.step + start, view.step + depths),
                            [view.lo + o for o in offs]).to(logp.device)  # [n, m, V]
        top = gumbel_scores(logp[offs], view.rule.temperature, g).topk(2, dim=-1).indices  # [n, m, 2]
        tok1[:, offs], tok2[:, offs] = top[..., 0], top[..., 1]
    logc = logp.unsqueeze(0).expand(n, -1, -1).gather(-1, tok1.unsqueeze(-1)).squeeze(-1)
    return tok1, tok2, logc


def _coupled_candidates_numpy(view: RootView, logp: np.ndarray, depths: int, start: int):
    """coupled_candidates on a CPU, the same numbers through numpy (rather than a dozen small torch calls: four depths
    at T = 1 on math-bd took 99 us instead of 227 on this project's CPU, session 57)."""
    n, w = depths - start, view.width
    best = first_two(logp)  # [w, 2]
    tok1, tok2 = np.repeat(best[None, :, 0], n, 0), np.repeat(best[None, :, 1], n, 0)
    offs = np.flatnonzero(view.masked.numpy()) if view.rule.temperature > 0 and view.noise is not None else []
    if len(offs):
        g = view.noise.grid(range(view.step + start, view.step + depths), [view.lo + int(o) for o in offs]).numpy()
        top = first_two(gumbel_scores(logp[offs], view.rule.temperature, g))  # [n, m, 2]
        tok1[:, offs], tok2[:, offs] = top[..., 0], top[..., 1]
    logc = logp[np.arange(w)[None, :], tok1]
    return torch.from_numpy(tok1), torch.from_numpy(tok2), torch.from_numpy(logc)

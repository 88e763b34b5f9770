"""What the proposers share: the per-pass context (coupled-noise tokens, best and runner-up, and the root's
confidences per depth) and a node's children in exact mode (top-k positions, a runner-up token where the stale
one may be replaced) and in threshold mode (candidate commit sets from per-position inclusion probabilities, and
the likeliest sets again with a runner-up token where their least certain stale token may be replaced).

Token branching. A drafted token is the root's (coupled) best token; the target may commit another one once
the path's commits have changed the context. With keep_j = P(the stale token at j survives), an edge that
commits j with the stale token gets probability p keep_j and its twin with the runner-up p (1 - keep_j) r
(r: P(the replacement is the runner-up)). The training-free estimate is keep_j = c1_j / (c1_j + c2_j), the
root's probabilities of the two candidates. In threshold mode only a set's least certain positions branch
(twins of the few likeliest sets, one position replaced in each): measured on math-bd, stale tokens that change end
about 38% of SPOT-Sets' passes, and the twin lifted its pass reduction by 13% at T = 0 and 6% at T = 1 (40
problems, budget 16).

Two experts as one proposal. Candidates of K proposers with weights w_k (summing to 1) become one list with
P(edge) = sum_k w_k P_k(edge): an edge both propose gets both shares, an edge one proposes keeps its share. The
tree's best-first growth then spends the budget on whichever expert's alternatives are likelier. The SPOT
proposer hedges its learned heads with a baseline partner this way: the calibrated template in exact mode, the
stale threshold rule for SPOT-Sets (proposers/spot.py; tree.mix_candidates)."""
from __future__ import annotations

import numpy as np
import torch

from ..features import RootView, coupled_candidates
from ..tree import DraftNode


class Context:
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
        tok1, tok2, logc = (x.cpu().numpy() for x in coupled_candidates(self.view, depths, start=n))
        logp = self.view.window_logp()
        rows = np.arange(logp.shape[0])[None, :]
        if logp.device.type == "cpu":  # [new depths, w] the root's log-probability of the runner-up
            logp2 = logp.detach().float().numpy()[rows, tok2]
        else:
            logp2 = logp.gather(-1, torch.from_numpy(tok2.T).to(logp.device)).T.float().cpu().numpy()
        self.tok1 = np.concatenate([self.tok1, tok1])
        self.tok2 = np.concatenate([self.tok2, tok2])
        self.logc = np.concatenate([self.logc, logc.astype(np.float32, copy=False)])
        self.conf = np.exp(self.logc)
        self.conf2 = np.concatenate([self.conf2, np.exp(logp2)])
        self.grown(n)

    def grown(self, start: int) -> None:
        """Hook: depths start.. were just added (proposers with per-depth arrays extend theirs)."""

    def d(self, node: DraftNode) -> int:  # depth index of the decision at `node`
        d = min(node.depth, self.max_depth - 1)
        if d >= len(self.tok1):
            self._grow(min(self.max_depth, max(2 * len(self.tok1), d + 1)))
        return d


def exact_children(ctx: Context, node: DraftNode, probs: np.ndarray, keep: np.ndarray | None, k: int,
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


def stale_keep(ctx: Context, d: int, remaining: np.ndarray) -> np.ndarray:
    """The training-free keep estimate at depth d: c1 / (c1 + c2), the root's probability of the coupled best
    token against the best and runner-up together ([w]; positions not remaining: 0)."""
    c = ctx.conf[d] * remaining
    return c / np.maximum(c + ctx.conf2[d] * remaining, 1e-9)


def set_children(ctx: Context, node: DraftNode, q: np.ndarray, remaining: np.ndarray,
                 keep: np.ndarray | None = None, n_flip: int = 6, n_double: int = 5, n_twin: int = 3,
                 twin_positions: int = 3):
    """Candidate commit sets from per-position inclusion probabilities q.

    If some positions are likely in the set: the likeliest set, single flips of its `n_flip` most borderline
    positions and double flips among its `n_double` most borderline ones. If none is (the rule then commits only its
    most confident position): the likeliest singletons. A set is never empty. Probabilities are those of
    independent inclusions, normalised over the candidates. With `keep` [w] (token branching), each of the
    `n_twin` likeliest sets also comes with twins in which one of its least certain positions (lowest keep, if below
    0.999) holds the runner-up token: the likeliest set at its `twin_positions` least certain positions, the others
    at their least certain one. With keeps independent, the set as drafted has probability p prod_J keep_j and the twin
    at i p (1 - keep_i) prod_{J - i} keep_j (J: the positions branched on; at most one of them replaced), so the
    candidates still sum to at most p. (Flips and twins beyond one of each: math-bd, 40 validation problems, budget 32,
    SPOT-Sets 1.458x -> 1.491x at T = 0 and 1.362x -> 1.413x at T = 1; a 32-node tree held 12.6 states on average,
    so the extra candidates cost no budget. Three twin positions for the likeliest set instead of one, release 21:
    147 -> 144 passes at T = 0 and 146 -> 145 at T = 1 on 40 validation problems at budget 32, 150 -> 148 / 147 ->
    147 at 16, 154 / 154 at 4 either way; of the tokens the target replaced in a failed first guess, 39 of 62 were the
    root's runner-up, a third of them not at the least certain position.)"""
    d = ctx.d(node)
    idx = np.flatnonzero(remaining)
    qr = np.clip(q[idx], 1e-6, 1 - 1e-6)
    base = qr > 0.5
    log_in, log_out = np.log(qr), np.log(1 - qr)
    sets = []
    if base.any():
        sets.append(base)
        border = np.argsort(np.abs(qr - 0.5), kind="stable")
        for b in border[:n_flip].tolist():
            s = base.copy()
            s[b] = not s[b]
            sets.append(s)
        near = border[:n_double].tolist()
        for i, a in enumerate(near):
            for b in near[i + 1:]:
                s = base.copy()
                s[[a, b]] = ~s[[a, b]]
                sets.append(s)
        sets = [(s, float(np.exp(np.where(s, log_in, log_out).sum()))) for s in sets if s.any()]
    else:
        for j in np.argsort(-qr, kind="stable")[:n_flip].tolist():
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
    out.sort(key=lambda c: -c[2])
    total = sum(p for *_, p in out)
    out = [(o, t, p / total) for o, t, p in out]
    if keep is not None:
        twins = []
        for r, (offs, toks, p) in enumerate(out[:n_twin]):
            k = keep[list(offs)]
            least = np.argsort(k, kind="stable")[: twin_positions if r == 0 else 1].tolist()
            branch = [i for i in least if k[i] < 0.999]
            if not branch:
                continue
            kept = p * float(np.prod(k[branch]))
            out[r] = (offs, toks, kept)
            for i in branch:
                twin = list(toks)
                twin[i] = int(ctx.tok2[d, offs[i]])
                twins.append((offs, tuple(twin), kept * (1 - float(k[i])) / float(k[i])))
        out += twins
    return out

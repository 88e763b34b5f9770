"""What a pass evaluated and its walk did not use, kept for the window's later passes (docs/DESIGN.md section 3).

A window's logits depend only on the tokens that condition them, so a later draft node with the same window tokens
gets the target's own decision there as a certain edge (KnownStates.decision), and a node one or two commits past an
evaluated state gets the decision at that state as a likely edge (KnownStates.nearest). `remember` stores a pass's
logits off its walk; samplers/spot.py keeps one store per window (and one for the next window, for trees that cross).
"""
from __future__ import annotations

import numpy as np
import torch

from ..decision import Decision, candidates, choose, decide
from .verify import Verified

NEAR_MISSING = 2  # how many commits a likely edge's evaluated state may lack (docs/DESIGN.md section 3)


class KnownStates:
    """The logits of a window [lo, hi) at states a target pass has already evaluated, keyed by the tokens that
    condition them: the window's own tokens (masks included) for the window itself, the tokens of the completed
    window before it for a next window. A window's logits depend only on those tokens (never on the order in which
    they were committed, nor on the step), so at any later draft node with the same tokens the target's decision is
    known exactly: the rule applied to the stored logits with that node's step and the target's own noise. The tree
    drafts it as a certain edge (drafter/tree.py); at a state one or two commits past a stored one, the decision
    there is a likely one (nearest). Only where the drafter's noise is the target's (coupled, or T = 0).
    Kept for the passes of one window; a few dozen [w, V] rows.
    `reuse` (read from the target's info at every use, since a pass's probe may revoke it): a stored row is the row
    a new pass would compute (the probe proved the target's batched passes bit-identical to one-row passes,
    targets/invariance.py, and a window's logits do not depend on how far a call reaches: a row stored from a fused
    two-window pass serves a one-window pass), so a node at a stored state is left out of the next verification
    batch and decided from the stored row (drafter/tree.py, samplers/verify.py); where that is not proven, such a
    node is still verified."""

    def __init__(self, lo: int, hi: int, rule, noise, mask_id: int | None, info=None):
        self.lo, self.hi, self.rule, self.noise, self.mask_id = lo, hi, rule, noise, mask_id
        self.info = info  # the target's TargetInfo (None: no reuse)
        self.logits: dict[bytes, torch.Tensor] = {}
        self.open: dict[bytes, list[bool]] = {}  # key -> its masked window positions (hi - lo flags)
        self._rows: np.ndarray | None = None  # the keys, in order, as one [S, hi - lo] int64 array (built when needed)
        self._open_rows: np.ndarray | None = None  # where _rows holds MASK (built with it)
        self._cands: dict = {}  # (key, step) -> {offset: (token, confidence)} at the state's masked positions

    def add(self, key: bytes, logits: torch.Tensor, masked: torch.Tensor | None = None,
            decided: Decision | None = None, step: int = 0) -> None:
        """key: the conditioning tokens as int64 bytes; logits [hi - lo, V] of the window at that state; masked: its
        masked window positions (default: where the key holds MASK, as for the window's own tokens). decided: the
        decision the storing pass made from these logits at decision index `step` (decide's, over the key's masked
        positions): its candidates at every masked position are the ones `decision` would compute (the same numbers:
        each row's log-probabilities do not depend on the rows computed with it), so they are kept, not recomputed."""
        if key not in self.logits:
            self.logits[key] = logits
            self.open[key] = (np.frombuffer(key, dtype=np.int64) == self.mask_id).tolist() if masked is None \
                else masked.tolist()
            self._rows = None
            if decided is not None and decided.masked_tokens:
                confs = [decided.window_conf[o] for o in decided.masked_offsets]
                self._cands[self._cands_key(key, step)] = dict(zip(decided.masked_offsets,
                                                                   zip(decided.masked_tokens, confs)))

    def _cands_key(self, key: bytes, step: int) -> tuple:
        """Where a state's candidates are kept: per step (its noise) at T > 0, once at T = 0 (no noise)."""
        return key, step if self.rule.temperature > 0 else 0

    @property
    def reuse(self) -> bool:
        """Whether a stored row may stand in for evaluating its state again (class docstring)."""
        info = self.info
        return info is not None and info.batch_invariant is True and bool(info.blockwise_exact)

    def logits_at(self, key: bytes) -> torch.Tensor | None:
        """The stored logits [hi - lo, V] of the state conditioned by `key`, None if no pass evaluated it."""
        return self.logits.get(key)

    def decision(self, key: bytes, masked: torch.Tensor, step: int) -> Decision | None:
        """The target's decision in this window at a state conditioned by `key` (the conditioning tokens as int64
        bytes) whose masked window positions are `masked` ([hi - lo] bool), made at decision index `step`; None if
        no pass evaluated such a state (or nothing is left to decide).

        A tree asks this for many nodes and passes of a window, so the candidates at a stored state (token and
        confidence per position: decision.candidates, with noise at its masked positions) are computed once per
        step (once in all at T = 0; not at all at the step of the pass that stored the state: its decision brought
        them, `add`) and the rule's choice is made from them here: the same numbers as `decide` at every position a
        node may commit (its masked positions are the stored state's, or fewer). The decision carries offsets,
        tokens and confidences, not the window's confidences or log-probabilities."""
        lg = self.logits.get(key)
        if lg is None:
            return None
        open_ = self.open[key]
        offs = [o for o, m in enumerate(masked.tolist()) if m]
        if not offs:
            return None
        if any(not open_[o] for o in offs):  # (a position the stored state had committed: never asked; the rule)
            return decide(lg.unsqueeze(0), masked.unsqueeze(0), [step], self.lo, self.rule, self.noise,
                          self.mask_id)[0]
        ck = self._cands_key(key, step)
        if ck not in self._cands:
            _, o, t, c = candidates(lg.unsqueeze(0), [step], self.lo, self.rule, self.noise, self.mask_id,
                                    torch.tensor([open_]))
            self._cands[ck] = dict(zip(o, zip(t, c)))
        cand = self._cands[ck]
        return choose(offs, [cand[o][0] for o in offs], [cand[o][1] for o in offs], self.rule)

    def nearest(self, window: np.ndarray, masked: torch.Tensor, step: int,
                max_missing: int = NEAR_MISSING) -> Decision | None:
        """The target's decision at the nearest evaluated state above one with window tokens `window` ([hi - lo]
        int64, masks included): a stored state whose commits are all among this one's and that lacks the fewest of
        them (1 to max_missing), decided with this state's masked positions and step. None if there is none. Not
        the target's decision here (its logits miss those commits), only a likely one: a tree drafts it as a likely
        edge (drafter/tree.py)."""
        if not self.logits:
            return None
        if self._rows is None:
            self._rows = np.stack([np.frombuffer(k, dtype=np.int64) for k in self.logits])
            self._open_rows = self._rows == self.mask_id
        rows, open_ = self._rows, self._open_rows
        below = ((rows == window) | open_).all(1)  # its commits are this state's
        missing = np.where(below, (open_ & (window != self.mask_id)).sum(1), max_missing + 1)
        missing[missing == 0] = max_missing + 1  # (the state itself: a certain edge, decision())
        best = int(missing.argmin())
        if missing[best] > max_missing:
            return None
        return self.decision(self._rows[best].tobytes(), masked, step)


def remember(st, v: Verified, rows: torch.Tensor, walk: list[int], lo: int, hi: int, here: KnownStates | None,
             nxt: KnownStates | None) -> None:
    """Store a pass's logits off its walk (the walk's states have fewer commits than the next root: no later node
    can equal them): this window's at every node with something left to decide (in `here`), the next window's at
    every node that completes this one with nothing committed in the next yet (in `nxt`, fused passes). The stored
    rows are views of the pass's output; the nodes the pass left out of its batch (known states) are stored
    already."""
    if len(walk) == len(rows) or (here is None and nxt is None):
        return
    w = hi - lo
    keys = rows[:, lo:hi].numpy()
    open_ = (keys == st.mask_id).any(1)
    # (a node drafted on into the next window: its logits there are not the first decision's)
    nmasked = rows[:, hi: lo + v.out.logits.shape[1]] == st.mask_id
    fresh = nmasked.all(1).numpy()
    on_walk = set(walk)
    for i in range(len(keys)):
        r = v.row(i)
        if i in on_walk or r is None:
            continue
        if open_[i]:
            if here is not None:  # (its decision, made in this window, comes with the row: its candidates)
                here.add(keys[i].tobytes(), v.out.logits[r, :w], decided=v.decisions[i] if v.steps else None,
                         step=v.steps[i] if v.steps else 0)
        elif nxt is not None and v.fused and fresh[i]:
            nxt.add(keys[i].tobytes(), v.out.logits[r, w:], nmasked[i])

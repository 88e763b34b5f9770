"""A proposer from outside the library, checked at every node: what it returns must be a candidate list the tree
builder can trust, or the decode stops with an error that names the proposer and the candidate.

A proposer's candidates never decide what is committed (the verifier walks only along edges equal to the target's
own decisions), so a wrong candidate cannot change the output; it makes a wrong tree: an edge at a position that is
not masked (already committed, in the prompt, a negative offset that numpy would wrap round), a token the model does
not have (an index error deep in the forward), the mask token (a state with no commit), a probability that is not a
probability (NaN and negatives were dropped silently; 7.0 put the edge first). The tree's own certain and likely
edges still save passes around such a proposer, so its author would see no sign of the fault. Each candidate
(offsets, tokens, p) of `children` / `first_child` must have:

    offsets  distinct ints, each a position still masked at the node (0 <= o < len(remaining), remaining[o]);
             exactly one in exact mode (a decision commits one position), at least one in threshold mode
    tokens   ints, one per offset, in [0, vocab) and not the mask token
    p        a finite probability in [0, 1]; the candidates' sum at most 1 (+ 1e-3 for rounding)
    A set's pairs are put in offset order (as a decision's key is); the same edge proposed twice is one edge, its
    probabilities added.

and it must leave what it reads as it found it: a proposer that writes into view.state (the decoder's own token row)
could change the output, so the row is compared with its copy from the pass's start after every call.

The built-in proposers are not wrapped (their candidates are built that way; the check would cost every pass
time). drafter/registry.register_proposer wraps every proposer it loads.
"""
from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import torch

from ...errors import ProposerError
from ..tree import Proposer

SUM_SLACK = 1e-3  # how far a node's candidate probabilities may sum past 1 (float rounding)


class CheckedProposer(Proposer):
    """`inner`, whose candidates are checked against the module docstring's contract before the tree builder reads
    them. name: the name it was registered under (said in errors)."""

    def __init__(self, inner: Proposer, name: str, vocab_size: int, mask_id: int, source: str = "its loader"):
        if not isinstance(inner, Proposer):
            raise ProposerError(f"drafter {name!r}: {source} returned {type(inner).__name__}, not a Proposer "
                                f"(spotviz.drafter.tree.Proposer: prepare and children)")
        self.inner, self.name = inner, name
        self.vocab_size, self.mask_id = int(vocab_size), int(mask_id)
        self.branch_positions = inner.branch_positions
        self._state = None  # the decoder's token row as the pass began (what a call must leave as it was)

    def prepare(self, view, max_depth):
        self._state = view.state.clone()
        return self.untouched(self.inner.prepare(view, max_depth), view, "prepare")

    def children(self, ctx, view, node, remaining):
        got = self.untouched(self.inner.children(ctx, view, node, remaining.copy()), view, "children")
        return self.check(got, view, remaining, "children")

    def first_child(self, view, remaining):
        self._state = view.state.clone()
        got = self.untouched(self.inner.first_child(view, remaining.copy()), view, "first_child")
        return None if got is None else self.check(got, view, remaining, "first_child")

    def for_budget(self, budget: int) -> "CheckedProposer":
        inner = self.inner.for_budget(budget)
        return self if inner is self.inner else \
            CheckedProposer(inner, self.name, self.vocab_size, self.mask_id, source=f"for_budget({budget})")

    def untouched(self, got, view, method: str):
        """`got`, once the call is seen to have left the decoder's token row as it was."""
        if self._state is not None and not torch.equal(view.state, self._state):
            view.state.copy_(self._state)  # (put back: the decode stops here, and its row stays as it was)
            raise ProposerError(f"drafter {self.name!r} ({type(self.inner).__name__}.{method}) wrote into view.state, "
                                f"the decoder's token row: a proposer must only read its inputs (copy what it "
                                f"changes)")
        return got

    def check(self, cands, view, remaining: np.ndarray, method: str) -> list[tuple]:
        """The candidates as (offsets tuple, tokens tuple, float p), or a ProposerError naming what is wrong."""
        where = f"drafter {self.name!r} ({type(self.inner).__name__}.{method})"
        if isinstance(cands, (str, bytes)) or not hasattr(cands, "__iter__"):
            raise ProposerError(f"{where} returned {type(cands).__name__}; expected a list of "
                                f"(offsets, tokens, probability) tuples")
        exact = view.rule.mode == "exact"
        out, total, seen = [], 0.0, {}
        for i, c in enumerate(cands):
            what = f"{where}, candidate {i}"
            if not isinstance(c, (tuple, list)) or len(c) != 3:
                raise ProposerError(f"{what}: {c!r} is not an (offsets, tokens, probability) triple")
            offsets, tokens, p = (self._ints(c[0], f"{what}: offsets"), self._ints(c[1], f"{what}: tokens"), c[2])
            if not offsets or len(offsets) != len(tokens):
                raise ProposerError(f"{what}: {len(offsets)} offsets and {len(tokens)} tokens; expected one token "
                                    f"per offset, at least one")
            if exact and len(offsets) != 1:
                raise ProposerError(f"{what}: {len(offsets)} offsets in exact mode, where a decision commits one "
                                    f"position")
            if len(set(offsets)) != len(offsets):
                raise ProposerError(f"{what}: offsets {offsets} repeat a position")
            offsets, tokens = map(tuple, zip(*sorted(zip(offsets, tokens))))  # (a set in offset order)
            for o in offsets:
                if not 0 <= o < len(remaining) or not remaining[o]:
                    raise ProposerError(f"{what}: offset {o} is not a masked position of the node (window offsets "
                                        f"0-{len(remaining) - 1}, counted from the window's start; masked: "
                                        f"{np.flatnonzero(remaining).tolist()})")
            for t in tokens:
                if not 0 <= t < self.vocab_size or t == self.mask_id:
                    raise ProposerError(f"{what}: token {t} is not a token the model can commit (0-"
                                        f"{self.vocab_size - 1}, not the mask token {self.mask_id})")
            if isinstance(p, bool) or not isinstance(p, Real) or not math.isfinite(p) or not 0 <= p <= 1:
                raise ProposerError(f"{what}: probability {p!r} is not a number in [0, 1]")
            total += float(p)
            if (offsets, tokens) in seen:  # (the same edge twice: one edge, its probabilities added)
                j = seen[offsets, tokens]
                out[j] = (offsets, tokens, out[j][2] + float(p))
                continue
            seen[offsets, tokens] = len(out)
            out.append((offsets, tokens, float(p)))
        if total > 1 + SUM_SLACK:
            raise ProposerError(f"{where}: the candidates' probabilities sum to {total:.4g}, more than 1")
        return out

    @staticmethod
    def _ints(xs, what: str) -> tuple[int, ...]:
        if isinstance(xs, (str, bytes)) or not hasattr(xs, "__iter__"):
            raise ProposerError(f"{what} must be a tuple of ints, got {type(xs).__name__}")
        xs = tuple(xs)
        if not all(isinstance(x, Integral) and not isinstance(x, bool) for x in xs):
            raise ProposerError(f"{what} must be ints, got {xs!r}")
        return tuple(int(x) for x in xs)

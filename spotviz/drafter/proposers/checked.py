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

What it reads is the decoder's own (the token row, the root's distributions, the stored logits of known states), and
a proposer that wrote into them could change the output (a reviewer's find: writing into view.state did), so it reads
a copy of the view made once per pass and per window (`reader`): its token row, masks and root log-probabilities
copied, without the stored logits and the root decision it has no use for. Its `node` is the tree's own: read-only
but for `node.memo`, the proposer's per-node cache.

The built-in proposers are not wrapped (their candidates are built that way; the check would cost every pass
time). drafter/registry.register_proposer wraps every proposer it loads.
"""
from __future__ import annotations

import math
from dataclasses import replace
from numbers import Integral, Real

import numpy as np

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
        self._readers: dict = {}  # id(view) -> (view, its copy for the proposer): this pass's window and the next

    def reader(self, view):
        """The copy of `view` the proposer reads (made at its first use in a pass; module docstring)."""
        got = self._readers.get(id(view))
        if got is None or got[0] is not view:
            if len(self._readers) >= 2:  # (a pass reads at most this window and the next: older ones are done)
                self._readers.clear()
            got = (view, replace(view, state=view.state.clone(), masked=view.masked.clone(),
                                 logp=view.window_logp().clone(), first=list(view.first), known=None, root=None,
                                 ahead=None))
            self._readers[id(view)] = got
        return got[1]

    def prepare(self, view, max_depth):
        self._readers.pop(id(view), None)  # (a new pass: a fresh copy)
        return self.inner.prepare(self.reader(view), max_depth)

    def children(self, ctx, view, node, remaining):
        got = self.inner.children(ctx, self.reader(view), node, remaining.copy())
        return self.check(got, view, remaining, "children")

    def first_child(self, view, remaining):
        self._readers.pop(id(view), None)
        got = self.inner.first_child(self.reader(view), remaining.copy())
        return None if got is None else self.check(got, view, remaining, "first_child")

    def for_budget(self, budget: int) -> "CheckedProposer":
        inner = self.inner.for_budget(budget)
        return self if inner is self.inner else \
            CheckedProposer(inner, self.name, self.vocab_size, self.mask_id, source=f"for_budget({budget})")

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

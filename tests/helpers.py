"""Small helpers shared by the test files: a free port, a slowed target, a proposer of random valid candidates."""
from __future__ import annotations

import socket
import time

import numpy as np

from spotviz.drafter.proposers.common import Context
from spotviz.drafter.tree import Proposer


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SlowTarget:
    """Wraps a target so that every pass sleeps `delay` seconds first (runs last long enough to Stop or to fill
    the queue); counts the passes, to see when decoding stops."""

    def __init__(self, inner, delay: float):
        self._inner, self._delay, self.calls = inner, delay, 0

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def forward(self, *args, **kwargs):
        self.calls += 1
        time.sleep(self._delay)
        return self._inner.forward(*args, **kwargs)


class RandomProposer(Proposer):
    """Valid candidates drawn at random: random masked positions (random sets in threshold mode), the root's token
    or a random one, random probabilities. A tree of anything the contract allows."""

    def __init__(self, seed, vocab_size, mask_id):
        self.rng, self.vocab_size, self.mask_id = np.random.default_rng(seed), vocab_size, mask_id

    def prepare(self, view, max_depth):
        return Context(view, max_depth)

    def children(self, ctx, view, node, remaining):
        free, d, out, left = np.flatnonzero(remaining), ctx.d(node), [], 1.0
        for _ in range(self.rng.integers(0, 5)):
            k = 1 if view.rule.mode == "exact" else int(self.rng.integers(1, len(free) + 1))
            offsets = tuple(int(o) for o in self.rng.choice(free, k, replace=False))
            tokens = tuple(int(ctx.tok1[d, o]) if self.rng.random() < 0.7 else
                           int(self.rng.choice([t for t in range(8) if t != self.mask_id])) for o in offsets)
            p = float(self.rng.random()) * left
            left -= p
            out.append((offsets, tokens, p))
        return out

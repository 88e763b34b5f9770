"""Step-indexed Gumbel noise, a pure function of (seed, step, position).

g(seed, step, position) depends on nothing but its three integers: any node of a draft tree at depth d sees
exactly the noise the standard decoder sees at that step, which is what keeps speculative decoding exact at
T > 0 ("coupled noise").

The generator is counter-based: one SplitMix64 stream per (seed, step), indexed by position and vocabulary entry.
With gamma = 0x9E3779B97F4A7C15 and arithmetic mod 2^64,

    key(s, k)   = splitmix64(splitmix64(s) ^ k)
    x[i, v]     = splitmix64(key(s, k) + (i * V + v) * gamma)          (the stream's (i*V + v)-th output)
    u[i, v]     = ((x[i, v] >> 12) + 1/2) * 2^-52                      (float64, strictly inside (0, 1))
    g[k, i, v]  = -log(-log(u[i, v]))                                  (float64, stored rounded to float32)

so a block of positions is one vectorised computation (numpy uint64, no per-pair generator seeding), every
(step, position) pair has its own 2^64-periodic slice of the stream (no two pairs share numbers while i*V + v
< 2^64), and the numbers are drawn on the CPU, the same whatever device the target runs on. They are not LLaDA's
own `rand_like` stream. Noise is drawn lazily, only for the (step, position) pairs a decision or a drafter reads,
and memoised. docs/DESIGN.md writes the recipe out; tests/test_noise.py reimplements it in plain Python.
"""
from __future__ import annotations

import numpy as np
import torch

_MASK64 = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15
_CHUNK = 1 << 15  # numbers computed per chunk: 256 KiB per uint64 scratch array


def _splitmix64(x: int) -> int:
    x = (x + _GAMMA) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def step_key(seed: int, step: int) -> int:
    """The key of step `step`'s stream for seed `seed` (an unsigned 64-bit integer)."""
    return _splitmix64(_splitmix64(seed & _MASK64) ^ (step & _MASK64))


def _mix(z: np.ndarray, tmp: np.ndarray) -> None:
    """splitmix64's finaliser applied in place to uint64 `z` (its increment already added); `tmp` is scratch."""
    for shift, mult in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB), (31, None)):
        np.right_shift(z, np.uint64(shift), out=tmp)
        np.bitwise_xor(z, tmp, out=z)
        if mult is not None:
            np.multiply(z, np.uint64(mult), out=z)


def gumbel_scores(logp, temperature: float, g):
    """The Gumbel-max scores logp / T + g (T > 0): their argmax is a sample from softmax(logp / T). The one
    place this formula is written (the target's decision, the drafter's coupled candidates, the measurements);
    torch tensors or numpy float32 arrays alike (the same float32 numbers either way)."""
    return logp / temperature + g


class GumbelNoise:
    """Gumbel(0, 1) noise over the vocabulary for (step, position), for one seed; memoised per pair, the oldest
    pairs dropped beyond `max_rows` rows (default: as many as MEMO_BYTES hold, between MIN_ROWS and MAX_ROWS: a
    row is the whole vocabulary, 4 KB for the embedded models, 0.6 MB for a 152k-token published one, so a cap
    in rows alone let a long T > 0 decode of a published model hold gigabytes).

    The memo is one float32 slab of rows used as a ring (the oldest rows overwritten first; the slab grows as it
    fills, up to the cap) and a dict from (step, position) to a row: a call whose pairs are all memoised is one
    gather from the slab (a SPOT tree's drafter context asks for ~100 pairs a pass; a row per pair stacked from
    a dict of arrays cost 0.55 ms of its 7 ms at T = 1 on math-bd)."""

    MEMO_BYTES = 512 << 20
    MIN_ROWS, MAX_ROWS = 256, 16_384  # (a tree's pass asks for up to its depth x the window's width at once)

    def __init__(self, seed: int, vocab_size: int, max_rows: int | None = None):
        self.seed = int(seed)
        self.vocab_size = int(vocab_size)
        self._cache_size = max_rows if max_rows is not None else \
            max(self.MIN_ROWS, min(self.MAX_ROWS, self.MEMO_BYTES // (4 * self.vocab_size)))
        self._row: dict[tuple[int, int], int] = {}  # (step, position) -> its row of the slab
        self._owner: list[tuple[int, int] | None] = [None] * self._cache_size  # the pair each row holds
        self._slab = np.empty((0, self.vocab_size), np.float32)
        self._next = 0  # the ring's next row to write
        # (v + 1) * gamma for v < V: the part of the stream's counter that does not depend on the position (the
        # + 1 is splitmix64's own increment)
        v = np.arange(1, self.vocab_size + 1, dtype=np.uint64)
        with np.errstate(over="ignore"):
            self._counter = v * np.uint64(_GAMMA)

    def at(self, step: int, position: int) -> torch.Tensor:
        return self.pairs([step], [position])[0]

    def block(self, step: int, positions) -> torch.Tensor:
        """[len(positions), vocab] noise for one step."""
        positions = list(positions)
        return self.pairs([step] * len(positions), positions)

    def grid(self, steps, positions) -> torch.Tensor:
        """[len(steps), len(positions), vocab] noise for every step at every position."""
        steps, positions = list(steps), list(positions)
        g = self.pairs([s for s in steps for _ in positions], positions * len(steps))
        return g.view(len(steps), len(positions), self.vocab_size)

    def pairs(self, steps, positions) -> torch.Tensor:
        """[n, vocab] noise for the n pairs (steps[j], positions[j]) (a new tensor, the caller's own). The pairs not
        yet memoised are drawn together, in one vectorised computation whatever their steps."""
        return torch.from_numpy(self._rows(steps, positions))

    def _rows(self, steps, positions) -> np.ndarray:
        """pairs' numbers, a numpy float32 array."""
        want = list(zip((int(s) for s in steps), (int(p) for p in positions)))
        if not want:
            return np.empty((0, self.vocab_size), np.float32)
        rows = [self._row.get(k, -1) for k in want]
        if -1 not in rows:
            return self._slab[rows]
        missing = list(dict.fromkeys(k for k, r in zip(want, rows) if r < 0))
        drawn = self._draw(missing)
        out = np.empty((len(want), self.vocab_size), np.float32)
        hit = [j for j, r in enumerate(rows) if r >= 0]
        if hit:  # (read before the new rows may overwrite theirs)
            out[hit] = self._slab[[rows[j] for j in hit]]
        at = {k: i for i, k in enumerate(missing)}
        miss = [j for j, r in enumerate(rows) if r < 0]
        out[miss] = drawn[[at[want[j]] for j in miss]]
        self._memoise(missing, drawn)
        return out

    def _memoise(self, keys: list[tuple[int, int]], rows: np.ndarray) -> None:
        """Write `rows` into the ring, over its oldest rows (only the last cap of them if there are more)."""
        cap = self._cache_size
        if len(keys) > cap:
            keys, rows = keys[-cap:], rows[-cap:]
        at = [(self._next + i) % cap for i in range(len(keys))]
        if max(at) >= len(self._slab):  # (grow: double, up to the cap)
            grown = np.empty((min(cap, max(2 * len(self._slab), max(at) + 1, 64)), self.vocab_size), np.float32)
            grown[:len(self._slab)] = self._slab
            self._slab = grown
        self._slab[at] = rows
        for k, r in zip(keys, at):
            old = self._owner[r]
            if old is not None:
                del self._row[old]
            self._owner[r], self._row[k] = k, r
        self._next = (at[-1] + 1) % cap

    def _draw(self, pairs: list[tuple[int, int]]) -> np.ndarray:
        """[len(pairs), vocab] float32 noise, computed (not memoised), in chunks of about _CHUNK numbers so that
        the scratch arrays stay in the cache whatever the vocabulary size."""
        V = self.vocab_size
        keys = {s: step_key(self.seed, s) for s in {s for s, _ in pairs}}  # (a batch's pairs share few steps)
        base = np.array([(keys[s] + p * V * _GAMMA) & _MASK64 for s, p in pairs], dtype=np.uint64)
        out = np.empty((len(pairs), V), dtype=np.float32)
        if V <= _CHUNK:
            rows = _CHUNK // V
            for i in range(0, len(pairs), rows):
                _fill(base[i:i + rows, None], self._counter[None, :], out[i:i + rows])
        else:
            for i in range(len(pairs)):
                for c in range(0, V, _CHUNK):
                    _fill(base[i:i + 1], self._counter[c:c + _CHUNK], out[i, c:c + _CHUNK])
        return out


def _fill(base: np.ndarray, counter: np.ndarray, out: np.ndarray) -> None:
    """out = float32(-log(-log(u))) for the stream numbers base + counter (broadcast to out's shape)."""
    z = np.add(base, counter)  # wraps mod 2^64
    tmp = np.empty_like(z)
    _mix(z, tmp)
    np.right_shift(z, np.uint64(12), out=tmp)
    u = tmp.astype(np.float64)  # < 2^52: exact
    u += 0.5
    u *= 2.0 ** -52
    np.log(u, out=u)
    np.negative(u, out=u)
    np.log(u, out=u)
    np.negative(u, out=out, casting="same_kind")


class IndependentNoise(GumbelNoise):
    """Ablation: noise that is *not* shared between the drafter and the target (a different seed stream).

    Used only by drafters with coupled noise turned off; the target always uses its own GumbelNoise."""

    def __init__(self, seed: int, vocab_size: int):
        super().__init__(seed ^ 0x5EED5EED, vocab_size)

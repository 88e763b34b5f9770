"""Step-indexed Gumbel noise, a pure function of (seed, step, position).

g(seed, step, position) depends on nothing but its three integers: any node of a draft tree at depth d sees
exactly the noise the standard decoder sees at that step, which is what keeps speculative decoding exact at
T > 0 ("coupled noise"). Each (seed, step, position) triple is hashed (splitmix64) into the seed of torch's CPU
generator (mt19937), which then draws u ~ U(0, 1)^V in float64; g = -log(-log u), stored as float32. The
numbers are drawn on the CPU, so they are the same whatever device the target runs on. They are not LLaDA's own
`rand_like` stream. Noise is drawn lazily, only for the (step, position) pairs a decision or a drafter reads.
"""
from __future__ import annotations

from collections import OrderedDict

import torch

_MASK64 = (1 << 64) - 1


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def noise_key(seed: int, step: int, position: int) -> int:
    return _splitmix64(_splitmix64(_splitmix64(seed & _MASK64) ^ step) ^ position) >> 1


def gumbel_scores(logp: torch.Tensor, temperature: float, g: torch.Tensor) -> torch.Tensor:
    """The Gumbel-max scores logp / T + g (T > 0): their argmax is a sample from softmax(logp / T). The one
    place this formula is written (the target's decision, the drafter's coupled candidates, the measurements)."""
    return logp / temperature + g


class GumbelNoise:
    """Gumbel(0, 1) noise over the vocabulary for (step, position), for one seed; memoised per step."""

    def __init__(self, seed: int, vocab_size: int, cache_steps: int = 256):
        self.seed = int(seed)
        self.vocab_size = int(vocab_size)
        self._cache: OrderedDict[tuple[int, int], torch.Tensor] = OrderedDict()
        self._cache_size = cache_steps * 64
        self._gen = torch.Generator(device="cpu")

    def at(self, step: int, position: int) -> torch.Tensor:
        return self.block(step, [position])[0]

    def block(self, step: int, positions) -> torch.Tensor:
        """[len(positions), vocab] noise for one step. The pairs not yet memoised are drawn together: one
        generator seeding and one uniform draw each, then one Gumbel transform for all of them."""
        positions = [int(p) for p in positions]
        missing = [p for p in dict.fromkeys(positions) if (step, p) not in self._cache]
        if missing:
            u = torch.empty(len(missing), self.vocab_size, dtype=torch.float64)
            for i, p in enumerate(missing):
                self._gen.manual_seed(noise_key(self.seed, step, p))
                torch.rand(self.vocab_size, generator=self._gen, dtype=torch.float64, out=u[i])
            u.clamp_(1e-300, 1 - 1e-16)  # g = -log(-log u), in place (the same numbers, no temporaries)
            g = torch.log(u, out=u).neg_().log_().neg_().to(torch.float32)
            for p, row in zip(missing, g):
                self._cache[(step, p)] = row
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return torch.stack([self._cache[(step, p)] for p in positions])


class IndependentNoise(GumbelNoise):
    """Ablation: noise that is *not* shared between the drafter and the target (a different seed stream).

    Used only by drafters with coupled noise turned off; the target always uses its own GumbelNoise."""

    def __init__(self, seed: int, vocab_size: int):
        super().__init__(seed ^ 0x5EED5EED, vocab_size)

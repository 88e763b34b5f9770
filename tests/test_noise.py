"""Step-indexed Gumbel noise: a pure function of (seed, step, position), with the Gumbel-max property."""
from __future__ import annotations

import math
import struct

import pytest
import torch

from spotviz.noise import GumbelNoise, IndependentNoise, step_key

V = 50


def test_pure_function_across_instances_and_call_order():
    a, b = GumbelNoise(123, V), GumbelNoise(123, V)
    first = a.at(3, 17).clone()
    for s in range(5):  # other draws in between, in another order, on the other instance
        b.at(s, 2)
        a.at(7 - s, 40)
    assert torch.equal(b.at(3, 17), first)
    assert torch.equal(a.at(3, 17), first)
    assert first.shape == (V,) and first.dtype == torch.float32


def test_values_survive_cache_eviction():
    n = GumbelNoise(5, V, max_rows=64)
    first = n.at(0, 0).clone()
    for p in range(200):
        n.at(1, p)
    assert torch.equal(n.at(0, 0), first)


def test_the_memo_is_sized_in_bytes_not_rows():
    """A row is the whole vocabulary: a published model's 152k tokens make a row 0.6 MB, so the memo holds fewer."""
    assert GumbelNoise(0, 1024)._cache_size == GumbelNoise.MAX_ROWS  # (embedded: 16k rows are 64 MB)
    big = GumbelNoise(0, 151_936)
    assert big._cache_size * 4 * 151_936 <= GumbelNoise.MEMO_BYTES and big._cache_size >= GumbelNoise.MIN_ROWS


def test_different_step_position_seed_differ():
    n = GumbelNoise(1, V)
    base = n.at(4, 9)
    assert not torch.equal(base, n.at(5, 9))
    assert not torch.equal(base, n.at(4, 10))
    assert not torch.equal(base, GumbelNoise(2, V).at(4, 9))
    assert not torch.equal(n.at(9, 4), base)  # step and position are not interchangeable
    assert not torch.equal(base, IndependentNoise(1, V).at(4, 9))
    keys = {step_key(s, k) for s in range(3) for k in range(200)}
    assert len(keys) == 3 * 200
    assert all(0 <= k < 2**64 for k in keys)


def test_block_stacks_positions():
    n = GumbelNoise(8, V)
    blk = n.block(2, range(10, 14))
    assert blk.shape == (4, V)
    for i, p in enumerate(range(10, 14)):
        assert torch.equal(blk[i], n.at(2, p))


def test_gumbel_moments():
    g = GumbelNoise(0, 200_000).at(0, 0).double()
    assert torch.isfinite(g).all()
    assert g.mean().item() == pytest.approx(0.5772156649, abs=0.02)  # Euler-Mascheroni
    assert g.std().item() == pytest.approx(math.pi / math.sqrt(6), abs=0.02)


@pytest.mark.parametrize("T", [1.0, 0.5])
def test_gumbel_max_samples_softmax(T):
    logits = torch.tensor([2.0, 1.0, 0.5, 0.0, -1.0, -3.0])
    logp = torch.log_softmax(logits, -1)
    want = torch.softmax(logits / T, -1)
    n = GumbelNoise(2024, len(logits), max_rows=64)
    draws = 4000
    picks = torch.stack([(logp / T + n.at(k, 3)).argmax() for k in range(draws)])
    freq = torch.bincount(picks, minlength=len(logits)).double() / draws
    # ~4 standard errors (sqrt(p(1-p)/n) <= 0.008)
    assert torch.allclose(freq, want.double(), atol=0.03), (freq, want)
    # the same steps at another position are an independent stream
    other = torch.stack([(logp / T + n.at(k, 4)).argmax() for k in range(draws)])
    assert 0 < (other != picks).float().mean() < 1


# ---------------------------------------------------------------------------- the recipe of docs/DESIGN.md
_U64 = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15


def _splitmix64(x: int) -> int:
    z = (x + _GAMMA) & _U64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _U64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _U64
    return z ^ (z >> 31)


def _noise_from_the_recipe(seed: int, step: int, position: int, vocab: int) -> list[float]:
    key = _splitmix64(_splitmix64(seed & _U64) ^ step)
    out = []
    for v in range(vocab):
        x = _splitmix64((key + (position * vocab + v) * _GAMMA) & _U64)
        u = ((x >> 12) + 0.5) * 2.0 ** -52
        out.append(struct.unpack("f", struct.pack("f", -math.log(-math.log(u))))[0])  # rounded to float32
    return out


@pytest.mark.parametrize("seed, step, position, vocab", [
    (0, 0, 0, 7), (3, 17, 5, 700), (2**62 + 9, 1000, 123, 300), (12345, 2**40, 2**33 + 1, 64)])
def test_the_noise_is_the_recipe_in_design_md_bit_for_bit(seed, step, position, vocab):
    assert GumbelNoise(seed, vocab).at(step, position).tolist() == _noise_from_the_recipe(seed, step, position, vocab)
    assert IndependentNoise(seed, vocab).at(step, position).tolist() == _noise_from_the_recipe(
        seed ^ 0x5EED5EED, step, position, vocab)
    # a block of positions is the same numbers as the positions one by one
    assert GumbelNoise(seed, vocab).block(step, [position + 2, position])[1].tolist() == _noise_from_the_recipe(
        seed, step, position, vocab)


def test_the_uniforms_never_reach_zero_or_one():
    """The extremes of the stream map strictly inside (0, 1), so g is always finite."""
    for x in (0, _U64):
        u = ((x >> 12) + 0.5) * 2.0 ** -52
        assert 0.0 < u < 1.0 and math.isfinite(-math.log(-math.log(u)))


def test_a_call_that_outgrows_the_memo_still_returns_every_pair_right():
    """Rows read in a call come out right even when that call's new pairs overwrite them, or are more than the memo
    holds (the memo is a ring of rows)."""
    fresh = GumbelNoise(5, V)
    n = GumbelNoise(5, V, max_rows=8)
    n.block(0, range(8))  # the memo is full
    steps, positions = [0] * 8 + [1] * 8, list(range(8)) * 2  # 8 memoised pairs, then 8 new ones over their rows
    assert torch.equal(n.pairs(steps, positions), fresh.pairs(steps, positions))
    many = (list(range(20)) + [3, 3], list(range(20)) + [3, 3])  # more new pairs than rows, one asked for thrice
    assert torch.equal(n.pairs(*many), fresh.pairs(*many))
    assert torch.equal(n.at(1, 2), fresh.at(1, 2)) and torch.equal(n.at(19, 19), fresh.at(19, 19))

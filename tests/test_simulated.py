"""A target charged at another device's cost curve (samplers/simulated.py): the virtual clock, decodes through it, the
curve files it reads, and the bench option that uses it."""
from __future__ import annotations

import itertools
import json
import random

import pytest
import torch

from spotviz.samplers import forward_cost, simulated
from spotviz.samplers.config import DecodeConfig
from spotviz.samplers.forward_cost import CostCurve
from spotviz.samplers.spot import decode_spot
from spotviz.samplers.standard import decode_standard
from spotviz.samplers.simulated import SimulatedCost, load_curve

PROMPTS = ["ROMEO.\nO", "JULIET.\nWhat"]

FLAT = CostCurve("flat", [1, 2, 4, 8, 16, 32, 64], [0.004, 0.004, 0.0041, 0.0042, 0.0045, 0.005, 0.006],
                 fused_sizes=[1, 8, 64], fused_seconds=[0.008, 0.0085, 0.012], device="cuda:0", clock="wall")


def test_virtual_clock_charges_each_forward_at_the_curve_and_the_rest_at_thread_time(tiny_block_target, monkeypatch):
    # thread time on a clock the test moves: each real forward takes 50 ms of it, the work between them what the test
    # says (a real clock would put a garbage collection or a slow spell of a busy machine into the figures)
    now = [0.0]
    monkeypatch.setattr(simulated.time, "thread_time", lambda: now[0])
    inner_forward = tiny_block_target.forward

    def slow_forward(*args):
        now[0] += 0.05
        return inner_forward(*args)

    monkeypatch.setattr(tiny_block_target, "forward", slow_forward)
    sim = SimulatedCost(tiny_block_target, FLAT)
    b = tiny_block_target.info.block_size
    row = torch.full((1, 4 * b), tiny_block_target.info.mask_id, dtype=torch.long)
    row[0, :b] = 5
    cache = sim.empty_cache()
    out = sim.forward(row, 0, b, cache)  # one window from an empty cache
    cache = sim.extend_cache(cache, out, 0, b)
    for n, lo, hi, charged in ((1, b, 2 * b, 0.004), (8, b, 2 * b, 0.0042), (3, b, 3 * b, FLAT.table(3, True)[3]),
                               (1, 2 * b, 3 * b, 0.008)):  # the last: [b, 3b) past the cache, two windows
        states = row.repeat(n, 1)
        t0 = sim.clock()
        got = sim.forward(states, lo, hi, cache)
        assert sim.clock() - t0 == pytest.approx(charged, abs=1e-12)  # the 50 ms of the real forward are not in it
        assert torch.equal(got.logits, inner_forward(states, lo, hi, cache).logits)
    c0 = sim.clock()
    now[0] += 0.0123  # work outside a forward: charged what it costs
    assert sim.clock() - c0 == pytest.approx(0.0123, abs=1e-12)
    assert sim.charge(128, b) == pytest.approx(FLAT.table(64)[64] * 2)  # past the curve: linear from its end


@pytest.mark.parametrize("mode,tau,T", [("exact", 0.9, 0.0), ("exact", 0.9, 1.0), ("threshold", 0.3, 1.0)])
def test_decodes_through_the_simulated_target_are_the_targets_own_timed_on_the_virtual_clock(
        mode, tau, T, tiny_block_target, monkeypatch):
    # the same curve one second dearer per forward: each pass must cost exactly that second more (its forward is
    # charged once, at the curve, and nothing of the real forward's time is left in it). The work outside the
    # forwards is charged on a counting clock (10 us a reading), not this CPU's: a pause of the real thread (a garbage
    # collection, 0.2 s once in a pass) would otherwise count in one run and not the other.
    ticks = itertools.count()
    monkeypatch.setattr(simulated.time, "thread_time", lambda: 1e-5 * next(ticks))
    dearer = CostCurve("dearer", FLAT.sizes, [s + 1.0 for s in FLAT.seconds], fused_sizes=FLAT.fused_sizes,
                       fused_seconds=[s + 1.0 for s in FLAT.fused_seconds])
    c = DecodeConfig(mode=mode, threshold=tau, temperature=T, seed=7, gen_length=32, drafter="training-free",
                     budget=8)
    std = decode_standard(tiny_block_target, PROMPTS[0], c)
    f, ff = FLAT.table(64), FLAT.table(64, fused=True)
    for decoder in (decode_standard, decode_spot):
        run, dear = (decoder(SimulatedCost(tiny_block_target, curve), PROMPTS[0], c) for curve in (FLAT, dearer))
        assert run.tokens == dear.tokens == std.tokens and run.text == std.text
        assert [p.states for p in run.passes] == [p.states for p in dear.passes]
        for p, q in zip(run.passes, dear.passes):
            assert p.wall_s >= (ff if p.two_windows else f)[p.states] - 1e-6, p  # the forward at the curve's cost
            assert q.wall_s - p.wall_s == pytest.approx(1.0, abs=0.02), (p, q)  # ... charged once per pass
        # every forward is charged inside its pass, once: the dearer curve makes the run one second a pass longer,
        # and the run's time is its passes' plus only the bookkeeping between them (a few percent on a slow CPU,
        # which the machine's load moves: not bounded tighter here)
        assert dear.counters.wall_s - run.counters.wall_s == pytest.approx(len(run.passes), abs=0.05)
        passes = sum(p.wall_s for p in run.passes)
        assert passes - 1e-6 <= run.counters.wall_s <= 1.2 * passes + 2e-3


def test_auto_plans_with_the_simulated_curve_not_this_machines(tiny_block_target, monkeypatch):
    monkeypatch.setattr(forward_cost, "measure", lambda *a, **k: pytest.fail("the simulated curve is not measured"))
    sim = SimulatedCost(tiny_block_target, FLAT)
    assert forward_cost.cost_curve(sim).seconds == FLAT.seconds
    assert forward_cost.pass_clock(sim) == ("simulated", sim.clock)
    run = decode_spot(sim, PROMPTS[1], DecodeConfig(seed=3, gen_length=32, drafter="training-free"))
    assert run.meta.budget_auto and run.meta.cost_curve == FLAT.as_pairs()


def test_curve_files_a_gpu_result_a_cached_curve_and_bad_ones(tmp_path):
    gpu = load_curve("docs/gpu-h200.json", "math-bd")  # scripts/gpu_cost_curve.py's result, the model's curve
    assert gpu.sizes == [1, 2, 4, 8, 16, 32, 64] and gpu.fused_sizes == [1, 2, 4, 8, 16, 32]
    assert gpu.device == "cuda:0" and 0.9 < gpu.seconds[-1] / gpu.seconds[0] < 1.1  # flat: H200
    cached = tmp_path / "curve.json"
    cached.write_text(json.dumps({"sizes": FLAT.sizes, "seconds": FLAT.seconds, "device": "cuda:0"}))
    assert load_curve(cached, "math-bd").seconds == FLAT.seconds  # (a cost-curve --json file has no key: named)
    bad = {"missing.json": "cannot be read", "not.json": "not JSON", "empty.json": "not a cost curve",
           "zero.json": "not a cost curve", "unsorted.json": "not a cost curve"}
    (tmp_path / "not.json").write_text("{")
    (tmp_path / "empty.json").write_text("{}")
    (tmp_path / "zero.json").write_text(json.dumps({"sizes": [1, 2], "seconds": [0.01, 0.0]}))
    (tmp_path / "unsorted.json").write_text(json.dumps({"sizes": [2, 1], "seconds": [0.01, 0.01]}))
    bad["gpu-without-ratios.json"] = "not a cost curve"  # a GPU result whose model has no per-size figures
    (tmp_path / "gpu-without-ratios.json").write_text(json.dumps({"curves": {"curves": [{"target": "math-bd"}]}}))
    for name, why in bad.items():
        with pytest.raises(ValueError, match=why):
            load_curve(tmp_path / name, "math-bd")
    with pytest.raises(ValueError, match="no cost curve for 'shakespeare-bd'.*math-bd"):
        load_curve("docs/gpu-h200.json", "shakespeare-bd")


class _Spells(SimulatedCost):
    """A machine whose speed changes in spells: each forward is charged the curve's cost times 1 or 1.7, the
    factor switching after a seeded random run of 5 to 60 calls (a virtual machine's core shared with another
    tenant behaves this way, for seconds at a time)."""

    def __init__(self, inner, curve, seed):
        super().__init__(inner, curve)
        rng, self.speed, fast = random.Random(seed), [], True
        while len(self.speed) < 5000:
            self.speed += [1.0 if fast else 1.7] * rng.randint(5, 60)
            fast = not fast

    def charge(self, n, width):
        return super().charge(n, width) * self.speed[self.forwards]


@pytest.mark.parametrize("seed", range(6))
def test_cost_curve_keeps_its_shape_while_the_machines_speed_changes_in_spells(tiny_block_target, seed):
    """f(N)/f(1) comes from timings of N states beside timings of one state that agree, so spells of a slower
    machine do not bend the curve (the best of each size's own rounds did, by 70% at some size for 4 of 12 such
    patterns); f(1) is the fast spells' own."""
    sizes, fused = (1, 2, 3, 4, 6, 8), (1, 2, 4)
    true = CostCurve("t", list(sizes), [0.1 * (1 + 0.3 * (n - 1)) for n in sizes], fused_sizes=list(fused),
                     fused_seconds=[0.21 * (1 + 0.3 * (n - 1)) for n in fused])  # (virtual seconds: the
    # clock's own microseconds between calls are then nothing beside them)
    got = forward_cost.measure(_Spells(tiny_block_target, true, seed), sizes=sizes, fused_sizes=fused)
    assert got.ratios(sizes) == pytest.approx(true.ratios(sizes), rel=0.02)
    assert [s / got.seconds[0] for s in got.fused_seconds] == pytest.approx(
        [s / true.seconds[0] for s in true.fused_seconds], rel=0.02)
    assert got.seconds[0] == pytest.approx(0.1, rel=0.02)
    assert got.calls >= 3 * 4 * (2 * (len(sizes) - 1 + len(fused)) + 1)  # (every call made, retries included)


def test_cost_curve_stops_at_the_first_size_dearer_than_any_tree_can_pay_and_extends_linearly(tiny_block_target):
    """A compute-bound curve (linear in N) is measured up to the first size whose forward costs more than DEAREST
    one-state forwards, and extended from there as it goes on; a flat (GPU-like) curve is measured at every size."""
    sizes = forward_cost.SIZES
    linear = CostCurve("t", list(sizes), [0.1 * (1 + 0.5 * (n - 1)) for n in sizes], fused_sizes=[1, 2, 4, 8, 16, 32],
                       fused_seconds=[0.2 * (1 + 0.5 * (n - 1)) for n in (1, 2, 4, 8, 16, 32)])
    got = forward_cost.measure(SimulatedCost(tiny_block_target, linear), rounds=1)  # (one round: no median to hide a slip)
    assert got.sizes == [1, 2, 3, 4, 5, 6, 8, 10, 12, 16] and got.fused_sizes == [1, 2, 4, 8, 16]  # 8.5x; 2 x 8.5x
    assert got.table(64)[64] == pytest.approx(linear.table(64)[64], rel=0.02)
    assert got.table(32, fused=True)[32] == pytest.approx(linear.table(32, fused=True)[32], rel=0.02)
    assert got.fused_seconds == pytest.approx(linear.fused_seconds[:5], rel=0.02)  # (one state over two windows too)
    flat = forward_cost.measure(SimulatedCost(tiny_block_target, FLAT))
    assert flat.sizes == list(sizes) and flat.fused_sizes == list(forward_cost.FUSED_SIZES)


def test_a_slow_models_cost_curve_is_measured_within_its_time_allowance(tiny_block_target, monkeypatch):
    """A model whose one-state pass takes longer than SLOW_PASS (a large model on a CPU: the first `auto` run
    waited minutes before its first pass) is timed once per size after the warm-up, its sizes stop once the
    measurement has used its allowance of wall time (the curve goes on linearly from there) and no round follows;
    a fast model's measurement keeps its three rounds of medians (the spells test above)."""
    slow = CostCurve("slow", list(forward_cost.SIZES), [0.2] * len(forward_cost.SIZES),  # (flat: every size wanted)
                     fused_sizes=list(forward_cost.FUSED_SIZES), fused_seconds=[0.4] * len(forward_cost.FUSED_SIZES))
    sim = SimulatedCost(tiny_block_target, slow)
    monkeypatch.setattr(forward_cost, "_wall", sim.clock)  # (the measurement's wall time: the virtual clock's)
    got = forward_cost.measure(sim, max_seconds=6.0)
    assert 2 <= len(got.sizes) < len(forward_cost.SIZES) and len(got.fused_sizes) >= 2
    # one round: the first f(1) (a warm-up and three calls), then per size a warm-up and one call at N states and
    # the same at one state (the virtual clock has no spells: no size timed again); the block model's prefix: one
    assert got.calls == 1 + 4 + 4 * (len(got.sizes) - 1 + len(got.fused_sizes))
    assert got.table(64)[64] == pytest.approx(0.2, rel=0.05)  # (flat, extended flat)

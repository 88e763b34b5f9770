"""A target charged at another device's cost curve: how fast would each decoder be where a forward costs f(N)?

SimulatedCost(target, curve) computes every forward with the wrapped target, so every logit, decision and output
is the target's own, and keeps a virtual clock: this thread's CPU time, with each forward's own time replaced by
the curve's cost for it,

    f(N)        for a call over one window of N states,
    f_fused(N)  for a call over two windows (the standard decoder when it opens a window; a fused SPOT pass),

where the width a call computes is hi - (the cache's length) for a block-causal target and hi - lo otherwise.
Everything outside the forward (drafter, tree, decisions, bookkeeping) is charged what it costs on this CPU.
Decoders time their passes and runs on the target's clock (DecodeState.wall and samplers/forward_cost.pass_clock), and
`--budget auto` plans with the curve itself (samplers/forward_cost.cost_curve), so a run through this target answers:
with this machine's drafter and bookkeeping and that device's forward, what would each decoder's wall-clock be?
It is a model of the device, not a measurement on it: its host CPU, its launch latencies and transfers, and a
forward's dependence on the context's length (the curve is measured at one context) are not in it. The curves
measured on an H200 (docs/gpu-h200.json) are what `bench --simulate-curve` is for: tuning `auto` for a flat curve
on a machine without a GPU.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import torch

from ..targets.base import DiffusionTarget, ForwardOutput, PrefixCache
from .forward_cost import CostCurve


class SimulatedCost(DiffusionTarget):
    """`inner` with its forwards charged at `curve` on a virtual clock (module docstring)."""

    def __init__(self, inner: DiffusionTarget, curve: CostCurve):
        self.inner = inner
        self.simulated_curve = curve
        self.info = inner.info
        self.tokenizer = inner.tokenizer
        self.device = inner.device
        self.n_max = max(64, max(curve.sizes))
        self._f = curve.table(self.n_max).tolist()
        self._f_fused = curve.table(self.n_max, fused=True).tolist()
        self._offset = 0.0  # virtual - thread time: the sum over forwards of (charged - own time)
        self.forwards = 0

    def clock(self) -> float:
        """Seconds on the virtual clock (this thread's CPU time, forwards at the curve's cost)."""
        return time.thread_time() + self._offset

    def charge(self, n: int, width: int) -> float:
        """The curve's seconds for a call over `width` positions of n states (two windows: the fused curve)."""
        f = self._f_fused if width > self.info.block_size else self._f
        return f[n] if n <= self.n_max else f[self.n_max] * n / self.n_max

    def forward(self, states: torch.Tensor, lo: int, hi: int, cache: PrefixCache) -> ForwardOutput:
        t0 = time.thread_time()
        out = self.inner.forward(states, lo, hi, cache)
        own = time.thread_time() - t0
        start = cache.length if self.info.attention == "block" else lo
        self._offset += self.charge(int(states.shape[0]), hi - start) - own
        self.forwards += 1
        return out

    # everything else is the inner target's
    def windows(self, prompt_len, total_len):
        return self.inner.windows(prompt_len, total_len)

    def empty_cache(self):
        return self.inner.empty_cache()

    def extend_cache(self, cache, out, row, upto):
        return self.inner.extend_cache(cache, out, row, upto)

    def format_prompt(self, text):
        return self.inner.format_prompt(text)

    def encode(self, text):
        return self.inner.encode(text)

    def decode(self, ids):
        return self.inner.decode(ids)

    def token_strings(self, ids):
        return self.inner.token_strings(ids)

    def display_strings(self, ids):
        return self.inner.display_strings(ids)

    def __getattr__(self, name):  # (model, config, ... : what a caller reads off a target)
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


def load_curve(path: str | Path, model: str, what: str = "cost curve") -> CostCurve:
    """A cost curve to simulate, from a JSON file: a cached curve (samplers/forward_cost.py's file, CostCurve's
    fields) or a scripts/gpu_cost_curve.py result (docs/gpu-h200.json), whose curve for `model` is taken. ValueError
    "WHAT PATH: reason" if the file holds none (`what`: how the caller names it, e.g. the CLI's flag)."""
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except OSError as e:
        raise ValueError(f"{what} {path}: cannot be read ({e.strerror or e})") from None
    except ValueError:
        raise ValueError(f"{what} {path}: not JSON") from None
    gpu = isinstance(data, dict) and isinstance(data.get("curves"), dict)  # a gpu_cost_curve.py result
    if gpu:
        curves = [c for c in data["curves"].get("curves") or [] if isinstance(c, dict)]
        found = [c for c in curves if c.get("target") == model]
        if not found:
            names = ", ".join(str(c.get("target")) for c in curves)
            raise ValueError(f"{what} {path}: no cost curve for {model!r} (it has: {names or 'none'})")
    try:
        if gpu:  # per size: f(1) x its ratio (the result keys its ratios by size)
            c = found[0]
            f1 = c["f1_ms"] / 1000
            data = {"key": f"{model}-{c.get('device')}-{c.get('dtype')}-simulated", "device": str(c.get("device", "")),
                    "dtype": str(c.get("dtype", "")), "clock": "wall",
                    **{f"{kind}sizes": sorted(int(n) for n in c[f"{kind}ratios"]) for kind in ("", "fused_")}}
            for kind in ("", "fused_"):
                data[f"{kind}seconds"] = [f1 * c[f"{kind}ratios"][str(n)] for n in data[f"{kind}sizes"]]
        fields = {k: v for k, v in data.items() if k in CostCurve.__dataclass_fields__}
        curve = CostCurve(**{"key": f"{model}-simulated", **fields})
        ok = (len(curve.sizes) == len(curve.seconds) > 0 and curve.sizes[0] == 1
              and all(s > 0 for s in curve.seconds) and list(curve.sizes) == sorted(set(curve.sizes))
              and len(curve.fused_sizes) == len(curve.fused_seconds))
    except (TypeError, AttributeError, KeyError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"{what} {path}: not a cost curve (it needs sizes from 1 up and positive seconds per size "
                         "; python -m spotviz cost-curve --json writes one)")
    return curve

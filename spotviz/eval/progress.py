"""How long a long command will take: an estimate printed before it starts, then progress with an ETA.

Work is counted in *decode units*: one standard decode of the run's prompt length = 1. A command adds up its plan
in these units, times one standard decode to price a unit on this machine (`unit_seconds`), prints the
estimate, then ticks an `EtaProgress` after each piece of work: a tqdm bar on a terminal, and an ETA string for its
own log lines (so a log file shows the remaining time too).
"""
from __future__ import annotations

import sys
import time


def unit_seconds(target, prompt: str, gen_length: int, mode: str = "exact") -> float:
    """Seconds of one standard decode of `gen_length` tokens (in `mode`): a whole decode of `prompt`, timed after a
    short warm-up. Whole, not extrapolated from its first tokens: a decode that reaches end-of-text stops there
    (math-bd's answers end after ~30 of 128 tokens), so its first 16 tokens times 128 / 16 overstated it ~4x."""
    from ..samplers.config import DecodeConfig
    from ..samplers.standard import decode_standard

    decode_standard(target, prompt, DecodeConfig(gen_length=min(16, gen_length), mode=mode))  # first-call allocations
    t0 = time.perf_counter()
    decode_standard(target, prompt, DecodeConfig(gen_length=gen_length, mode=mode))
    return time.perf_counter() - t0


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class EtaProgress:
    """Units done out of a planned total; `eta()` extrapolates from the measured rate (the estimate until then)."""

    def __init__(self, total: float, desc: str, estimate_s: float | None = None):
        from tqdm import tqdm

        self.total, self.done, self.t0, self.estimate_s = max(total, 1e-9), 0.0, time.time(), estimate_s
        self.bar = tqdm(total=round(self.total, 1), desc=desc, unit="decode", file=sys.stderr, disable=None,
                        mininterval=2, bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} decodes [{elapsed}<{remaining}]")

    def tick(self, units: float = 1.0) -> None:
        self.done += units
        self.bar.update(units)

    def eta(self) -> str:
        left = max(self.total - self.done, 0.0)
        if self.done > 0:
            rate = (time.time() - self.t0) / self.done
        elif self.estimate_s:
            rate = self.estimate_s / self.total
        else:
            return "ETA unknown"
        return f"{100 * self.done / self.total:.0f}% done, ETA {duration(left * rate)}"

    def close(self) -> None:
        self.bar.close()

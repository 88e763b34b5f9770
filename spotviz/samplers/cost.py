"""The target's forward cost curve f(N) and the tree size that maximises expected commits per second.

f(N) is the wall time of one target pass over N states of one window (measured once per model, device and
thread count; cached in the user's cache folder, never in the repository). A SPOT pass over a tree of N nodes
costs about f(N) + c, where c is the pass's own work outside the forward (drafter, tree, decisions), and commits
1 + sum of the accepted edges. With nodes in best-first order (path probabilities p_1 >= p_2 >= ...), every
prefix of the tree is a tree, and the expected commits of the first N nodes are

    E(N) = 1 + s * (p_1 + ... + p_{N-1})

(p_i: the drafter's probability that node i is reached by the acceptance walk; s: a running calibration, the
accepted edges seen so far over the edges the drafter expected). Each pass keeps the prefix N maximising
E(N) / (l f(N) + c); N = 1 is the standard decoder's pass (no c). l rescales the cached curve to the machine's
load during this run (a running mean of the forward times seen over f of their sizes). When drafting did not pay (N = 1 chosen), the next
passes skip the drafter altogether (1, 2, 4, ... up to 16 passes, reset as soon as drafting pays again), so that the worst
case is the standard decoder's speed plus an occasional drafter call.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch

SIZES = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64)
_MEMO: dict = {}


@dataclass
class CostCurve:
    """Seconds per target pass for N states (one window), measured at `sizes`; interpolated in between."""

    key: str
    sizes: list[int]
    seconds: list[float]
    threads: int = 1
    device: str = "cpu"
    calls: int = 0  # target forward calls made to measure it now (0 when read from memory or the user cache)

    def table(self, n_max: int) -> np.ndarray:
        """f(N) for N = 0..n_max (index 0 unused), linear interpolation / extrapolation from the last segment."""
        x = np.asarray(self.sizes, float)
        y = np.asarray(self.seconds, float)
        n = np.arange(n_max + 1, dtype=float)
        f = np.interp(n, x, y)
        if n_max > x[-1] and len(x) > 1:
            slope = (y[-1] - y[-2]) / (x[-1] - x[-2])
            f = np.where(n > x[-1], y[-1] + slope * (n - x[-1]), f)
        return f

    def as_pairs(self) -> list[list[float]]:
        return [[int(n), float(s)] for n, s in zip(self.sizes, self.seconds)]


def cache_dir() -> Path:
    """SPOTVIZ_CACHE_DIR, else $XDG_CACHE_HOME/spotviz, else ~/.cache/spotviz."""
    if os.environ.get("SPOTVIZ_CACHE_DIR"):
        return Path(os.environ["SPOTVIZ_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "spotviz"


def curve_key(target) -> str:
    info = target.info
    return (f"{info.name}-{info.attention}-b{info.block_size}-v{info.vocab_size}-{target.device}"
            f"-t{torch.get_num_threads()}-torch{torch.__version__.split('+')[0]}")


def _cacheable(target) -> bool:
    """Only named models are cached on disk (a folder's model may change under the same name)."""
    from ..registry import EMBEDDED

    return target.info.name in EMBEDDED or "/" in target.info.name and not Path(target.info.name).exists()


@torch.no_grad()
def measure(target, sizes=SIZES, repeats: int = 5, log=None) -> CostCurve:
    """Time one window's forward for each N in `sizes` (best of `repeats`, after a warm-up call)."""
    info = target.info
    b = info.block_size
    total = min(info.max_length, 3 * b)
    lo = total - b if info.attention == "block" else max(0, total - b)
    row = torch.randint(3, max(info.vocab_size, 4), (total,))
    row[lo:] = info.mask_id
    row[lo::2] = torch.randint(3, max(info.vocab_size, 4), (len(row[lo::2]),))  # a half-decoded window
    cache = target.empty_cache()
    if info.attention == "block" and lo:
        out = target.forward(row.unsqueeze(0), 0, lo, cache)
        cache = target.extend_cache(cache, out, 0, lo)
    batches = {n: row.unsqueeze(0).repeat(n, 1) for n in sizes}
    for n in sizes:  # warm-up
        target.forward(batches[n], lo, total, cache)
    best = {n: float("inf") for n in sizes}
    for _ in range(repeats):  # round robin: a burst of load elsewhere does not bias one size
        for n in sizes:
            t0 = time.perf_counter()
            target.forward(batches[n], lo, total, cache)
            best[n] = min(best[n], time.perf_counter() - t0)
    # noise only ever adds time, and more states never cost less: f(n) = min over m >= n of the best time
    seconds = np.minimum.accumulate(np.array([best[n] for n in sizes])[::-1])[::-1].tolist()
    if log:
        log("  ".join(f"f({n}) = {1000 * s:.2f} ms" for n, s in zip(sizes, seconds)))
    calls = (1 if info.attention == "block" and lo else 0) + len(sizes) * (1 + repeats)
    return CostCurve(curve_key(target), list(sizes), seconds, torch.get_num_threads(), str(target.device), calls)


NOTICE = None  # a front end's message hook (the command line: stderr): told when a curve is about to be measured


def cost_curve(target, remeasure: bool = False, log=None) -> CostCurve:
    """The target's cost curve: from memory, else from the user cache, else measured now (and cached)."""
    key = curve_key(target)
    path = cache_dir() / "cost" / f"{key.replace('/', '_')}.json"
    memo_key = (key, id(target))
    if not remeasure:
        if memo_key in _MEMO:
            return replace(_MEMO[memo_key], calls=0)
        if _cacheable(target) and path.is_file():
            try:
                curve = replace(CostCurve(**json.loads(path.read_text())), calls=0)
                _MEMO[memo_key] = curve
                return curve
            except (ValueError, TypeError, OSError):
                pass  # unreadable cache: measure again
    if log or NOTICE:
        (log or NOTICE)(f"measuring {target.info.name}'s cost curve f(N) on {target.device} with "
                        f"{torch.get_num_threads()} thread(s) for --budget auto (a few seconds, then cached) ...")
    curve = measure(target, log=log)
    _MEMO[memo_key] = curve
    if _cacheable(target):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(asdict(curve), indent=1))
        except OSError:
            pass  # a read-only home: keep it in memory
    return curve


class TreeSizer:
    """Per-pass tree size: a fixed budget, or (auto) the best-first prefix maximising expected commits per second.

    The tree builder calls begin(), then add(path_prob) for every node after s1 while stop(next_p) is False, then
    choose() for the size to keep; the decoder reports each pass with observe()."""

    def __init__(self, budget, curve: CostCurve | None = None, n_max: int = 64):
        self.auto = curve is not None
        self.n_max = n_max if self.auto else int(budget)
        self.curve = curve
        self.f = curve.table(self.n_max) if self.auto else None
        self._more = np.arange(self.n_max + 1)
        self.overhead = 0.0  # running mean of a drafted pass's time outside the forward (seconds)
        self.load = 1.0  # running mean of (forward time seen in this run) / f(N): the curve is rescaled by it
        self.expected = self.accepted = 1.0  # calibration s = accepted / expected drafted edges (prior: 1 / 1)
        self.skip = self.backoff = 0
        self.last_expected = 0.0

    @property
    def budget(self) -> int:
        """The most nodes a tree may have this pass."""
        return self.n_max

    def draft_now(self) -> bool:
        """False while the drafter is being skipped (it recently did not pay)."""
        if self.skip > 0:
            self.skip -= 1
            return False
        return True

    def begin(self) -> None:
        """A new tree: only s1 so far."""
        self._s = self.accepted / self.expected
        self._edges = [0.0]  # expected accepted edges of the first k nodes, k = 1, 2, ...
        self._best_k, self._best = 1, (1.0 / (self.load * self.f[1]) if self.auto else 0.0)

    def add(self, path_prob: float) -> None:
        """The next best-first node was added with this path probability."""
        self._edges.append(self._edges[-1] + path_prob)
        if self.auto:
            k = len(self._edges)
            rate = (1.0 + self._s * self._edges[-1]) / (self.load * self.f[k] + self.overhead)
            if rate > self._best:
                self._best_k, self._best = k, rate

    def stop(self, next_p: float) -> bool:
        """Growing stops when no larger prefix can beat the best so far, even if every further node had path
        probability `next_p` (the largest left: best-first order makes it an upper bound)."""
        if not self.auto:
            return False
        k = len(self._edges)
        if k >= self.n_max:
            return True
        more = self._more[k + 1:]
        e = 1.0 + self._s * (self._edges[-1] + next_p * (more - k))
        return bool((e / (self.load * self.f[more] + self.overhead)).max() <= self._best)

    def choose(self) -> int:
        """How many of the best-first nodes to keep (the pass's tree size); schedules skips when it is 1. The rate
        of N = 1 carries no overhead: that pass is the standard decoder's."""
        if not self.auto:
            return len(self._edges)
        k = self._best_k
        self.last_expected = self._edges[k - 1]
        if k == 1:
            self.backoff = min(max(1, 2 * self.backoff), 16)
            self.skip = self.backoff
        else:
            self.backoff = 0
        return k

    def observe(self, states: int, forward_s: float, accepted_edges: int, overhead_s: float) -> None:
        """After a pass: its forward time (rescales the curve to the machine's load now); after a drafted pass
        also its accepted edges (calibration) and its time outside the forward."""
        if not self.auto:
            return
        if forward_s > 0:  # (a fused pass also evaluates the next window: not comparable with f)
            self.load = 0.9 * self.load + 0.1 * min(max(forward_s / self.f[min(states, self.n_max)], 0.25), 8.0)
        if states > 1:
            if self.last_expected > 0:
                self.expected += self.last_expected
                self.accepted += accepted_edges
            self.overhead = overhead_s if self.overhead == 0 else 0.8 * self.overhead + 0.2 * overhead_s
        self.last_expected = 0.0

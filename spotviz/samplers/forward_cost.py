"""The target's forward cost curve f(N): what one target pass over N states costs on this hardware.

f(N) is the time of one target pass over N states of one window (measured once per model, device (on a CPU:
and the instruction set of torch's kernels), dtype and thread count; cached in the user's cache folder, never in
the repository). It is measured as real decodes see it: each size's calls in a row (a call after a different input
shape costs more), the median of several calls after a warm-up at that shape, in thread CPU time on a CPU (a busy
machine does not inflate it) and in wall time after a synchronisation elsewhere; each size between two timings of
one state that agree, so a machine whose speed changes in spells does not bend the curve (measure). The fused pass
(a node completes the window, so the pass also evaluates the next one: twice the width) has its own curve. Nothing
is smoothed: the curve is what the hardware does.

`budget: auto` (samplers/auto_budget.py) sizes each pass's tree with it; the bench prices runs with it (pass_cost,
and ceiling: the zero-overhead wall-clock ceiling).
"""
from __future__ import annotations

import json
import os
import threading
import time
import weakref
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from .. import cost_model

SIZES = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64)
FUSED_SIZES = (1, 2, 4, 8, 16, 32)
CURVE_VERSION = 3  # cached curves of an older measurement are measured again (3: neighbouring timings, session 33)
SPELL_AGREE = 0.1  # the one-state timings on either side of a size's agree within 10%: no change of speed between
SPELL_TRIES = 4  # times a size is timed at most, until they agree
DEAREST = 8.0  # sizes are measured up to the first whose forward costs more than this many one-state forwards
SLOW_PASS = 0.02  # s: a model whose one-state forward takes longer (wall, after its warm-up) is measured leanly
MEASURE_SECONDS = 20.0  # s of wall time a lean measurement aims at (sizes after the second, and rounds, are dropped)
_wall = time.perf_counter  # the measurement's wall clock (its allowance; a test gives it a virtual one)
CONTEXT = 64  # cached tokens before the measured window (a decode's middle: prompt + half of 128 generated)
# target -> {curve key: its curve} in this process; weak, so that a freed target's curves go with it (a new target
# object may reuse a freed one's id, and must not be served a curve it never measured)
_MEMO: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass
class CostCurve:
    """Seconds per target pass for N states (one window), measured at `sizes`; interpolated in between.
    fused_sizes / fused_seconds: the same for a fused pass (this window and the next)."""

    key: str
    sizes: list[int]
    seconds: list[float]
    threads: int = 1
    device: str = "cpu"
    fused_sizes: list[int] = field(default_factory=list)
    fused_seconds: list[float] = field(default_factory=list)
    clock: str = "thread"  # "thread" (thread CPU time) or "wall"
    dtype: str = "float32"
    calls: int = 0  # target forward calls made to measure it now (0 when read from memory or the user cache)
    cached: str = ""  # the file this measurement was just written to ("" if not: a model folder, a busy machine)

    def table(self, n_max: int, fused: bool = False) -> np.ndarray:
        """f(N) for N = 0..n_max (index 0 unused), linear interpolation / extrapolation from the last segment."""
        x = np.asarray(self.fused_sizes if fused and self.fused_sizes else self.sizes, float)
        y = np.asarray(self.fused_seconds if fused and self.fused_sizes else self.seconds, float)
        n = np.arange(n_max + 1, dtype=float)
        f = np.interp(n, x, y)
        if n_max > x[-1] and len(x) > 1:
            slope = (y[-1] - y[-2]) / (x[-1] - x[-2])
            f = np.where(n > x[-1], y[-1] + slope * (n - x[-1]), f)
        return f

    def ratios(self, sizes=(1, 2, 4, 8)) -> dict[int, float]:
        """f(N) / f(1): what a pass over N states costs in standard passes."""
        t = self.table(max(sizes))
        return {n: float(t[n] / t[1]) for n in sizes}

    def as_pairs(self, fused: bool = False) -> list[list[float]]:
        if fused:
            return [[int(n), float(s)] for n, s in zip(self.fused_sizes, self.fused_seconds)]
        return [[int(n), float(s)] for n, s in zip(self.sizes, self.seconds)]


def pass_cost(passes, curve: CostCurve) -> float:
    """Passes in one-window standard passes of time with no overhead (cost_model.pass_cost: the sum of f(N) / f(1)
    over them, N the states verified; a forward over two windows, PassRecord.two_windows, costs f at that width)."""
    return cost_model.pass_cost(passes, curve.as_pairs(), curve.as_pairs(fused=True))


def ceiling(standard_passes, passes, curve: CostCurve) -> float:
    """The zero-overhead wall-clock ceiling of a run against the standard decoder's run (their pass records):
    what the hardware allows if drafting, tree and bookkeeping cost nothing (cost_model.ceiling). Both pay a
    forward over two windows once per window (the standard decoder when it opens a window, SPOT when a node
    completes one); otherwise, in exact mode, it is r / (f(N)/f(1)) for a run of r commits per pass over N states."""
    return cost_model.ceiling(standard_passes, passes, curve.as_pairs(), curve.as_pairs(fused=True))


def cache_dir() -> Path:
    """SPOTVIZ_CACHE_DIR, else $XDG_CACHE_HOME/spotviz, else ~/.cache/spotviz."""
    if os.environ.get("SPOTVIZ_CACHE_DIR"):
        return Path(os.environ["SPOTVIZ_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "spotviz"


def _dtype(target) -> str:
    model = getattr(target, "model", None)
    p = next(model.parameters(), None) if isinstance(model, torch.nn.Module) else None
    return str(p.dtype).replace("torch.", "") if p is not None else "float32"


def curve_key(target) -> str:
    """What a cached curve is valid for: the model's shape, the device (on a CPU with the instruction set torch's
    kernels use there, so that a cache folder carried to a machine with other kernels, e.g. AVX2 against AVX-512,
    whose f(N)/f(1) differ, is measured again), the dtype, the thread count and torch's version."""
    info = target.info
    device = str(target.device)
    if device.startswith("cpu"):
        device += "-" + cpu_capability()
    return (f"{info.name}-{info.attention}-b{info.block_size}-v{info.vocab_size}-{device}-{_dtype(target)}"
            f"-t{torch.get_num_threads()}-torch{torch.__version__.split('+')[0]}-c{CURVE_VERSION}")


def cpu_capability() -> str:
    """The instruction set torch's CPU kernels use on this machine ("AVX512", "AVX2", "DEFAULT", ...)."""
    try:
        return str(torch.backends.cpu.get_cpu_capability()).lower()
    except Exception:  # noqa: BLE001 - an older torch or a platform without it: one key for every CPU
        return "any"


def cacheable(target) -> bool:
    """Only named models are cached on disk: embedded and published short names and Hub repo ids (a folder's model
    may change under the same name)."""
    from ..registry import EMBEDDED
    from ..targets.published import PUBLISHED

    name = target.info.name
    return name in EMBEDDED or name in PUBLISHED or "/" in name and not Path(name).exists()


def pass_clock(target) -> tuple[str, callable]:
    """The clock of the curve and of `auto`'s observations: thread CPU time on a CPU (time the machine gives to
    other work is not the pass's cost, and on a busy machine it is most of the wall-time noise); elsewhere wall
    time after synchronising the device; a target's own virtual clock where it has one (samplers/simulated.py)."""
    if getattr(target, "clock", None) is not None:
        return "simulated", target.clock
    device = target.device
    if str(device).startswith("cpu"):
        return "thread", time.thread_time
    sync = getattr(getattr(torch, str(device).split(":")[0], None), "synchronize", None)

    def wall():
        if sync is not None:
            sync()
        return time.perf_counter()

    return "wall", wall


@torch.no_grad()
def measure(target, sizes=SIZES, rounds: int = 3, per_round: int = 3, fused_sizes=FUSED_SIZES, log=None,
            max_seconds: float = MEASURE_SECONDS) -> CostCurve:
    """Time one window's forward for each N in `sizes`: per size, a warm-up call at that shape, then the median
    of `per_round` calls in a row, between two such timings of one state; f(N) / f(1) is the median over `rounds`
    rounds of f(N) over the mean of the two one-state timings beside it, and f(1) the least one-state timing.
    Where the two one-state timings differ by more than SPELL_AGREE, the machine changed speed in between, and the
    size is timed again (up to SPELL_TRIES times). The same for the fused width (block models whose context has room
    for it), each against the one-window f(1) beside it. Sizes stop at the first that costs more than DEAREST
    one-state passes (the fused width: twice that): a tree that dear would need more commits per pass than any tree
    makes, and the curve goes on linearly from its last two sizes (CostCurve.table; on a CPU, whose cost grows
    linearly in N there, within 1-2% of the sizes measured: f(32) and f(64) of math-bd 19.5 / 38.9 ms extended
    from N = 12-16 against 19.0 / 39.4 measured). A budget `auto` drafts at most the largest size measured.
    The curve's shape comes from neighbouring timings because a machine's speed can change by more than half for
    seconds at a time (a virtual machine's core shared with another tenant: on session 33's machine f(1) ran 3.2 ms
    for a few seconds, then 5.3-5.6 ms, then 3.2 ms again, with f(2)/f(1) at 1.37-1.49 throughout), and the best of
    each size's own rounds, as measured before, mixed sizes timed in fast and in slow spells: five measurements of
    one model's f(2)/f(1) gave 1.00-1.39.
    A slow model is measured leanly, so that the first `auto` run of a model that takes a second a pass does not
    wait minutes before its first pass: where a one-state forward takes more than SLOW_PASS of wall time (after its
    warm-up), each timing is one call after its warm-up (at that length one call's noise is small beside the pass),
    the sizes stop (after two) once the measurement has taken `max_seconds` of wall time, and the rounds after the
    first are run only while the whole stays about within it; a model of a few seconds a pass still takes a minute
    or more (some 17 forwards at least). Faster models are measured in full (math-bd's three rounds: 2-9 s on a
    CPU)."""
    info = target.info
    b = info.block_size
    # the cached context of a typical decode (a short prompt and half of a default 128-token generation): a
    # pass's cost grows with it, and the curve is linear in it, so its middle gives the run's mean cost
    lo = max(2 * b, -(-CONTEXT // b) * b)
    lo = max(0, min(lo, info.max_length - 2 * b)) // b * b
    total = min(info.max_length, lo + 2 * b)
    row = torch.randint(3, max(info.vocab_size, 4), (total,))
    row[lo:] = info.mask_id
    row[lo:lo + b:2] = torch.randint(3, max(info.vocab_size, 4), (len(row[lo:lo + b:2]),))  # a half-decoded window
    cache = target.empty_cache()
    if info.attention == "block" and lo:
        out = target.forward(row.unsqueeze(0), 0, lo, cache)
        cache = target.extend_cache(cache, out, 0, lo)
    clock_name, clock = pass_clock(target)

    calls = 1 if info.attention == "block" and lo else 0

    wall_per_call = 0.0  # (wall seconds of timed's last calls after their warm-up)

    def timed(n, hi):  # one size: a warm-up call at its shape, then `per_round` calls in a row; their median
        nonlocal calls, wall_per_call
        batch = row.unsqueeze(0).repeat(n, 1).to(target.device)  # (on the device: no copy in the timing)
        target.forward(batch, lo, hi, cache)
        times, w0 = [], _wall()
        for _ in range(per_round):
            t0 = clock()
            target.forward(batch, lo, hi, cache)
            times.append(clock() - t0)
        wall_per_call = (_wall() - w0) / per_round
        calls += 1 + per_round
        return float(np.median(times))

    started = _wall()
    ones = [timed(1, lo + b)]
    lean = wall_per_call > SLOW_PASS  # (what a run waits for, after the warm-up: a GPU's first call starts libraries)
    if lean:
        per_round = 1  # (timed reads it at each call)

    def over_one(n, hi):  # f(n) over the one-state timings on either side of it, taken once they agree
        for _ in range(SPELL_TRIES):
            before, t = ones[-1], timed(n, hi)
            ones.append(timed(1, lo + b))
            if abs(ones[-1] / before - 1) <= SPELL_AGREE:
                break  # (else the machine changed speed in between: again, at the speed it runs at now)
        return 2 * t / (before + ones[-1])

    fused = [n for n in fused_sizes if n <= max(sizes)] if lo + 2 * b <= total and info.attention == "block" else []

    def one_round(ns, hi, most=None):  # f(n)/f(1) for each size; the first round (`most` given) stops after the
        out = []  # first dearer than `most` or, lean, the first past the allowance (the curve goes on linearly)
        for n in ns:
            out.append(1.0 if n == 1 and hi == lo + b else over_one(n, hi))  # (one state over one window: f(1))
            if most is not None and len(out) >= 2 and (out[-1] > most or lean and _wall() - started > max_seconds):
                break
        return out

    ratios = [one_round(sizes, lo + b, DEAREST)]  # the first round also decides up to which size to measure
    sizes = list(sizes)[: len(ratios[0])]
    fused_ratios = [one_round(fused, lo + 2 * b, 2 * DEAREST)]
    fused = fused[: len(fused_ratios[0])]
    first = _wall() - started  # (one round's wall time: the rounds after it take about as long)
    more = min(rounds - 1, int(max(0.0, max_seconds - first) // max(first, 1e-9))) if lean else rounds - 1
    ratios += [one_round(sizes, lo + b) for _ in range(more)]
    fused_ratios += [one_round(fused, lo + 2 * b) for _ in range(more)]
    f1 = min(ones)
    seconds = (f1 * np.median(ratios, axis=0)).tolist()
    fused_seconds = (f1 * np.median(fused_ratios, axis=0)).tolist() if fused else []
    curve = CostCurve(curve_key(target), list(sizes), seconds, torch.get_num_threads(), str(target.device),
                      fused, fused_seconds, clock_name, _dtype(target))
    if log:
        log("  ".join(f"f({n}) = {1000 * s:.2f} ms" for n, s in zip(sizes, seconds)))
    curve.calls = calls
    return curve


def cpu_snapshot() -> tuple[float, float, float] | None:
    """(the machine's busy CPU seconds, this process's CPU seconds, wall seconds) now; None where the machine's are
    unknown (/proc/stat is Linux's)."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:9]]
        busy = (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # (less idle and iowait)
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return busy, time.process_time(), time.perf_counter()


def machine_busy(since: tuple | None) -> bool:
    """Whether other processes used at least half a core (half of the cores this process leaves free, at least one)
    between the snapshot `since` and now. A curve measured then is not cached for later runs: thread time does not
    see a job on a sibling core slowing this one's memory traffic, and that slowdown is not the same at every N
    (session 28's curve, measured beside another bench, made larger trees look cheaper than they are:
    docs/wallclock.md). False where it is unknown."""
    now = cpu_snapshot() if since is not None else None
    if now is None or now[2] - since[2] <= 0:
        return False
    others = ((now[0] - since[0]) - (now[1] - since[1])) / (now[2] - since[2])  # cores' worth used by the others
    free = max(1, (os.cpu_count() or 1) - torch.get_num_threads())
    return others >= 0.5 * free


def write_cache_file(path: Path, data: dict) -> None:
    """`data` as JSON at `path` in the user cache: written whole under a name of this process and thread, then
    renamed, so a reader (or a run ending at the same time in another thread or process) never sees half a file.
    OSError where the folder cannot be written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}-{threading.get_ident()}.tmp")
    try:
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


NOTICE = None  # a front end's message hook (the command line: stderr): told when a curve is about to be measured


def known_curve(target) -> CostCurve | None:
    """The target's cost curve where it needs no measuring (from memory or the user cache), else None."""
    simulated = getattr(target, "simulated_curve", None)
    if simulated is not None:  # a target charged at another device's curve (samplers/simulated.py) plans with it
        return replace(simulated, calls=0)
    key = curve_key(target)
    memo = _MEMO.setdefault(target, {})
    if key in memo:
        return replace(memo[key], calls=0)
    path = _cache_path(key)
    if cacheable(target) and path.is_file():
        try:
            curve = replace(CostCurve(**json.loads(path.read_text())), calls=0)
        except (ValueError, TypeError, OSError):
            return None  # unreadable cache: measured again
        memo[key] = curve
        return curve
    return None


def _cache_path(key: str) -> Path:
    return cache_dir() / "cost" / f"{key.replace('/', '_')}.json"


_MEASURING: dict[str, threading.Lock] = {}  # curve key -> held while that curve is measured in this process
_MEASURING_GUARD = threading.Lock()


def cost_curve(target, remeasure: bool = False, log=None) -> CostCurve:
    """The target's cost curve: from memory, else from the user cache, else measured now (and cached). A run that
    needs a curve another thread is measuring waits for that measurement rather than making its own beside it (the
    app: a run stopped while its model was measured goes on measuring, and the next Run takes its curve)."""
    if not remeasure and (curve := known_curve(target)) is not None:
        return curve
    key = curve_key(target)
    with _MEASURING_GUARD:
        lock = _MEASURING.setdefault(key, threading.Lock())
    with lock:
        if not remeasure and (curve := known_curve(target)) is not None:
            return curve  # (measured by another thread while this one waited)
        return _measure_and_keep(target, key, log)


def _measure_and_keep(target, key: str, log) -> CostCurve:
    if log or NOTICE:
        kept = ("once per model, device, CPU kernels and thread count: kept for later runs if the machine is "
                "quiet meanwhile" if cacheable(target) else "a model folder's curve is not cached: measured once per "
                "process")
        (log or NOTICE)(f"measuring {target.info.name}'s cost curve f(N) on {target.device} with "
                        f"{torch.get_num_threads()} thread(s), what --budget auto prices a pass with ({kept}) ...")
    since, t0 = cpu_snapshot(), time.perf_counter()
    curve = measure(target, log=log)
    _MEMO.setdefault(target, {})[key] = curve
    took = f"  measured in {time.perf_counter() - t0:.1f} s"  # (the run's first pass comes only now)
    if not cacheable(target):
        if log or NOTICE:
            (log or NOTICE)(took)
        return curve
    why = ""
    path = _cache_path(key)
    if str(target.device).startswith("cpu") and machine_busy(since):
        why = "the machine was busy while it was measured (this curve serves this process only; measure it again " \
              "when the machine is quiet)"
    else:
        try:
            write_cache_file(path, asdict(curve))
            curve.cached = str(path)
        except OSError as e:  # a read-only home: keep it in memory
            why = f"{path.parent} could not be written ({e.strerror or e})"
    if log or NOTICE:
        (log or NOTICE)(took + ("; not cached: " + why if why else "; kept for later runs"))
    return curve

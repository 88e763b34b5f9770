"""Batch invariance: does a batched target pass give every row bit for bit the logits of a one-row pass?

SPOT is lossless only if the verification pass (a batch of tree states) computes, for each state, exactly the
logits the standard decoder (one state per pass) computes for it: the decision rule compares confidences, and a
last-bit difference can flip an argmax or the order of two close positions. Whether it holds depends on the
kernels, hence on the device and the dtype: on this project's CPU, float32 passes are bit-identical at every
batch size, bfloat16 ones are not (a batch of 32 differs in every row).

`ensure_batch_invariance(target)` runs at load time (registry.load_embedded, targets.published.load_published):

1. probe: random states (half of the window masked), batched passes of `PROBE_BATCHES` rows vs one-row passes
   of the first, second, middle and last rows, for a full window and for a row that ends one position into the
   window (a ragged last block), without a cache and, for block targets, against a shared prefix cache, and for a
   whole sequence of two tokens; `torch.equal` per row;
2. a low-precision model (whatever its probe found: only float32 is guaranteed) is rebuilt upcast to float32
   (a batch-invariant computation on the CPU) and probed again;
3. if it still fails, keep it and mark the target: `info.batch_invariant = False`, and the runs carry "identity
   not guaranteed on this device/dtype" (RunMeta.identity_guaranteed, the CLI's note, the app's counters).

The probe samples two batch sizes; a run can use any from 1 to its budget, and a fused pass is twice as wide.
So every batched pass of a run is also checked lazily, the first time its shape (batch size, positions computed)
is used with the target (`check_pass`): several of its own rows (the first 8, the middle and the last, and one
that moves with the size: `checked_rows`) are recomputed in one-row passes and compared bit for bit. A
difference marks the target as above, and the run's trace says so. The one-row passes are counted in the run's
RunMeta.forward_calls_outside, not in its target passes.
"""
from __future__ import annotations

from dataclasses import dataclass
from weakref import WeakKeyDictionary

import torch

from .base import DiffusionTarget

PROBE_BATCHES = (3, 32)  # batch sizes compared with one-row passes (the largest is a typical tree budget)
NOT_GUARANTEED = "identity not guaranteed on this device/dtype"
CHECKED_FIRST = 8  # a lazy check recomputes the first 8 rows of a batch, and a few more (checked_rows)
_CHECKED: WeakKeyDictionary = WeakKeyDictionary()  # target -> the pass shapes already checked with it


@dataclass
class InvarianceReport:
    invariant: bool  # every probed row of every batch equals its one-row pass bit for bit
    max_abs_diff: float  # largest |batched - one-row| logit difference seen
    rows_differing: int  # probed rows (over all batches and probes) that were not bit-identical
    rows_probed: int
    dtype: str
    device: str


def _dtype_of(target: DiffusionTarget) -> torch.dtype:
    model = getattr(target, "model", None)
    param = next(model.parameters(), None) if model is not None else None
    return param.dtype if param is not None else torch.float32


def probe_states(target: DiffusionTarget, rows: int, seed: int = 0) -> tuple[torch.Tensor, int, int]:
    """`rows` random states of two windows' length and the window [lo, hi) to evaluate (the second one)."""
    info = target.info
    b = max(1, info.block_size)
    n = min(2 * b, info.max_length)
    lo = (n // 2 // b) * b if info.attention == "block" and n >= 2 * b else n // 2
    g = torch.Generator().manual_seed(seed)
    vocab = min(info.vocab_size, len(target.tokenizer)) if hasattr(target.tokenizer, "__len__") else info.vocab_size
    states = torch.randint(0, max(vocab, 2), (rows, n), generator=g)
    states[states == info.mask_id] = 0 if info.mask_id != 0 else 1
    holes = torch.rand(rows, n, generator=g) < 0.5
    holes[:, :lo] = False
    states = states.masked_fill(holes, info.mask_id)
    states[:, :lo] = states[0, :lo]  # rows share the prefix (a cache of it must serve every row)
    return states, lo, n


@torch.no_grad()
def batch_invariance(target: DiffusionTarget, batches=PROBE_BATCHES, seed: int = 0) -> InvarianceReport:
    """Compare batched passes with one-row passes on probe states (see the module docstring)."""
    rows = max(batches)
    states, lo, hi = probe_states(target, rows, seed)
    caches = [target.empty_cache()]
    if target.info.attention == "block" and lo > 0:
        first = target.forward(states[:1], 0, lo, target.empty_cache())
        caches.append(target.extend_cache(target.empty_cache(), first, 0, lo))
    # a full window, a row that ends one position into the window (a ragged last block, a narrow window), and a
    # whole sequence of two tokens (a prompt of one token and one to generate: a few positions per call)
    probes = ([(states, cache, lo, hi) for cache in caches]
              + [(states[:, : lo + 1], cache, lo, lo + 1) for cache in caches]
              + [(states[:, :2], target.empty_cache(), 1, 2)])
    worst, differing, probed = 0.0, 0, 0
    checked = {b: sorted({0, 1, b // 2, b - 1} & set(range(b))) for b in batches}  # a batch kernel that differs
    needed = sorted(set().union(*checked.values()))  # differs in (nearly) every row: a few rows per batch suffice
    for rows_of, cache, lo, hi in probes:
        single = {i: target.forward(rows_of[i: i + 1], lo, hi, cache).logits[0] for i in needed}
        for b in batches:
            batched = target.forward(rows_of[:b], lo, hi, cache).logits
            for i in checked[b]:
                probed += 1
                if not torch.equal(batched[i], single[i]):
                    differing += 1
                    worst = max(worst, float((batched[i] - single[i]).abs().max()))
    return InvarianceReport(invariant=differing == 0, max_abs_diff=worst, rows_differing=differing,
                            rows_probed=probed, dtype=str(_dtype_of(target)).removeprefix("torch."),
                            device=str(target.device))


def ensure_batch_invariance(target: DiffusionTarget, rebuild=None, log=None) -> DiffusionTarget:
    """The target to decode with: a float32 `target` if its batched passes are bit-identical to one-row passes;
    for a low-precision model, `rebuild(torch.float32)` (the same weights upcast) if that one is (a low-precision
    target is never reported as guaranteed, even when its probe passes: its kernels switch paths by shape, and
    a passing probe is a sample); else `target` marked `batch_invariant = False`. Sets `info.batch_invariant`
    and `info.extra["invariance"]`."""
    report = batch_invariance(target)
    original = _dtype_of(target)
    if report.invariant and original == torch.float32:
        target.info.batch_invariant = True
        target.info.extra["invariance"] = f"bit-identical batched passes ({report.dtype} on {report.device})"
        return target
    found = (f"{report.dtype} batched passes differed from one-row passes in {report.rows_differing} of "
             f"{report.rows_probed} probed rows (max {report.max_abs_diff:.3g})" if not report.invariant else
             f"{report.dtype} batched passes matched one-row passes in {report.rows_probed} probed rows, but only "
             f"float32 is guaranteed")
    if rebuild is not None and original != torch.float32:
        try:
            upcast = rebuild(torch.float32)
            upcast_report = batch_invariance(upcast)
        except (RuntimeError, torch.cuda.OutOfMemoryError) as e:  # no room for float32 weights
            upcast_report = None
            if log:
                log(f"note: {target.info.name}: could not upcast to float32 ({type(e).__name__})")
        if upcast_report is not None and upcast_report.invariant:
            upcast.info.batch_invariant = True
            upcast.info.extra["invariance"] = f"{found}; upcast to float32: bit-identical"
            if "dtype" in upcast.info.extra:
                upcast.info.extra["dtype"] = "float32"
            if log:
                log(f"note: {upcast.info.name}: {upcast.info.extra['invariance']}")
            return upcast
        target = rebuild(original)  # float32 does not help here: keep the original precision (and memory)
    target.info.batch_invariant = False
    target.info.extra["invariance"] = f"{NOT_GUARANTEED}: {found} ({report.device})"
    if log:
        log(f"warning: {target.info.name}: {target.info.extra['invariance']}")
    return target


def checked_rows(batch: int) -> list[int]:
    """The rows of a batch of `batch` states that a lazy check recomputes one by one: the first CHECKED_FIRST (a
    tree's nodes are in best-first order, so the accepted walk runs mostly through them), the middle and the last,
    and one that moves with the size (so that over the sizes a run uses, the others are seen too)."""
    spread = (batch * 2654435761 >> 8) % batch  # Knuth's multiplicative hash of the size
    return sorted({*range(CHECKED_FIRST), batch // 2, batch - 1, spread} & set(range(batch)))


@torch.no_grad()
def check_pass(target: DiffusionTarget, states: torch.Tensor, lo: int, hi: int, cache, logits: torch.Tensor) -> int:
    """Check a run's batched pass (`logits` = target.forward(states, lo, hi, cache).logits) the first time its
    shape is used with `target` (a target proven so far only: an unchecked or flagged one has nothing to prove).
    Marks the target as not batch-invariant if a recomputed row differs. Returns the forward calls made."""
    batch = states.shape[0]
    if batch < 2 or target.info.batch_invariant is not True:
        return 0
    # the shape: batch size and positions computed (a sample: not a full-attention row's length, nor where the
    # window lies)
    shape = (batch, hi - lo, lo - cache.length if target.info.attention == "block" else 0)
    seen = _CHECKED.setdefault(target, set())
    if shape in seen:
        return 0
    seen.add(shape)
    rows = checked_rows(batch)
    differing, worst = 0, 0.0
    for i in rows:
        single = target.forward(states[i: i + 1], lo, hi, cache).logits[0]
        if not torch.equal(single, logits[i]):
            differing += 1
            worst = max(worst, float((single - logits[i]).abs().max()))
    if differing:
        target.info.batch_invariant = False
        target.info.extra["invariance"] = (
            f"{NOT_GUARANTEED}: a batched pass of {batch} states over {hi - lo} positions differed from one-row "
            f"passes in {differing} of {len(rows)} checked rows ({_dtype_of(target)} on {target.device}, max "
            f"{worst:.3g})".replace("torch.", ""))
    return len(rows)

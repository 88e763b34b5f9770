"""The library's front door: decode a prompt with any drafter, streaming or not.

    from spotviz.engine import decode
    trace = decode("shakespeare-bd", "ROMEO.", DecodeConfig(drafter="spot"))   # budget "auto" by default

`decode_stream(..., start_event=True)` first yields a start event (Progress.kind == "start", with the run's
RunMeta), then one Progress per target pass, then the one carrying the trace. The prompt is encoded once.
`set_threads()` applies the thread policy every front end shares (CLI, app, bench).
"""
from __future__ import annotations

import functools
import os
from typing import Iterator

from .drafter.registry import PROPOSERS
from .samplers.common import DecodeConfig, DecodeError, Progress, run_to_end
from .targets.base import DiffusionTarget

DRAFTERS = ("none", *PROPOSERS)
THREADS_ENV = "SPOTVIZ_THREADS"


def set_threads(threads: int | None = None) -> int:
    """Set torch's CPU threads: `threads` if given (> 0), else $SPOTVIZ_THREADS, else 1; numpy's BLAS (the
    drafter's forward) to one thread.

    The default is 1 because the targets here are small: a pass is a few milliseconds of small matrix products,
    where extra threads mostly wait on each other (and on a busy machine make every pass many times slower).
    Returns the number set."""
    import torch

    if not threads:
        env = os.environ.get(THREADS_ENV, "").strip()
        try:
            threads = int(env) if env else 1
        except ValueError:
            raise DecodeError(f"{THREADS_ENV} must be a whole number of threads, got {env!r}") from None
    if threads < 1:
        raise DecodeError(f"threads must be at least 1, got {threads}")
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    limit_blas_threads(1)
    return threads


@functools.lru_cache(maxsize=None)
def limit_blas_threads(n: int = 1) -> bool:
    """Set numpy's OpenBLAS to n threads (its default is one per core, and on matrices this small the extra
    threads only spin: ~10x slower on a busy machine). Works with the OpenBLAS numpy wheels ship; True if set."""
    import ctypes

    try:
        with open("/proc/self/maps") as f:
            libs = {p for p in (line.split()[-1] for line in f) if "openblas" in p.lower() and ".so" in p}
        for path in libs:
            lib = ctypes.CDLL(path)
            for name in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                         "openblas_set_num_threads64_", "openblas_set_num_threads"):
                fn = getattr(lib, name, None)
                if fn is not None:
                    fn(int(n))
                    return True
    except (OSError, ValueError):
        pass
    return False


def decode_stream(target: DiffusionTarget | str, prompt: str, cfg: DecodeConfig,
                  start_event: bool = False) -> Iterator[Progress]:
    """Yield a Progress after every target pass; the last one carries the finished Trace. `cfg` was checked when
    it was made (DecodeConfig is frozen)."""
    if isinstance(target, str):
        from .registry import load_target

        target = load_target(target)
    if cfg.drafter == "none":
        from .samplers.standard import decode_standard_stream

        return decode_standard_stream(target, prompt, cfg, start_event=start_event)
    from .samplers.spot import decode_spot_stream

    return decode_spot_stream(target, prompt, cfg, start_event=start_event)


def decode(target: DiffusionTarget | str, prompt: str, cfg: DecodeConfig):
    return run_to_end(decode_stream(target, prompt, cfg))

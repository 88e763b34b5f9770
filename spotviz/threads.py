"""The one thread policy of every front end (command line, app, library, bench, training): torch's CPU threads
(and numpy's BLAS, which only the drafter's small matrices use, at one thread).

    --threads N (or set_threads(N))  ->  N
    else $SPOTVIZ_THREADS            ->  its value
    else                             ->  1
    0 means every core this process may use; more than that is refused, as is anything not a whole number.

The default is 1 because the targets here are small: a pass is a few milliseconds of small matrix products, where
extra threads mostly wait on each other (and on a busy machine make every pass many times slower). The command
line and app.py apply the policy before anything loads (so a bad value is one `error:` line naming the option or
the variable); library entry points (registry.load_target, engine.decode_stream) apply it once per process unless a
front end or the user already called set_threads (`spotviz.engine.set_threads` is this function).
"""
from __future__ import annotations

import os

from .errors import DecodeError

THREADS_ENV = "SPOTVIZ_THREADS"
_applied: int | None = None  # the count set_threads last set, None until the policy has been applied


def machine_cores() -> int:
    """The CPU cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def resolve_threads(threads: int | str | None = None, option: str = "threads") -> int:
    """The thread count the policy gives (see the module docstring); raises DecodeError naming `option` or
    $SPOTVIZ_THREADS when the value is not a whole number from 0 to the machine's cores. Imports nothing heavy."""
    source, value = option, threads
    if value is None:
        env = os.environ.get(THREADS_ENV, "").strip()
        if not env:
            return 1
        source, value = THREADS_ENV, env
    cores = machine_cores()
    try:
        n = None if isinstance(value, bool) or isinstance(value, float) and not value.is_integer() else int(value)
    except (TypeError, ValueError):
        n = None
    if n is None or n < 0 or n > cores:
        raise DecodeError(f"{source} must be a whole number of threads from 1 to {cores} (this machine's cores; "
                          f"0 = all of them), got {value!r}")
    return n or cores


def set_threads(threads: int | str | None = None, option: str = "threads") -> int:
    """Set torch's CPU threads by the policy and return the number set (`option`: how an error names the value: the
    command line passes "--threads")."""
    global _applied
    n = resolve_threads(threads, option)
    import torch

    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    limit_blas_threads()
    _applied = n
    return n


_blas_limited = False


def limit_blas_threads() -> bool:
    """numpy's OpenBLAS (the drafter's numpy forward) at one thread: its default is one per core, and on matrices
    this small the extra threads only spin (~10x slower on a busy machine). Works with the OpenBLAS numpy wheels
    ship; True once set (then never redone)."""
    global _blas_limited
    if _blas_limited:
        return True
    import ctypes

    import numpy  # noqa: F401  (loads its BLAS, so that the library can be found)

    try:
        with open("/proc/self/maps") as f:
            libs = {p for p in (line.split()[-1] for line in f) if "openblas" in p.lower() and ".so" in p}
        for path in libs:
            lib = ctypes.CDLL(path)
            for name in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                         "openblas_set_num_threads64_", "openblas_set_num_threads"):
                fn = getattr(lib, name, None)
                if fn is not None:
                    fn(1)
                    _blas_limited = True
                    return True
    except (OSError, ValueError):
        pass
    return False


def ensure_threads() -> int:
    """Apply the policy once per process unless set_threads already ran (library entry points call this)."""
    return _applied if _applied is not None else set_threads()


def threads_in_use() -> int:
    """torch's CPU threads now (what the app's model banner shows)."""
    import torch

    return torch.get_num_threads()

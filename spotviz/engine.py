"""The library's front door: decode a prompt with any drafter, streaming or not.

    from spotviz.engine import decode
    trace = decode("math-bd", "Sam has 8 marbles. He finds 5 more. How many marbles does Sam have now?",
                   DecodeConfig(drafter="spot"))   # budget "auto" by default; the model's template wraps the question

`decode_stream(..., start_event=True)` first yields a start event (Progress.kind == "start", with the run's
RunMeta), then one Progress per target pass, then the one carrying the trace. The prompt is encoded once.
`set_threads()` applies the thread policy every front end shares (CLI, app, library, bench, training; spotviz/threads.py:
default 1, 0 = all cores, at most the machine's cores); `decode_stream` applies it once unless a front end did.
"""
from __future__ import annotations

import os
import warnings
from typing import Iterator

from .drafter.registry import BUILT_IN
from .errors import IdentityWarning
from .samplers.config import DecodeConfig, DecodeError, check_prompt
from .samplers.state import Progress, run_to_end
from .targets.base import DiffusionTarget, TargetInfo
from .threads import THREADS_ENV, ensure_threads, set_threads  # noqa: F401  (part of this module's interface)

DRAFTERS = ("none", *BUILT_IN)  # the built-in drafters (one registered later is in drafter.registry.PROPOSERS)


def decode_stream(target: DiffusionTarget | str, prompt: str, cfg: DecodeConfig | None = None,
                  start_event: bool = False) -> Iterator[Progress]:
    """Yield a Progress after every target pass; the last one carries the finished Trace. `target`: a loaded target
    (registry.load_target), or a name or folder, loaded on first use and kept (the last two) for later calls.
    `cfg` (default: DecodeConfig(), the standard decoder) was checked when it was made (DecodeConfig is frozen); the
    prompt is checked here, before the first pass.
    Where the target's batched passes are not proven bit-identical to one-row passes (targets/invariance.py), a
    speculative run warns (errors.IdentityWarning, a RuntimeWarning): its output may then differ from the standard
    decoder's."""
    cfg = DecodeConfig() if cfg is None else cfg
    if not isinstance(cfg, DecodeConfig):
        raise TypeError(f"cfg must be a DecodeConfig (spotviz.samplers.config), got {type(cfg).__name__}")
    ensure_threads()
    if isinstance(getattr(prompt, "info", None), TargetInfo):
        raise TypeError("decode(target, prompt, cfg): the model comes first, the prompt second")
    if target is None or isinstance(target, (str, os.PathLike)):
        target = _named_target(target)
    if not isinstance(getattr(target, "info", None), TargetInfo):
        raise TypeError(f"target must be a loaded target (spotviz.registry.load_target) or a model name, got "
                        f"{type(target).__name__}")
    check_prompt(prompt)
    if cfg.drafter != "none" and target.info.batch_invariant is not True:
        warnings.warn(f"{target.info.name}: {target.info.extra.get('invariance', 'batch invariance not checked')}; "
                      "speculative output may differ from the standard decoder's", IdentityWarning, stacklevel=2)
    if cfg.drafter == "none":
        from .samplers.standard import decode_standard_stream

        return decode_standard_stream(target, prompt, cfg, start_event=start_event)
    from .samplers.spot import decode_spot_stream

    return decode_spot_stream(target, prompt, cfg, start_event=start_event)


_NAMED: dict = {}  # the targets decode_stream loaded by name, the last two kept (a loop over prompts loads once)


def _named_target(name) -> DiffusionTarget:
    from .registry import load_target

    key = None if name is None else os.fspath(name)
    if key not in _NAMED:
        while len(_NAMED) >= 2:
            _NAMED.pop(next(iter(_NAMED)))
        _NAMED[key] = load_target(key)
    return _NAMED[key]


def decode(target: DiffusionTarget | str, prompt: str, cfg: DecodeConfig | None = None):
    """Decode `prompt` to the end and return its Trace (text, tokens, every pass, counters): decode_stream's run,
    consumed (cfg: default DecodeConfig(), the standard decoder)."""
    return run_to_end(decode_stream(target, prompt, cfg))

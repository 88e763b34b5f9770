"""The library's front door: decode a prompt with any drafter, streaming or not.

    from spotviz.engine import decode
    trace = decode("shakespeare-bd", "ROMEO.", DecodeConfig(drafter="spot", budget=32))
"""
from __future__ import annotations

from typing import Iterator

from .samplers.common import DecodeConfig, DecodeError, Progress
from .samplers.standard import decode_standard_stream
from .targets.base import DiffusionTarget

DRAFTERS = ("none", "spot", "spot-sets", "training-free", "calibrated")


def decode_stream(target: DiffusionTarget | str, prompt: str, cfg: DecodeConfig) -> Iterator[Progress]:
    """Yield a Progress after every target pass; the last one carries the finished Trace."""
    if isinstance(target, str):
        from .registry import load_target

        target = load_target(target)
    cfg.validate()
    if cfg.drafter not in DRAFTERS:
        raise DecodeError(f"unknown drafter {cfg.drafter!r}; choose one of {', '.join(DRAFTERS)}")
    if cfg.drafter == "none":
        return decode_standard_stream(target, prompt, cfg)
    from .samplers.spot import decode_spot_stream

    return decode_spot_stream(target, prompt, cfg)


def decode(target: DiffusionTarget | str, prompt: str, cfg: DecodeConfig):
    last = None
    for last in decode_stream(target, prompt, cfg):
        pass
    return last.trace

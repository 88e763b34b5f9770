"""Adapters for published DLMs (SDAR, LLaDA, Dream, HF masked-LM diffusion models). Filled in by the adapters work."""
from __future__ import annotations

PUBLISHED: dict[str, dict] = {}


def load_published(name: str, device=None):
    from ..registry import ModelLoadError

    raise ModelLoadError(f"published model loading is not available for {name!r}")

"""Measurements of a target's own decoding that explain SPOT's headroom."""
from __future__ import annotations

from .samplers.common import DecodeConfig
from .samplers.standard import decode_standard_stream


def stale_agreement(target, prompts: list[str] | None = None, n_prompts: int = 20, gen_length: int = 64,
                    temperature: float = 0.0, seed: int = 0) -> dict:
    """How often the previous pass's candidate at a position already equals the token committed there.

    Exact decoding; the first decision of each window (no previous pass over it) is not counted."""
    if prompts is None:
        from .prompts import load_prompts

        prompts = load_prompts()[:n_prompts]
    hits = total = 0
    for i, prompt in enumerate(prompts):
        cfg = DecodeConfig(mode="exact", temperature=temperature, seed=seed + i, gen_length=gen_length)
        prev = None
        for pr in decode_standard_stream(target, prompt, cfg, record_candidates=True):
            if pr.record is None:
                break
            lo = pr.extra["lo"]
            if prev is not None and prev[0] == lo:
                for c in pr.record.commits:
                    total += 1
                    hits += int(prev[1][c.position - lo] == c.token)
            prev = (lo, pr.extra["candidates"])
    return {"stale_agreement": hits / max(total, 1), "decisions": total}

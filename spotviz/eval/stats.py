"""Measurements of a target's own decoding that explain SPOT's headroom."""
from __future__ import annotations

from ..decision import masked_log_softmax
from ..noise import GumbelNoise, gumbel_scores
from ..samplers.common import DecodeConfig
from ..samplers.standard import decode_standard_stream


def stale_agreement(target, prompts: list[str] | None = None, n_prompts: int = 20, gen_length: int = 64,
                    temperature: float = 0.0, seed: int = 0) -> dict:
    """How often the previous pass already predicted the token committed at a position (exact decoding).

    The previous pass's prediction for a decision at step k is argmax(log p_prev / T + g_k) with the noise of
    step k (the coupled noise a drafter uses); at T = 0 it is the previous pass's argmax. The first decision of
    each window (no previous pass over it) is not counted."""
    if prompts is None:
        from ..embedded.prompts import heldout_prompts

        prompts = heldout_prompts(target)[:n_prompts]
    hits = total = 0
    mask_id = target.info.mask_id
    for i, prompt in enumerate(prompts):
        cfg = DecodeConfig(mode="exact", temperature=temperature, seed=seed + i, gen_length=gen_length)
        noise = GumbelNoise(seed + i, target.info.vocab_size)
        prev = None
        for pr in decode_standard_stream(target, prompt, cfg, record_logits=True):
            if pr.record is None:
                break
            lo = pr.extra["lo"]
            logp_window = masked_log_softmax(pr.extra["logits"], mask_id)
            if prev is not None and prev[0] == lo:
                for c in pr.record.commits:
                    logp = prev[1][c.position - lo]
                    if temperature > 0:
                        logp = gumbel_scores(logp, temperature, noise.at(c.step, c.position).to(logp.device))
                    total += 1
                    hits += int(int(logp.argmax()) == c.token)
            prev = (lo, logp_window)
    return {"stale_agreement": hits / max(total, 1), "decisions": total}

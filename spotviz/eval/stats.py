"""Measurements of a target's own decoding that explain SPOT's headroom.

The window bound (threshold mode). A pass decides at most one window's first set: the decision at a state whose
window is still fully masked, made either by a pass over that window or, as its bonus, by a fused pass that
completes the window before it (samplers/verify.py). SPOT-Sets' trees stay inside their window (a window's first
set is rarely drafted exactly: docs/DESIGN.md section 3), so no other node decides one, and every window the
standard decoder decodes costs SPOT-Sets a pass of its own:

    passes(SPOT-Sets) >= windows,   pass reduction = passes(standard) / passes(SPOT-Sets) <= passes(standard) / windows.

Where the threshold decoder commits most windows in one or two passes (math-bd at tau 0.9: 8.3 positions a pass)
this bound, not the drafter, is what limits SPOT-Sets. Exact-mode trees go on into the next window, so the bound
does not hold there.""" 
from __future__ import annotations

from ..decision import masked_log_softmax
from ..noise import GumbelNoise, gumbel_scores
from ..samplers.config import DecodeConfig
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


def window_bound(standard_traces) -> float:
    """The most a tree that stays inside its window can cut the passes of these standard decodes (module
    docstring): their passes over the windows they decoded (a window: the distinct [lo, hi) of their passes)."""
    passes = sum(len(tr.passes) for tr in standard_traces)
    windows = sum(len({tuple(p.window) for p in tr.passes}) for tr in standard_traces)
    return passes / max(windows, 1)

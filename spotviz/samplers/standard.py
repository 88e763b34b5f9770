"""The standard decoder (no drafter): one target pass per decision.

Exact mode commits one position per pass; threshold mode commits the set the rule picks. Windows are decoded
left to right (aligned blocks with an exact KV cache for block models; semi-AR windows for full attention).
When a window is complete, the next pass evaluates the next window and, in the same forward, writes the finished
block's keys/values into the cache (the fused pass).
"""
from __future__ import annotations

import time
from typing import Iterator


from ..decision import candidates, select
from ..targets.base import DiffusionTarget
from ..trace import Commit
from .common import DecodeConfig, DecodeState, Progress, encode_prompt


def decode_standard_stream(target: DiffusionTarget, prompt: str, cfg: DecodeConfig,
                           record_candidates: bool = False, record_logits: bool = False) -> Iterator[Progress]:
    """Yield a Progress after every pass; `record_candidates` / `record_logits` add the window's candidate
    tokens / logits to Progress.extra (for measurements and drafter training)."""
    cfg.validate()
    prompt_ids, truncated = encode_prompt(target, prompt, cfg.gen_length)
    st = DecodeState(target, prompt_ids, cfg)
    for lo, hi in st.windows:
        while bool(st.masked(lo, hi).any()):
            t_start = time.perf_counter()
            out = target.forward(st.tokens.unsqueeze(0), lo, hi, st.cache)
            st.cache = target.extend_cache(st.cache, out, 0, lo)
            tokens, conf, _ = candidates(out.logits, [st.step], lo, st.rule, st.noise, st.mask_id)
            offs = select(conf[0], st.masked(lo, hi), st.rule)
            commits = []
            for o in offs:
                st.tokens[lo + o] = tokens[0, o]
                commits.append(Commit(lo + o, int(tokens[0, o]), st.step, float(conf[0, o])))
            st.step += 1
            rec = st.add_pass("decode", (lo, hi), 1, commits, t_start)
            extra = {"lo": lo, "hi": hi, "candidates": tokens[0].tolist()} if record_candidates else {}
            if record_logits:
                extra |= {"lo": lo, "hi": hi, "logits": out.logits[0], "step": st.step - 1}
            yield Progress(st.tokens.tolist(), rec, st.counters(), extra=extra)
        st.end = hi
        if st.finished_with_eos(hi):
            break
    trace = st.trace(prompt, "none", truncated)
    yield Progress(st.tokens.tolist(), None, trace.counters, trace=trace)


def decode_standard(target: DiffusionTarget, prompt: str, cfg: DecodeConfig):
    last = None
    for last in decode_standard_stream(target, prompt, cfg):
        pass
    return last.trace

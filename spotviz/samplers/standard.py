"""The standard decoder (no drafter): one target pass per decision.

Exact mode commits one position per pass; threshold mode commits the set the rule picks. Windows are decoded
left to right (aligned blocks with an exact KV cache for block models; semi-AR windows for full attention).
A finished window's keys/values enter the cache with the first pass of the next window.
"""
from __future__ import annotations

from typing import Iterator

from ..decision import decide
from ..targets.base import DiffusionTarget
from .config import DecodeConfig
from .state import DecodeState, Progress, run_to_end


def decode_standard_stream(target: DiffusionTarget, prompt: str, cfg: DecodeConfig, record_logits: bool = False,
                           start_event: bool = False) -> Iterator[Progress]:
    """Yield a Progress after every pass (first a start event if `start_event`); `record_logits` adds the
    window's logits to Progress.extra (for measurements and drafter training)."""
    st = DecodeState.begin(target, prompt, cfg)
    if start_event:
        yield st.started("none")
    st.begin_passes()
    for lo, hi in st.windows:
        masked = st.masked(lo, hi)
        while bool(masked.any()):
            out, d, rec = standard_pass(st, lo, hi, masked)
            masked[d.offsets] = False
            extra = {"lo": lo, "hi": hi, "logits": out.logits[0], "step": st.step - 1} if record_logits else {}
            yield st.progress(rec, extra)
        if st.finished_with_eos(hi):
            break
    yield st.finished("none")


def standard_pass(st: DecodeState, lo: int, hi: int, masked):
    """One standard pass over the window [lo, hi) of the row (masked: its masked positions, [w] bool): the
    forward (the previous window's keys/values enter the cache), the decision, its commits.
    Returns (forward output, decision, pass record)."""
    t_start = st.wall()
    two_windows = 0 < st.cache.length < lo  # (the finished window enters the cache now; 0: the prompt's pass, alike
    # in both decoders)
    out, d, commits, _ = standard_step(st, lo, hi, masked)
    return out, d, st.add_pass("decode", (lo, hi), 1, commits, t_start, two_windows=two_windows)


def standard_step(st, lo: int, hi: int, masked):
    """The work of a standard pass, shared with SPOT's passes that do not draft (samplers/spot.plain_pass): the
    forward over the row's window (a finished window before it enters the cache; a no-op where the cache already
    holds it), the rule's decision at decision index st.step, its commits written into the row.
    Returns (forward output, decision, commits, the forward's time on st.clock)."""
    t0, w0 = st.clock(), st.synced_wall()
    out = st.target.forward(st.tokens.unsqueeze(0), lo, hi, st.cache)
    forward_s = st.clock() - t0
    st.forward_wall = st.synced_wall() - w0
    st.cache = st.target.extend_cache(st.cache, out, 0, lo)
    d = decide(out.logits, masked.unsqueeze(0), [st.step], lo, st.rule, st.noise, st.mask_id)[0]
    commits = d.commits(lo, st.step)
    st.apply(commits)
    st.step += 1
    return out, d, commits, forward_s


def decode_standard(target: DiffusionTarget, prompt: str, cfg: DecodeConfig):
    return run_to_end(decode_standard_stream(target, prompt, cfg))

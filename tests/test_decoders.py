"""The standard decoder (exact / threshold, T=0 / T=1, block and full targets) and its input checks."""
from __future__ import annotations

import time
from dataclasses import FrozenInstanceError

import pytest
import torch

from spotviz.engine import decode, decode_stream
from spotviz.noise import GumbelNoise
from spotviz.samplers.config import DecodeConfig, DecodeError
from spotviz.targets.base import DiffusionTarget

GEN = 40
TAU = 0.03  # the micro models are barely trained: top confidences are ~0.02-0.05


class LogitEdit(DiffusionTarget):
    """A target that forwards to another one and edits its logits: edit(logits [B, w, V], lo, hi) -> logits."""

    def __init__(self, inner, edit):
        self.inner, self.edit = inner, edit
        self.info, self.tokenizer, self.device = inner.info, inner.tokenizer, inner.device

    def empty_cache(self):
        return self.inner.empty_cache()

    def forward(self, states, lo, hi, cache):
        out = self.inner.forward(states, lo, hi, cache)
        out.logits = self.edit(out.logits.clone(), lo, hi)
        return out

    def extend_cache(self, cache, out, row, upto):
        return self.inner.extend_cache(cache, out, row, upto)


def cfg_for(mode, temperature, seed=0, gen_length=GEN, **kw):
    return DecodeConfig(mode=mode, temperature=temperature, seed=seed, gen_length=gen_length,
                        threshold=TAU if mode == "threshold" else 0.9, **kw)


def all_commits(trace):
    return [(c.position, c.token, c.step) for p in trace.passes for c in p.commits]


CASES = [(a, m, t) for a in ("block", "full") for m in ("exact", "threshold") for t in (0.0, 1.0)]
IDS = [f"{a}-{m}-T{t:g}" for a, m, t in CASES]


@pytest.fixture(scope="module")
def traces(tiny_targets, tiny_prompt):
    """One decode per (attention, mode, temperature)."""
    return {c: decode(tiny_targets[c[0]], tiny_prompt, cfg_for(c[1], c[2], seed=7)) for c in CASES}


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_every_generated_position_committed_exactly_once(case, traces, tiny_targets):
    trace = traces[case]
    target = tiny_targets[case[0]]
    p_len = len(trace.meta.prompt_tokens)
    positions = [c[0] for c in all_commits(trace)]
    assert len(positions) == len(set(positions)), "a position was committed twice"
    assert all(p_len <= p < p_len + GEN for p in positions)
    eos = set(target.info.eos_ids)
    committed = {c.position: c.token for p in trace.passes for c in p.commits}
    expected: set[int] = set()
    for lo, hi in target.windows(p_len, p_len + GEN):  # windows are decoded in order until one holds EOS
        expected |= set(range(max(lo, p_len), hi))
        if any(committed.get(i) in eos for i in range(p_len, hi)):
            break
    assert set(positions) == expected
    assert trace.counters.commits == len(positions)
    assert trace.counters.target_passes == len(trace.passes)
    for p in trace.passes:  # the window of a pass holds its commits
        assert all(p.window[0] <= c.position < p.window[1] for c in p.commits)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_exact_commits_one_per_pass_and_threshold_more(case, traces):
    trace = traces[case]
    counts = [len(p.commits) for p in trace.passes]
    assert min(counts) >= 1
    if case[1] == "exact":
        assert set(counts) == {1}
        assert trace.counters.mean_accepted_length == pytest.approx(1.0)
    elif case[2] == 0.0:
        assert max(counts) > 1, "tau this low should commit several positions in some pass"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_commits_follow_the_decision_rule(case, traces, tiny_targets):
    """Recompute d(state, logits, step) from the target's own logits at the state before each pass."""
    attention, mode, T = case
    trace, target = traces[case], tiny_targets[attention]
    info = target.info
    p_len = len(trace.meta.prompt_tokens)
    state = torch.full((p_len + GEN,), info.mask_id, dtype=torch.long)
    state[:p_len] = torch.tensor(trace.meta.prompt_tokens)
    noise = GumbelNoise(trace.meta.seed, info.vocab_size)
    cache = target.empty_cache()
    for k, p in enumerate(trace.passes):
        lo, hi = p.window
        out = target.forward(state.unsqueeze(0), lo, hi, cache)  # the same calls the decoder makes
        cache = target.extend_cache(cache, out, 0, lo)
        logits = out.logits[0].float().clone()  # float32, as the decoder computes
        logits[:, info.mask_id] = float("-inf")
        logp = torch.log_softmax(logits, -1)
        if T == 0:
            tok = logp.argmax(-1)
        else:
            g = torch.stack([noise.at(k, i) for i in range(lo, hi)])
            tok = (logp / T + g).argmax(-1)
        conf = logp.gather(-1, tok[:, None]).squeeze(-1).exp()
        masked = state[lo:hi] == info.mask_id
        c = torch.where(masked, conf, torch.full_like(conf, -1.0))
        top = int(torch.nonzero(c == c.max())[0])  # ties: lowest position
        if mode == "exact":
            want = {top}
        else:
            want = {i for i in range(hi - lo) if masked[i] and conf[i] >= TAU} | {top}
        got = {c.position - lo: c for c in p.commits}
        assert set(got) == want, f"pass {k}"
        for o, cm in got.items():
            assert cm.token == int(tok[o])
            assert cm.step == k  # one decision per pass in the standard decoder
            assert cm.confidence == pytest.approx(float(conf[o]), rel=1e-4, abs=1e-6)
            assert not cm.drafted
            state[lo + o] = cm.token
    assert state[p_len:].tolist()[: len(trace.tokens)] == trace.tokens


@pytest.mark.parametrize("attention", ["block", "full"])
@pytest.mark.parametrize("mode", ["exact", "threshold"])
def test_seeds(attention, mode, tiny_targets, tiny_prompt):
    target = tiny_targets[attention]
    a = decode(target, tiny_prompt, cfg_for(mode, 1.0, seed=1))
    b = decode(target, tiny_prompt, cfg_for(mode, 1.0, seed=1))
    c = decode(target, tiny_prompt, cfg_for(mode, 1.0, seed=2))
    assert all_commits(a) == all_commits(b) and a.text == b.text
    assert [t for _, t, _ in all_commits(a)] != [t for _, t, _ in all_commits(c)]
    # at T=0 the seed does not matter
    z1 = decode(target, tiny_prompt, cfg_for(mode, 0.0, seed=1))
    z2 = decode(target, tiny_prompt, cfg_for(mode, 0.0, seed=2))
    assert all_commits(z1) == all_commits(z2)


@pytest.mark.parametrize("attention", ["block", "full"])
def test_stream_keeps_the_prompt(attention, tiny_targets, tiny_prompt):
    target = tiny_targets[attention]
    prompt_ids = target.encode(tiny_prompt)
    items = list(decode_stream(target, tiny_prompt, cfg_for("threshold", 1.0, seed=3)))
    *updates, last = items
    assert last.record is None and last.trace is not None
    assert all(u.record is not None and u.trace is None for u in updates)
    assert [u.record.index for u in updates] == list(range(len(updates)))
    assert len(updates) == last.trace.counters.target_passes
    for u in items:
        assert u.tokens[: len(prompt_ids)] == prompt_ids
        assert len(u.tokens) == len(prompt_ids) + GEN
    assert last.trace.meta.prompt_tokens == prompt_ids
    assert all(c.position >= len(prompt_ids) for p in last.trace.passes for c in p.commits)
    # the number of undecided positions falls by the commits of each pass
    mask = target.info.mask_id
    masks = [u.tokens.count(mask) for u in updates]
    assert [GEN - m for m in masks] == [sum(len(u.record.commits) for u in updates[: i + 1]) for i in range(len(updates))]
    # each update counts the text so far: up to the first undecided slot or end of text, in any window (the counts
    # stopped at the last finished window)
    stops = {mask, *target.info.eos_ids}

    def text_so_far(tokens):
        gen = tokens[len(prompt_ids):]
        return next((i for i, t in enumerate(gen) if t in stops), len(gen))

    assert [u.counters.generated_tokens for u in updates] == [text_so_far(u.tokens) for u in updates]


@pytest.mark.parametrize("drafter", ["none", "training-free"])
def test_the_run_clock_stops_while_the_consumer_holds_an_update(drafter, tiny_block_target, tiny_prompt):
    """A stream's consumer (the app turning each pass into views) works on the same clock, once per pass: its time
    is not decoding time, or the decoder with more passes is charged more of it (DecodeState.wall)."""
    class HeldClock:  # the machine's clock, plus the hours the consumer "spends" on each update (no sleeping)
        held = 0.0

        def __call__(self):
            return time.perf_counter() + self.held

    clock = HeldClock()
    target = LogitEdit(tiny_block_target, lambda logits, lo, hi: logits)
    target.clock = clock  # (DecodeState runs on a target's own clock where it has one)
    updates, last = 0, None
    for last in decode_stream(target, tiny_prompt, cfg_for("exact", 0.0, drafter=drafter, budget=4, gen_length=16),
                              start_event=True):
        updates += 1
        clock.held += 3600.0
    passes = last.trace.passes
    assert updates == len(passes) + 2  # (start, a pass each, done)
    # (the consumer held the stream an hour per update; none of it is decoding time)
    assert last.trace.counters.wall_s < 60 and all(p.wall_s < 60 for p in passes)


@pytest.mark.parametrize("attention", ["block", "full"])
@pytest.mark.parametrize("mode", ["exact", "threshold"])
def test_stops_at_eos(attention, mode, tiny_targets, tiny_prompt):
    base = tiny_targets[attention]
    p_len = len(base.encode(tiny_prompt))
    eos = base.info.eos_ids[0]
    at = p_len + 2  # inside the first window

    def force_eos(logits, lo, hi):
        if lo <= at < hi:
            logits[:, at - lo, eos] += 100.0
        return logits

    target = LogitEdit(base, force_eos)
    trace = decode(target, tiny_prompt, cfg_for(mode, 1.0, seed=5))
    first = target.windows(p_len, p_len + GEN)[0]
    assert all(p.window == list(first) for p in trace.passes), "decoding went past the window holding EOS"
    committed = {c.position: c.token for p in trace.passes for c in p.commits}
    assert committed[at] == eos
    assert at in [c.position for c in trace.passes[0].commits]  # the most confident decision is in the first pass
    assert len(trace.tokens) <= 2 and eos not in trace.tokens
    assert trace.counters.generated_tokens == len(trace.tokens)


@pytest.mark.parametrize("attention", ["block", "full"])
@pytest.mark.parametrize("T", [0.0, 1.0])
def test_mask_token_is_never_committed(attention, T, tiny_targets, tiny_prompt):
    base = tiny_targets[attention]
    mask = base.info.mask_id

    def favour_mask(logits, lo, hi):
        logits[..., mask] += 100.0
        return logits

    trace = decode(LogitEdit(base, favour_mask), tiny_prompt, cfg_for("threshold", T, seed=9))
    tokens = [c.token for p in trace.passes for c in p.commits]
    assert len(tokens) > 0 and mask not in tokens


# ------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("prompt", ["", "   ", "\n\t ", None, 42])
def test_empty_prompt(prompt, tiny_block_target):
    with pytest.raises(DecodeError, match="empty" if prompt is None or isinstance(prompt, str) else "must be text"):
        decode(tiny_block_target, prompt, DecodeConfig(gen_length=8))


def test_prompt_with_mask_token_is_refused(tiny_block_target):
    with pytest.raises(DecodeError, match="mask"):
        decode(tiny_block_target, "ROMEO <|mask|> speaks", DecodeConfig(gen_length=8))


@pytest.mark.parametrize("kw, match", [
    ({"gen_length": 0}, "gen_length"),
    ({"gen_length": 5000}, "gen_length"),
    ({"gen_length": -3}, "gen_length"),
    ({"gen_length": "10"}, "gen_length"),
    ({"gen_length": 10.0}, "gen_length"),
    ({"gen_length": True}, "gen_length"),
    ({"seed": "1"}, "seed"),
    ({"seed": -1}, "seed"),
    ({"seed": 1.5}, "seed"),
    ({"budget": 0}, "budget"),
    ({"budget": 10_000}, "budget"),
    ({"budget": None}, "budget"),
    ({"temperature": -0.1}, "temperature"),
    ({"temperature": float("nan")}, "temperature"),
    ({"temperature": float("inf")}, "temperature"),
    ({"temperature": "hot"}, "temperature"),
    ({"threshold": 0}, "threshold"),
    ({"threshold": 0.0}, "threshold"),
    ({"threshold": 1.5}, "threshold"),
    ({"threshold": -0.5}, "threshold"),
    ({"threshold": float("nan")}, "threshold"),
    ({"threshold": "0.9"}, "threshold"),
    ({"mode": "greedy"}, "mode"),
    ({"drafter": "oracle"}, "drafter"),
])
def test_bad_config(kw, match):
    """Refused when made (the one check: a DecodeConfig is frozen, so what is made stays valid)."""
    with pytest.raises(DecodeError, match=match):
        DecodeConfig(**kw)
    cfg = DecodeConfig()
    with pytest.raises(FrozenInstanceError):
        cfg.budget = kw.get("budget", 0)


def test_good_config_edges():
    DecodeConfig(threshold=1.0, temperature=0, gen_length=1, budget=1)
    DecodeConfig(mode="threshold", threshold=1e-6, temperature=10.0, gen_length=1024)


def test_gen_length_beyond_the_context(tiny_block_target):
    ctx = tiny_block_target.info.max_length
    with pytest.raises(DecodeError, match="context"):
        decode(tiny_block_target, "ROMEO.", DecodeConfig(gen_length=ctx))


@pytest.mark.parametrize("attention", ["block", "full"])
def test_long_prompt_is_truncated(attention, tiny_targets):
    target = tiny_targets[attention]
    prompt = "ROMEO.\nBut soft, what light through yonder window breaks? " * 40
    gen = 16
    room = target.info.max_length - gen
    ids = target.encode(prompt)
    assert len(ids) > room
    trace = decode(target, prompt, DecodeConfig(gen_length=gen))
    assert trace.meta.prompt_truncated is True
    assert trace.meta.prompt_tokens == ids[-room:]
    assert trace.meta.prompt == prompt
    assert trace.counters.commits == gen or any(t in target.info.eos_ids for t in
                                                 [c.token for p in trace.passes for c in p.commits])
    short = decode(target, "ROMEO.", DecodeConfig(gen_length=gen))
    assert short.meta.prompt_truncated is False


def test_the_library_takes_numpy_numbers_and_paths_and_names_wrong_types(tiny_block_target, tiny_block_dir,
                                                                         tiny_prompt):
    """A sweep built with numpy, a folder given as a Path: accepted as the plain values they are; a wrong type is
    named, not reported as an empty prompt or an AttributeError."""
    import numpy as np
    from pathlib import Path

    from spotviz.registry import ModelLoadError, load_target
    from spotviz.threads import set_threads

    cfg = DecodeConfig(seed=np.int64(3), temperature=np.float32(0.5), gen_length=np.int64(16), budget=np.int64(4),
                       drafter="training-free")
    assert (type(cfg.seed), type(cfg.temperature), type(cfg.budget)) == (int, float, int)
    plain = DecodeConfig(seed=3, temperature=0.5, gen_length=16, budget=4, drafter="training-free")
    assert cfg == plain and decode(tiny_block_target, tiny_prompt, cfg).tokens == decode(
        tiny_block_target, tiny_prompt, plain).tokens  # (the same run: no claim on batch invariance here)
    assert load_target(Path(tiny_block_dir)).info.name == load_target(str(tiny_block_dir)).info.name
    with pytest.raises(DecodeError, match="seed must be a whole number, got 1.5"):
        DecodeConfig(seed=1.5)
    with pytest.raises(DecodeError, match="the prompt must be text"):
        decode(tiny_block_target, [1, 2, 3], DecodeConfig(gen_length=8))
    with pytest.raises(TypeError, match="cfg must be a DecodeConfig"):
        decode(tiny_block_target, tiny_prompt, {"drafter": "spot"})
    with pytest.raises(TypeError, match="target must be a loaded target"):
        decode(object(), tiny_prompt, DecodeConfig(gen_length=8))
    with pytest.raises(ModelLoadError, match="got int"):
        load_target(123)
    with pytest.raises(DecodeError, match="got 1.5"):
        set_threads(1.5)


def test_a_model_named_to_decode_is_loaded_once(tiny_block_dir, tiny_prompt, monkeypatch):
    from spotviz import engine

    monkeypatch.setattr(engine, "_NAMED", {})
    a = decode(str(tiny_block_dir), tiny_prompt, DecodeConfig(gen_length=8))
    loaded = dict(engine._NAMED)
    b = decode(tiny_block_dir, tiny_prompt, DecodeConfig(gen_length=8))  # (a path names the same folder)
    assert a.tokens == b.tokens and len(loaded) == 1 and engine._NAMED == loaded


def test_decode_without_a_config_is_the_standard_decoder(tiny_block_target, tiny_prompt):
    """decode(target, prompt) runs DecodeConfig(): the standard decoder at its defaults (the README's shortest call;
    the shipped default model answers the README's question with it)."""
    with pytest.raises(DecodeError) as implicit:  # (the tiny model's context is shorter than the default length)
        decode(tiny_block_target, tiny_prompt)
    with pytest.raises(DecodeError) as explicit:
        decode(tiny_block_target, tiny_prompt, DecodeConfig())
    assert str(implicit.value) == str(explicit.value)
    plain = decode("math-bd", "Sam has 8 marbles. He finds 5 more. How many marbles does Sam have now?")
    assert plain.meta.drafter == "none" and plain.meta.gen_length == DecodeConfig().gen_length
    assert plain.text.rstrip().endswith("The answer is 13.")

"""SPOT: draft a tree of future states, verify the whole tree in one target pass, accept by state equality.

Loop (DESIGN.md section 3), starting from a root r whose logits are known from the previous pass:
1. the decision d(r) is free and certain: s1 = r + d(r) (it is the previous pass's bonus decision);
2. a proposer drafts a tree rooted at s1 from r's output distributions (budget = states per pass, s1 included;
   with budget "auto", the size that maximises expected commits per second, samplers/cost.py);
3. one batched target pass evaluates every node; if a node completes the window, the same pass also evaluates
   the next window (the fused pass), so a new block starts without a pass of its own;
4. walk from s1 along the edges equal to the target's own decisions (samplers/verify.py); the stop node's
   decision is the pass's bonus, and its state becomes the root.
Every decision on the walk is the target's own, so the trajectory is exactly the standard decoder's.
Commits per pass = accepted edges + 1.
"""
from __future__ import annotations

import time
from typing import Iterator

from ..decision import decide, masked_log_softmax
from ..drafter.features import RootView
from ..drafter.registry import load_proposer
from ..drafter.tree import DraftNode, Proposer, build_tree, node_states
from ..noise import IndependentNoise
from ..targets.base import DiffusionTarget
from ..trace import Commit
from .common import DecodeConfig, DecodeState, Progress, run_to_end
from .cost import TreeSizer, cost_curve
from .verify import accept_walk, bonus, tree_record, verify

ROOT = DraftNode(0, -1, 0, (), (), 1.0, 1.0)  # a tree of s1 alone (nothing drafted); never given children


def decode_spot_stream(target: DiffusionTarget, prompt: str, cfg: DecodeConfig, proposer: Proposer | None = None,
                       start_event: bool = False) -> Iterator[Progress]:
    st = DecodeState.begin(target, prompt, cfg)
    proposer = proposer or load_proposer(cfg.drafter, target, cfg.mode)
    sizer = tree_sizer(st)
    draft_noise = st.noise if cfg.coupled_noise else IndependentNoise(cfg.seed, target.info.vocab_size)
    if start_event:
        yield st.started()
    wi, (lo, hi) = 0, st.windows[0]
    t_start = time.perf_counter()  # prefill: a plain pass, whose decision is the first free decision
    out = target.forward(st.tokens.unsqueeze(0), lo, hi, st.cache)
    st.cache = target.extend_cache(st.cache, out, 0, lo)
    root_logits = out.logits[0]
    d = decide(out.logits, st.masked(lo, hi).unsqueeze(0), [st.step], lo, st.rule, st.noise, st.mask_id)[0]
    free = [Commit(lo + o, t, st.step, c) for o, t, c in zip(d.offsets, d.tokens, d.confidences)]
    st.apply(free)
    st.step += 1
    yield st.progress(st.add_pass("decode", (lo, hi), 1, free, t_start))
    while True:
        masked = st.masked(lo, hi)  # 1. s1 = r + d(r): the free decision is in the row
        if not bool(masked.any()):
            st.end = hi
            if wi + 1 >= len(st.windows) or st.finished_with_eos(hi):
                break
        t_start = time.perf_counter()
        nxt = st.windows[wi + 1] if wi + 1 < len(st.windows) else None
        drafting = bool(masked.any()) and sizer.draft_now()  # (auto skips drafting for a while when it did not pay)
        view = RootView(lo=lo, hi=hi, state=st.tokens, logp=masked_log_softmax(root_logits, st.mask_id) if drafting
                        else None, masked=masked, first=d.offsets if d else [], step=st.step, rule=st.rule,
                        noise=draft_noise)
        nodes = build_tree(view, proposer, sizer.budget, cfg.min_path_prob, sizer) if drafting else [ROOT]  # 2. draft
        v = verify(st, node_states(view, nodes), nodes, lo, hi, nxt and nxt[1])  # 3. verify: one pass, all nodes
        walk, accepted = accept_walk(nodes, v.decisions, lo, st.step)  # 4. accept walk, then the bonus
        stop = nodes[walk[-1]]
        st.apply(accepted)
        step = st.step + stop.depth
        d, root_logits, window = bonus(st, v, stop, lo, hi, nxt)
        free = [Commit(window[0] + o, t, step, c) for o, t, c in zip(d.offsets, d.tokens, d.confidences)] if d else []
        st.apply(free)
        st.step = step + (1 if d else 0)
        rec = st.add_pass("verify", (lo, hi), len(nodes), accepted + free, t_start,
                          tree=tree_record(nodes, walk, v.decisions, lo), accepted_path=walk, budget=sizer.budget)
        sizer.observe(len(nodes), 0.0 if v.fused else v.forward_s, len(walk) - 1, rec.wall_s - v.forward_s)
        yield st.progress(rec)
        if window[0] != lo:
            wi, (lo, hi) = wi + 1, window
        elif d is None:  # window complete with nothing further to decode
            st.end = hi
            break
    yield st.finished()


def tree_sizer(st: DecodeState) -> TreeSizer:
    """The run's tree sizing: the fixed budget, or the cost-aware one (auto) with the target's cost curve."""
    if not st.budget_auto:
        return TreeSizer(st.cfg.budget)
    curve = cost_curve(st.target)
    st.cost_curve = curve.as_pairs()
    st.calls_outside += curve.calls
    return TreeSizer("auto", curve, n_max=min(64, max(curve.sizes)))


def decode_spot(target: DiffusionTarget, prompt: str, cfg: DecodeConfig, proposer: Proposer | None = None):
    return run_to_end(decode_spot_stream(target, prompt, cfg, proposer))

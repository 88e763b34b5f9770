"""SPOT: draft a tree of future states, verify the whole tree in one target pass, accept by state equality.

Loop (DESIGN.md section 3), starting from a root r whose logits are known from the previous pass:
1. the decision d(r) is free and certain: s1 = r + d(r) (it is the previous pass's bonus decision);
2. a proposer drafts a tree rooted at s1 from r's output distributions (budget = states per pass, s1 included);
3. one batched target pass evaluates every node; if a node completes the window, the same pass also evaluates
   the next window (the fused pass), so a new block starts without a pass of its own;
4. walk from s1: at node n compute d(n) from n's own logits with the noise of n's step; move to the child whose
   state equals n + d(n), else stop. Every decision on the walk is the target's own, so the trajectory is
   exactly the standard decoder's. The stop node's decision is the pass's bonus; its state becomes the root.
Commits per pass = accepted edges + 1.
"""
from __future__ import annotations

import time
from typing import Iterator

import torch

from ..decision import candidates, select
from ..drafter.features import RootView
from ..drafter.tree import DraftNode, Proposer, build_tree, node_states
from ..noise import IndependentNoise
from ..targets.base import DiffusionTarget
from ..trace import Commit, TreeNode
from .common import DecodeConfig, DecodeState, Progress, encode_prompt


def make_proposer(name: str, target: DiffusionTarget, cfg: DecodeConfig) -> Proposer:
    from ..drafter.store import load_proposer

    return load_proposer(name, target, cfg.mode)


def _decide(st: DecodeState, logits_row: torch.Tensor, row_tokens: torch.Tensor, lo: int, hi: int, step: int):
    """The target's decision at one state: ([window offsets], [tokens], [confidences])."""
    toks, conf, _ = candidates(logits_row.unsqueeze(0), [step], lo, st.rule, st.noise, st.mask_id)
    offs = select(conf[0], row_tokens[lo:hi] == st.mask_id, st.rule)
    return offs, [int(toks[0, o]) for o in offs], [float(conf[0, o]) for o in offs]


def decode_spot_stream(target: DiffusionTarget, prompt: str, cfg: DecodeConfig,
                       proposer: Proposer | None = None) -> Iterator[Progress]:
    cfg.validate()
    prompt_ids, truncated = encode_prompt(target, prompt, cfg.gen_length)
    if proposer is None:
        proposer = make_proposer(cfg.drafter, target, cfg)
    st = DecodeState(target, prompt_ids, cfg)
    draft_noise = st.noise if cfg.coupled_noise else IndependentNoise(cfg.seed, target.info.vocab_size)
    windows = st.windows
    wi = 0
    lo, hi = windows[0]

    # Prefill: the first pass is a plain pass; its decision is the first free decision.
    t_start = time.perf_counter()
    out = target.forward(st.tokens.unsqueeze(0), lo, hi, st.cache)
    st.cache = target.extend_cache(st.cache, out, 0, lo)
    root_logits = out.logits[0]
    offs, toks, confs = _decide(st, root_logits, st.tokens, lo, hi, st.step)
    commits = [Commit(lo + o, t, st.step, c) for o, t, c in zip(offs, toks, confs)]
    for o, t in zip(offs, toks):
        st.tokens[lo + o] = t
    first = list(offs)
    st.step += 1
    rec = st.add_pass("decode", (lo, hi), 1, commits, t_start)
    yield Progress(st.tokens.tolist(), rec, st.counters())

    while True:
        w = hi - lo
        masked = st.masked(lo, hi)
        if not bool(masked.any()):
            st.end = hi
            if wi + 1 >= len(windows) or st.finished_with_eos(hi):
                break
        t_start = time.perf_counter()
        # ---- draft
        view = RootView(lo=lo, hi=hi, state=st.tokens.clone(), logp=_root_logp(root_logits, st.mask_id),
                        masked=masked, first=first, step=st.step, rule=st.rule, noise=draft_noise)
        nodes = build_tree(view, proposer, cfg.budget, cfg.min_path_prob) if bool(masked.any()) else [DraftNode(0, -1, 0, (), (), 1.0, 1.0)]
        rows = node_states(view, nodes)
        # ---- verify: one pass over every node (and the next window if some node completes this one)
        complete = (rows[:, lo:hi] != st.mask_id).all(1)
        has_next = wi + 1 < len(windows)
        eval_hi = windows[wi + 1][1] if (has_next and bool(complete.any())) else hi
        out = target.forward(rows, lo, eval_hi, st.cache)
        # ---- accept by state equality
        n = nodes[0]
        walk = [0]
        accepted: list[Commit] = []
        decisions: dict[int, tuple] = {}
        while True:
            if bool(complete[n.id]):
                break
            step = st.step + n.depth
            d = _decide(st, out.logits[n.id, :w], rows[n.id], lo, hi, step)
            decisions[n.id] = d
            key = (tuple(d[0]), tuple(d[1]))
            child = n.children.get(key)
            if child is None:
                break
            for o, t, c in zip(*d):
                accepted.append(Commit(lo + o, t, step, c, drafted=True))
            n = nodes[child]
            walk.append(n.id)
        # ---- the bonus decision at the stop node
        st.tokens = rows[n.id].clone()
        bonus: list[Commit] = []
        step = st.step + n.depth
        new_lo, new_hi = lo, hi
        if not bool(complete[n.id]):
            offs, toks, confs = decisions[n.id]
            root_logits = out.logits[n.id, :w]
        elif eval_hi > hi and not st.finished_with_eos(hi):  # fused: first decision of the next window
            new_lo, new_hi = windows[wi + 1]
            st.cache = target.extend_cache(st.cache, out, n.id, new_lo)
            root_logits = out.logits[n.id, w:]
            offs, toks, confs = _decide(st, root_logits, st.tokens, new_lo, new_hi, step)
        else:
            offs = []
        for o, t, c in zip(offs, toks, confs):
            st.tokens[new_lo + o] = t
            bonus.append(Commit(new_lo + o, t, step, c))
        first = list(offs)
        st.step = step + (1 if offs else 0)
        tree = _tree_record(nodes, walk, decisions, lo)
        rec = st.add_pass("verify", (lo, hi), len(nodes), accepted + bonus, t_start, tree=tree, accepted_path=walk)
        yield Progress(st.tokens.tolist(), rec, st.counters())
        if new_lo != lo:
            wi += 1
            lo, hi = new_lo, new_hi
        elif not offs:  # window complete with nothing further to decode
            st.end = hi
            break
    trace = st.trace(prompt, cfg.drafter, truncated)
    yield Progress(st.tokens.tolist(), None, trace.counters, trace=trace)


def _root_logp(logits: torch.Tensor, mask_id: int) -> torch.Tensor:
    logits = logits.float().clone()
    if 0 <= mask_id < logits.shape[-1]:
        logits[..., mask_id] = float("-inf")
    return torch.log_softmax(logits, -1)


def _tree_record(nodes: list[DraftNode], walk: list[int], decisions: dict, lo: int) -> list[TreeNode]:
    on_walk = set(walk)
    out = []
    for n in nodes:
        d = decisions.get(n.id)
        out.append(TreeNode(id=n.id, parent=n.parent, depth=n.depth, positions=[lo + o for o in n.offsets],
                            tokens=list(n.tokens), prob=float(n.prob), path_prob=float(n.path_prob),
                            accepted=n.id in on_walk,
                            target_positions=[lo + o for o in d[0]] if d else [],
                            target_tokens=list(d[1]) if d else []))
    return out


def decode_spot(target: DiffusionTarget, prompt: str, cfg: DecodeConfig, proposer: Proposer | None = None):
    last = None
    for last in decode_spot_stream(target, prompt, cfg, proposer):
        pass
    return last.trace

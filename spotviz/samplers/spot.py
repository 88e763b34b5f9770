"""SPOT: draft a tree of future states, verify the whole tree in one target pass, accept by state equality.

Loop (DESIGN.md section 3), starting from a root r whose logits are known from the previous pass:
1. the decision d(r) is free and certain: s1 = r + d(r) (it is the previous pass's bonus decision);
2. a proposer drafts a tree rooted at s1 from r's output distributions (budget = states per pass, s1 included;
   with budget "auto", the size that maximises expected commits per second, or no tree at all when drafting
   does not pay: samplers/auto_budget.py; such a pass is the standard decoder's pass and nothing more, plain_pass);
3. one batched target pass evaluates every node but the known states (their window's logits stored by an earlier
   pass: decided from those, step 5); if a node completes the window, the same pass also evaluates
   the next window (the fused pass), so a new block starts without a pass of its own; the next-window
   distributions of such a node below the stop become the next root's ahead view, from which the next tree may
   go on past the window's end (drafter/tree.py);
4. walk from s1 along the edges equal to the target's own decisions (samplers/verify.py), across the window's end
   where the tree goes on; the stop node's decision is the pass's bonus, and its state becomes the root;
5. keep the logits of every node the pass evaluated off its walk for the window's later passes: a later tree node
   whose window an earlier pass already evaluated gets the target's decision there as a certain edge and, where the
   stored row is the one a pass would compute, is decided from it outside the batch (known_states.KnownStates,
   drafter/tree.py).
Every decision on the walk is the target's own, so the trajectory is exactly the standard decoder's.
Decisions per pass = accepted edges + 1 (a decision commits one position in exact mode, a set in threshold mode).
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

from ..drafter.features import RootView
from ..drafter.registry import load_proposer
from ..drafter.tree import DraftNode, Proposer, build_tree, node_states
from ..noise import IndependentNoise
from ..targets.base import DiffusionTarget
from ..trace import TreeNode
from .config import DecodeConfig, trees_may_cross
from .state import DecodeState, Progress, run_to_end
from .auto_budget import CostAwareBudget, PassOutcome, budget_policy, remember_policy
from .forward_cost import pass_clock
from .standard import standard_pass, standard_step
from .known_states import KnownStates, remember
from .verify import accept_walk, bonus, tree_record, verify, walk_end



def decode_spot_stream(target: DiffusionTarget, prompt: str, cfg: DecodeConfig, proposer: Proposer | None = None,
                       start_event: bool = False) -> Iterator[Progress]:
    st = DecodeState.begin(target, prompt, cfg)
    proposer = proposer or load_proposer(cfg.drafter, target, cfg.mode, cfg.drafter_dir)
    # auto's memory: runs alike, of these drafters (a folder named, else the shipped ones: the key of earlier
    # releases); in the process, of this drafter object alone
    memory = (cfg.drafter, type(proposer).__name__, cfg.mode, cfg.temperature, cfg.rule.threshold, cfg.coupled_noise,
              cfg.cross_window) + ((str(Path(cfg.drafter_dir).expanduser().resolve()),) if cfg.drafter_dir else ())
    instance = id(getattr(proposer, "drafter", None))
    crossing = trees_may_cross(cfg, target.info)  # (trees may go on past a window's end)
    policy = budget_policy(cfg.budget, target, memory, instance)
    if isinstance(policy, CostAwareBudget):
        st.cost_curve = policy.curve.as_pairs()
        st.cost_curve_two_windows = policy.curve.as_pairs(fused=True)
        st.clock = pass_clock(target)[1]
        st.calls_outside += policy.curve.calls
    draft_noise = st.noise if cfg.coupled_noise else IndependentNoise(cfg.seed, target.info.vocab_size)
    if start_event:
        yield st.started()
    wi, (lo, hi) = 0, st.windows[0]
    st.begin_passes()
    d, rec = prefill(st, lo, hi)  # a standard pass: its decision is the first free decision
    ahead_logp = None  # the next window's distributions at the root (when the pass that ended there evaluated them)
    knowing = cfg.coupled_noise or cfg.temperature == 0  # (the drafter's noise is the target's)
    known, known_next = window_memory(st, (lo, hi), next_window(st, wi), knowing, crossing)
    yield st.progress(rec)
    while True:
        masked = st.masked(lo, hi)  # 1. s1 = r + d(r): the free decision is in the row
        left = bool(masked.any())
        if not left:
            if wi + 1 >= len(st.windows) or st.finished_with_eos(hi):
                break
        t_start, c_start = st.wall(), st.clock()
        nxt = next_window(st, wi)
        stale = [c for c, m in zip(d.window_conf, masked.tolist()) if m] if d else []
        ahead = None
        if crossing and nxt and ahead_logp is not None and not st.finished_with_eos(hi):
            ahead = RootView(lo=hi, hi=nxt[1], state=st.tokens, logp=ahead_logp, masked=st.masked(*nxt), first=[],
                             step=st.step, rule=st.rule, noise=draft_noise, known=known_next)
            stale = stale or ahead_logp.max(-1).values.exp().tolist()  # (this window is complete: the next one's)
        drafting = bool(stale) and policy.draft_now(stale)
        if not drafting and left:
            # s1 alone inside its window (auto, where drafting does not pay): the standard decoder's pass, nothing more
            d, rec = plain_pass(st, lo, hi, masked, policy, t_start, c_start)
            ahead_logp = None
            yield st.progress(rec)
            continue
        if drafting:  # 2. draft (auto: only where drafting pays)
            view = RootView(lo=lo, hi=hi, state=st.tokens, logp=None, masked=masked, first=d.offsets, step=st.step,
                            rule=st.rule, noise=draft_noise, ahead=ahead, eos_ids=target.info.eos_ids,
                            known=known, root=d)  # (the root's; its window log p computed only if a proposer asks)
            nodes = build_tree(view, proposer, policy, cfg.min_path_prob)
            rows = node_states(view, nodes)
        else:  # s1 alone: the standard decoder's pass
            # (a root node of its own each pass: nodes are not shared between runs)
            nodes, rows = [DraftNode(0, -1, 0, (), (), 1.0, 1.0)], st.tokens.unsqueeze(0)
        v = verify(st, rows, nodes, lo, hi, nxt and nxt[1])  # 3. verify: one pass, all nodes but known states
        walk, accepted = accept_walk(nodes, v, lo, st.step)  # 4. accept walk, then the bonus
        stop = nodes[walk[-1]]
        st.apply(accepted)
        step = st.step + stop.depth
        d, window, ahead_logp = bonus(st, v, nodes, stop, lo, hi, nxt, crossing)
        if window[0] == lo:  # (a bonus in the next window starts fresh stores: nothing to keep)
            remember(st, v, rows, walk, lo, hi, known, known_next)
        if window[0] != lo:  # the fused pass's bonus is in the next window: the finished one enters the cache
            st.cache = target.extend_cache(st.cache, v.out, v.row(stop.id), window[0])
        free = d.commits(window[0], step) if d else []
        st.apply(free)
        st.step = step + (1 if d else 0)
        rec = st.add_pass("verify", (lo, hi), v.batch, accepted + free, t_start,
                          tree=tree_record(nodes, walk, v, lo), accepted_path=walk, budget=policy.budget,
                          two_windows=v.fused, walk_end=walk_end(stop, v, lo, d is not None) if len(nodes) > 1 else "")
        policy.observe(PassOutcome(v.batch, v.forward_s, v.fused, len(walk) - 1,
                                   st.clock() - c_start - v.forward_s - v.check_s, drafted=len(nodes) > 1,
                                   walk=tuple(walk[1:])))
        yield st.progress(rec)
        if window[0] != lo:
            wi, (lo, hi) = wi + 1, window
            known, known_next = window_memory(st, window, next_window(st, wi), knowing, crossing)
        elif d is None:  # window complete with nothing further to decode
            break
    remember_policy(policy, target, memory, instance)  # (auto: the next run of this kind starts from what this one learned)
    yield st.finished()


def prefill(st: DecodeState, lo: int, hi: int):
    """The first pass of a run: a standard pass over the first window. Its decision is the first free decision
    d(r); returns (d(r), the pass record)."""
    _, d, rec = standard_pass(st, lo, hi, st.masked(lo, hi))
    return d, rec


def plain_pass(st: DecodeState, lo: int, hi: int, masked, policy, t_start: float, c_start: float):
    """A pass that verifies s1 alone while the window still has masked positions (`auto` chose not to draft): the
    standard decoder's pass and nothing more (no tree, no walk, no stores, no fused evaluation), so that a pass which
    does not draft costs what a standard pass costs. The same decision and record as a tree of s1 alone through
    verify / accept_walk / bonus. Returns (the decision, which is the next root's, the pass record)."""
    _, d, commits, forward_s = standard_step(st, lo, hi, masked)
    root = TreeNode(id=0, parent=-1, depth=0, positions=[], tokens=[], prob=1.0, path_prob=1.0, accepted=True,
                    target_positions=[lo + o for o in d.offsets], target_tokens=list(d.tokens))
    rec = st.add_pass("verify", (lo, hi), 1, commits, t_start, tree=[root], accepted_path=[0], budget=policy.budget)
    policy.observe(PassOutcome(1, forward_s, False, 0, st.clock() - c_start - forward_s))
    return d, rec


def window_memory(st: DecodeState, window, nxt, knowing: bool, crossing: bool):
    """Fresh stores of evaluated logits for a window's passes (samplers/known_states.KnownStates): the window's own, and
    the next window's after a completed one (only when trees may cross). None where the drafter's noise is not the
    target's (the decision there could not be known). The window's own rows are reused in place of evaluating their
    states again only where the probe proved batched passes bit-identical to one-row passes."""
    if not knowing:
        return None, None
    here = KnownStates(*window, st.rule, st.noise, st.mask_id, info=st.target.info)
    return here, (KnownStates(*nxt, st.rule, st.noise, st.mask_id) if crossing and nxt else None)


def next_window(st: DecodeState, wi: int) -> tuple[int, int] | None:
    """The window after window `wi` (a fused pass may evaluate it), None after the last."""
    return st.windows[wi + 1] if wi + 1 < len(st.windows) else None


def decode_spot(target: DiffusionTarget, prompt: str, cfg: DecodeConfig, proposer: Proposer | None = None):
    return run_to_end(decode_spot_stream(target, prompt, cfg, proposer))

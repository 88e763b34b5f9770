"""SPOT speculative decoding is lossless: draft tree -> one-pass verification -> acceptance by state equality.

Every test compares against the standard decoder, which is the ground truth: a speculative decode must make the
same decisions (position, token, decision step) in the same order, whatever the proposer drafts.
"""
from __future__ import annotations

import itertools
import json
import math
import shutil
from dataclasses import replace

import numpy as np
import pytest
import torch

from spotviz.decision import DecisionRule
from spotviz.drafter.features import RootView
from spotviz.drafter.model import DrafterConfig, SpotDrafter
from spotviz.drafter.proposers import Calibrated, SpotProposer, TrainingFree
from spotviz.drafter.registry import learned_drafter, load_proposer
from spotviz.drafter.tree import Proposer, build_tree, node_states
from spotviz.noise import GumbelNoise
from spotviz.samplers.config import DecodeConfig, DecodeError
from spotviz.samplers.spot import decode_spot
from spotviz.samplers.standard import decode_standard
from spotviz.targets.base import DiffusionTarget
from spotviz.trace import Trace

PROMPTS = ["ROMEO.\nO", "JULIET.\nWhat", "KING.\nMy lord, the", "Enter", "HAMLET.\nTo be, or not to be",
           "First Citizen.\nBefore we proceed any further, hear me"]
TABLE = {"rank_probs": [[0.6, 0.2, 0.1], [0.5, 0.2, 0.1, 0.05], [0.4, 0.3]],
         "set_params": [[8.0, 0.0], [6.0, -0.5]]}


# ------------------------------------------------------------------------------------------ helpers
@pytest.fixture(scope="module")
def random_drafter() -> SpotDrafter:
    torch.manual_seed(11)
    return SpotDrafter(DrafterConfig()).eval()


def make_proposer(kind: str, drafter: SpotDrafter) -> Proposer:
    if kind == "training-free":
        return TrainingFree()
    if kind == "calibrated":
        return Calibrated(TABLE)
    if kind == "spot+partner":  # as shipped: the heads hedged by a training-free partner
        return SpotProposer(drafter, partner=Calibrated(TABLE))
    return SpotProposer(drafter)


def _random_target(template, attention: str, seed: int, block_size: int = 8, scale: float = 40.0):
    """A random-init SpotDLM on the micro models' tokenizer; embeddings scaled up so its predictions are peaked
    (confidences spread over (0, 1), so threshold mode commits real sets)."""
    from spotviz.embedded.modeling import SpotDLMConfig, SpotDLMForMaskedLM
    from spotviz.targets.embedded import EmbeddedTarget

    info = template.info
    torch.manual_seed(seed)
    cfg = SpotDLMConfig(vocab_size=info.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64, attention=attention,
                        block_size=block_size, mask_token_id=info.mask_id, eos_token_id=info.eos_ids[0], pad_token_id=2)
    model = SpotDLMForMaskedLM(cfg)
    with torch.no_grad():
        model.embed.weight.mul_(scale)
    return EmbeddedTarget(model.eval(), template.tokenizer, name=f"random-{attention}")


@pytest.fixture(scope="module")
def targets(tiny_block_target, tiny_full_target):
    return {"block": tiny_block_target, "full": tiny_full_target,
            "random": _random_target(tiny_block_target, "block", seed=5),
            "random-full": _random_target(tiny_block_target, "full", seed=6, block_size=8)}


def std_decisions(trace: Trace) -> list[tuple]:
    """The standard trajectory: decision k -> ((position, token), ...) sorted by position."""
    by_step: dict[int, list] = {}
    for p in trace.passes:
        for c in p.commits:
            by_step.setdefault(c.step, []).append((c.position, c.token))
    assert sorted(by_step) == list(range(len(by_step)))
    assert len(by_step) == len(trace.passes)  # the standard decoder makes one decision per pass
    return [tuple(sorted(by_step[k])) for k in range(len(by_step))]


def commit_triples(trace: Trace) -> list[tuple]:
    return [(c.position, c.token, c.step) for p in trace.passes for c in p.commits]


def check_against_standard(spot: Trace, std: Trace, budget: int, round_trip: bool = True) -> dict:
    """Everything a SPOT trace must satisfy relative to the standard decode of the same input.

    Returns stats (accepted edges per verify pass, ...) for further assertions."""
    assert spot.tokens == std.tokens
    assert spot.text == std.text
    # same decisions, same steps, same order
    assert sorted(commit_triples(spot), key=lambda x: (x[2], x[0])) == sorted(commit_triples(std),
                                                                             key=lambda x: (x[2], x[0]))
    steps = [c.step for p in spot.passes for c in p.commits]
    assert steps == sorted(steps)
    dec = std_decisions(std)
    # each position committed once; exactly the generated positions of the decoded windows
    positions = [c.position for p in spot.passes for c in p.commits]
    assert len(positions) == len(set(positions))
    p_len = len(spot.meta.prompt_tokens)
    assert set(positions) == set(range(p_len, max(positions) + 1))
    # counters agree with the records, and the JSON round trip is lossless
    spot.validate()
    c = spot.counters
    assert c.target_passes == len(spot.passes)
    assert c.commits == len(positions) == std.counters.commits
    assert c.generated_tokens == std.counters.generated_tokens == len(spot.tokens)
    assert c.accepted_drafts == sum(cm.drafted for p in spot.passes for cm in p.commits)
    assert c.drafted_nodes == sum(max(len(p.tree) - 1, 0) for p in spot.passes)
    assert math.isclose(c.mean_accepted_length, c.commits / c.target_passes)
    if round_trip:
        back = Trace.from_json(spot.to_json())
        assert back.to_dict() == spot.to_dict()

    # ---- pass by pass: the prefill pass, then verify passes whose acceptance walk is the oracle's
    first = spot.passes[0]
    assert first.kind == "decode" and first.states == 1 and first.tree == [] and first.accepted_path == []
    assert tuple(sorted((cm.position, cm.token) for cm in first.commits)) == dec[0]
    assert all(cm.step == 0 and not cm.drafted for cm in first.commits)
    s = 1  # decision index of the next pass's first drafted decision
    accepted_edges = []
    for i, p in enumerate(spot.passes[1:], start=1):
        assert p.kind == "verify"
        assert p.states == len(p.tree) - sum(n.reused for n in p.tree) <= budget  # (known states: not in the batch)
        assert [n.id for n in p.tree] == list(range(len(p.tree)))
        root = p.tree[0]
        assert root.parent == -1 and root.depth == 0 and root.positions == [] and root.path_prob == 1.0
        kids: dict[int, dict] = {}
        states = {0: frozenset()}
        for n in sorted(p.tree[1:], key=lambda n: n.depth):
            par = p.tree[n.parent]
            assert n.depth == par.depth + 1 and n.parent != n.id
            if not n.merged_from:  # one way in: the product along the path (parents come first)
                assert n.parent < n.id and math.isclose(n.path_prob, par.path_prob * n.prob, rel_tol=1e-6)
            else:  # several drafted orders reach it: their chances add up
                assert n.path_prob >= par.path_prob * n.prob * (1 - 1e-6)
                assert all(p.tree[m].depth == n.depth - 1 for m in n.merged_from)
            key = (tuple(n.positions), tuple(n.tokens))
            assert key not in kids.setdefault(n.parent, {}), "duplicate sibling"
            kids[n.parent][key] = n.id
            states[n.id] = states[n.parent] | set(zip(n.positions, n.tokens))
        # a node is (state, depth): a set committed in one step and the same set in two are different decisions
        assert len({(states[n.id], n.depth) for n in p.tree}) == len(p.tree), "a state is verified twice"
        # the oracle walk: follow the children whose edge is the standard decoder's decision at that step
        walk, node, depth = [0], 0, 0
        while s + depth < len(dec):
            want = dec[s + depth]
            child = kids.get(node, {}).get((tuple(x for x, _ in want), tuple(t for _, t in want)))
            if child is None:
                break
            walk.append(child)
            node, depth = child, depth + 1
        assert p.accepted_path == walk, f"pass {i}"
        assert [n.id for n in p.tree if n.accepted] == sorted(walk)
        a = len(walk) - 1
        accepted_edges.append(a)
        drafted = [cm for cm in p.commits if cm.drafted]
        bonus = [cm for cm in p.commits if not cm.drafted]
        assert p.commits == drafted + bonus  # drafted commits first, then the pass's own decision
        want = [(x, t, s + k) for k in range(a) for x, t in dec[s + k]]
        assert sorted((cm.position, cm.token, cm.step) for cm in drafted) == sorted(want)
        for k, nid in enumerate(walk[1:]):  # the target's decision recorded at each walked node's parent
            par = p.tree[walk[k]]
            assert (par.target_positions, par.target_tokens) == (p.tree[nid].positions, p.tree[nid].tokens)
        if bonus:
            assert tuple(sorted((cm.position, cm.token) for cm in bonus)) == dec[s + a]
            assert all(cm.step == s + a for cm in bonus)
            n_decisions = a + 1
        else:  # no bonus only when the walk completed the last window (or one holding EOS): the end
            assert i == len(spot.passes) - 1
            n_decisions = a
        # commits per pass = accepted edges + 1 (decisions; in exact mode one commit per decision)
        assert len({cm.step for cm in p.commits}) == n_decisions
        if spot.meta.mode == "exact":
            assert len(p.commits) == n_decisions
        s += n_decisions
    assert s == len(dec)
    return {"accepted": accepted_edges, "passes": len(spot.passes)}


def cfg(mode="exact", tau=0.9, T=0.0, seed=0, gen=32, budget=8, **kw) -> DecodeConfig:
    return DecodeConfig(mode=mode, threshold=tau, temperature=T, seed=seed, gen_length=gen, budget=budget, **kw)


# ------------------------------------------------------------------- exactness over many seeds
MODES = [("exact", 0.9), ("threshold", 0.3), ("threshold", 0.9)]
TEMPS = [0.0, 0.7, 1.0]
KINDS = ["block", "full", "random"]
CASES = [(k, m, tau, t) for k in KINDS for m, tau in MODES for t in TEMPS]
N_RUNS = 6


@pytest.mark.parametrize("case", CASES, ids=[f"{k}-{m}{'' if m == 'exact' else tau}-T{t:g}" for k, m, tau, t in CASES])
def test_spot_output_identical_to_standard(case, targets, random_drafter):
    """Over 6 (prompt, seed) pairs, token for token the standard output, whatever the proposer (each proposer
    takes 2 of the 6 runs, so all 27 configurations see every proposer; the drafter has random weights)."""
    kind, mode, tau, T = case
    target = targets[kind]
    names = ("training-free", "calibrated", "spot")
    accepted, draftable = 0, 0
    for r in range(N_RUNS):
        prompt = PROMPTS[r % len(PROMPTS)]
        c = cfg(mode, tau, T, seed=100 * r + 7, gen=24 + 4 * (r % 3), budget=(4, 8, 16)[r % 3])  # ragged windows
        std = decode_standard(target, prompt, c)
        spot = decode_spot(target, prompt, c, make_proposer(names[(r + r // 3) % 3], random_drafter))
        assert spot.meta.drafter == c.drafter  # the trace records the configured drafter name
        stats = check_against_standard(spot, std, c.budget, round_trip=r == 0)
        accepted += sum(stats["accepted"])
        draftable += len(std.passes) - len({tuple(p.window) for p in std.passes})
    if draftable:  # some window took more than one standard pass: the drafts were used at least once
        assert accepted > 0


@pytest.mark.parametrize("mode,tau", [("exact", 0.9), ("threshold", 0.05), ("threshold", 0.3)])
def test_random_full_attention_model(mode, tau, targets, random_drafter):
    """Full attention (semi-AR windows, no cache) with a random model whose window is smaller than 16."""
    target = targets["random-full"]
    for r, T in enumerate((0.0, 0.7, 1.0)):
        c = cfg(mode, tau, T, seed=r, gen=21)
        std = decode_standard(target, PROMPTS[r], c)
        for k, name in enumerate(("training-free", "calibrated", "spot", "spot+partner")):
            c = replace(c, budget=(2, 8, 32, 16)[k])
            check_against_standard(decode_spot(target, PROMPTS[r], c, make_proposer(name, random_drafter)), std,
                                   c.budget)


@pytest.mark.parametrize("T", [0.0, 1.0])
def test_an_exact_decode_is_the_same_run_at_every_tau(T, tiny_block_target, random_drafter):
    """tau is read in threshold mode only: the SPOT drafter reads tau among its inputs, so an exact run at tau 0.99
    that fed it 0.99 drafted other trees than at 0.9 (the app's 'Run this example yourself' of an example recorded at
    0.9 took 11 passes instead of 10). Every pass's tree and commits are the same at every tau."""
    def run(tau):
        c = cfg("exact", tau, T, seed=3, gen=32, budget=8, drafter="spot")
        return decode_spot(tiny_block_target, PROMPTS[1], c, make_proposer("spot", random_drafter))
    base = run(0.9)
    assert base.meta.threshold == 0.9
    for tau in (0.3, 0.99, 1.0):
        other = run(tau)
        assert other.meta.threshold == 0.9  # (the tau the rule held is recorded)
        assert [(p.tree, p.commits) for p in other.passes] == [(p.tree, p.commits) for p in base.passes]


def test_threshold_mode_commits_sets(targets, random_drafter):
    """The peaked random model at tau 0.3 really commits multi-position sets, drafted and accepted as sets."""
    target = targets["random"]
    multi_drafted = 0
    for r in range(4):
        c = cfg("threshold", 0.3, 1.0 if r % 2 else 0.0, seed=r, gen=32, budget=16)
        std = decode_standard(target, PROMPTS[r], c)
        assert max(len(p.commits) for p in std.passes) > 1
        spot = decode_spot(target, PROMPTS[r], c, TrainingFree())
        check_against_standard(spot, std, 16)
        for p in spot.passes:
            steps = [cm.step for cm in p.commits if cm.drafted]
            multi_drafted += any(steps.count(s) > 1 for s in set(steps))
    assert multi_drafted > 0


# -------------------------------------------------------------------------- edge geometries / EOS
class EosAt(DiffusionTarget):
    """A target that forces EOS at one absolute position (and otherwise forwards to an inner target)."""

    def __init__(self, inner, position: int):
        self.inner, self.position = inner, position
        self.info, self.tokenizer, self.device = inner.info, inner.tokenizer, inner.device

    def empty_cache(self):
        return self.inner.empty_cache()

    def forward(self, states, lo, hi, cache):
        out = self.inner.forward(states, lo, hi, cache)
        if lo <= self.position < hi:
            out.logits = out.logits.clone()
            out.logits[:, self.position - lo, self.info.eos_ids[0]] = 50.0
        return out

    def extend_cache(self, cache, out, row, upto):
        return self.inner.extend_cache(cache, out, row, upto)


def _eos_target(inner, offset_in_gen: int, prompt: str):
    return EosAt(inner, len(inner.encode(prompt)) + offset_in_gen)


@pytest.mark.parametrize("kind", ["block", "full"])
@pytest.mark.parametrize("mode", ["exact", "threshold"])
def test_eos_ends_the_decode_identically(kind, mode, targets, random_drafter):
    """EOS in a window: the decode stops after that window (no fused first decision of the next one)."""
    prompt = PROMPTS[1]
    target = _eos_target(targets[kind], 5, prompt)
    for T in (0.0, 1.0):
        c = cfg(mode, 0.05, T, seed=3, gen=40, budget=8)
        std = decode_standard(target, prompt, c)
        assert len(std.tokens) == 5  # generation ends at the forced EOS
        for name in ("training-free", "spot"):
            spot = decode_spot(target, prompt, c, make_proposer(name, random_drafter))
            check_against_standard(spot, std, 8)
            last_window_hi = max(p.window[1] for p in std.passes)
            assert max(cm.position for p in spot.passes for cm in p.commits) < last_window_hi


@pytest.mark.parametrize("prompt_tokens,gen", [(15, 17), (16, 16), (3, 30), (10, 1)])
def test_window_geometry_edge_cases(prompt_tokens, gen, targets, tiny_block_target):
    """Windows of one position (first window completed by the prefill decision, a last window of one position),
    aligned prompts, a one-token generation."""
    # a prompt of exactly `prompt_tokens` tokens
    ids = tiny_block_target.encode("ROMEO.\nO my love, what light through yonder window breaks? It is the east")
    prompt = tiny_block_target.decode(ids[:prompt_tokens])
    if len(tiny_block_target.encode(prompt)) != prompt_tokens:
        pytest.skip("tokenizer round trip changed the length")
    for kind in ("block", "full"):
        for T in (0.0, 1.0):
            c = cfg("exact", 0.9, T, seed=1, gen=gen, budget=8)
            std = decode_standard(targets[kind], prompt, c)
            spot = decode_spot(targets[kind], prompt, c, TrainingFree())
            check_against_standard(spot, std, 8)


# ----------------------------------------------------------------------------------- budgets
@pytest.mark.parametrize("budget", [1, 2, 8, 16, 32, 64])
def test_budget_respected(budget, tiny_block_target, random_drafter):
    target = tiny_block_target
    for mode, tau in (("exact", 0.9), ("threshold", 0.05)):
        c = cfg(mode, tau, 1.0, seed=budget, gen=32, budget=budget)
        std = decode_standard(target, PROMPTS[0], c)
        for name in ("training-free", "calibrated", "spot"):
            spot = decode_spot(target, PROMPTS[0], c, make_proposer(name, random_drafter))
            check_against_standard(spot, std, budget)
            assert all(p.states == len(p.tree) - sum(n.reused for n in p.tree) <= budget for p in spot.passes[1:])
            if budget == 1:  # nothing drafted: exactly the standard decoder's passes
                assert len(spot.passes) == len(std.passes)
                assert spot.counters.drafted_nodes == 0 and spot.counters.accepted_drafts == 0
            else:
                assert max(p.states for p in spot.passes) > 1


# ---------------------------------------------------------------------------------- coupled noise
def test_without_coupled_noise_outputs_identical_but_fewer_accepted(tiny_block_target, random_drafter):
    """The ablation only changes what the drafter sees, never the output; at T=1 coupled noise accepts more."""
    target = tiny_block_target
    acc = {True: [0, 0], False: [0, 0]}  # coupled -> [commits, passes]
    for r in range(4):
        for coupled in (True, False):
            c = cfg("exact", 0.9, 1.0, seed=40 + r, gen=32, budget=16, coupled_noise=coupled)
            std = decode_standard(target, PROMPTS[r], c)
            spot = decode_spot(target, PROMPTS[r], c, TrainingFree())
            check_against_standard(spot, std, 16)
            assert spot.meta.coupled_noise is coupled
            acc[coupled][0] += spot.counters.commits
            acc[coupled][1] += spot.counters.target_passes
        # also threshold mode and the random drafter: identical output without coupling
        c = cfg("threshold", 0.05, 0.7, seed=r, gen=24, budget=8, coupled_noise=False)
        std = decode_standard(target, PROMPTS[r], c)
        check_against_standard(decode_spot(target, PROMPTS[r], c, SpotProposer(random_drafter)), std, 8)
    mean_coupled = acc[True][0] / acc[True][1]
    mean_indep = acc[False][0] / acc[False][1]
    assert acc[True][0] == acc[False][0]
    print(f"mean accepted length at T=1: coupled {mean_coupled:.2f}, independent noise {mean_indep:.2f}")
    assert mean_coupled > 1.25 * mean_indep, (mean_coupled, mean_indep)


# ------------------------------------------------------------------------- hand-built trees
class ScriptedProposer(Proposer):
    """Drafts from the standard decoder's known trajectory.

    The main chain follows `script` ("T": the true decision at that depth, "W": the true position(s) with a wrong
    token); every true node also gets a wrong-token sibling when `siblings` is set. Only main-chain nodes are
    expanded. Probabilities 0.9 (chain) and 0.05 (sibling) make the best-first ids of the chain 1, 2, 3, ..."""

    def __init__(self, decisions: list[tuple], script: str, siblings: bool = False, vocab: int = 300):
        self.dec, self.script, self.siblings, self.vocab = decisions, script, siblings, vocab
        self.labels: dict = {}

    @staticmethod
    def _wrong(tokens):
        t0 = tokens[0]
        return (3 if t0 != 3 else 4,) + tuple(tokens[1:])

    def prepare(self, view, max_depth):
        self.labels = {}
        return None

    def children(self, ctx, view, node, remaining):
        if node.depth > 0 and self.labels.get((node.parent, node.offsets, node.tokens)) != "chain":
            return []
        depth = node.depth  # this decision has step view.step + depth and is the edge of depth + 1
        if depth >= len(self.script) or view.step + depth >= len(self.dec):
            return []
        want = self.dec[view.step + depth]
        offs = tuple(x - view.lo for x, _ in want)
        toks = tuple(t for _, t in want)
        if not all(0 <= o < view.width and bool(remaining[o]) for o in offs):
            return []  # the true decision is in another window (or, after a wrong edge, impossible)
        main = toks if self.script[depth] == "T" else self._wrong(toks)
        out = [(offs, main, 0.9)]
        self.labels[(node.id, offs, main)] = "chain"
        if self.siblings and self.script[depth] == "T":
            out.append((offs, self._wrong(toks), 0.05))
            self.labels[(node.id, offs, self._wrong(toks))] = "sibling"
        return out


def _available(dec, s: int, lo: int, hi: int) -> int:
    """How many consecutive true decisions from step s lie in the window [lo, hi)."""
    k = 0
    while s + k < len(dec) and all(lo <= x < hi for x, _ in dec[s + k]):
        k += 1
    return k


@pytest.mark.parametrize("kind", ["block", "full", "random"])
@pytest.mark.parametrize("mode,T", [("exact", 0.0), ("exact", 0.7), ("threshold", 1.0)])
def test_hand_built_tree_known_accepted_path(kind, mode, T, targets):
    target = targets[kind]
    tau = 0.3 if kind == "random" else 0.05
    chain = 5
    c = cfg(mode, tau, T, seed=9, gen=32, budget=2 * chain + 1)
    std = decode_standard(target, PROMPTS[2], c)
    dec = std_decisions(std)
    spot = decode_spot(target, PROMPTS[2], c, ScriptedProposer(dec, "T" * chain, siblings=True))
    check_against_standard(spot, std, c.budget)
    s, ks = 1, []
    for i, p in enumerate(spot.passes[1:], start=1):
        lo, hi = p.window
        k = min(chain, _available(dec, s, lo, hi))
        ks.append(k)
        # the chain gets ids 1..k (0.9^d > 0.05), its wrong siblings come after, none accepted
        assert p.accepted_path == list(range(k + 1))
        assert [n.depth for n in p.tree[: k + 1]] == list(range(k + 1))
        siblings = [n for n in p.tree if n.id > k]
        assert len(siblings) == k and not any(n.accepted for n in siblings)
        assert all(n.prob == pytest.approx(0.05) for n in siblings)
        assert sum(cm.drafted for cm in p.commits) == sum(len(dec[s + j]) for j in range(k))
        n_dec = len({cm.step for cm in p.commits})
        assert n_dec == k + 1 or (n_dec == k and i == len(spot.passes) - 1)
        s += n_dec
    if kind == "random" and mode == "threshold":  # big commit sets: at most 4 decisions per window of 8
        assert max(ks) >= 2 and len(spot.passes) < len(std.passes)
    else:  # a perfect chain of 5: most passes make 6 decisions, far fewer passes than the standard decoder
        assert ks.count(chain) >= 2 and len(spot.passes) < len(std.passes) / 2


@pytest.mark.parametrize("script,expect", [("TTW", 2), ("TWT", 1), ("WTT", 0), ("TTTW", 3)])
@pytest.mark.parametrize("mode,T", [("exact", 0.0), ("exact", 1.0), ("threshold", 1.0)])
def test_acceptance_walk_stops_at_first_mismatch(script, expect, mode, T, targets):
    """A chain whose n-th drafted decision is wrong accepts exactly n-1 edges; correct-looking decisions drafted
    under the wrong one are never accepted (their states differ from the true states)."""
    target = targets["block"]
    c = cfg(mode, 0.05, T, seed=2, gen=32, budget=8)
    std = decode_standard(target, PROMPTS[3], c)
    dec = std_decisions(std)
    spot = decode_spot(target, PROMPTS[3], c, ScriptedProposer(dec, script))
    check_against_standard(spot, std, 8)
    s, full = 1, 0
    for i, p in enumerate(spot.passes[1:], start=1):
        lo, hi = p.window
        avail = _available(dec, s, lo, hi)
        n_dec = len({cm.step for cm in p.commits})
        if avail >= len(script) + 1:  # the whole script was drafted and a true decision follows it
            full += 1
            assert p.accepted_path == list(range(expect + 1))
            assert len(p.tree) == len(script) + 1
            assert n_dec == expect + 1  # accepted edges + 1
            drafted_steps = {cm.step for cm in p.commits if cm.drafted}
            assert drafted_steps == set(range(s, s + expect))
            bonus = [cm for cm in p.commits if not cm.drafted]
            # the bonus is the true decision where the drafted one was wrong: same positions, the right tokens
            assert tuple(sorted((cm.position, cm.token) for cm in bonus)) == dec[s + expect]
            wrong = p.tree[expect + 1]
            assert wrong.positions == [x for x, _ in dec[s + expect]] and not wrong.accepted
            assert wrong.tokens != [t for _, t in dec[s + expect]]
            assert p.tree[expect].target_tokens == [t for _, t in dec[s + expect]]
        s += n_dec
    assert full >= 2


# --------------------------------------------------------------------------------- tree building
def _view(target, prompt, mode="exact", tau=0.9, T=0.0, seed=0, gen=32) -> RootView:
    """A root view from the target's real first-pass logits (s1 = the state after the first decision)."""
    from spotviz.decision import decide, masked_log_softmax

    ids = target.encode(prompt)
    total = len(ids) + gen
    state = torch.full((total,), target.info.mask_id, dtype=torch.long)
    state[: len(ids)] = torch.tensor(ids)
    lo, hi = target.windows(len(ids), total)[0]
    out = target.forward(state.unsqueeze(0), lo, hi, target.empty_cache())
    rule = DecisionRule(mode, T, tau)
    noise = GumbelNoise(seed, target.info.vocab_size)
    d = decide(out.logits, (state[lo:hi] == target.info.mask_id)[None], [0], lo, rule, noise, target.info.mask_id)[0]
    logp, offs = masked_log_softmax(out.logits, target.info.mask_id), d.offsets
    state[[lo + o for o in offs]] = torch.tensor(d.tokens)
    return RootView(lo=lo, hi=hi, state=state, logp=logp[0], masked=state[lo:hi] == target.info.mask_id,
                    first=list(offs), step=1, rule=rule, noise=noise)


@pytest.mark.parametrize("name", ["training-free", "calibrated", "spot", "spot+partner"])
@pytest.mark.parametrize("mode,tau,T", [("exact", 0.9, 0.0), ("exact", 0.9, 1.0), ("threshold", 0.05, 1.0)])
def test_build_tree_is_best_first_and_within_budget(name, mode, tau, T, targets, random_drafter):
    target = targets["block"]
    view = _view(target, PROMPTS[3], mode, tau, T, seed=4)
    assert int(view.masked.sum()) >= 3
    for budget in (1, 2, 5, 16, 64):
        nodes = build_tree(view, make_proposer(name, random_drafter), budget)
        assert 1 <= len(nodes) <= budget
        if 1 < budget <= 16 and name != "calibrated":  # plenty of candidates (the template has few ranks)
            assert len(nodes) == budget
        assert nodes[0].path_prob == 1.0 and nodes[0].parent == -1
        if not any(n.merged_from for n in nodes):  # (a merge raises the chances of what lies past it)
            for a, b in zip(nodes, nodes[1:]):
                assert a.added_prob >= b.added_prob  # heap order: insertion order is non-increasing path probability
        states = set()
        for n in nodes[1:]:
            par = nodes[n.parent]
            assert n.depth == par.depth + 1 and n.path == par.path + n.offsets
            # the chance of reaching a node: its path's product, plus every other drafted order of the same state
            assert n.path_prob >= n.added_prob * (1 - 1e-9)
            if not n.merged_from and not any(nodes[a].merged_from for a in _ancestors(nodes, n)):
                assert n.path_prob == pytest.approx(par.path_prob * n.prob)
            for m in n.merged_from:  # a merged edge: from a node one step shallower whose drafted edge lands here
                assert nodes[m].depth == n.depth - 1 and nodes[m].children.get(
                    next(k for k, c in nodes[m].children.items() if c == n.id)) == n.id
                assert set(nodes[m].path) | set(_edge_offsets(nodes[m], n.id)) == set(n.path)
            assert (frozenset(n.state), n.depth) not in states, "a state is in the tree twice"
            states.add((frozenset(n.state), n.depth))
            assert 0 < n.prob <= 1 + 1e-6
            assert par.children[(n.offsets, n.tokens)] == n.id
            assert len(set(n.path)) == len(n.path)  # a position is committed at most once on a path
            assert all(bool(view.masked[o]) for o in n.path)
            if mode == "exact":
                assert len(n.offsets) == 1
            assert n.tokens and all(t != target.info.mask_id for t in n.tokens)
        rows = node_states(view, nodes)
        assert rows.shape == (len(nodes), view.state.shape[0])
        for n in nodes:  # each state is s1 plus the node's drafted path
            diff = (rows[n.id] != view.state).nonzero().flatten().tolist()
            assert sorted(diff) == sorted(view.lo + o for o in n.path)


def _ancestors(nodes, n):
    while n.parent > 0:
        n = nodes[n.parent]
        yield n.id


def _edge_offsets(parent, child_id):
    return next(k for k, c in parent.children.items() if c == child_id)[0]


class _AnyOrder(Proposer):
    """Every remaining position next, equally likely, always token 5: orders differ, states repeat."""

    def prepare(self, view, max_depth):
        return None

    def children(self, ctx, view, node, remaining):
        left = np.flatnonzero(remaining)
        return [((int(o),), (5,), 1.0 / len(left)) for o in left]


def test_two_orders_of_the_same_commits_are_one_node(tiny_block_target):
    """a-then-b and b-then-a reach one state: it is verified once, both edges lead to it, and its chance of
    being reached is the sum over both orders (here certain), which ranks its own children first."""
    view = _view(tiny_block_target, PROMPTS[0], "exact", 0.9, 0.0)
    masked = np.flatnonzero(view.masked.numpy())
    view.masked[:] = False
    view.masked[masked[:3]] = True  # three slots left to decide: a, b, c
    nodes = build_tree(view, _AnyOrder(), 10)
    states = [(frozenset(n.path), n.depth) for n in nodes]
    assert len(set(states)) == len(nodes)
    pairs = [n for n in nodes if n.depth == 2]
    assert len(pairs) == 3 and all(len(n.merged_from) == 1 for n in pairs)  # {a,b}, {a,c}, {b,c}: 2 ways in each
    for n in pairs:
        assert n.path_prob == pytest.approx(2 * (1 / 3) * (1 / 2))
        for m in [n.parent, *n.merged_from]:  # both parents' edges lead here
            assert n.id in nodes[m].children.values()
    # 1 + 3 + 3 + 1 states cover every order of three commits (a tree needs 1 + 3 + 6 + 6)
    (last,) = [n for n in nodes if n.depth == 3]
    assert len(nodes) == 8 and len(last.merged_from) == 2 and last.path_prob == pytest.approx(1.0)


def test_a_walk_through_a_merged_edge_is_recorded_as_walked(tiny_block_target):
    """The target commits b then a, where the tree first reached {a, b} through a: the walk moves along the
    merged edge, and the record draws the node under the parent the walk came from (the edge that was walked),
    listing the other order in merged_from; the tree view draws that one as a dotted edge."""
    from spotviz.decision import Decision
    from spotviz.samplers.verify import Verified, accept_walk, tree_record
    from spotviz.views.timeline import tree_frame

    view = _view(tiny_block_target, PROMPTS[0], "exact", 0.9, 0.0)
    masked = np.flatnonzero(view.masked.numpy())
    view.masked[:] = False
    view.masked[masked[:2]] = True
    a, b = (int(o) for o in masked[:2])
    nodes = build_tree(view, _AnyOrder(), 8)
    node_a = next(n for n in nodes if n.path == (a,))
    node_b = next(n for n in nodes if n.path == (b,))
    both = next(n for n in nodes if n.depth == 2)
    assert both.parent == node_a.id and both.merged_from == [node_b.id]  # first reached through a
    decide = {0: Decision([b], [5], [0.9]), node_b.id: Decision([a], [5], [0.8]), node_a.id: Decision([b], [5], [0.8]),
              both.id: None}
    v = Verified(None, [decide[n.id] for n in nodes], False, 0.0)
    walk, accepted = accept_walk(nodes, v, view.lo, 1)
    assert walk == [0, node_b.id, both.id] and [c.position for c in accepted] == [view.lo + b, view.lo + a]
    rec = {n.id: n for n in tree_record(nodes, walk, v, view.lo)}
    assert rec[both.id].parent == node_b.id and rec[both.id].positions == [view.lo + a]
    assert rec[both.id].merged_from == [node_a.id] and rec[both.id].accepted
    from spotviz.trace import PassRecord
    frame = tree_frame(PassRecord(1, "verify", [view.lo, view.hi], len(nodes), accepted, list(rec.values()), walk),
                       {})
    drawn = {row[0]: row for row in frame["nodes"]}
    assert drawn[both.id][1] == node_b.id and drawn[both.id][8] == [node_a.id] and drawn[both.id][6] == 1
    assert "2 drafted orders" in drawn[both.id][5] and frame["merged"] == 1


class _Scripted(Proposer):
    """Children by the path's offsets: {path: [(offset, p)]}, token 5 (a fixed tree to walk)."""

    def __init__(self, script):
        self.script = script

    def prepare(self, view, max_depth):
        return None

    def children(self, ctx, view, node, remaining):
        return [((o,), (5,), p) for o, p in self.script.get(node.path, []) if remaining[o]]


def test_the_walk_follows_the_target_to_a_state_drafted_on_another_branch(tiny_block_target):
    """The tree drafted a-then-b (and c after it) and b alone; the target commits b, then a. {b} drafted no child
    a, but the state {a, b} is in the tree one step deeper (through a): the walk goes on there and on down the
    drafted edge c. The record draws {a, b} under {b} as an undrafted step (probability 0, `found`), with the
    drafted order as its dotted edge, and the tree view says so."""
    from spotviz.decision import Decision
    from spotviz.samplers.verify import Verified, accept_walk, tree_record
    from spotviz.trace import PassRecord
    from spotviz.views.timeline import tree_frame

    view = _view(tiny_block_target, PROMPTS[0], "exact", 0.9, 0.0)
    masked = np.flatnonzero(view.masked.numpy())
    view.masked[:] = False
    view.masked[masked[:3]] = True
    a, b, c = (int(o) for o in masked[:3])
    nodes = build_tree(view, _Scripted({(): [(a, 0.6), (b, 0.4)], (a,): [(b, 1.0)], (a, b): [(c, 1.0)]}), 5)
    by_path = {n.path: n for n in nodes}
    assert set(by_path) == {(), (a,), (a, b), (a, b, c), (b,)} and not by_path[(b,)].children
    decide = {(): Decision([b], [5], [0.9]), (b,): Decision([a], [5], [0.8]), (a, b): Decision([c], [5], [0.8]),
              (a,): Decision([c], [5], [0.8]), (a, b, c): None}
    v = Verified(None, [decide[n.path] for n in nodes], False, 0.0)
    walk, accepted = accept_walk(nodes, v, view.lo, 1)
    assert walk == [0, by_path[(b,)].id, by_path[(a, b)].id, by_path[(a, b, c)].id]
    assert [c_.position for c_ in accepted] == [view.lo + b, view.lo + a, view.lo + c]
    rec = {n.id: n for n in tree_record(nodes, walk, v, view.lo)}
    step = rec[by_path[(a, b)].id]
    assert step.found and step.parent == by_path[(b,)].id and step.positions == [view.lo + a] and step.prob == 0.0
    assert step.merged_from == [by_path[(a,)].id] and step.accepted and not step.known and not step.near
    assert sum(n.found for n in rec.values()) == 1
    frame = tree_frame(PassRecord(1, "verify", [view.lo, view.hi], len(nodes), accepted, list(rec.values()), walk),
                       {})
    drawn = {row[0]: row for row in frame["nodes"]}
    assert "not drafted from here" in drawn[step.id][5] and frame["found"] == 1 and frame["depth"] == 3


class _Token(Proposer):
    """Every remaining position next, equally likely, with token `token` (an end of text, say)."""

    def __init__(self, token: int):
        self.token = token

    def prepare(self, view, max_depth):
        return None

    def children(self, ctx, view, node, remaining):
        left = np.flatnonzero(remaining)
        return [((int(o),), (self.token,), 1.0 / len(left)) for o in left]


def _ahead(view: RootView, width: int) -> RootView:
    """The next window's view for `view` (its stale distributions: any will do for the tree's shape)."""
    return RootView(lo=view.hi, hi=view.hi + width, state=view.state, logp=view.logp[:width],
                    masked=torch.ones(width, dtype=torch.bool), first=[], step=view.step, rule=view.rule,
                    noise=view.noise)


def test_a_tree_goes_on_past_the_window_end_only_from_complete_states(tiny_block_target):
    """With the next window's view, a node that completes its window gets children there (offsets counted from the
    window's start, past its width), and no other node does; no edge completes the next window; a drafted end of
    text ends the text, so nothing is drafted past it."""
    view = _view(tiny_block_target, PROMPTS[0], "exact", 0.9, 0.0)
    w = view.width
    masked = np.flatnonzero(view.masked.numpy())
    view.masked[:] = False
    view.masked[masked[:2]] = True  # two slots left in this window
    view.ahead = _ahead(view, 3)
    nodes = build_tree(view, _AnyOrder(), 40)
    for n in nodes[1:]:
        here = [o for o in n.path if o < w]
        there = [o for o in n.path if o >= w]
        assert not there or (len(here) == 2 and n.path[:2] == tuple(here))  # this window first, then the next
        assert len(there) < 3  # the next window (3 positions) is never completed
    assert max(len([o for o in n.path if o >= w]) for n in nodes) == 2
    rows = node_states(view, nodes)
    deep = max(nodes, key=lambda n: n.depth)
    assert sorted((rows[deep.id] != view.state).nonzero().flatten().tolist()) == sorted(view.lo + o for o in deep.path)
    view.eos_ids = (5,)  # the same tree where every drafted token ends the text: nothing past the window's end
    assert all(o < w for n in build_tree(view, _Token(5), 40) for o in n.path)
    assert any(o >= w for n in build_tree(view, _Token(6), 40) for o in n.path)


def _crossed(trace) -> list:
    """Drafted commits of a pass that lie past its window's end."""
    return [c for p in trace.passes[1:] for c in p.commits if c.drafted and c.position >= p.window[1]]


@pytest.mark.parametrize("kind", ["block", "random", "full"])
def test_trees_that_cross_the_window_end_decode_exactly(kind, targets, random_drafter):
    """A tree may go on past its window's end (the walk then crosses into the next window in the same pass):
    token for token the standard decoder's output, pass by pass the oracle's walk, whatever the proposer; some
    walks do cross; with cross_window off, or in threshold mode, none does."""
    target, crossed = targets[kind], 0
    for name in ("training-free", "calibrated", "spot", "spot+partner"):
        for T in (0.0, 1.0):
            for i, prompt in enumerate(PROMPTS):
                c = cfg("exact", T=T, seed=i, gen=40, budget=16)
                std = decode_standard(target, prompt, c)
                spot = decode_spot(target, prompt, c, make_proposer(name, random_drafter))
                check_against_standard(spot, std, 16)
                crossed += len(_crossed(spot))
                if i < 2:
                    off = replace(c, cross_window=False)
                    off = decode_spot(target, prompt, off, make_proposer(name, random_drafter))
                    check_against_standard(off, std, 16)
                    assert not _crossed(off)
    assert crossed > 0
    for i, prompt in enumerate(PROMPTS[:3]):  # threshold mode: trees stay inside their window (DESIGN section 3)
        c = cfg("threshold", tau=0.3, T=1.0, seed=i, gen=40, budget=16)
        sets = decode_spot(target, prompt, c, make_proposer("training-free", random_drafter))
        check_against_standard(sets, decode_standard(target, prompt, c), 16)
        assert not _crossed(sets)


def test_a_target_without_blockwise_exact_logits_never_crosses(tiny_block_dir, random_drafter):
    """Crossing needs a forward whose window logits do not depend on how far a call reaches (info.blockwise_exact);
    a target without it keeps every tree inside its window, and stays exact."""
    from spotviz.registry import load_embedded

    target = load_embedded(tiny_block_dir, device="cpu")
    target.info.blockwise_exact = False
    for i, prompt in enumerate(PROMPTS[:4]):
        c = cfg("exact", T=1.0, seed=i, gen=40, budget=16)
        spot = decode_spot(target, prompt, c, make_proposer("calibrated", random_drafter))
        check_against_standard(spot, decode_standard(target, prompt, c), 16)
        assert not _crossed(spot)


@pytest.mark.parametrize("name", ["training-free", "spot"])
def test_min_path_prob_prunes_unlikely_nodes(name, targets, random_drafter):
    view = _view(targets["block"], PROMPTS[3], "exact", 0.9, 1.0, seed=4)
    full = build_tree(view, make_proposer(name, random_drafter), 32)
    cut = sorted(n.path_prob for n in full[1:])[len(full) // 2]  # the median drafted node
    pruned = build_tree(view, make_proposer(name, random_drafter), 32, min_path_prob=cut)
    assert 1 < len(pruned) < len(full)
    assert all(n.path_prob >= cut for n in pruned)
    # pruning only stops the best-first growth early: the kept nodes are the full tree's first ones
    assert [(n.parent, n.offsets, n.tokens) for n in pruned] == [(n.parent, n.offsets, n.tokens)
                                                                for n in full[: len(pruned)]]
    assert len(build_tree(view, make_proposer(name, random_drafter), 32, min_path_prob=0.999)) == 1


@pytest.mark.parametrize("mode,tau,T", [("exact", 0.9, 0.0), ("exact", 0.9, 1.0), ("threshold", 0.3, 1.0)])
def test_pruned_trees_stay_exact(mode, tau, T, tiny_block_target, random_drafter):
    for r in range(3):
        c = cfg(mode, tau, T, seed=60 + r, gen=32, budget=16, min_path_prob=0.2, drafter=learned_drafter(mode))
        std = decode_standard(tiny_block_target, PROMPTS[r], c)
        spot = decode_spot(tiny_block_target, PROMPTS[r], c, SpotProposer(random_drafter))
        check_against_standard(spot, std, 16)
        assert spot.meta.min_path_prob == 0.2
        for p in spot.passes[1:]:
            assert all(n.path_prob >= 0.2 for n in p.tree if n.parent >= 0)


@pytest.mark.parametrize("bad", [-0.1, 1.0, "x", True])
def test_min_path_prob_validated(bad):
    with pytest.raises(DecodeError, match="min_path_prob"):
        cfg(min_path_prob=bad)


def test_token_branching_drafts_second_token(tiny_block_target, random_drafter):
    view = _view(tiny_block_target, PROMPTS[0], "exact", 0.9, 0.0)
    nodes = build_tree(view, TrainingFree(token_branching=True), 32)
    by_pos: dict = {}
    for n in nodes[1:]:
        by_pos.setdefault((n.parent, n.offsets), set()).add(n.tokens)
    assert any(len(v) > 1 for v in by_pos.values())
    nodes = build_tree(view, TrainingFree(token_branching=False), 32)
    assert all(len({n.tokens for n in nodes[1:] if (n.parent, n.offsets) == k}) == 1
               for k in {(n.parent, n.offsets) for n in nodes[1:]})


@pytest.mark.parametrize("learned", [False, True])
def test_threshold_token_branching_adds_a_runner_up_twin_of_the_likeliest_set(tiny_block_target, random_drafter,
                                                                              learned):
    def twins(branching):
        prop = SpotProposer(random_drafter, token_branching=branching) if learned else \
            TrainingFree(token_branching=branching)
        nodes = build_tree(_view(tiny_block_target, PROMPTS[0], "threshold", 0.9, 0.0), prop, 32)
        groups: dict = {}
        for n in nodes[1:]:
            groups.setdefault((n.parent, n.offsets), []).append(n)
        return nodes, [g for g in groups.values() if len(g) > 1]

    nodes, groups = twins(True)
    assert groups
    for group in groups:  # the set as drafted (its first node) and twins, each with one position holding another token
        drafted = group[0]
        assert all(len(t.tokens) == len(drafted.tokens) for t in group)
        assert all(sum(x != y for x, y in zip(drafted.tokens, t.tokens)) == 1 for t in group[1:])
        assert len({t.tokens for t in group}) == len(group)
    for parent in {n.parent for n in nodes[1:]}:  # siblings still share one distribution (or less, once pruned)
        assert sum(n.prob for n in nodes[1:] if n.parent == parent) <= 1 + 1e-6
    assert not twins(False)[1]


def test_the_likeliest_set_has_twins_at_its_least_certain_positions():
    """set_children: the likeliest set branches at its `twin_positions` least certain positions (the runner-up token at
    one of them in each twin), the next ones at their least certain one; with independent keeps the set as drafted
    and its twins share the set's probability (p prod keep, p (1 - keep_i) prod of the others), so the candidates
    still sum to at most 1."""
    from spotviz.drafter.proposers.common import set_children

    class Ctx:
        tok1 = np.arange(10, 18)[None]
        tok2 = np.arange(20, 28)[None]

        def d(self, node):
            return 0

    q = np.array([0.9, 0.9, 0.9, 0.9, 0.8, 0.1, 0.1, 0.1])
    keep = np.array([0.6, 0.7, 0.8, 0.95, 1.0, 0.5, 0.5, 0.5])
    remaining = np.ones(8, bool)
    plain = set_children(Ctx(), None, q, remaining)
    out = set_children(Ctx(), None, q, remaining, keep, twin_positions=3)
    best, p = plain[0][0], plain[0][2]
    assert best == (0, 1, 2, 3, 4)
    family = {toks: prob for offs, toks, prob in out if offs == best}
    assert family[(10, 11, 12, 13, 14)] == pytest.approx(p * 0.6 * 0.7 * 0.8)
    assert family[(20, 11, 12, 13, 14)] == pytest.approx(p * 0.4 * 0.7 * 0.8)
    assert family[(10, 21, 12, 13, 14)] == pytest.approx(p * 0.6 * 0.3 * 0.8)
    assert family[(10, 11, 22, 13, 14)] == pytest.approx(p * 0.6 * 0.7 * 0.2)
    assert len(family) == 4  # (the fourth least certain position, keep 0.95, is not branched on)
    for offs, _, _ in plain[1:3]:  # the next sets: one twin each, at their least certain position
        assert sum(o == offs for o, _, _ in out) == 2
    assert sum(family.values()) <= p and sum(prob for *_, prob in out) <= 1 + 1e-9


def test_mix_candidates_sums_the_experts_shares():
    from spotviz.drafter.tree import mix_candidates

    a = [((1, 2), (7, 8), 0.6), ((1,), (7,), 0.4)]
    b = [((1,), (7,), 0.9), ((3,), (5,), 0.1)]
    mixed = mix_candidates((0.5, a), (0.5, b))
    assert [(o, t) for o, t, _ in mixed] == [((1,), (7,)), ((1, 2), (7, 8)), ((3,), (5,))]
    assert [p for *_, p in mixed] == pytest.approx([0.65, 0.3, 0.05])
    assert mix_candidates((1.0, a), (0.0, b))[:2] == sorted(a, key=lambda c: -c[2])


@pytest.mark.parametrize("mode,T", [("threshold", 0.0), ("threshold", 1.0), ("exact", 0.0), ("exact", 1.0)])
def test_spot_hedges_its_heads_with_a_partner(mode, T, tiny_block_target, random_drafter):
    """With a partner, the SPOT proposer's children are the mixture (1 - w) P_heads + w P_partner of its heads'
    candidates and the partner's (SPOT-Sets: the stale threshold rule; exact mode: a calibrated template);
    with weight 0 or no partner, the heads' alone."""
    view = _view(tiny_block_target, PROMPTS[3], mode, 0.05, T, seed=3)
    root = build_tree(view, TrainingFree(), 1)[0]
    remaining = view.masked.numpy().copy()
    partner = TrainingFree() if mode == "threshold" else Calibrated(TABLE)
    theirs = partner.children(partner.prepare(view, 4), view, root, remaining)
    alone = SpotProposer(random_drafter)
    own = alone.children(alone.prepare(view, 4), view, root, remaining)
    assert {(o, t) for o, t, _ in own} != {(o, t) for o, t, _ in theirs}  # two different experts here
    off = SpotProposer(random_drafter, partner=partner, partner_weight=0.0)
    assert off.children(off.prepare(view, 4), view, root, remaining) == own
    for w in (0.5, 0.2):
        hedged = SpotProposer(random_drafter, partner=partner, partner_weight=w)
        got = {(o, t): p for o, t, p in hedged.children(hedged.prepare(view, 4), view, root, remaining)}
        want: dict = {}
        for share, cands in ((1 - w, own), (w, theirs)):
            for o, t, p in cands:
                want[(o, t)] = want.get((o, t), 0.0) + share * p
        assert got.keys() == want.keys()
        assert all(got[k] == pytest.approx(want[k]) for k in want)
    assert (theirs[0][0], theirs[0][1]) in got  # the partner's likeliest candidate is drafted


# ------------------------------------------------------------------------------- the drafter
def test_drafter_parameter_count():
    n = SpotDrafter(DrafterConfig()).n_params()
    print(f"SPOT drafter parameters: {n:,}")
    assert 558_000 <= n <= 682_000


def test_drafter_save_load_round_trip(tmp_path, random_drafter, tiny_block_target):
    # weights are stored as bf16 (loaded back as float32): round them first so the round trip is exact
    with torch.no_grad():
        for p in random_drafter.parameters():
            p.copy_(p.to(torch.bfloat16).float())
    random_drafter.save(tmp_path / "d", extra={"note": "test"})
    from safetensors.torch import load_file
    assert all(v.dtype == torch.bfloat16 for v in load_file(str(tmp_path / "d" / "drafter.safetensors")).values())
    meta = json.loads((tmp_path / "d" / "drafter.json").read_text())
    assert meta["n_params"] == random_drafter.n_params() and meta["note"] == "test"
    loaded = SpotDrafter.load(tmp_path / "d")
    assert not loaded.training
    feats = torch.randn(2, 16, DrafterConfig().n_features)
    with torch.no_grad():
        a, b = random_drafter(feats), loaded(feats)
    for k in a:
        assert torch.equal(a[k], b[k]), k
    # identical drafts -> identical trees
    view = _view(tiny_block_target, PROMPTS[0], "exact", 0.9, 1.0, seed=3)
    ta = build_tree(view, SpotProposer(random_drafter), 16)
    tb = build_tree(view, SpotProposer(loaded), 16)
    assert [(n.parent, n.offsets, n.tokens, n.path_prob) for n in ta] == \
        [(n.parent, n.offsets, n.tokens, n.path_prob) for n in tb]


def _bad_copy(src, dst, what: str):
    shutil.copytree(src, dst)
    w, j = dst / "drafter.safetensors", dst / "drafter.json"
    if what == "garbage-weights":
        w.write_bytes(b"\x00\x01 not a safetensors file" * 10)
    elif what == "truncated-weights":
        w.write_bytes(w.read_bytes()[: w.stat().st_size // 2])
    elif what == "no-weights":
        w.unlink()
    elif what == "bad-json":
        j.write_text("{ not json")
    elif what == "json-list":
        j.write_text("[1, 2, 3]")
    elif what == "wrong-shape":
        cfg = json.loads(j.read_text())
        cfg["d_model"] = 64
        cfg["d_ff"] = 100
        j.write_text(json.dumps(cfg))
    elif what == "bad-type":
        cfg = json.loads(j.read_text())
        cfg["n_layers"] = "three"
        j.write_text(json.dumps(cfg))
    elif what == "bad-heads":
        cfg = json.loads(j.read_text())
        cfg["n_heads"] = 5
        j.write_text(json.dumps(cfg))
    return dst


BAD = ["garbage-weights", "truncated-weights", "no-weights", "bad-json", "json-list", "wrong-shape", "bad-type",
       "bad-heads"]


@pytest.mark.parametrize("what", BAD)
def test_corrupt_drafter_files_raise_value_error(what, tmp_path, random_drafter, tiny_block_target):
    random_drafter.save(tmp_path / "ok")
    bad = _bad_copy(tmp_path / "ok", tmp_path / "bad", what)
    with pytest.raises(ValueError) as e:
        SpotDrafter.load(bad)
    msg = str(e.value)
    assert "drafter" in msg and str(bad) in msg, msg
    # through the store: a DecodeError (a ValueError) naming the drafter
    root = tmp_path / "store"
    shutil.copytree(bad, root / "spot")
    with pytest.raises(DecodeError, match="cannot load drafter 'spot'"):
        load_proposer("spot", tiny_block_target, "exact", folder=root)


def test_drafter_reads_the_temperature(random_drafter, tiny_block_target):
    """The temperature is a feature, and the coupled token's weight moves with it (alpha + alpha_t * T)."""
    from spotviz.drafter.features import TEMPERATURE_FEATURE, position_features

    v0 = _view(tiny_block_target, PROMPTS[0], "exact", 0.9, 0.0)
    v1 = _view(tiny_block_target, PROMPTS[0], "exact", 0.9, 1.0)
    f0, f1 = position_features(v0), position_features(v1)
    assert torch.all(f0[:, TEMPERATURE_FEATURE] == 0) and torch.all(f1[:, TEMPERATURE_FEATURE] == 1)
    with torch.no_grad():
        random_drafter.alpha_t.fill_(0.5)
        out = random_drafter(torch.stack([f0, f1]))
        random_drafter.alpha_t.fill_(0.0)
    assert out["alpha"].shape == (2, 1, 1)
    assert float(out["alpha"][1] - out["alpha"][0]) == pytest.approx(0.5)


@pytest.mark.parametrize("T", [0.0, 1.0])
def test_drafter_mixture_weight_spans_stale_order_to_learned(T, tiny_block_target, random_drafter):
    """mix -> -inf: the pointer is the training-free order (proportional to the stale confidence);
    mix -> +inf: the learned scores alone."""
    view = _view(tiny_block_target, PROMPTS[0], "exact", 0.9, T, seed=3)
    remaining = view.masked.numpy().copy()
    tf = TrainingFree()
    ctx_tf = tf.prepare(view, 4)
    conf = ctx_tf.conf[0] * remaining
    try:
        for m, expect_stale in ((-40.0, True), (40.0, False)):
            with torch.no_grad():
                random_drafter.mix.fill_(0.0)
                random_drafter.mix[0] = m
            prop = SpotProposer(random_drafter, token_branching=False)
            ctx = prop.prepare(view, 4)
            kids = prop.children(ctx, view, build_tree(view, tf, 1)[0], remaining)
            probs = {o[0]: p for o, _, p in kids}
            if expect_stale:
                for j, p in probs.items():
                    assert p == pytest.approx(conf[j] / conf.sum(), rel=1e-4)
            else:
                assert ctx.mix == pytest.approx(1.0)
    finally:
        with torch.no_grad():
            random_drafter.mix.fill_(0.0)


def test_drafter_with_other_feature_count_is_refused(tmp_path, random_drafter):
    random_drafter.save(tmp_path / "d")
    meta = json.loads((tmp_path / "d" / "drafter.json").read_text())
    (tmp_path / "d" / "drafter.json").write_text(json.dumps(meta | {"n_features": meta["n_features"] - 1}))
    with pytest.raises(ValueError, match="retrain it"):
        SpotDrafter.load(tmp_path / "d")


def test_load_proposer_errors_and_names(tmp_path, random_drafter, tiny_block_target):
    random_drafter.save(tmp_path / "spot")
    random_drafter.save(tmp_path / "spot-sets")
    (tmp_path / "calibrated.json").write_text(json.dumps(TABLE))
    spot = load_proposer("spot", tiny_block_target, "exact", folder=tmp_path)
    assert isinstance(spot, SpotProposer) and isinstance(spot.partner, Calibrated)  # the folder's template
    sets = load_proposer("spot-sets", tiny_block_target, "threshold", folder=tmp_path)
    assert isinstance(sets, SpotProposer) and isinstance(sets.partner, TrainingFree)  # the stale threshold rule
    assert isinstance(load_proposer("calibrated", tiny_block_target, "exact", folder=tmp_path), Calibrated)
    assert isinstance(load_proposer("training-free", tiny_block_target, "threshold"), TrainingFree)
    with pytest.raises(DecodeError, match="threshold"):
        load_proposer("spot-sets", tiny_block_target, "exact", folder=tmp_path)
    with pytest.raises(DecodeError, match="exact"):
        load_proposer("spot", tiny_block_target, "threshold", folder=tmp_path)
    with pytest.raises(DecodeError, match="unknown drafter"):
        load_proposer("medusa", tiny_block_target, "exact", folder=tmp_path)
    with pytest.raises(DecodeError, match="calibrated"):
        load_proposer("calibrated", tiny_block_target, "exact", folder=tmp_path / "nowhere")
    for bad in ("{}", "[1, 2]", '{"rank_probs": 5}', '{"rank_probs": []}', '{"rank_probs": [0.5, 0.2]}',
                '{"rank_probs": [[0.5]], "set_params": [[1.0]]}', "{oops"):
        (tmp_path / "calibrated.json").write_text(bad)
        with pytest.raises(ValueError, match="malformed"):
            load_proposer("calibrated", tiny_block_target, "exact", folder=tmp_path)
        with pytest.raises(DecodeError, match="partner of drafter 'spot'.*malformed"):
            load_proposer("spot", tiny_block_target, "exact", folder=tmp_path)
    (tmp_path / "calibrated.json").unlink()  # no template in the folder: the pointer head alone
    assert load_proposer("spot", tiny_block_target, "exact", folder=tmp_path).partner is None
    # a drafter narrower than the target's window is refused
    narrow = SpotDrafter(DrafterConfig(max_width=8, d_model=32, d_ff=32, n_heads=2, n_layers=1))
    narrow.save(tmp_path / "n" / "spot")
    with pytest.raises(DecodeError, match="windows up to 8"):
        load_proposer("spot", tiny_block_target, "exact", folder=tmp_path / "n")


@pytest.mark.parametrize("model", ["math-bd", "python-bd", "shakespeare-bd"])
def test_shipped_drafters_come_with_their_partners(model):
    """The bench's figures are those of the hedged proposers: every shipped SPOT drafter finds the calibrated
    template of its folder, every SPOT-Sets drafter the stale threshold rule."""
    from spotviz.registry import load_target

    target = load_target(model)
    spot = load_proposer("spot", target, "exact")
    assert isinstance(spot.partner, Calibrated) and spot.partner_weight == 0.5
    sets = load_proposer("spot-sets", target, "threshold")
    assert isinstance(sets.partner, TrainingFree) and sets.partner_weight == 0.5


def test_loaded_drafter_decodes_through_config(tmp_path, random_drafter, tiny_block_target):
    """decode_spot without an explicit proposer resolves cfg.drafter through the store."""
    from spotviz.drafter import store

    random_drafter.save(tmp_path / "spot")
    orig = store.drafter_folder
    store.drafter_folder = lambda name: tmp_path
    try:
        c = cfg("exact", 0.9, 1.0, seed=5, gen=24, budget=8, drafter="spot")
        std = decode_standard(tiny_block_target, PROMPTS[0], c)
        spot = decode_spot(tiny_block_target, PROMPTS[0], c)
        assert spot.meta.drafter == "spot"
        check_against_standard(spot, std, 8)
        with pytest.raises(DecodeError):
            decode_spot(tiny_block_target, PROMPTS[0], cfg("threshold", 0.3, drafter="spot"))
    finally:
        store.drafter_folder = orig


# ------------------------------------------------------------- states a pass already evaluated
@pytest.mark.parametrize("mode,tau", [("exact", 0.9), ("threshold", 0.01)])
def test_known_states_decide_as_the_target_does_whatever_the_order_or_step(mode, tau, tiny_block_target):
    """A stored window's logits give, at any later state with the same window tokens, the decision the rule makes
    from them with that state's step (and none for a state no pass evaluated); asked again at the same or another
    step (the store keeps each state's candidates per step), with fewer masked positions than the stored state (what
    a likely edge asks), and for a next window's store whose masked positions are given, it is still `decide`'s."""
    from spotviz.decision import decide
    from spotviz.samplers.known_states import KnownStates

    for prompt in PROMPTS:  # (a first window with at least five masked positions)
        view = _view(tiny_block_target, prompt, mode, tau, 1.0, seed=3)
        if int(view.masked.sum()) >= 5:
            break
    assert int(view.masked.sum()) >= 5
    mask_id = tiny_block_target.info.mask_id
    lo, hi = view.lo, view.hi
    rows = view.state.unsqueeze(0).repeat(2, 1)
    open_ = np.flatnonzero(view.masked.numpy())
    rows[1, lo + int(open_[0])] = 7  # a second state: one more commit
    logits = tiny_block_target.forward(rows, lo, hi, tiny_block_target.empty_cache()).logits
    noise = GumbelNoise(3, tiny_block_target.info.vocab_size)
    known = KnownStates(lo, hi, view.rule, noise, mask_id)
    for r in range(2):
        known.add(rows[r, lo:hi].numpy().tobytes(), logits[r])
    masked = rows[:, lo:hi] == mask_id
    fewer = masked.clone()
    fewer[:, open_[1:3]] = False  # two of the stored states' masked positions committed further down
    sets = 0
    for step in (1, 5, 1, 2):
        for m in (masked, fewer):
            want = decide(logits, m, [step, step], lo, view.rule, noise, mask_id)
            for r in range(2):
                got = known.decision(rows[r, lo:hi].numpy().tobytes(), m[r], step)
                assert (got is None) == (want[r] is None)  # (nothing left to decide: no decision)
                assert got is None or got.key == want[r].key  # (what a tree's edge is; the numbers within 1e-6:
                # the same rows through the same kernels, not asserted to the last bit, which is the CPU's business)
                assert got is None or got.confidences == pytest.approx(want[r].confidences, rel=0, abs=1e-6)
                sets += got is not None and len(got.offsets) > 1
    assert (sets > 0) == (mode == "threshold")  # (tau is low enough for sets on this tiny model)
    other = rows[1, lo:hi].clone()
    other[int(open_[1])] = 7
    assert known.decision(other.numpy().tobytes(), other == mask_id, 1) is None
    nxt = KnownStates(lo, hi, view.rule, noise, mask_id)  # keyed by other tokens: the masked positions are given
    key = np.arange(hi - lo, dtype=np.int64).tobytes()
    nxt.add(key, logits[0], masked[0])
    for step in (3, 4):
        want = decide(logits[:1], masked[:1], [step], lo, view.rule, noise, mask_id)[0]
        assert nxt.decision(key, masked[0], step).key == want.key


@pytest.mark.parametrize("mode,tau,T", [("exact", 0.9, 0.0), ("exact", 0.9, 1.0), ("threshold", 0.01, 1.0)])
def test_a_state_stored_with_its_decision_decides_as_one_stored_without(mode, tau, T, tiny_block_target):
    """remember stores a pass's row with the decision the pass made there (KnownStates.add(decided=, step=)): its
    candidates come from that decision instead of being computed again. Every later decision from the store, at
    that step and others, with all or fewer masked positions, is the one a store without them computes."""
    from spotviz.decision import decide
    from spotviz.samplers.known_states import KnownStates

    view = _view(tiny_block_target, PROMPTS[0], mode, tau, T, seed=3)
    mask_id = tiny_block_target.info.mask_id
    lo, hi = view.lo, view.hi
    rows = view.state.unsqueeze(0).repeat(3, 1)
    open_ = np.flatnonzero(view.masked.numpy())
    rows[1, lo + int(open_[0])] = 7
    rows[2, lo + int(open_[-1])] = 9
    logits = tiny_block_target.forward(rows, lo, hi, tiny_block_target.empty_cache()).logits
    noise = GumbelNoise(3, tiny_block_target.info.vocab_size)
    masked = rows[:, lo:hi] == mask_id
    steps = [4, 5, 5]
    made = decide(logits[:, : hi - lo], masked, steps, lo, view.rule, noise, mask_id)  # (the pass's own, batched)
    given, fresh = (KnownStates(lo, hi, view.rule, noise, mask_id) for _ in range(2))
    keys = [rows[r, lo:hi].numpy().tobytes() for r in range(3)]
    for r in range(3):
        given.add(keys[r], logits[r], decided=made[r], step=steps[r])
        fresh.add(keys[r], logits[r])
    fewer = masked.clone()
    fewer[:, open_[1:3]] = False
    for step in (4, 5, 6):
        for m in (masked, fewer):
            for r in range(3):
                a, b = given.decision(keys[r], m[r], step), fresh.decision(keys[r], m[r], step)
                assert (a is None) == (b is None)
                assert a is None or a.key == b.key  # (the numbers: as the test above says)
                assert a is None or a.confidences == pytest.approx(b.confidences, rel=0, abs=1e-6)


@pytest.mark.parametrize("T", [0.0, 1.0])
def test_one_guess_shortcut_drafts_the_edge_the_full_context_drafts(T, targets, random_drafter, monkeypatch):
    """A one-guess tree's child of s1 comes from the root decision's rows at the masked offsets (Proposer.first_child)
    instead of the per-pass context over the whole window: the same edge, with the same probability, in every pass
    (both proposers that hand one guess to the calibrated template); the context is never prepared for it."""
    from spotviz.drafter.proposers.common import Context

    target = targets["random"]
    for name in ("calibrated", "spot+partner"):
        drafted = 0  # (over the three prompts: at T > 0 the random target may sample an end of text at once)
        for i, prompt in enumerate(PROMPTS[:3]):
            c = cfg("exact", T=T, seed=i, gen=40, budget=2)
            prepared = []
            monkeypatch.setattr(Calibrated, "prepare", lambda self, view, max_depth: prepared.append(1) or Context(view, max_depth))
            lean = decode_spot(target, prompt, c, make_proposer(name, random_drafter))
            assert not prepared  # (the shortcut alone drafted every s1's child)
            monkeypatch.setattr(Calibrated, "first_child", lambda self, view, remaining: None)
            full = decode_spot(target, prompt, c, make_proposer(name, random_drafter))
            monkeypatch.undo()
            check_against_standard(lean, decode_standard(target, prompt, c), 2)
            assert len(lean.passes) == len(full.passes)
            for a, b in zip(lean.passes, full.passes):
                assert [(n.positions, n.tokens, n.prob) for n in a.tree] == [(n.positions, n.tokens, n.prob) for n in b.tree]
                drafted += len(a.tree) > 1
        assert drafted > 10


@pytest.mark.parametrize("T", [0.0, 1.0])
def test_threshold_trees_pay_a_pass_for_every_window(T, targets, random_drafter):
    """SPOT-Sets' trees stay inside their window and a pass decides at most one window's first set, so every window
    the threshold decoder decodes costs SPOT-Sets a pass: its passes are never fewer than the windows, and its pass
    reduction never beats eval/stats.window_bound of the standard decodes. Where the threshold decoder commits every
    window in one pass (the random target at tau 0.3, T = 0) nothing is left to gain, whatever the drafter."""
    from spotviz.eval.stats import window_bound

    for kind, tau in (("block", 0.3), ("random", 0.9), ("random", 0.3)):
        target = targets[kind]
        std, spot = [], []
        for i, prompt in enumerate(PROMPTS[:4]):
            for budget in (4, 16):
                c = cfg("threshold", tau=tau, T=T, seed=i, gen=40, budget=budget)
                base = decode_standard(target, prompt, c)
                run = decode_spot(target, prompt, c, make_proposer("spot+partner", random_drafter))
                check_against_standard(run, base, budget)
                assert len(run.passes) >= len({tuple(p.window) for p in base.passes})
                std.append(base), spot.append(run)
        reduction = sum(len(t.passes) for t in std) / sum(len(t.passes) for t in spot)
        bound = window_bound(std)
        assert reduction <= bound
        one_pass_windows = T == 0 and kind == "random" and tau == 0.3  # (at T = 1 sampled tokens often fall below tau)
        assert (reduction == bound == 1.0) if one_pass_windows else 1.0 < reduction < bound


@pytest.mark.parametrize("T", [0.0, 1.0])
def test_one_guess_tree_is_the_tree_best_first_growth_makes(T, targets, random_drafter, monkeypatch):
    """build_tree drafts a one-guess tree (budget 2) without its best-first machinery (tree.one_guess_tree): the same
    nodes, edges and probabilities as the general growth (tree.grow_tree), pass by pass, with the guess drafted and
    with every guess below min_path_prob; and at an s1 that a pass already evaluated, the same certain edge, from a
    proposer with a first_child shortcut and from one without."""
    from spotviz.decision import Decision
    from spotviz.drafter import tree as tree_mod
    from spotviz.samplers import spot as spot_mod

    def nodes_of(run):
        return [[(n.id, n.parent, n.positions, n.tokens, n.prob, n.path_prob, n.known) for n in p.tree]
                for p in run.passes]

    def grown_tree(view, proposer, policy, min_path_prob=0.0):  # build_tree with the general growth at every budget
        return tree_mod.grow_tree(view, proposer.for_budget(policy.budget), policy, min_path_prob)

    fast = {"trees": 0, "alone": 0}
    real = tree_mod.one_guess_tree

    def counting(*args):
        nodes = real(*args)
        fast["trees"] += 1
        fast["alone"] += len(nodes) == 1
        return nodes

    for kind in ("block", "random"):
        target = targets[kind]
        for i, prompt in enumerate(PROMPTS[:3]):
            for floor in (0.0, 0.7):  # (the template's likeliest first decision has probability 0.6)
                c = cfg("exact", T=T, seed=i, gen=40, budget=2, min_path_prob=floor)
                monkeypatch.setattr(tree_mod, "one_guess_tree", counting)
                lean = decode_spot(target, prompt, c, make_proposer("spot+partner", random_drafter))
                monkeypatch.setattr(spot_mod, "build_tree", grown_tree)
                grown = decode_spot(target, prompt, c, make_proposer("spot+partner", random_drafter))
                monkeypatch.undo()
                check_against_standard(lean, decode_standard(target, prompt, c), 2)
                assert nodes_of(lean) == nodes_of(grown)
    assert fast["trees"] > 20 and 0 < fast["alone"] < fast["trees"], fast

    class Evaluated:  # a store that has evaluated s1: the target's decision there is known
        def decision(self, key, masked, step):
            return Decision([int(masked.nonzero()[-1])], [7], [0.5])

        reuse = True

        def logits_at(self, key):
            return torch.zeros(1)

    view = _view(targets["block"], PROMPTS[0], "exact", 0.9, T, 0, 24)
    view.known = Evaluated()
    for proposer in (Calibrated(TABLE), TrainingFree()):
        lean = tree_mod.build_tree(view, proposer, 2)
        grown = tree_mod.grow_tree(view, proposer, tree_mod.FixedBudget(2))
        # s1 is a known state, outside the batch: growth goes on to a second evaluated state, the one-guess tree
        # stops at its certain guess (a pass of one state)
        assert len(lean) == 2 and len(grown) > 2 and lean[0].stored is not None and grown[0].stored is not None
        assert [(n.offsets, n.tokens, n.prob) for n in lean] == [(n.offsets, n.tokens, n.prob) for n in grown[:2]]
        assert lean[0].decided and lean[1].prob == 1.0 and lean[1].tokens == (7,)
    for mode in ("exact", "threshold"):  # no shortcut (training-free): its children from its per-pass context
        view = _view(targets["block"], PROMPTS[0], mode, 0.05, T, 0, 24)
        lean = tree_mod.build_tree(view, TrainingFree(), 2)
        grown = tree_mod.grow_tree(view, TrainingFree(), tree_mod.FixedBudget(2))
        assert len(lean) == 2 and [(n.offsets, n.tokens, n.prob) for n in lean] == \
            [(n.offsets, n.tokens, n.prob) for n in grown]


@pytest.mark.parametrize("kind", ["block", "random"])
def test_a_state_an_earlier_pass_evaluated_gets_a_certain_edge(kind, targets, random_drafter):
    """A tree node whose window tokens an earlier pass of the window already evaluated (another order of the same
    commits, say) gets one child: the target's own decision there, computed from the stored logits, with
    probability 1 (recorded as `known`). Decodes stay exact; such edges occur; and where the probe found the
    target batch-invariant with blockwise-exact windows (so stored logits are the ones a pass recomputes), a walk
    that reaches such a node always moves on along its certain edge."""
    from spotviz.views.timeline import end_line, tree_frame

    target, known, reused, past_budget = targets[kind], 0, 0, 0
    for name in ("training-free", "spot+partner"):
        for T in (0.0, 1.0):
            for i, prompt in enumerate(PROMPTS[:4]):
                c = cfg("exact", T=T, seed=i, gen=40, budget=16)
                spot = decode_spot(target, prompt, c, make_proposer(name, random_drafter))
                check_against_standard(spot, decode_standard(target, prompt, c), 16)
                assert end_line(spot, "main")["counters"]["reused"] == sum(n.reused for p in spot.passes for n in p.tree)
                for p in spot.passes[1:]:
                    by_id = {n.id: n for n in p.tree}
                    # a known state's logits are reused: the pass's batch leaves it out, and the budget counts the batch
                    assert p.states == len(p.tree) - sum(n.reused for n in p.tree) <= 16
                    reused += sum(n.reused for n in p.tree)
                    past_budget += len(p.tree) > 16
                    if any(n.known for n in p.tree):  # the tree view counts them and says why in the hover
                        frame = tree_frame(p, {})
                        assert frame["known"] == sum(n.known for n in p.tree)
                        assert frame["reused"] == sum(n.reused for n in p.tree)
                        hovers = {row[0]: row[5] for row in frame["nodes"]}
                        assert all(("certain edge" in hovers[n.id]) == n.known for n in p.tree[1:])
                        assert all(("known state (hollow)" in hovers[n.id]) == n.reused for n in p.tree)
                    for n in p.tree:
                        if not n.known:
                            continue
                        known += 1
                        assert n.prob == 1.0 and [m.parent for m in p.tree].count(n.parent) == 1  # its only sibling
                        # (a certain edge inside the window comes from its parent's stored logits: the parent is reused)
                        assert by_id[n.parent].reused == all(p.window[0] <= q < p.window[1] for q in n.positions)
                        guaranteed = target.info.batch_invariant and target.info.blockwise_exact
                        if guaranteed and n.parent in p.accepted_path:
                            assert by_id[n.id].accepted
    assert known > 0
    # known states left out of the batch let trees grow past the batch size, where the probe proved that a stored
    # row is the row a pass computes (elsewhere they are verified again)
    reusable = target.info.batch_invariant is True and target.info.blockwise_exact  # (the library's rule)
    assert (reused > 0 and past_budget > 0) if reusable else reused == past_budget == 0


def test_no_certain_edge_without_the_targets_noise(tiny_block_target, random_drafter):
    """At T > 0 with independent drafter noise the drafter cannot know the target's decision: no known edges."""
    for i, prompt in enumerate(PROMPTS[:3]):
        c = cfg("exact", T=1.0, seed=i, gen=40, budget=16, coupled_noise=False)
        spot = decode_spot(tiny_block_target, prompt, c, make_proposer("training-free", random_drafter))
        check_against_standard(spot, decode_standard(tiny_block_target, prompt, c), 16)
        assert not any(n.known for p in spot.passes for n in p.tree)


def test_the_nearest_evaluated_state_above_a_node_gives_its_likely_edge(tiny_block_target):
    """KnownStates.nearest decides from the stored state that lacks the fewest of a node's commits (one or two, none
    it does not have): never the node's own state (a certain edge), never a state with a commit or token the node
    lacks, nothing when every stored state is further away."""
    from spotviz.decision import decide
    from spotviz.samplers.known_states import NEAR_MISSING, KnownStates

    view = _view(tiny_block_target, PROMPTS[2], "exact", 0.9, 1.0, seed=3)
    lo, hi, mask = view.lo, view.hi, tiny_block_target.info.mask_id
    base = torch.full((hi - lo,), mask, dtype=torch.long)  # (a window of masks: states built from it below)
    open_ = np.arange(hi - lo)

    def state(*commits):
        s = base.clone()
        for o, t in commits:
            s[int(open_[o])] = t
        return s

    stored = [state(), state((0, 7)), state((0, 7), (1, 8)), state((2, 9))]
    rows = view.state.unsqueeze(0).repeat(len(stored), 1)
    rows[:, lo:hi] = torch.stack(stored)
    logits = tiny_block_target.forward(rows, lo, hi, tiny_block_target.empty_cache()).logits
    noise = GumbelNoise(3, tiny_block_target.info.vocab_size)
    known = KnownStates(lo, hi, view.rule, noise, mask)
    for r, s in enumerate(stored):
        known.add(s.numpy().tobytes(), logits[r])

    def nearest(s, step=4):
        return known.nearest(s.numpy(), s == mask, step)

    def decision_of(r, s, step=4):
        return decide(logits[r:r + 1], (s == mask).unsqueeze(0), [step], lo, view.rule, noise, mask)[0].key

    node = state((0, 7), (1, 8), (3, 5))  # one past stored[2], two past stored[1]: the nearest wins
    assert nearest(node).key == decision_of(2, node)
    node = state((0, 7), (3, 5))  # one past stored[1]
    assert nearest(node).key == decision_of(1, node)
    node = state((0, 7), (1, 8))  # stored[2] itself (a certain edge's business): the next nearest is stored[1]
    assert nearest(node).key == decision_of(1, node)
    node = state((0, 6), (3, 5))  # another token at offset 0: only the empty state is below it, two commits short
    assert NEAR_MISSING >= 2 and nearest(node).key == decision_of(0, node)
    node = state((0, 6), (3, 5), (4, 5))  # three short of the empty state, and no other stored state is below it
    assert nearest(node) is None


@pytest.mark.parametrize("mode", ["exact", "threshold"])
def test_likely_edges_occur_are_recorded_and_keep_decodes_exact(mode, tiny_block_target, random_drafter):
    """In real decodes some nodes get a likely edge (the decision at an evaluated state a commit or two above them,
    mixed in at weight NEAR_WEIGHT, so the edge's probability is at least that); the trace records them, the tree
    view counts them and says so in the hover, and the output stays the standard decoder's. None with independent
    drafter noise at T > 0 (nothing is stored then)."""
    from spotviz.drafter.tree import NEAR_WEIGHT
    from spotviz.views.timeline import tree_frame

    near = 0
    for T, coupled in ((0.0, True), (1.0, True), (1.0, False)):
        for i, prompt in enumerate(PROMPTS[:4]):
            c = cfg(mode, 0.6, T=T, seed=i, gen=40, budget=16, coupled_noise=coupled)
            spot = decode_spot(tiny_block_target, prompt, c, make_proposer("training-free", random_drafter))
            check_against_standard(spot, decode_standard(tiny_block_target, prompt, c), 16)
            edges = [n for p in spot.passes for n in p.tree if n.near]
            if not coupled:
                assert not edges
                continue
            near += len(edges)
            assert all(n.prob >= NEAR_WEIGHT - 1e-9 and not n.known for n in edges)
            for p in spot.passes[1:]:
                if any(n.near for n in p.tree):
                    frame = tree_frame(p, {})
                    assert frame["near"] == sum(n.near for n in p.tree)
                    hovers = {row[0]: row[5] for row in frame["nodes"]}
                    assert all(("likely edge" in hovers[n.id]) == n.near for n in p.tree[1:])
    assert near > 0


@pytest.mark.parametrize("T", [0.0, 1.0])
def test_walk_end_says_why_each_walk_stopped(T, targets, random_drafter):
    """Every tree pass records why its acceptance walk stopped (samplers/verify.walk_end), and the reason agrees
    with what the trace shows: "end" commits no bonus, "window" puts the bonus in the next window, the others keep
    it in this one, and "position" means no child of the stop node names the bonus's slots. A one-guess tree
    (budget 2) whose guess was accepted stops at a node that never got guesses ("budget"); one whose guess was
    rejected stops at s1 with its one guess on another slot or token ("position" / "token"). Passes without a
    tree record no reason; the counts round-trip through the trace file."""
    from spotviz.trace import WALK_ENDS

    seen = set()
    for kind in ("block", "random"):
        target = targets[kind]
        for mode, tau, budgets, kinds in (("exact", 0.9, (2, 4, 16), ("spot+partner",)),
                                          ("exact", 0.9, (2,), ("training-free",)),  # (one guess without a shortcut)
                                          ("threshold", 0.5, (4, 16), ("spot+partner",))):
            for budget, kind_of, (i, prompt) in itertools.product(budgets, kinds, enumerate(PROMPTS[:3])):
                c = cfg(mode, tau=tau, T=T, seed=i, gen=40, budget=budget)
                run = decode_spot(target, prompt, c, make_proposer(kind_of, random_drafter))
                check_against_standard(run, decode_standard(target, prompt, c), budget)
                trees = [p for p in run.passes if len(p.tree) > 1]
                assert all(p.walk_end == "" for p in run.passes if len(p.tree) <= 1)
                for p in trees:
                    why = p.walk_end
                    assert why in WALK_ENDS
                    seen.add(why)
                    bonus = sorted(x.position for x in p.commits if not x.drafted)
                    stop = p.accepted_path[-1]
                    kids = [n for n in p.tree if n.parent == stop]
                    if why == "end":
                        assert not bonus
                    elif why == "window":
                        assert bonus and min(bonus) >= p.window[1]
                    else:
                        assert bonus and max(bonus) < p.window[1] + (p.window[1] - p.window[0])
                    if why == "position":
                        assert all(sorted(n.positions) != bonus for n in kids)
                    if budget == 2 and mode == "exact" and bonus and max(bonus) < p.window[1]:  # (whichever proposer)
                        assert why == ("budget" if stop == 1 else why) and (stop == 1 or why in ("position", "token"))
                assert sum(run.walk_ends().values()) == len(trees)
                assert Trace.from_json(run.to_json()).walk_ends() == run.walk_ends()
    assert {"budget", "position", "window"} <= seen


# ------------------------------------------------------------------------------------ drafters of one's own
def test_a_run_uses_the_drafters_of_the_folder_it_names(tiny_block_target, tiny_prompt, random_drafter, tmp_path,
                                                         monkeypatch):
    """Drafters trained for a model of one's own (train-drafter --out DIR) serve decode and bench through
    drafter_dir; a run without it uses the shipped ones or the fallback's, and says which."""
    from spotviz.drafter.store import drafters_used, load_learned

    folder = tmp_path / "my-drafters"
    random_drafter.save(folder / "spot")
    cfg = DecodeConfig(drafter="spot", budget=4, gen_length=24, drafter_dir=str(folder))
    mine = decode_spot(tiny_block_target, tiny_prompt, cfg)
    explicit = decode_spot(tiny_block_target, tiny_prompt, replace(cfg, drafter_dir=None),
                           proposer=load_learned("spot", tiny_block_target, folder))
    assert [p.tree for p in mine.passes] == [p.tree for p in explicit.passes]  # the same drafter drafted both
    assert mine.tokens == decode_standard(tiny_block_target, tiny_prompt, replace(cfg, drafter="none")).tokens
    with pytest.raises(DecodeError, match="drafter_dir must be a folder of trained drafters"):
        DecodeConfig(drafter="spot", drafter_dir=str(tmp_path / "missing"))
    # what `auto` learns is kept per drafter folder: a folder's drafters never start from the shipped ones' memory
    from spotviz.samplers import auto_budget

    monkeypatch.setattr(auto_budget, "_LEARNED", {})
    monkeypatch.setattr(auto_budget, "memory_file", lambda target, memory: None)  # (this process's memory only)
    for d in (str(folder), None):
        decode_spot(tiny_block_target, tiny_prompt, replace(cfg, budget="auto", drafter_dir=d, gen_length=8))
    kinds = sorted((k[1:] for learned in auto_budget._LEARNED.values() for k in learned), key=len)  # (less the
    # drafter object's id)
    assert len(kinds) == 2 and kinds[1] == kinds[0] + (str(folder.resolve()),)  # (the shipped ones: the old key)
    assert drafters_used("math-bd") == "math-bd's shipped drafters"
    assert drafters_used("my-sdar").startswith("shakespeare-bd's drafters, transferred")
    assert drafters_used("my-sdar", folder) == f"drafters from {folder}"


def test_the_views_find_the_passes_that_had_nothing_to_draft_as_the_engine_did(tiny_block_target, tiny_prompt,
                                                                               monkeypatch):
    """A pass whose free first decision completed its window, with no view past it, can draft nothing whatever the
    budget: the views read that from the trace (headline.DraftRoom) and must name exactly the passes where the engine
    had nothing to draft: the passes (after the first) that verified s1 alone, but for those where the budget policy
    declined to draft though slots were left (here every other pass declines, as `auto` does where trees do not pay)."""
    import spotviz.samplers.spot as spot
    from spotviz.drafter.tree import BudgetPolicy
    from spotviz.engine import decode
    from spotviz.views.headline import idle_passes

    calls, declined = [0], set()
    monkeypatch.setattr(BudgetPolicy, "draft_now", lambda self, stale: bool(calls.__setitem__(0, calls[0] + 1)
                                                                           or calls[0] % 2))
    plain = spot.plain_pass

    def recorded(*a, **k):
        d, rec = plain(*a, **k)
        declined.add(rec.index)
        return d, rec

    monkeypatch.setattr(spot, "plain_pass", recorded)
    seen = 0
    for mode, tau in (("threshold", 0.05), ("threshold", 0.6), ("exact", 0.9)):
        for budget in (2, 4):
            for seed in (0, 1):
                declined.clear()
                trace = decode(tiny_block_target, tiny_prompt, DecodeConfig(
                    mode=mode, threshold=tau, drafter="training-free", budget=budget, gen_length=32, seed=seed))
                single = {p.index for p in trace.passes[1:] if len(p.tree) <= 1}
                assert idle_passes(trace) == single - declined, (mode, tau, budget, seed)
                seen += len(single - declined) and len(declined)
    assert seen, "some run should have passes with nothing to draft and passes that declined"

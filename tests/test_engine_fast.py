"""The lean engine: traced forwards, the numpy drafter, the auto budget, the cost curve, threads and the one
validator. Speculative output is checked against the standard decoder (the ground truth) wherever it decodes."""
from __future__ import annotations

import itertools
import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from spotviz.decision import DecisionRule, decide
from spotviz.drafter.features import RootView, np_position_features, position_features
from spotviz.drafter.losses import stale_ranks, teacher_forced_pointer
from spotviz.drafter.model import DrafterConfig, SpotDrafter
from spotviz.drafter.numpy_forward import NumpyDrafter
from spotviz.drafter.proposers import SpotProposer, TrainingFree
from spotviz.drafter.registry import BUILT_IN, PROPOSERS, learned_drafter
from spotviz.drafter.tree import DraftNode, build_tree
from spotviz import threads
from spotviz.engine import DRAFTERS, decode, decode_stream, set_threads
from spotviz.noise import GumbelNoise
from spotviz.samplers import auto_budget, forward_cost
from spotviz.samplers.config import DecodeConfig, DecodeError, Limits
from spotviz.samplers.auto_budget import GATE_PRIOR, CostAwareBudget, PassOutcome, Tier
from spotviz.samplers.forward_cost import CostCurve
from spotviz.samplers.spot import decode_spot
from spotviz.samplers.standard import decode_standard
from spotviz.targets.embedded import EmbeddedTarget

PROMPTS = ["ROMEO.\nO", "JULIET.\nWhat", "KING.\nMy lord, the", "Enter"]


@pytest.fixture(scope="module")
def random_drafter() -> SpotDrafter:
    torch.manual_seed(11)
    return SpotDrafter(DrafterConfig()).eval()


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    """The cost curve cache goes to a temporary folder (tests never write outside tmp)."""
    monkeypatch.setenv("SPOTVIZ_CACHE_DIR", str(tmp_path / "cache"))


def eager_twin(target) -> EmbeddedTarget:
    return EmbeddedTarget(target.model, target.tokenizer, name=target.info.name, traced=False)


def commits(trace):
    return [(c.position, c.token, c.step) for p in trace.passes for c in p.commits]


# ------------------------------------------------------------------------------------ traced forward
@pytest.mark.parametrize("kind", ["block", "full"])
def test_traced_forward_matches_eager_and_is_batch_invariant(kind, tiny_targets):
    traced = EmbeddedTarget(tiny_targets[kind].model, tiny_targets[kind].tokenizer, name="t")
    eager = eager_twin(tiny_targets[kind])
    torch.manual_seed(0)
    row = torch.randint(3, traced.info.vocab_size, (48,))
    row[24:] = traced.info.mask_id
    row[26::3] = 5
    lo, hi = (16, 32) if kind == "block" else (24, 40)
    c_t, c_e = traced.empty_cache(), eager.empty_cache()
    if kind == "block":  # a cache of one finished block, then a window reading it
        c_t = traced.extend_cache(c_t, traced.forward(row[None], 0, 16, c_t), 0, 16)
        c_e = eager.extend_cache(c_e, eager.forward(row[None], 0, 16, c_e), 0, 16)
    one = traced.forward(row[None], lo, hi, c_t).logits
    assert traced.traced and traced._graph is not None
    ref = eager.forward(row[None], lo, hi, c_e).logits
    assert torch.allclose(one, ref, rtol=1e-4, atol=1e-5)
    rows = row[None].repeat(6, 1)
    rows[1:, lo + 1] = torch.arange(3, 8)  # different states in one batch
    batched = traced.forward(rows, lo, 48, c_t).logits
    assert torch.equal(batched[0, : hi - lo], one[0])  # bit for bit: what makes SPOT lossless
    for i in range(1, 6):
        assert torch.equal(batched[i], traced.forward(rows[i : i + 1], lo, 48, c_t).logits[0])


@pytest.mark.parametrize("kind", ["block", "full"])
@pytest.mark.parametrize("mode,T", [("exact", 0.0), ("exact", 1.0), ("threshold", 1.0)])
def test_traced_and_eager_decoders_make_the_same_decisions(kind, mode, T, tiny_targets, tiny_prompt):
    traced, eager = tiny_targets[kind], eager_twin(tiny_targets[kind])
    cfg = DecodeConfig(mode=mode, temperature=T, threshold=0.03, seed=3, gen_length=32)
    a, b = decode(traced, tiny_prompt, cfg), decode(eager, tiny_prompt, cfg)
    assert commits(a) == commits(b) and a.tokens == b.tokens


def test_a_failing_trace_falls_back_to_eager(tiny_block_target, monkeypatch, tiny_prompt):
    t = EmbeddedTarget(tiny_block_target.model, tiny_block_target.tokenizer, name="t")

    def boom(*a, **k):
        raise RuntimeError("no tracing here")

    monkeypatch.setattr(torch.jit, "trace", boom)
    cfg = DecodeConfig(seed=1, gen_length=16)
    assert commits(decode(t, tiny_prompt, cfg)) == commits(decode(eager_twin(tiny_block_target), tiny_prompt, cfg))
    assert t.traced is False


# ------------------------------------------------------------------------------------ numpy drafter
def _view(target, prompt, mode="exact", T=0.0, seed=0) -> RootView:
    from spotviz.decision import decide, masked_log_softmax

    ids = target.encode(prompt)
    state = torch.full((len(ids) + 32,), target.info.mask_id, dtype=torch.long)
    state[: len(ids)] = torch.tensor(ids)
    lo, hi = target.windows(len(ids), len(state))[0]
    out = target.forward(state[None], lo, hi, target.empty_cache())
    rule = DecisionRule(mode, T, 0.3)
    noise = GumbelNoise(seed, target.info.vocab_size)
    d = decide(out.logits, (state[lo:hi] == target.info.mask_id)[None], [0], lo, rule, noise, target.info.mask_id)[0]
    logp, offs = masked_log_softmax(out.logits, target.info.mask_id), d.offsets
    state[[lo + o for o in offs]] = torch.tensor(d.tokens)
    return RootView(lo=lo, hi=hi, state=state, logp=logp[0], masked=state[lo:hi] == target.info.mask_id,
                    first=list(offs), step=1, rule=rule, noise=noise)


def test_first_two_is_topk_with_ties_to_the_first_index():
    from spotviz.decision import first_two

    x = torch.randn(5, 7, 300, generator=torch.Generator().manual_seed(0))
    a = x.numpy().copy()
    assert torch.equal(torch.from_numpy(first_two(a)), x.topk(2, dim=-1).indices)
    assert np.array_equal(a, x.numpy())  # (its input left as it was)
    assert first_two(np.array([[1.0, 3.0, 0.0, 3.0], [2.0, 2.0, 2.0, 5.0]])).tolist() == [[1, 3], [3, 0]]


@pytest.mark.parametrize("T", [0.0, 1.0])
def test_coupled_candidates_are_the_best_and_runner_up_under_each_steps_noise(T, tiny_block_target, tiny_prompt):
    """The drafter's coupled tokens at depth d are argmax and runner-up of log p_root / T + g(step + d) at the
    masked positions (the target's own Gumbel-max), of log p_root elsewhere; grown later, the same numbers."""
    from spotviz.drafter.features import coupled_candidates

    view = _view(tiny_block_target, tiny_prompt, T=T, seed=3)
    tok1, tok2, logc = coupled_candidates(view, 3)
    again = coupled_candidates(view, 3, start=1)
    assert torch.equal(tok1[1:], again[0]) and torch.equal(tok2[1:], again[1])
    masked = view.masked.nonzero().flatten().tolist()
    assert masked
    for d in range(3):
        for o in range(view.width):
            scores = view.logp[o]
            if T > 0 and o in masked:
                scores = scores / T + view.noise.at(view.step + d, view.lo + o)
            best = scores.topk(2).indices.tolist()
            assert [tok1[d, o].item(), tok2[d, o].item()] == best
            assert logc[d, o].item() == view.logp[o, best[0]].item()


@pytest.mark.parametrize("T", [0.0, 1.0])
def test_numpy_drafter_matches_the_torch_model(T, random_drafter, tiny_block_target):
    view = _view(tiny_block_target, PROMPTS[1], T=T)
    feats = np_position_features(view)
    assert feats.dtype == np.float32 and torch.equal(position_features(view), torch.from_numpy(feats))
    with torch.no_grad():
        ref = random_drafter(torch.from_numpy(feats)[None])
    got = NumpyDrafter(random_drafter)(feats)
    for k in ("base", "pair", "keep_base", "set_base"):
        np.testing.assert_allclose(got[k], ref[k][0].numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["keep_rel"], ref["keep_rel"].numpy(), atol=1e-6)
    np.testing.assert_allclose(got["rank_bias"], ref["rank_bias"][0].numpy(), atol=1e-6)
    for k in ("alpha", "mix", "runner_up", "set_alpha", "set_mix"):
        assert got[k] == pytest.approx(float(ref[k].reshape(-1)[0]), abs=1e-6)


@pytest.mark.parametrize("T", [0.0, 1.0])
def test_inference_pointer_is_the_training_pointer(T, random_drafter, tiny_block_target):
    """The numpy pointer the tree builder uses at a node equals exp(teacher_forced_pointer) for the same path."""
    view = _view(tiny_block_target, PROMPTS[2], T=T)
    prop = SpotProposer(random_drafter)
    ctx = prop.prepare(view, max_depth=8)
    w = view.width
    masked = view.masked.numpy()
    order = [int(j) for j in np.flatnonzero(masked)[::-1][:4]]  # an arbitrary path of drafted positions
    depths = len(order)
    logc = torch.from_numpy(ctx.logc[:depths]).float()[None]
    remaining = torch.zeros(1, depths, w, dtype=torch.bool)
    for dpt in range(depths):
        rem = masked.copy()
        rem[order[:dpt]] = False
        remaining[0, dpt] = torch.from_numpy(rem)
    with torch.no_grad():
        out = random_drafter(torch.from_numpy(np_position_features(view))[None])
        train = teacher_forced_pointer(out, logc, torch.tensor([order]), remaining).exp()[0]
    assert torch.equal(stale_ranks(logc[0], remaining[0])[0], torch.from_numpy(
        np.argsort(np.argsort(-np.where(masked, ctx.logc[0], -np.inf), kind="stable"), kind="stable")))
    for dpt in range(depths):
        node = DraftNode(dpt + 1, 0, dpt, (), (), 1.0, 1.0, path=tuple(order[:dpt]))
        got = prop.pointer(ctx, node, remaining[0, dpt].numpy())
        np.testing.assert_allclose(got, train[dpt].numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("T", [0.0, 1.0])
def test_inference_set_inclusion_and_keep_are_the_training_ones(T, random_drafter, tiny_block_target):
    """The numpy set-inclusion probabilities (SPOT-Sets) and the keep head along a path equal the training
    objectives' (losses.set_inclusion, losses.keep_logits) for the same window."""
    from spotviz.drafter.losses import keep_logits, set_inclusion
    from spotviz.drafter.numpy_forward import np_set_inclusion, np_sigmoid

    view = _view(tiny_block_target, PROMPTS[2], T=T)
    feats = np_position_features(view)
    prop = SpotProposer(random_drafter)
    ctx = prop.prepare(view, max_depth=8)
    logc = ctx.logc[:4]
    fast = prop.fast(feats)  # (every head)
    with torch.no_grad():
        out = random_drafter(torch.from_numpy(feats)[None])
        train = set_inclusion(out, torch.from_numpy(logc).float()[None], 0.9)[0].numpy()
    np.testing.assert_allclose(np_set_inclusion(fast, logc, 0.9), train, rtol=1e-4, atol=1e-6)
    order = [int(j) for j in np.flatnonzero(view.masked.numpy())[:3]]  # a path: each position's keep given the ones before
    with torch.no_grad():
        want = torch.sigmoid(keep_logits(out, torch.tensor([order])))[0].numpy()
    for d, j in enumerate(order):
        node = DraftNode(d + 1, 0, d, (), (), 1.0, 1.0, path=tuple(order[:d]))
        got = np_sigmoid(ctx.keep_base + prop._path_terms(ctx, node)[1])[j]
        assert got == pytest.approx(float(want[d]), rel=1e-4, abs=1e-6)


# ------------------------------------------------------------------------------------ auto budget
def curve(f1: float, per_row: float, fixed: float = 0.0) -> CostCurve:
    sizes = [1, 2, 4, 8, 16, 32, 64]
    return CostCurve("test", sizes, [f1 + fixed * (n > 1) + per_row * (n - 1) for n in sizes])


def test_auto_drafts_big_trees_when_rows_are_free_and_none_when_they_are_dear(tiny_block_target):
    view = _view(tiny_block_target, PROMPTS[0])
    stale = view.logp.max(-1).values.exp()[view.masked].numpy()  # the stale confidences at the masked positions
    cheap = CostAwareBudget(curve(0.010, 1e-7), n_max=32)
    cheap.tree.overhead = cheap.one_guess.overhead = 0.0  # the drafter free too: any acceptance pays (~5% here)
    cheap.tree.var = Tier.MIN_VAR  # (and known to stay free however large the tree: no slow start)
    assert cheap.draft_now(stale)
    assert len(build_tree(view, TrainingFree(), cheap)) == 32
    dear = CostAwareBudget(curve(0.010, 0.050), n_max=32)
    assert not dear.draft_now(stale)  # decided before the drafter runs
    assert not dear.draft_now(np.ones(8))  # even a certain chain does not pay for 50 ms a row
    assert len(build_tree(view, TrainingFree(), dear)) == 2  # once the drafter ran, something drafted is verified


class _CountingDrafter:
    """A numpy drafter stand-in that counts its forwards (and runs the real one)."""

    def __init__(self, drafter):
        self.fast, self.calls = NumpyDrafter(drafter), 0

    def __call__(self, feats, mode=None):
        self.calls += 1
        return self.fast(feats, mode)


@pytest.mark.parametrize("mode", ["exact", "threshold"])
def test_spot_hands_one_guess_trees_to_its_partner_without_a_drafter_forward(mode, random_drafter,
                                                                                 tiny_block_target):
    view = _view(tiny_block_target, PROMPTS[1], mode=mode)
    counting = _CountingDrafter(random_drafter)
    spot = SpotProposer(random_drafter, fast=counting, partner=TrainingFree())
    small = build_tree(view, spot, 2)
    alone = build_tree(view, TrainingFree(), 2)
    assert counting.calls == 0 and len(small) == 2
    assert [(n.offsets, n.tokens) for n in small] == [(n.offsets, n.tokens) for n in alone]
    assert len(build_tree(view, spot, 3)) == 3 and counting.calls == 1  # a larger tree is the learned heads'
    assert SpotProposer(random_drafter).for_budget(2).__class__ is SpotProposer  # no partner: its own heads


def test_auto_caps_the_tree_at_one_guess_when_that_tier_is_the_cheaper_best(random_drafter, tiny_block_target):
    """Each tier's own work is measured apart: where a one-guess tree is cheap (the partner's) and a larger one
    dear (the drafter's forward), auto caps the pass at 2 nodes before drafting, and that pass's time outside the
    forward updates the one-guess tier only."""
    view = _view(tiny_block_target, PROMPTS[1])
    counting = _CountingDrafter(random_drafter)
    spot = SpotProposer(random_drafter, fast=counting, partner=TrainingFree())
    c = np.array([0.95, 0.9, 0.85, 0.8])
    policy = CostAwareBudget(curve(0.010, 0.004), n_max=16)
    policy.tree.overhead, policy.one_guess.overhead = 0.008, 0.0005
    assert policy.draft_now(c) and (policy.budget, policy.small) == (2, True)
    nodes = build_tree(view, spot, policy)
    assert len(nodes) == 2 and counting.calls == 0
    policy.observe(PassOutcome(2, 0.014, False, accepted_edges=1, overhead_s=0.001, drafted=True))
    assert policy.tree.overhead == 0.008 and policy.one_guess.overhead == 0.001  # (a tier's first pass sets its work)
    assert policy.draft_now(c) and policy.small
    policy.observe(PassOutcome(2, 0.014, False, accepted_edges=1, overhead_s=0.002, drafted=True))
    assert policy.tree.overhead == 0.008 and policy.one_guess.overhead == pytest.approx(0.0012)  # (then a fifth of
    # the way)
    assert (policy.budget, policy.small) == (16, False)
    policy.tree.overhead = 0.0005  # larger trees as cheap: the chain pays for more than one guess
    # (capped at SLOW_START states: how the tier's work grows with its trees is not known yet)
    assert policy.draft_now(c) and (policy.budget, policy.small) == (CostAwareBudget.SLOW_START, False)
    assert len(build_tree(view, spot, policy)) >= 2 and counting.calls == 1  # (sized by the drafter's own guesses)


def test_auto_prefix_maximises_expected_commits_per_second():
    f = curve(0.010, 0.002)
    probs = [1.0, 0.9, 0.8, 0.3, 0.05, 0.01]
    s = CostAwareBudget(f, n_max=16)
    s.tree.overhead = 0.0
    s.begin(8)
    for p in probs[1:]:
        s.add(p)
    table = f.table(16)
    rates = [(1 + sum(probs[1:k])) / table[k] for k in range(1, len(probs) + 1)]
    assert s.choose(len(probs)) == int(np.argmax(rates)) + 1 == 3  # 2.7 commits for 14 ms beats 3.0 for 16 ms


def test_auto_prices_a_prefix_by_the_states_it_evaluates():
    """A known state (decided from a stored row, outside the batch) adds its reach to a prefix's expected commits and
    nothing to its forward: auto keeps a chain of them that it would cut if every node cost a state."""
    f = curve(0.010, 0.010)  # a row as dear as the first: two likely nodes do not pay for their states
    known, counted = CostAwareBudget(f, n_max=8), CostAwareBudget(f, n_max=8)
    for s in (known, counted):
        s.tree.overhead = 0.0
        s.begin(8)
    for p in (0.9, 0.9, 0.9):
        known.add(p, free=True)
        counted.add(p)
    assert known._batch == [1, 1, 1, 1] and counted._batch == [1, 2, 3, 4]
    assert known.choose(4) == 4 and counted.choose(4) == 2  # (2: a pass that drafted verifies something drafted)


def _grown(policy, n_masked: int, probs) -> int:
    """How many nodes `policy` keeps of a best-first tree whose nodes after s1 have path probabilities `probs`, grown
    as the tree builder grows one (begin, then add while stop says go on, then choose)."""
    policy.begin(n_masked)
    k = 1
    for p in probs:
        if policy.stop(p):
            break
        policy.add(p)
        k += 1
    return policy.choose(k)


def test_auto_learns_work_that_grows_with_the_tree_and_keeps_trees_smaller_where_the_forward_is_flat():
    """On a GPU a pass over 64 states costs one pass, but the drafter, node states and decisions grow with the tree:
    auto fits its own work per node from the passes it sees and stops growing where a node costs more than it
    brings, where a constant-work model would grow the tree to the budget."""
    flat = curve(0.005, 0.0)  # f(N) = 5 ms for every N
    probs = [0.85 ** i for i in range(41)]  # best-first path probabilities, falling
    fixed, learning = CostAwareBudget(flat, n_max=64), CostAwareBudget(flat, n_max=64)
    rng = np.random.default_rng(0)
    for n in rng.integers(4, 40, size=60):  # passes of varied sizes, 0.4 ms fixed + 0.25 ms per node
        learning.small = False
        learning.observe(PassOutcome(int(n), 0.005, False, accepted_edges=2, overhead_s=0.0004 + 0.00025 * n,
                                     drafted=True))
    learning.expected = learning.accepted = 1.0  # (the drafter's calibration is not what this test is about)
    assert learning.tree.per_node == pytest.approx(0.00025, rel=0.05)
    assert learning.tree.cost(30) == pytest.approx(0.0004 + 0.00025 * 30, rel=0.05)
    assert learning.one_guess.per_node == 0.0 and learning.one_guess.cost(2) == learning.one_guess.overhead
    fixed.tree.overhead = learning.tree.cost(float(learning.tree.states))  # the same mean work, no slope
    fixed.tree.var = Tier.MIN_VAR  # (known to be none: no slow start)
    sizes = {}
    for name, policy in (("constant", fixed), ("per node", learning)):
        sizes[name] = _grown(policy, 64, probs[1:])
    # free nodes are always worth adding; at 0.25 ms a node, not once a node's path probability falls below
    # 0.25 ms x the pass's commits per second
    assert sizes["constant"] == len(probs) and 2 < sizes["per node"] < 25, sizes


def test_auto_calibrates_each_rank_by_what_the_walks_took_and_grows_trees_where_deep_nodes_pay():
    """Acceptances along a path are not independent: where the walks go on past the first few nodes more often than
    the drafter's path probabilities say, auto learns it for the deep ranks (from the node ids each walk went
    through) and keeps larger trees than one calibration for all ranks would; the first ranks keep their own."""
    flat = curve(0.005, 0.0)
    probs = [0.8 ** i for i in range(1, 24)]  # a chain: node i's path probability 0.8^i
    sizes, last = {}, None
    for name, passes in (("one calibration", 1), ("per rank", 60)):
        policy = CostAwareBudget(flat, n_max=64)
        policy.tree.overhead, policy.tree.states = 0.002, 8.0
        policy.tree.var, policy.tree.cov = 1e6, 1e6 * 0.00015  # 0.15 ms a node, learned long ago
        policy.tree.passes = 100
        rng = np.random.default_rng(0)
        for _ in range(passes):  # the walk takes each of the first 3 edges at 0.8, every later one at 0.97
            policy.small = False
            k = sizes[name] = _grown(policy, 24, probs)
            depth = 0
            while depth + 1 < k and rng.random() < (0.8 if depth < 3 else 0.97):
                depth += 1
            policy.observe(PassOutcome(k, 0.005, False, accepted_edges=depth, overhead_s=0.002 + 0.00015 * (k - 8),
                                       drafted=True, walk=tuple(range(1, depth + 1))))
        last = policy
    assert sizes["one calibration"] <= 11 and sizes["per rank"] >= 14, sizes
    assert last._s_rank[3] > 1.5 and last._s_rank[0] < 1.1  # (nodes 8-15 beat their odds; node 1 does not)
    again = CostAwareBudget(flat, n_max=64)
    again.recall(last.remember())  # (carried to the next run of its kind)
    assert again.rank_accepted == last.rank_accepted and again.rank_expected == last.rank_expected


def test_auto_gate_learns_from_what_the_passes_accept(monkeypatch):
    """The chain estimate's calibration follows the accepted edges: a drafter that is never accepted stops
    being run, one that is accepted more than the chain expects is run on less confident states."""
    monkeypatch.setattr(CostAwareBudget, "PRIOR_SHAPE", 1.0)  # (the curve as given: this checks the gate's arithmetic)
    c = np.array([0.6, 0.5, 0.4])  # (one guess priced at g = 0.5 + 0.5 c_(1) = 0.8 edges: 1.8 commits for 1.65 passes)
    never = CostAwareBudget(curve(0.010, 0.0065), n_max=8)
    never.tree.overhead = never.one_guess.overhead = 0.0
    assert never.draft_now(c)
    for _ in range(20):
        never.draft_now(c)
        never.begin(3), never.add(0.5), never.choose(2)
        never.observe(PassOutcome(2, 0.012, False, accepted_edges=0, overhead_s=0.0, drafted=True))
    assert not never.draft_now(c)
    low = np.array([0.15, 0.1])  # (g = 0.575: 1.575 commits for 1.65 passes, until the passes teach s_1 > 1.13)
    always = CostAwareBudget(curve(0.010, 0.0065), n_max=8)
    always.tree.overhead = always.one_guess.overhead = 0.0
    assert not always.draft_now(low)
    for _ in range(20):
        assert always.draft_now(np.array([0.5])) and always.small  # (g = 0.75: one guess pays)
        always.begin(3), always.add(0.5), always.choose(2)
        always.observe(PassOutcome(2, 0.012, False, accepted_edges=1, overhead_s=0.0, drafted=True))
    assert always.draft_now(low)


def test_auto_drafts_one_guess_on_a_low_confidence_model_whose_guesses_are_accepted(monkeypatch):
    """On a low-confidence model the stale token's probability c_(1) is small (median 0.07 on python-bd at T = 1)
    while one guess is accepted in about 58% of passes: the gate prices one guess at s_1 (h + (1 - h) c_(1)), so it
    drafts there from the first pass and keeps drafting while the guesses are accepted (priced at s_1 c_(1), one
    guess looked worth 1.05 commits and was not drafted); guesses that are never accepted stop being drafted."""
    monkeypatch.setattr(CostAwareBudget, "PRIOR_SHAPE", 1.0)  # (the curve as given: this checks the gate's arithmetic)
    c = np.array([0.05] * 8)
    rng = np.random.default_rng(0)
    for accept, drafts in ((0.6, True), (0.0, False)):
        p = CostAwareBudget(curve(0.010, 0.003), n_max=8)  # (f(2)/f(1) = 1.3)
        p.tree.overhead, p.one_guess.overhead = 0.004, 0.0
        p.observe(PassOutcome(1, 0.010, False))
        drafted = 0
        for _ in range(60):
            if p.draft_now(c):
                assert p.small  # (larger trees cost the drafter's forward here)
                drafted += 1
                p.begin(8), p.add(0.5), p.choose(2)
                p.observe(PassOutcome(2, 0.013, False, accepted_edges=int(rng.random() < accept), drafted=True))
            else:
                p.observe(PassOutcome(1, 0.010, False))
        assert p.draft_now(c) == drafts
        assert (drafted >= 55) if drafts else (drafted < 20)


def test_auto_gate_prices_each_tier_by_what_its_own_passes_accepted(monkeypatch):
    """The gate picks a tier by what that tier's own passes accepted: larger trees whose walks accept far fewer edges
    than the chain of stale confidences promised them (a confident model's chain is all near 1) lower their own
    estimate alone, and the gate turns to one-guess trees, still priced by one guess's own passes; larger trees that
    accept what they were promised stay. One shared calibration priced one guess low and larger trees high."""
    monkeypatch.setattr(CostAwareBudget, "PRIOR_SHAPE", 1.0)  # (the curve as given: this checks the gate's arithmetic)
    c = np.array([0.99] * 6)
    for accepted, expect_small in ((1, True), (5, False)):
        p = CostAwareBudget(curve(0.010, 0.002), n_max=8)
        p.tree.overhead, p.one_guess.overhead = 0.004, 0.001  # (a larger tree runs the drafter's forward)
        assert p.draft_now(c) and not p.small  # the chain: a larger tree pays more than one guess
        for _ in range(12):
            p.begin(6)
            drafting = p.draft_now(c)
            if drafting and not p.small:  # a larger tree of 6 nodes, `accepted` of its edges accepted
                for _ in range(5):
                    p.add(0.99)
                k = p.choose(6)
                p.observe(PassOutcome(k, 0.020, False, accepted_edges=accepted, overhead_s=0.004, drafted=True))
            elif drafting:  # one guess, accepted: 2 decisions for 13 ms
                p.add(0.99), p.choose(2)
                p.observe(PassOutcome(2, 0.012, False, accepted_edges=1, overhead_s=0.001, drafted=True))
            else:
                p.observe(PassOutcome(1, 0.010, False))
        assert p.draft_now(c) and p.small == expect_small
        mean = p.tree.mean_edges(5.0)  # (the chain at its trees' size: 4.9 edges)
        assert p.tree.edges_passes > 0.5 and ((mean < 4.0) if expect_small else (mean > 4.9))
        if expect_small:  # one guess priced by its own passes (accepted as promised), not by the larger trees'
            assert p.one_guess.chain_expected > GATE_PRIOR + 5
            assert p.one_guess.chain_accepted / p.one_guess.chain_expected > 0.95


def test_auto_gate_prices_larger_trees_by_what_they_accepted_not_by_the_chain(monkeypatch):
    """On a confident model the chain of stale confidences does not predict what a larger tree accepts (about 4 edges
    of a 16-state tree whether the chain says 2 or 15, on the simulated H200): the gate prices larger trees of the
    size its trees evaluate by their mean accepted edges. On a flat curve (a GPU), larger trees that accept 4 edges
    on average are drafted on a pass whose chain is short, where the chain would send it to one guess; larger trees
    that accept half an edge are not drafted on a pass whose chain is long."""
    monkeypatch.setattr(CostAwareBudget, "PRIOR_SHAPE", 1.0)
    p = CostAwareBudget(curve(0.010, 0.0), n_max=64)  # (f(N) = f(1): every size costs one pass)
    p.tree.overhead, p.one_guess.overhead = 0.004, 0.001
    short = np.array([0.95] + [0.0] * 30)  # (a chain of 1.95 edges at 16 states: g = 0.5 + 0.5 c)
    assert p.draft_now(short) and p.small  # (no larger tree yet: the chain's prior at 3 states, 2.46 commits in 14 ms
    # against one guess's 1.975 in 11)
    p.tree.states, p.tree.edges_accepted, p.tree.edges_passes = 16.0, 40.0, 10.0  # (4 edges a pass at 16 states)
    assert p.draft_now(short) and not p.small and p.budget == 32  # (4.9 commits in 14 ms; the builder sizes it, up to
    # twice the tier's usual size while its work per state is unknown)
    p.tree.edges_accepted, p.tree.edges_passes = 20.0, 40.0  # (half an edge a pass, over 40 passes)
    assert p.draft_now(np.array([0.999] * 30)) and p.small  # (the chain says 15 edges; the mean 1.2: 2.2 in 14 ms)


def test_a_tier_the_gate_stopped_choosing_is_tried_again():
    """Only a tier's own passes renew its calibration; while the other tier drafts every pass, a larger-trees tier
    priced out by a few bad trees fades back towards its prior and is drafted again (it could be shut out for good,
    and the memory would carry that to later runs)."""
    c = np.array([0.99] * 6)
    p = CostAwareBudget(curve(0.010, 0.001), n_max=8)
    p.tree.overhead, p.one_guess.overhead = 0.002, 0.001
    p.observe(PassOutcome(1, 0.010, False))
    p.tree.edges_accepted, p.tree.edges_passes = 1.2, 8.0  # (0.15 edges a pass after a few bad trees)
    tried = None
    for i in range(1000):
        p.begin(6)
        assert p.draft_now(c)
        if not p.small:
            tried = i
            break
        p.add(0.99), p.choose(2)
        p.observe(PassOutcome(2, 0.011, False, accepted_edges=1, overhead_s=0.001, drafted=True))
    assert tried is not None and 20 < tried < 600, tried


def test_the_chain_a_kept_tree_is_credited_with_covers_more_nodes_than_positions():
    """A tree may keep more nodes than there are masked positions (token branches): the expectation it is credited
    with is the chain over every position, never an entry left from an earlier pass or 0. Larger trees' passes go
    into their tier's mean of accepted edges, and only there (one guess keeps the chain calibration)."""
    p = CostAwareBudget(curve(0.010, 0.0001), n_max=8)
    p.tree.overhead = p.one_guess.overhead = 0.0
    p.observe(PassOutcome(1, 0.010, False))
    p._chain[:] = [9.0] * len(p._chain)  # (an earlier pass's entries)
    assert p.draft_now(np.array([0.9, 0.9])) and not p.small
    p.begin(2)
    for _ in range(4):
        p.add(0.5)
    k = p.choose(5)
    assert k == 5 and p.last_chain == pytest.approx(0.95 + 0.95 ** 2)  # (g_(i) = 0.5 + 0.5 c_(i): 0.95, 0.95)
    one_guess = (p.one_guess.chain_expected, p.one_guess.chain_accepted)
    p.observe(PassOutcome(5, 0.011, False, accepted_edges=2, overhead_s=0.0, drafted=True))
    assert (p.tree.edges_accepted, p.tree.edges_passes) == (2.0, 1.0)
    assert (p.one_guess.chain_expected, p.one_guess.chain_accepted) == pytest.approx(one_guess)  # (faded: prior)


def test_larger_trees_mean_follows_the_last_passes_and_one_guess_alone_below_three_states(monkeypatch):
    """The larger trees' mean holds at most GATE_PASSES passes, so it follows the text: after 40 passes of 6 edges,
    120 of 1 bring it near 1 (a mean of all 160 would stay at 2.25). With n_max = 2 there is no larger tree: one
    guess or nothing."""
    p = CostAwareBudget(curve(0.010, 0.0), n_max=8)
    p.observe(PassOutcome(1, 0.010, False))
    for accepted in [6] * 40 + [1] * 120:
        p.draft_now(np.array([0.9] * 6))
        p.small = False  # (a larger tree)
        p.begin(6), p.add(0.9), p.choose(2)
        p.observe(PassOutcome(4, 0.010, False, accepted_edges=accepted, overhead_s=0.0, drafted=True))
    assert p.tree.edges_passes == pytest.approx(auto_budget.GATE_PASSES)
    assert 1.0 < p.tree.mean_edges(1.0) < 1.5
    two = CostAwareBudget(curve(0.010, 0.0), n_max=2)
    two.tree.edges_accepted, two.tree.edges_passes = 400.0, 40.0  # (a larger tier that would win, were there one)
    two.one_guess.overhead = 1.0  # (one guess never pays)
    assert not two.draft_now(np.array([0.99] * 6))
    assert not CostAwareBudget(curve(0.010, 0.0), n_max=8).draft_now(np.array([]))  # (nothing masked)


def test_a_tiers_low_calibration_does_not_discount_the_other_tier(monkeypatch):
    """Each tier is priced by its own passes: one-guess trees that disappointed leave larger trees' estimate as it
    was."""
    monkeypatch.setattr(CostAwareBudget, "PRIOR_SHAPE", 1.0)  # (the curve as given: this checks the gate's arithmetic)
    c = np.array([0.99, 0.99, 0.99])
    p = CostAwareBudget(curve(0.010, 0.002), n_max=8)
    p.tree.overhead = p.one_guess.overhead = 0.0
    p.observe(PassOutcome(1, 0.010, False))
    p.tree.pause = 9
    assert p.draft_now(c) and p.small  # (one guess: 1.99 commits in 12 ms against 1 in 10 ms)
    p.one_guess.chain_expected, p.one_guess.chain_accepted = 40.0, 4.0
    assert not p.draft_now(c)  # (one guess at a tenth: 1.1 commits in 12 ms)
    p.tree.pause = 0
    assert p.draft_now(c) and not p.small  # (larger trees, priced by their own calibration, still pay)


def test_auto_pauses_drafting_when_drafted_passes_were_slower_per_commit(monkeypatch):
    """Whatever the estimates say, drafted passes measured slower per commit than a standard pass pause drafting,
    for 4 passes, then 8 if it happens again; drafted passes that pay never pause it."""
    monkeypatch.setattr(CostAwareBudget, "PRIOR_SHAPE", 1.0)  # (the curve as given: this checks the gate's arithmetic)
    c = np.array([0.99, 0.99, 0.99])  # the gate is sure: a chain this certain pays on this curve

    def drafted(policy, seconds, commits):
        assert policy.draft_now(c)
        policy.begin(3), policy.add(0.99), policy.choose(2)
        policy.observe(PassOutcome(2, seconds, False, accepted_edges=commits - 1, overhead_s=0.0, drafted=True))

    def standard(policy):
        policy.observe(PassOutcome(1, 0.010, False, overhead_s=0.0))

    slow = CostAwareBudget(curve(0.010, 0.002), n_max=8)
    slow.tree.overhead, slow.one_guess.overhead = 0.0, 1.0  # (one-guess trees never pay: larger ones only)
    for _ in range(3):  # 2 commits for 30 ms: 15 ms a commit against a standard pass's 10
        drafted(slow, 0.030, 2)
    assert [slow.draft_now(c) for _ in range(5)] == [False] * 4 + [True]
    standard(slow)
    drafted(slow, 0.030, 2)
    assert [slow.draft_now(c) for _ in range(9)] == [False] * 8 + [True]

    fast = CostAwareBudget(curve(0.010, 0.002), n_max=8)
    fast.tree.overhead, fast.one_guess.overhead = 0.0, 1.0
    for _ in range(20):  # 2 commits for 12 ms: 6 ms a commit
        drafted(fast, 0.012, 2)
    assert fast.tree.pause == 0 and fast.draft_now(c)


def test_auto_does_not_pause_a_tier_that_pays_on_average_through_its_scatter():
    """Drafted passes that alternate a rejected guess (a loss) with an accepted one (a larger gain) pay on average:
    their scatter is no reason to pause. Passes that lose steadily pause within a few passes."""
    c = np.array([0.99])

    def run(policy, seconds_commits):
        paused = 0
        for seconds, commits in seconds_commits:
            if not policy.draft_now(c):
                paused += 1
                continue
            policy.begin(1), policy.add(0.99), policy.choose(2)
            policy.observe(PassOutcome(2, seconds, False, accepted_edges=commits - 1, overhead_s=0.0, drafted=True))
        return paused

    noisy = CostAwareBudget(curve(0.010, 0.002), n_max=2)
    noisy.one_guess.overhead = noisy.tree.overhead = 0.0
    assert run(noisy, [(0.013, 1), (0.013, 2)] * 30) == 0  # -3 ms, +7 ms: 2 ms a pass on average
    losing = CostAwareBudget(curve(0.010, 0.002), n_max=2)
    losing.one_guess.overhead = losing.tree.overhead = 0.0
    assert run(losing, [(0.013, 1)] * 10) > 0


def test_auto_pauses_each_tier_on_its_own_losses():
    """Larger trees that lost time pause; one-guess trees (the cheaper tier) go on drafting meanwhile."""
    c = np.array([0.99, 0.99, 0.99])
    p = CostAwareBudget(curve(0.010, 0.002), n_max=8)
    p.tree.overhead = p.one_guess.overhead = 0.0
    assert p.draft_now(c) and not p.small  # both open: the chain pays for the larger tree
    p.observe(PassOutcome(1, 0.010, False))
    p.tree.pause = 2
    assert [(p.draft_now(c), p.small) for _ in range(3)] == [(True, True), (True, True), (True, False)]


def test_auto_remembers_what_a_run_learned_for_the_next_run_of_its_kind(tiny_block_target, monkeypatch):
    monkeypatch.setattr(auto_budget, "cost_curve", lambda target, **k: curve(0.010, 0.002))
    monkeypatch.setattr(auto_budget, "_LEARNED", {})
    key = ("spot", "SpotProposer", 1, "exact", 0.0, 0.9, True)
    first = auto_budget.budget_policy("auto", tiny_block_target, key)
    first.accepted, first.expected = 30.0, 120.0
    first.one_guess.chain_accepted, first.one_guess.chain_expected = 10.0, 80.0
    first.tree.edges_accepted, first.tree.edges_passes = 300.0, 100.0  # (more passes than a run keeps: scaled down)
    first.tree.pause, first.tree.backoff, first.tree.overhead, first.one_guess.overhead = 3, 16, 0.004, 0.001
    auto_budget.remember_policy(first, tiny_block_target, key)
    again = auto_budget.budget_policy("auto", tiny_block_target, key)
    assert (again.tree.pause, again.tree.backoff, again.tree.overhead) == (3, 16, 0.004)
    assert again.one_guess.overhead == 0.001
    assert again.tree is not first.tree  # (a copy: the next run's changes do not reach back)
    # the calibrations carry over as ratios, with their weight capped so that they keep adapting
    assert again.accepted / again.expected == pytest.approx(0.25) and again.expected == pytest.approx(40.0)
    assert again.one_guess.chain_accepted / again.one_guess.chain_expected == pytest.approx(0.125)
    assert again.one_guess.chain_expected == pytest.approx(40.0)
    assert again.tree.mean_edges(0.0) == pytest.approx(3.0 * 40 / 42) and again.tree.edges_passes == 40.0
    other = auto_budget.budget_policy("auto", tiny_block_target, key[:4] + (1.0,) + key[5:])  # another temperature
    assert other.tree.pause == 0 and other.accepted / other.expected == 1.0


def test_auto_carries_the_curves_corrections_to_the_next_run(tiny_block_target, monkeypatch):
    """A run that saw three-state forwards cost twice what the cached curve says (a curve measured while something
    else shared the cores) starts the next run of its kind from that, not from the curve again."""
    monkeypatch.setattr(auto_budget, "cost_curve", lambda target, **k: curve(0.010, 0.002))
    monkeypatch.setattr(auto_budget, "_LEARNED", {})
    key = ("spot", "SpotProposer", 1, "exact", 0.0, 0.9, True)
    first = auto_budget.budget_policy("auto", tiny_block_target, key)
    f3 = first.f[3]
    for _ in range(6):
        first.observe(PassOutcome(3, 2 * f3, False))
        first.observe(PassOutcome(1, first.f[1], False))
    assert first.f_now[3] > 1.5 * f3
    auto_budget.remember_policy(first, tiny_block_target, key)
    again = auto_budget.budget_policy("auto", tiny_block_target, key)
    assert again.f_now[3] == pytest.approx(first.f_now[3]) and again.f_at(3) == pytest.approx(first.f_now[3])
    assert again.load == pytest.approx(first.load) and again.ratio is not first.ratio
    fresh = auto_budget.budget_policy("auto", tiny_block_target, key[:4] + (1.0,) + key[5:])  # another kind: the curve
    assert fresh.f_now[3] == pytest.approx(auto_budget.CostAwareBudget.PRIOR_SHAPE * f3)  # (and the prior's shape)


@pytest.mark.parametrize("mode,tau,T", [("exact", 0.9, 0.0), ("exact", 0.9, 1.0), ("threshold", 0.3, 0.0),
                                        ("threshold", 0.3, 1.0)])
def test_auto_budget_is_lossless_and_recorded(mode, tau, T, random_drafter, tiny_block_target, monkeypatch):
    # rows nearly free: auto sizes real trees (on the machine's real curve it may rightly choose none); the gate
    # (which on this untrained target rightly never drafts) drafts two passes in three, so both paths are taken
    monkeypatch.setattr(auto_budget, "cost_curve", lambda target, **k: curve(0.005, 1e-5))
    gate = itertools.cycle([True, True, False])
    monkeypatch.setattr(auto_budget.CostAwareBudget, "draft_now", lambda self, stale: next(gate))
    for r in range(3):
        c = DecodeConfig(mode=mode, threshold=tau, temperature=T, seed=40 + r, gen_length=32,
                         drafter=learned_drafter(mode))
        assert c.budget == "auto"
        std = decode_standard(tiny_block_target, PROMPTS[r], c)
        spot = decode_spot(tiny_block_target, PROMPTS[r], c, SpotProposer(random_drafter))
        assert spot.tokens == std.tokens and spot.text == std.text
        assert sorted(commits(spot), key=lambda x: (x[2], x[0])) == sorted(commits(std), key=lambda x: (x[2], x[0]))
        assert spot.meta.budget_auto and spot.meta.cost_curve and spot.meta.budget == 0
        verify = [p for p in spot.passes if p.kind == "verify"]
        assert all(p.states == len(p.tree) - sum(n.reused for n in p.tree) <= p.budget for p in verify)  # chosen <= allowed (the same every pass)
        assert len({p.budget for p in verify}) == 1 and any(p.states < p.budget for p in verify)
        assert max(p.states for p in verify) > 1


def test_auto_budget_degrades_to_standard_passes_when_rows_are_dear(random_drafter, tiny_block_target, monkeypatch):
    monkeypatch.setattr(auto_budget, "cost_curve", lambda target, **k: curve(0.005, 1.0))
    c = DecodeConfig(seed=2, gen_length=32, drafter="spot")
    spot = decode_spot(tiny_block_target, PROMPTS[0], c, SpotProposer(random_drafter))
    std = decode_standard(tiny_block_target, PROMPTS[0], c)
    assert spot.tokens == std.tokens
    assert all(p.states == 1 for p in spot.passes)  # every pass is a standard-sized pass


@pytest.mark.parametrize("T", [0.0, 1.0])
def test_auto_pass_that_does_not_draft_is_the_standard_pass(T, random_drafter, tiny_block_target, monkeypatch):
    # where auto does not draft, the pass is the standard decoder's and nothing more: the same commits pass by pass,
    # a record of s1 alone holding the target's decision, and no tree, walk or verifier, except where s1 completes
    # its window (that pass evaluates the next window too: the fused pass, through the verifier)
    from spotviz.samplers import spot as spot_mod

    monkeypatch.setattr(auto_budget.CostAwareBudget, "draft_now", lambda self, stale: False)
    calls = {"verify": 0, "build_tree": 0}

    def counted(name):
        fn = getattr(spot_mod, name)

        def wrapped(*a, **k):
            calls[name] += 1
            return fn(*a, **k)
        return wrapped
    for name in calls:
        monkeypatch.setattr(spot_mod, name, counted(name))
    c = DecodeConfig(temperature=T, seed=5, gen_length=48, drafter="spot")
    spot = decode_spot(tiny_block_target, PROMPTS[2], c, SpotProposer(random_drafter))
    std = decode_standard(tiny_block_target, PROMPTS[2], c)
    assert spot.tokens == std.tokens
    assert [[(x.position, x.token, x.step) for x in p.commits] for p in spot.passes] == \
        [[(x.position, x.token, x.step) for x in p.commits] for p in std.passes]
    verify = spot.passes[1:]
    assert verify and all(p.kind == "verify" and p.states == 1 and p.accepted_path == [0] for p in verify)
    for p in verify:
        (root,) = p.tree
        assert (root.id, root.parent, root.depth, root.positions, root.accepted) == (0, -1, 0, [], True)
        held = sorted(zip(root.target_positions, root.target_tokens))
        assert held == ([] if p.two_windows else sorted((x.position, x.token) for x in p.commits))  # (fused: the next
        # window's decision is the bonus's, not s1's in this window)
    assert calls["build_tree"] == 0
    assert calls["verify"] == sum(p.two_windows for p in verify) < len(verify) // 4  # the window-completing passes


def test_zero_overhead_ceiling_is_commits_per_pass_over_the_pass_cost():
    from spotviz.trace import Commit, PassRecord

    f = CostCurve("test", [1, 2, 4], [0.010, 0.015, 0.020], fused_sizes=[1, 2, 4], fused_seconds=[0.02, 0.03, 0.04])

    def rec(states, positions, two_windows=False):
        return PassRecord(index=0, kind="verify", window=[0, 16], states=states,
                          commits=[Commit(p, 5, 0, 1.0) for p in positions], two_windows=two_windows)

    standard = [rec(1, [i]) for i in range(6)]
    # exact mode: 3 commits per pass at N = 2 (1.5 standard passes each): 2x
    assert forward_cost.ceiling(standard, [rec(2, [0, 1, 2]), rec(2, [3, 4, 5])], f) == pytest.approx(2.0)
    # N = 3 interpolates (1.75); a forward over two windows costs f at that width (3.0 at N = 2), and the standard
    # decoder's pass that opens a window pays it too (2.0 at N = 1)
    standard = [rec(1, [i]) for i in range(6)] + [rec(1, [16], two_windows=True)]
    assert forward_cost.ceiling(standard, [rec(3, [0, 1, 2]), rec(2, [15, 16, 17, 18], two_windows=True)], f) \
        == pytest.approx((6 + 2.0) / (1.75 + 3.0))
    assert f.ratios((1, 2, 4)) == pytest.approx({1: 1.0, 2: 1.5, 4: 2.0})


def test_cost_curve_measured_once_and_cached_outside_the_repository(tiny_block_target, tmp_path, monkeypatch):
    monkeypatch.setattr(forward_cost, "cacheable", lambda target: True)
    monkeypatch.setattr(forward_cost, "machine_busy", lambda since: False)
    calls = []
    real = forward_cost.measure
    monkeypatch.setattr(forward_cost, "measure", lambda target, **k: calls.append(1) or real(target, sizes=(1, 2, 4), rounds=1, per_round=1))
    t = eager_twin(tiny_block_target)
    a = forward_cost.cost_curve(t)
    assert a.sizes == [1, 2, 4] and all(x > 0 for x in a.seconds) and a.clock == "thread"
    files = list((tmp_path / "cache" / "cost").glob("*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["sizes"] == [1, 2, 4]
    forward_cost._MEMO.clear()
    assert forward_cost.cost_curve(t).seconds == a.seconds and len(calls) == 1  # read back from the cache
    forward_cost.cost_curve(t, remeasure=True)
    assert len(calls) == 2


def test_a_cached_cost_curve_is_not_used_on_a_cpu_with_other_kernels(tiny_block_target, tmp_path, monkeypatch):
    """A cache folder carried to a machine whose CPU kernels differ (AVX-512 -> AVX2) measures the curve again;
    back on the first kind, its own curve is read from the cache."""
    monkeypatch.setattr(forward_cost, "cacheable", lambda target: True)
    monkeypatch.setattr(forward_cost, "machine_busy", lambda since: False)
    calls = []
    real = forward_cost.measure
    monkeypatch.setattr(forward_cost, "measure", lambda target, **k: calls.append(1) or real(target, sizes=(1, 2), rounds=1, per_round=1))
    t = eager_twin(tiny_block_target)
    for isa, measured in (("AVX512", 1), ("AVX2", 2), ("AVX512", 2)):
        monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda isa=isa: isa)
        forward_cost._MEMO.clear()
        forward_cost.cost_curve(t)
        assert len(calls) == measured, isa
    assert sorted(f.name.split("-cpu-")[1].split("-")[0] for f in (tmp_path / "cache" / "cost").glob("*.json")) \
        == ["avx2", "avx512"]


def test_a_cost_curve_measured_on_a_busy_machine_serves_only_its_process(tiny_block_target, tmp_path, monkeypatch):
    """Measured while other processes used a core's worth of CPU (half the cores this process leaves free), a curve
    is kept in memory, not in the cache: the next process measures it again; on a quiet machine it is cached."""
    monkeypatch.setattr(forward_cost, "cacheable", lambda target: True)
    calls = []
    real = forward_cost.measure
    monkeypatch.setattr(forward_cost, "measure", lambda target, **k: calls.append(1) or real(target, sizes=(1, 2), rounds=1, per_round=1))
    monkeypatch.setattr(forward_cost.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    t = eager_twin(tiny_block_target)
    folder = tmp_path / "cache" / "cost"
    snaps = iter([])
    monkeypatch.setattr(forward_cost, "cpu_snapshot", lambda: next(snaps))
    # (machine busy seconds, this process's seconds, wall): 10 s of wall, this process 10 s of CPU, the others 9 s
    snaps = iter([(100.0, 5.0, 50.0), (119.0, 15.0, 60.0)])
    forward_cost.cost_curve(t)
    assert not list(folder.glob("*.json")) and len(calls) == 1
    forward_cost.cost_curve(t)  # (this process: from memory)
    assert len(calls) == 1
    forward_cost._MEMO.clear()  # a new process, on a quiet machine (the others: 1 s in 10)
    snaps = iter([(200.0, 20.0, 70.0), (211.0, 30.0, 80.0)])
    forward_cost.cost_curve(t)
    assert len(calls) == 2 and len(list(folder.glob("*.json"))) == 1
    assert forward_cost.machine_busy(None) is False  # unknown (no /proc/stat): as quiet
    snaps = iter([(9.0, 1.0, 5.0)])
    assert forward_cost.machine_busy((0.0, 0.0, 5.0)) is False  # (wall time did not advance: unknown)


def test_a_curve_belongs_to_the_target_it_was_measured_for(tiny_block_target, monkeypatch):
    """The in-process memo holds a target's curve while the target lives: a freed target's curve goes with it, so a
    new target object (which may reuse the freed one's id) measures its own instead of being served another's."""
    import gc

    monkeypatch.setattr(forward_cost, "cacheable", lambda target: False)
    calls = []
    real = forward_cost.measure
    monkeypatch.setattr(forward_cost, "measure", lambda target, **k: calls.append(1) or real(target, sizes=(1, 2), rounds=1, per_round=1))
    t = eager_twin(tiny_block_target)
    forward_cost.cost_curve(t)
    forward_cost.cost_curve(t)
    assert len(calls) == 1 and t in forward_cost._MEMO
    held = len(forward_cost._MEMO)
    del t
    gc.collect()
    assert len(forward_cost._MEMO) == held - 1
    forward_cost.cost_curve(eager_twin(tiny_block_target))
    assert len(calls) == 2


def test_a_curve_being_measured_is_waited_for_not_measured_again(tiny_block_target, monkeypatch):
    """Two runs that need one model's curve at once (the app: a run stopped while its curve was measured goes on
    measuring in its thread, and the next Run needs the same curve) share one measurement; known_curve says whether
    a run would have to measure."""
    import threading
    import time

    monkeypatch.setattr(forward_cost, "cacheable", lambda target: False)
    calls = []
    real = forward_cost.measure

    def measure(target, **k):
        calls.append(1)
        time.sleep(0.3)  # (the second run asks while the first measures)
        return real(target, sizes=(1, 2), rounds=1, per_round=1)

    monkeypatch.setattr(forward_cost, "measure", measure)
    t = eager_twin(tiny_block_target)
    assert forward_cost.known_curve(t) is None
    got = []
    runs = [threading.Thread(target=lambda: got.append(forward_cost.cost_curve(t))) for _ in range(2)]
    for r in runs:
        r.start()
        time.sleep(0.05)
    for r in runs:
        r.join()
    assert len(calls) == 1 and len(got) == 2 and got[0].seconds == got[1].seconds
    assert forward_cost.known_curve(t).seconds == got[0].seconds


def test_named_models_cache_their_curve_and_folders_do_not(tmp_path):
    """Embedded and published short names and Hub repo ids are cached on disk (a published 8B model was measured
    again in every process); a folder is not (its model may change under the same name)."""
    from types import SimpleNamespace

    def named(name):
        return SimpleNamespace(info=SimpleNamespace(name=name))

    assert forward_cost.cacheable(named("math-bd")) and forward_cost.cacheable(named("sdar-1.7b-chat"))
    assert forward_cost.cacheable(named("JetLM/SDAR-1.7B-Chat"))
    assert not forward_cost.cacheable(named(str(tmp_path))) and not forward_cost.cacheable(named("my-folder"))


# ------------------------------------------------------------------------------------ one run description
def test_start_event_then_passes_then_trace(tiny_block_target, tiny_prompt, random_drafter):
    for cfg in (DecodeConfig(seed=1, gen_length=16), DecodeConfig(seed=1, gen_length=16, drafter="training-free",
                                                                  budget=4)):
        events = list(decode_stream(tiny_block_target, tiny_prompt, cfg, start_event=True))
        assert [e.kind for e in events] == ["start"] + ["pass"] * (len(events) - 2) + ["done"]
        start, done = events[0], events[-1]
        # the same description, but for what only the run's end knows (calls made outside its passes and their
        # time; whether a pass shape checked during the run withdrew the identity guarantee)
        outcome = dict(forward_calls_outside=done.trace.meta.forward_calls_outside,
                       outside_s=done.trace.meta.outside_s,
                       identity_guaranteed=done.trace.meta.identity_guaranteed)
        assert replace(start.meta, **outcome) == done.trace.meta
        assert start.meta.prompt_tokens == tiny_block_target.encode(tiny_prompt)
    assert [e.kind for e in decode_stream(tiny_block_target, tiny_prompt, cfg)][0] == "pass"  # opt-in


def test_one_validator_with_limits():
    DecodeConfig(budget="auto")
    with pytest.raises(DecodeError, match="budget"):
        DecodeConfig(budget="big")
    with pytest.raises(DecodeError, match="budget"):
        DecodeConfig(budget=0)
    ui = Limits(gen_max=64, temperature_max=2.0, budgets=(2, 4, 8), drafters=("none", "spot"))
    DecodeConfig(gen_length=64, temperature=2.0, budget=4, drafter="spot", limits=ui)
    ok = DecodeConfig(gen_length=32, budget="auto", drafter="spot", limits=ui)
    for bad, what in ((dict(gen_length=65), "gen_length"), (dict(temperature=2.5), "temperature"),
                      (dict(budget=16), "budget"), (dict(drafter="calibrated"), "drafter")):
        with pytest.raises(DecodeError, match=what):
            DecodeConfig(**{"gen_length": 32, **bad}, limits=ui)
        with pytest.raises(DecodeError, match=what):  # a variant is checked against the same limits
            replace(ok, **bad)
    with pytest.raises(DecodeError, match="spot-sets"):  # the drafter must serve the mode
        DecodeConfig(mode="threshold", drafter="spot")


def test_registry_names_every_drafter_once():
    assert DRAFTERS == ("none", *BUILT_IN) and set(BUILT_IN) <= set(PROPOSERS)
    assert learned_drafter("exact") == "spot" and learned_drafter("threshold") == "spot-sets"
    for spec in (PROPOSERS[n] for n in BUILT_IN):
        assert spec.help and spec.modes and set(spec.modes) <= {"exact", "threshold"}


def test_threads_policy(monkeypatch):
    """One policy (spotviz/threads.py): explicit count, else $SPOTVIZ_THREADS, else 1; 0 = all cores; at most the
    machine's cores; a bad value names the option or the variable."""
    before = torch.get_num_threads()
    cores = threads.machine_cores()
    try:
        monkeypatch.delenv("SPOTVIZ_THREADS", raising=False)
        assert set_threads() == 1 and torch.get_num_threads() == 1
        assert set_threads(0) == cores and torch.get_num_threads() == cores
        monkeypatch.setenv("SPOTVIZ_THREADS", str(cores))
        assert set_threads() == cores and torch.get_num_threads() == cores
        assert set_threads(1) == 1  # an explicit count wins over the environment
        monkeypatch.setenv("SPOTVIZ_THREADS", "0")
        assert set_threads() == cores
        for bad in ("many", "-1", str(cores + 1), "1.5"):
            monkeypatch.setenv("SPOTVIZ_THREADS", bad)
            with pytest.raises(DecodeError, match=f"SPOTVIZ_THREADS must be .* 1 to {cores} .*{bad}"):
                set_threads()
        monkeypatch.delenv("SPOTVIZ_THREADS")
        with pytest.raises(DecodeError, match="^threads must be"):  # (the library's word; the CLI's is --threads)
            set_threads(cores + 1)
        with pytest.raises(DecodeError, match="^--threads must be"):
            set_threads(cores + 1, "--threads")
    finally:
        torch.set_num_threads(before)


def test_library_entry_points_apply_the_thread_default(monkeypatch, tiny_block_target):
    """A library user who never calls set_threads gets the same default as the command line (1 thread), once."""
    before = torch.get_num_threads()
    monkeypatch.delenv("SPOTVIZ_THREADS", raising=False)
    monkeypatch.setattr(threads, "_applied", None)
    try:
        torch.set_num_threads(2)
        decode(tiny_block_target, PROMPTS[0], DecodeConfig(gen_length=4))
        assert torch.get_num_threads() == 1
        chosen = min(2, threads.machine_cores())
        set_threads(chosen)  # a count chosen by the user is kept by later decodes
        decode(tiny_block_target, PROMPTS[0], DecodeConfig(gen_length=4))
        assert torch.get_num_threads() == chosen
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("mode,temperature", [("exact", 0.0), ("threshold", 0.0), ("exact", 1.0), ("threshold", 1.0)])
def test_decide_skips_finished_rows_and_decides_the_others_as_alone(mode, temperature):
    """A batch whose rows have nothing left to decide (tree nodes that complete their window) gets None there and,
    for every other row, the decision that row gets alone: the same offsets, tokens and confidences."""
    torch.manual_seed(3)
    n, w, vocab, mask = 5, 8, 50, 1
    logits = torch.randn(n, w, vocab) * 3
    masked = torch.rand(n, w) < 0.6
    masked[1] = False  # finished rows
    masked[3] = False
    masked[0, 0] = masked[2, 5] = masked[4, 7] = True
    rule, noise = DecisionRule(mode, temperature, 0.5), GumbelNoise(7, vocab)
    steps = [4, 5, 5, 6, 7]
    got = decide(logits, masked, steps, 16, rule, noise, mask)
    assert got[1] is None and got[3] is None
    for r in (0, 2, 4):
        alone = decide(logits[r:r + 1], masked[r:r + 1], [steps[r]], 16, rule, noise, mask)[0]
        assert (got[r].offsets, got[r].tokens) == (alone.offsets, alone.tokens)  # (what the walk compares)
        # (the numbers themselves: the same rows through the same kernels; not asserted to the last bit, which is
        # the CPU's business, not the library's)
        assert got[r].confidences == pytest.approx(alone.confidences, rel=0, abs=1e-6)
        assert torch.allclose(got[r].logp, alone.logp, rtol=0, atol=1e-5)
    assert decide(logits[[1, 3]], masked[[1, 3]], [5, 6], 16, rule, noise, mask) == [None, None]


def test_auto_memory_reaches_the_next_process_through_the_user_cache(tiny_block_target, monkeypatch):
    """A command-line decode is a process of its own: what an `auto` run learned is also kept beside the cached cost
    curve and starts the next process's run of that kind; a damaged file is ignored, a model folder keeps none."""
    monkeypatch.setattr(auto_budget, "cost_curve", lambda target, **k: curve(0.010, 0.002))
    monkeypatch.setattr(auto_budget, "_LEARNED", {})
    monkeypatch.setattr(forward_cost, "cacheable", lambda target: True)  # (as a named model's curve is)
    key = ("spot", "SpotProposer", "exact", 1.0, 0.9, True, True)
    first = auto_budget.budget_policy("auto", tiny_block_target, key, instance=7)
    first.tree.pause, first.tree.overhead, first.load = 5, 0.004, 1.3
    first.tree.edges_accepted, first.tree.edges_passes = 30.0, 10.0
    first.ratio[3], first.seen[3] = 2.0, 4
    auto_budget.remember_policy(first, tiny_block_target, key, instance=7)
    path = auto_budget.memory_file(tiny_block_target, key)
    assert path.is_file() and path.parent.parent == forward_cost.cache_dir()
    auto_budget._LEARNED.clear()  # a new process
    again = auto_budget.budget_policy("auto", tiny_block_target, key, instance=8)
    assert (again.tree.pause, again.tree.overhead, again.load) == (5, 0.004, 1.3)
    assert (again.tree.edges_accepted, again.tree.edges_passes) == (30.0, 10.0)
    assert again.f_at(3) == pytest.approx(1.3 * 2.0 * again.f[3])  # (the load times the size's shape)
    other = auto_budget.budget_policy("auto", tiny_block_target, key[:3] + (0.0,) + key[4:])  # another temperature
    assert other.tree.pause == 0 and other.load == 1.0
    for damaged in ("{", '{"version": 2, "learned": {"load": "x"}}', json.dumps({"version": 99, "learned": {}})):
        path.write_text(damaged)
        fresh = auto_budget.budget_policy("auto", tiny_block_target, key)
        assert fresh.tree.pause == 0 and fresh.load == 1.0  # the priors
    first.rank_expected[3], first.rank_accepted[3] = 40.0, 52.0
    auto_budget.remember_policy(first, tiny_block_target, key, instance=7)
    written = json.loads(path.read_text())
    auto_budget._LEARNED.clear()
    assert auto_budget.budget_policy("auto", tiny_block_target, key).rank_accepted[3] == 52.0  # (ranks carried)
    older = dict(written, version=4)  # (an earlier release's file: no ranks)
    older["learned"] = {k: v for k, v in written["learned"].items() if not k.startswith("rank_")}
    edits = ({"tree": dict(written["learned"]["tree"], edges_passes=-2.0)},  # (the mean would divide by zero)
             {"rank_expected": [1.0, 2.0]},  # (ranks of another length: half a calibration)
             {"rank_accepted": [-1.0] * auto_budget.RANKS})
    for text in [json.dumps(dict(written, learned={**written["learned"], **e})) for e in edits] + [json.dumps(older)]:
        path.write_text(text)
        auto_budget._LEARNED.clear()
        fresh = auto_budget.budget_policy("auto", tiny_block_target, key)
        assert fresh.tree.pause == 0 and fresh.tree.edges_passes == 0.0  # the priors
        assert fresh.rank_expected == [0.0] * auto_budget.RANKS == fresh.rank_accepted
    monkeypatch.setattr(forward_cost, "cacheable", lambda target: False)  # a model folder: nothing kept on disk
    assert auto_budget.memory_file(tiny_block_target, key) is None


def test_auto_memory_files_survive_runs_ending_at_once_in_several_threads(tiny_block_target, monkeypatch):
    """The app decodes for several people in threads of one process: runs of one kind ending together each write
    a whole file of their own and rename it (never a mix of two runs' memories), and the next process reads one."""
    import os
    import threading
    import time
    from pathlib import Path

    monkeypatch.setattr(auto_budget, "cost_curve", lambda target, **k: curve(0.010, 0.002))
    monkeypatch.setattr(auto_budget, "_LEARNED", {})
    monkeypatch.setattr(forward_cost, "cacheable", lambda target: True)

    def slow_write(self, data, *a, **k):  # a write that another thread can interleave with
        with open(self, "w") as f:
            f.write(data[: len(data) // 2])
            f.flush()
            time.sleep(0.002)
            f.write(data[len(data) // 2:])
        return len(data)

    monkeypatch.setattr(Path, "write_text", slow_write)
    renamed, replace = [], os.replace

    def recording_replace(src, dst):  # what each rename puts in place
        renamed.append(Path(src).read_text())
        replace(src, dst)

    monkeypatch.setattr(os, "replace", recording_replace)
    key = ("spot", "SpotProposer", "exact", 0.0, 0.9, True, True)
    policies = [auto_budget.budget_policy("auto", tiny_block_target, key) for _ in range(6)]
    for i, p in enumerate(policies):  # a signature at both ends of the file: the load first, the tree's pause last
        p.load, p.tree.pause = float(i + 1), i + 1

    def end(p):
        for _ in range(15):
            auto_budget.remember_policy(p, tiny_block_target, key)

    threads = [threading.Thread(target=end, args=(p,)) for p in policies]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    learned = [json.loads(text)["learned"] for text in renamed]  # (a mix of two half files is not one run's)
    assert len(learned) == 6 * 15 and all(m["load"] == m["tree"]["pause"] for m in learned)
    auto_budget._LEARNED.clear()  # the next process
    again = auto_budget.budget_policy("auto", tiny_block_target, key)
    assert again.tree.pause in range(1, 7) and again.load == again.tree.pause  # one run's memory, whole
    assert not list(auto_budget.memory_file(tiny_block_target, key).parent.glob("*.tmp"))


def test_auto_counts_the_slower_standard_pass_after_a_drafted_one_as_drafting_work():
    """On a CPU a one-state forward right after a batch of states runs slower. That excess is the drafting tier's
    own work: drafted passes that each slow the standard pass after them by 6 ms stop being drafted where one guess
    would pay otherwise, and the slow forwards do not raise the price of a standard pass."""
    c = np.array([0.6])

    def run(excess):
        p = CostAwareBudget(curve(0.010, 0.002), n_max=2)
        p.one_guess.overhead = p.tree.overhead = 0.0
        p.observe(PassOutcome(1, 0.010, False))
        drafted = []
        for i in range(40):  # (the gate's calibration fading back to its prior probes once, near pass 24)
            drafted.append(p.draft_now(c))
            if drafted[-1]:  # one guess, accepted every other time: 1.5 commits for 12 ms against 15 ms
                p.begin(1), p.add(0.6), p.choose(2)
                p.observe(PassOutcome(2, 0.012, False, accepted_edges=i % 2, overhead_s=0.0, drafted=True))
            p.observe(PassOutcome(1, 0.010 + (excess if drafted[-1] else 0.0), False))  # the next standard pass
        return drafted, p

    drafted, p = run(0.0)
    assert all(drafted[-10:]) and p.one_guess.overhead < 0.001
    drafted, p = run(0.006)
    assert not any(drafted[-10:]) and p.one_guess.overhead > 0.002
    assert p.f_at(1) == pytest.approx(0.010) and p.tree.pause == 0 and p.one_guess.pause == 0  # (the estimate, not a pause)


def test_auto_prices_every_size_at_the_machines_speed_now_when_it_changes_in_spells():
    """Each size's correction is kept with the run's load when it was seen, and every pass moves the load: when the
    machine slows down (a spell) while only standard passes run, a two-state pass is priced slower too, so f(2)/f(1)
    stays between what the run measured (1.3) and the cached curve (1.4), to which an unverified size's correction
    fades back (a correction per size in seconds alone kept the fast spell's price for N=2 and the slow one's for
    N=1: 1.3 read as 0.76, drafting looked cheaper than a standard pass)."""
    p = CostAwareBudget(curve(0.010, 0.004), n_max=2)
    speed = [1.0] * 40 + [1.7] * 40 + [1.0] * 40
    for i, s in enumerate(speed[:40]):  # fast: drafted passes of two states (in decodes 1.3 f(1)), standard ones
        if i % 2:
            p.observe(PassOutcome(2, 0.013 * s, False, accepted_edges=1, overhead_s=0.0, drafted=True))
        p.observe(PassOutcome(1, 0.010 * s, False))
    assert p.f_at(2) / p.f_at(1) == pytest.approx(1.3, rel=0.03)
    for s in speed[40:80]:  # slow, standard passes alone (auto drafted nothing)
        p.observe(PassOutcome(1, 0.010 * s, False))
        assert 1.05 < p.f_at(2) / p.f_at(1) < 1.45  # (a few passes' lag as the spell starts)
    assert p.f_at(1) == pytest.approx(0.017, rel=0.05) and 1.25 < p.f_at(2) / p.f_at(1) < 1.45
    for s in speed[80:]:
        p.observe(PassOutcome(1, 0.010 * s, False))
        assert 1.05 < p.f_at(2) / p.f_at(1) < 1.6
    assert p.f_at(1) == pytest.approx(0.010, rel=0.05) and 1.25 < p.f_at(2) / p.f_at(1) < 1.45
    assert p.f_now[1:3] == pytest.approx([p.f_at(1), p.f_at(2)])


def test_auto_gate_that_lost_faith_after_a_few_unlucky_trees_drafts_again():
    """A gate whose first trees accepted 2 edges of 9 expected (s_g = 0.36) stops drafting; only drafted passes
    could correct that, so the evidence fades while nothing is drafted and drafting resumes within a few problems'
    passes. A drafter that is never accepted is still tried only rarely after that."""
    c = np.array([0.999, 0.99])  # (math-bd's stale confidences: one-guess trees pay while s_g > about 0.5)
    p = CostAwareBudget(curve(0.0035, 0.0020), n_max=2)  # (f(2)/f(1) 1.57: AMD, session 38)
    p.one_guess.overhead = p.tree.overhead = 0.0005
    p.observe(PassOutcome(1, 0.0035, False, overhead_s=0.0003))
    assert p.draft_now(c)
    p.one_guess.chain_expected, p.one_guess.chain_accepted = 11.0, 4.0  # (as a run on the AMD machine of session 38
    # left it, prior 2)
    assert not p.draft_now(c)
    waited = 0
    while not p.draft_now(c) and waited < 1000:
        p.observe(PassOutcome(1, 0.0035, False, overhead_s=0.0003))
        waited += 1
    assert 20 < waited < 100  # (42 as written)
    probes, passes = 0, 2000
    for _ in range(passes):  # never accepted: each probe adds 1 expected edge, none accepted
        if p.draft_now(c):
            probes += 1
            p.begin(2), p.add(0.99), p.choose(2)
            p.observe(PassOutcome(2, 0.0055, False, accepted_edges=0, overhead_s=0.0005, drafted=True))
        else:
            p.observe(PassOutcome(1, 0.0035, False, overhead_s=0.0003))
    assert probes < passes / 40  # (34 in 2,000 as written: one probe costs about half a pass, under 1% of the time)


def test_auto_gives_a_size_priced_too_dear_by_a_few_slow_forwards_another_chance():
    """Two forwards of two states timed 60% slow (a spell's onset) price a one-guess tree out; unverified, that
    correction fades back to the cached curve, so drafting resumes and its forwards correct the price."""
    c = np.array([0.2])  # (g = 0.6: pays while f(2)/f(1) < 1.6; the cached curve says 1.3)
    p = CostAwareBudget(curve(0.010, 0.003), n_max=2)
    p.one_guess.overhead = p.tree.overhead = 0.0
    p.observe(PassOutcome(1, 0.010, False))
    for _ in range(2):
        p.observe(PassOutcome(2, 0.0208, False, accepted_edges=0, overhead_s=0.0, drafted=True))
        p.observe(PassOutcome(1, 0.010, False))  # (the follow-on pass)
        p.observe(PassOutcome(1, 0.010, False))
    assert p.f_at(2) / p.f_at(1) > 1.9 and not p.draft_now(c)
    waited = 0
    while not p.draft_now(c):
        p.observe(PassOutcome(1, 0.010, False))
        waited += 1
    assert 20 < waited < 150 and p.f_at(2) / p.f_at(1) < 1.6


def test_auto_grows_larger_trees_step_by_step_until_it_knows_what_a_state_costs():
    """Until a tier's passes have spread over sizes, how its work grows with the states is unknown, and on a flat curve
    (a GPU) a tree priced at its prior work grew to the budget (SPOT-Sets on the simulated H200: a first tree of 64
    states, 20 ms of own work, nothing accepted). A larger tree is then capped at SLOW_START states, later at twice its
    tier's usual size; the tier's first pass sets its work outright, not a step of the way from the prior (which crept
    up threefold a pass while trees of 8.5-20 ms went on being drafted)."""
    flat = curve(0.005, 0.0)
    probs = [0.95 ** i for i in range(1, 64)]
    p = CostAwareBudget(flat, n_max=64)
    sizes = []
    for _ in range(3):
        assert p.draft_now(np.full(16, 0.99)) and not p.small
        n = _grown(p, 64, probs)
        sizes.append(n)
        p.observe(PassOutcome(n, 0.005, False, accepted_edges=6, overhead_s=0.001 + 0.0001 * n, drafted=True))
        if len(sizes) == 1:
            assert p.tree.states == n and p.tree.overhead == pytest.approx(0.001 + 0.0001 * n)
    assert sizes[0] == CostAwareBudget.SLOW_START and sizes[1] == 2 * sizes[0] and sizes[2] > sizes[1], sizes

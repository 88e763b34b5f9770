"""The library as a researcher's own code meets it. A drafter of one's own: registered by name, run through
engine.decode like a built-in one, named in the trace, and checked at every node (drafter/proposers/checked.py); the
standard decoder is the ground truth: a registered proposer, good or bad, never changes the output, and a bad one
stops the decode with an error that names it. A prompt cut to fit the context warns; arguments in the wrong order
are named."""
from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

from spotviz.drafter.proposers.common import Context
from spotviz.drafter.registry import PROPOSERS, register_proposer, unregister_proposer
from spotviz.drafter.tree import Proposer
from spotviz.engine import decode
from spotviz.errors import DecodeError, PromptTruncatedWarning, ProposerError
from spotviz.samplers.config import DecodeConfig

from helpers import RandomProposer


class LeftToRight(Proposer):
    """The leftmost masked position next, with the root's (coupled-noise) token there: one candidate per node."""

    def prepare(self, view, max_depth):
        return Context(view, max_depth)

    def children(self, ctx, view, node, remaining):
        d = ctx.d(node)  # (first: it grows the context's arrays to the node's depth)
        o = int(np.flatnonzero(remaining)[0])
        return [((o,), (int(ctx.tok1[d, o]),), 0.9)]


FAULTS = {  # fault -> what the error must say about it
    "offset past the window": "offset 21 is not a masked position",
    "negative offset": "offset -1 is not a masked position",
    "committed offset": "is not a masked position of the node",
    "mask token": "is not a token the model can commit",
    "token past the vocabulary": "token 1000000 is not a token the model can commit",
    "nan probability": "probability nan is not a number in [0, 1]",
    "probability above one": "probability 7.0 is not a number in [0, 1]",
    "probabilities summing past one": "probabilities sum to 1.6, more than 1",
    "two offsets in exact mode": "2 offsets in exact mode",
    "offsets and tokens of different lengths": "1 offsets and 2 tokens",
    "not a list": "returned NoneType; expected a list",
    "not a triple": "is not an (offsets, tokens, probability) triple",
}


class Broken(LeftToRight):
    """LeftToRight with one fault injected into every candidate list."""

    def __init__(self, fault, mask):
        self.fault, self.mask = fault, mask

    def children(self, ctx, view, node, remaining):
        (o,), (t,), p = super().children(ctx, view, node, remaining)[0]
        other = next(x for x in (t + 1, t + 2) if x != self.mask)
        committed = int(np.flatnonzero(~remaining)[0])  # (s1 has the free decision's commit)
        return {
            "offset past the window": [((len(remaining) + 5,), (t,), p)],
            "negative offset": [((-1,), (t,), p)],
            "committed offset": [((committed,), (t,), p)],
            "mask token": [((o,), (self.mask,), p)],
            "token past the vocabulary": [((o,), (10 ** 6,), p)],
            "nan probability": [((o,), (t,), float("nan"))],
            "probability above one": [((o,), (t,), 7.0)],
            "probabilities summing past one": [((o,), (t,), 0.8), ((o,), (other,), 0.8)],
            "two offsets in exact mode": [((o, o + 1), (t, t), p)],
            "offsets and tokens of different lengths": [((o,), (t, t), p)],
            "not a list": None,
            "not a triple": [(o, t)],
        }[self.fault]


@pytest.fixture
def registered():
    names = []

    def reg(name, proposer_factory, modes=("exact",)):
        register_proposer(name, lambda target, mode, folder: proposer_factory(), modes=modes)
        names.append(name)

    yield reg
    for n in names:
        unregister_proposer(n)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_a_registered_proposer_runs_like_a_built_in_one(tiny_block_target, tiny_prompt, registered, temperature):
    registered("left-to-right", LeftToRight)
    base = DecodeConfig(temperature=temperature, seed=3, gen_length=32)
    standard = decode(tiny_block_target, tiny_prompt, base)
    for budget in (2, 4, 8):
        cfg = DecodeConfig(temperature=temperature, seed=3, gen_length=32, drafter="left-to-right", budget=budget)
        run = decode(tiny_block_target, tiny_prompt, cfg)
        assert run.tokens == standard.tokens
        assert run.meta.drafter == "left-to-right"  # (the trace names the drafter that drafted)
        assert run.counters.target_passes <= standard.counters.target_passes
        drafted = [n for p in run.passes for n in p.tree if n.depth > 0 and not n.known]
        assert drafted and all(len(n.positions) == 1 for n in drafted)


def test_registration_refuses_what_it_cannot_run(registered):
    with pytest.raises(DecodeError, match="built-in"):
        register_proposer("spot", lambda t, m, f: LeftToRight())
    with pytest.raises(DecodeError, match="built-in"):
        register_proposer("none", lambda t, m, f: LeftToRight())
    with pytest.raises(DecodeError, match="function"):
        register_proposer("mine", LeftToRight())
    with pytest.raises(DecodeError, match="the class LeftToRight"):  # (the class, not a loader of it)
        register_proposer("mine", LeftToRight)
    with pytest.raises(DecodeError, match="three arguments"):
        register_proposer("mine", lambda: LeftToRight())
    with pytest.raises(DecodeError, match="modes"):
        register_proposer("mine", lambda t, m, f: LeftToRight(), modes=("greedy",))
    with pytest.raises(DecodeError, match="built-in"):
        unregister_proposer("calibrated")
    registered("mine", LeftToRight)
    with pytest.raises(DecodeError, match="exact mode"):  # (registered for exact mode only)
        DecodeConfig(mode="threshold", drafter="mine")
    assert "spot" in PROPOSERS and "calibrated" in PROPOSERS


def test_a_loader_that_returns_no_proposer_is_named(tiny_block_target, tiny_prompt, registered):
    registered("not-a-proposer", lambda: "left to right")
    with pytest.raises(ProposerError, match="'not-a-proposer'.*not a Proposer"):
        decode(tiny_block_target, tiny_prompt, DecodeConfig(gen_length=16, drafter="not-a-proposer", budget=4))


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_bad_candidate_stops_the_decode_with_its_name(tiny_block_target, tiny_prompt, registered, fault):
    registered("broken", lambda: Broken(fault, int(tiny_block_target.info.mask_id)))
    cfg = DecodeConfig(gen_length=32, drafter="broken", budget=4, seed=1)
    with pytest.raises(ProposerError, match=r"drafter 'broken' \(Broken\.children\)") as e:
        decode(tiny_block_target, tiny_prompt, cfg)
    assert FAULTS[fault] in str(e.value), str(e.value)


def test_a_proposer_that_writes_into_what_it_reads_changes_nothing(tiny_block_target, tiny_prompt, registered):
    """A registered proposer reads a copy of the view (checked.py): writing into its token row, masks or root
    distributions, as if to try a commit out, leaves the decode as the standard decoder's (it changed the output when
    the proposer was given the decoder's own row)."""
    class Scribbler(LeftToRight):
        def children(self, ctx, view, node, remaining):
            got = super().children(ctx, view, node, remaining)
            (o,), (t,), _ = got[0]
            view.state[view.lo + o] = (t + 2) % 8
            view.masked[:] = False
            view.window_logp()[:] = 0.0
            return got

    for T in (0.0, 1.0):
        registered(f"scribbler-{T:g}", Scribbler)
        cfg = DecodeConfig(gen_length=32, seed=1, temperature=T)
        run = decode(tiny_block_target, tiny_prompt, replace(cfg, drafter=f"scribbler-{T:g}", budget=8))
        assert run.tokens == decode(tiny_block_target, tiny_prompt, cfg).tokens


def test_a_set_is_put_in_offset_order_and_the_same_edge_twice_is_one(tiny_block_target):
    """CheckedProposer.check: a set's (offset, token) pairs in offset order, as a decision's key is; the same edge
    given twice (in either order) one edge whose probability is the sum."""
    from types import SimpleNamespace

    from spotviz.drafter.proposers.checked import CheckedProposer

    checked = CheckedProposer(LeftToRight(), "mine", tiny_block_target.info.vocab_size, tiny_block_target.info.mask_id)
    view = SimpleNamespace(rule=SimpleNamespace(mode="threshold"))
    remaining = np.ones(16, bool)
    cands = [((5, 3), (20, 30), 0.3), ((3, 5), (30, 20), 0.2), ((np.int64(7),), (np.int64(9),), np.float32(0.25))]
    got = checked.check(cands, view, remaining, "children")
    assert got == [((3, 5), (30, 20), 0.5), ((7,), (9,), 0.25)]


def test_what_a_loader_or_for_budget_returns_is_named(tiny_block_target, tiny_prompt, registered):
    class Small(LeftToRight):
        def for_budget(self, budget):
            return None if budget > 2 else self

    registered("small", Small)
    with pytest.raises(ProposerError, match=r"'small': for_budget\(4\) returned NoneType, not a Proposer"):
        decode(tiny_block_target, tiny_prompt, DecodeConfig(gen_length=16, drafter="small", budget=4))


def test_a_threshold_proposer_may_commit_sets(tiny_block_target, tiny_prompt, registered):
    class StaleSets(LeftToRight):  # (the threshold rule on the root's confidences, and its most confident slot)
        def children(self, ctx, view, node, remaining):
            d = ctx.d(node)
            conf = np.where(remaining, ctx.conf[d], -1.0)
            top = int(conf.argmax())
            sure = [int(o) for o in np.flatnonzero(conf >= view.rule.threshold)] or [top]
            return [(tuple(sure), tuple(int(ctx.tok1[d, o]) for o in sure), 0.6),
                    ((top,), (int(ctx.tok1[d, top]),), 0.4)]

    registered("first-two", StaleSets, modes=("threshold",))
    kw = dict(mode="threshold", threshold=0.02, temperature=1.0, seed=2, gen_length=32)
    standard = decode(tiny_block_target, tiny_prompt, DecodeConfig(**kw))
    run = decode(tiny_block_target, tiny_prompt, DecodeConfig(**kw, drafter="first-two", budget=8))
    assert run.tokens == standard.tokens and run.meta.drafter == "first-two"
    sets = [n for p in run.passes for n in p.tree if len(n.positions) > 1 and not n.known]
    assert sets and any(n.accepted for n in sets)  # (sets drafted, and some of them the target's own)
    assert run.counters.accepted_drafts > 0 and run.counters.target_passes < standard.counters.target_passes


def test_a_prompt_cut_to_fit_warns_the_library_caller(tiny_block_target):
    info = tiny_block_target.info
    long_prompt = "ROMEO. O, she doth teach the torches to burn bright! " * 8
    whole = len(tiny_block_target.encode(long_prompt))
    assert whole > info.max_length - 32
    keep = f"at most {info.max_length - whole}" if whole < info.max_length else "no gen_length keeps it whole"
    with pytest.warns(PromptTruncatedWarning, match=f"{whole} tokens.*{keep}"):
        run = decode(tiny_block_target, long_prompt, DecodeConfig(gen_length=32))
    assert run.meta.prompt_truncated
    with warnings.catch_warnings():
        warnings.simplefilter("error", PromptTruncatedWarning)  # (a prompt that fits: no warning)
        decode(tiny_block_target, "ROMEO.", DecodeConfig(gen_length=16))


def test_arguments_in_the_wrong_order_are_named(tiny_block_target, tiny_prompt):
    with pytest.raises(TypeError, match="the model comes first"):
        decode(tiny_prompt, tiny_block_target)


def test_a_page_of_something_else_than_a_trace_is_named():
    from spotviz.views import report_html

    with pytest.raises(TypeError, match="trace must be a Trace"):
        report_html({})


PLUGIN = '''
import numpy as np
from spotviz.drafter.proposers.common import Context
from spotviz.drafter.registry import register_proposer
from spotviz.drafter.tree import Proposer


class LeftToRight(Proposer):
    def prepare(self, view, max_depth):
        return Context(view, max_depth)

    def children(self, ctx, view, node, remaining):
        d = ctx.d(node)
        o = int(np.flatnonzero(remaining)[0])
        return [((o,), (int(ctx.tok1[d, o]),), 0.9)]


register_proposer("plugin-l2r", lambda target, mode, folder: LeftToRight(), modes=("exact",))
'''


@pytest.fixture
def imports_undone():
    """What plugins add to sys.modules and sys.path (their modules, their folders) is taken out after the test."""
    import sys

    modules, path = set(sys.modules), list(sys.path)
    yield
    for m in set(sys.modules) - modules:
        sys.modules.pop(m, None)
    sys.path[:] = path


@pytest.fixture
def plugin_file(tmp_path, imports_undone):
    f = tmp_path / "my_drafters.py"
    f.write_text(PLUGIN)
    yield f
    if "plugin-l2r" in PROPOSERS:
        unregister_proposer("plugin-l2r")


def test_the_command_line_runs_a_drafter_a_plugin_registers(tiny_block_dir, tiny_prompt, plugin_file, capsys):
    import json

    from spotviz.cli import main

    common = ["decode", "--model", str(tiny_block_dir), "--prompt", tiny_prompt, "--gen-length", "24", "--json"]
    assert main(common) == 0
    standard = json.loads(capsys.readouterr().out)
    assert main(common + ["--plugin", str(plugin_file), "--drafter", "plugin-l2r", "--budget", "4"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["drafter"] == "plugin-l2r" and run["tokens"] == standard["tokens"]
    assert run["target_passes"] <= standard["target_passes"]


def test_the_bench_compares_a_drafter_a_plugin_registers(tiny_block_dir, plugin_file, tmp_path, capsys):
    import json

    from spotviz.cli import main

    rc = main(["bench", "--model", str(tiny_block_dir), "--n-prompts", "1", "--gen-length", "16", "--budgets", "4",
               "--temperatures", "0", "--no-transfer", "--drafters", "training-free,plugin-l2r",
               "--plugin", str(plugin_file), "--out", str(tmp_path / "bench"), "--json"])
    assert rc == 0
    res = json.loads(capsys.readouterr().out)
    rows = res["rows"]
    assert res["config"]["plugins"] == [str(plugin_file)]  # (where the drafter came from, in the saved bench)
    (md,) = (tmp_path / "bench").glob("*.md")
    assert f"registered by: {plugin_file}" in md.read_text()
    ours = [r for r in rows if r["drafter"] == "plugin-l2r"]
    assert [r["mode"] for r in ours] == ["exact"]  # (it drafts in exact mode only: no threshold row)
    assert {r["drafter"] for r in rows if r["mode"] == "threshold"} == {"none", "training-free"}
    assert all(r["identical"] == 1.0 for r in rows)


@pytest.mark.parametrize("content, match", [(None, "not a Python file"), ("raise RuntimeError('boom')",
                                                                             "failed: RuntimeError: boom"),
                                            ("x = 1", "registered no drafter")])
def test_a_plugin_that_cannot_register_is_one_error_line(tmp_path, tiny_block_dir, capsys, content, match,
                                                         imports_undone):
    from spotviz.cli import main

    f = tmp_path / "p.py"
    if content is not None:
        f.write_text(content)
    rc = main(["decode", "--model", str(tiny_block_dir), "--prompt", "ROMEO.", "--plugin", str(f)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and err.startswith(f"error: --plugin {f}") and match in err


def test_a_plugin_is_imported_as_a_module_beside_its_neighbours(tmp_path, tiny_block_target, tiny_prompt,
                                                                imports_undone):
    """A plugin with a dataclass under `from __future__ import annotations` (dataclasses look the module up in
    sys.modules) that imports a file beside it; one that fails after registering leaves nothing registered."""
    from spotviz.drafter.registry import import_drafters

    (tmp_path / "my_orders.py").write_text("def leftmost(remaining):\n    return int(remaining.nonzero()[0][0])\n")
    extra = ("from dataclasses import dataclass\nfrom my_orders import leftmost\n\n\n@dataclass\n"
             "class Settings:\n    p: float = 0.9\n")
    (tmp_path / "good.py").write_text("from __future__ import annotations\n" + PLUGIN + extra)
    try:
        assert import_drafters(tmp_path / "good.py") == ["plugin-l2r"]
        run = decode(tiny_block_target, tiny_prompt, DecodeConfig(gen_length=16, drafter="plugin-l2r", budget=4))
        assert run.tokens == decode(tiny_block_target, tiny_prompt, DecodeConfig(gen_length=16)).tokens
    finally:
        unregister_proposer("plugin-l2r")
    other = tmp_path / "other"
    other.mkdir()
    (other / "my_helpers.py").write_text("X = 1\n")
    (other / "half.py").write_text("import my_helpers\n" + PLUGIN + "raise RuntimeError('half way')\n")
    with pytest.raises(DecodeError, match="half way"):
        import_drafters(other / "half.py")
    import sys

    assert "plugin-l2r" not in PROPOSERS and "my_helpers" not in sys.modules and str(other) not in sys.path


@pytest.mark.parametrize("which", ["block", "full"])
def test_any_valid_proposer_leaves_the_output_as_the_standard_decoders(tiny_targets, tiny_prompt, registered, which):
    """The verifier follows only the target's own decisions: random trees (random orders, tokens, sets, crossing a
    window's end) at every budget, mode and temperature give the standard decoder's tokens."""
    target = tiny_targets[which]
    rng = np.random.default_rng(11)
    for i in range(12):
        seed = int(rng.integers(10 ** 6))
        registered(f"random-{i}", lambda s=seed: RandomProposer(s, target.info.vocab_size, target.info.mask_id),
                   modes=("exact", "threshold"))
        kw = dict(mode=("exact", "threshold")[i % 2], threshold=(0.02, 0.3)[i // 2 % 2],
                  temperature=(0.0, 1.0, 2.0)[i % 3], seed=i, gen_length=(16, 24, 40)[i % 3])
        standard = decode(target, tiny_prompt, DecodeConfig(**kw))
        run = decode(target, tiny_prompt, DecodeConfig(**kw, drafter=f"random-{i}", budget=(2, 4, 16, "auto")[i % 4]))
        assert run.tokens == standard.tokens, (i, kw)

"""Drafter training smoke tests: trajectory collection, features, fit, the calibrated template, train_drafter."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from spotviz.drafter.features import N_FEATURES, RootView, coupled_candidates, position_features
from spotviz.drafter.losses import keep_logits, pointer_loss
from spotviz.drafter.model import DrafterConfig, SpotDrafter
from spotviz.drafter.proposers import Calibrated, SpotProposer
from spotviz.training.drafter import (CALIBRATED_PARAMETERS, MAX_DEPTH, calibrate_template, collect, evaluate_drafter,
                                   fit, remaining_masks)
from spotviz.samplers.config import DecodeConfig
from spotviz.samplers.spot import decode_spot
from spotviz.samplers.standard import decode_standard

PROMPTS = ["ROMEO.\nO", "JULIET.\nWhat light"]
GEN = 32


@pytest.fixture(scope="module")
def data(tiny_block_target):
    out = {}
    for mode, T in (("exact", 0.0), ("exact", 1.0), ("threshold", 1.0)):
        d = collect(tiny_block_target, PROMPTS, mode, T, 0.05, GEN, seed=3, log=lambda *a: None)
        d["tau"] = 0.05
        out[(mode, T)] = d
    return out


def _standard_passes(target, mode, T):
    """[(window, commits)] of the standard decodes collect() imitates (same seeds: seed + prompt index)."""
    res = []
    for i, p in enumerate(PROMPTS):
        tr = decode_standard(target, p, DecodeConfig(mode=mode, temperature=T, threshold=0.05, seed=3 + i,
                                                     gen_length=GEN))
        res.append([(tuple(q.window), [(c.position, c.token) for c in q.commits]) for q in tr.passes])
    return res


@pytest.mark.parametrize("key", [("exact", 0.0), ("exact", 1.0), ("threshold", 1.0)], ids=str)
def test_collect_shapes_and_labels(key, data, tiny_block_target):
    mode, T = key
    d = data[key]
    W, D = tiny_block_target.info.block_size, MAX_DEPTH
    n = d["feats"].shape[0]
    assert n > 0
    assert d["feats"].shape == (n, W, N_FEATURES) and d["feats"].dtype == torch.float32
    assert torch.isfinite(d["feats"]).all()
    assert d["logc"].shape == (n, D, W) and (d["logc"] <= 1e-6).all()
    assert d["masked"].shape == (n, W) and d["masked"].dtype == torch.bool
    assert d["order"].shape == (n, D) and d["order"].dtype == torch.long
    assert d["keep"].shape == (n, D) and d["sets"].shape == (n, D, W) and d["depth_valid"].shape == (n, D)
    dv = d["depth_valid"]
    assert set(dv.unique().tolist()) <= {0.0, 1.0}
    # runner-up label: only where the stale (coupled best) token went stale, only at labelled depths
    assert d["second"].shape == (n, D)
    assert (d["second"] * d["keep"] == 0).all() and (d["second"] <= dv).all()
    assert (d["feats"][:, 0, -1] == T).all()  # the temperature feature (position 0 is never padding)
    assert (dv[:, 0] == 1).all()  # every kept row has at least one label
    assert (dv[:, 1:] <= dv[:, :-1]).all()  # prefix-shaped: valid depths come first
    # labels are the standard decoder's future decisions in the same window
    passes = _standard_passes(tiny_block_target, mode, T)
    # one row per pass that has a later pass in the same window, in order
    expect_rows, expect_depths, expect_sets = 0, [], []
    for ps in passes:
        for k, (win, _) in enumerate(ps):
            later = []
            for win2, commits in ps[k + 1:]:
                if win2 != win:
                    break
                later.append([pos - win[0] for pos, _ in commits])
            if later:
                expect_rows += 1
                expect_depths.append(min(len(later), D))
                expect_sets.append(later[:D])
    assert n == expect_rows
    assert dv.sum(1).long().tolist() == expect_depths
    rem = remaining_masks(d)
    for r in range(n):
        for k, offs in enumerate(expect_sets[r]):
            assert d["sets"][r, k].nonzero().flatten().tolist() == sorted(offs)
            assert all(bool(rem[r, k, o]) for o in offs)  # labels are masked, not yet committed positions
        assert (d["sets"][r, len(expect_sets[r]):] == 0).all()
    if mode == "exact":
        valid = dv > 0
        assert ((d["order"] >= 0) == valid).all() and (d["order"][~valid] == -1).all()
        for r in range(n):
            o = d["order"][r][valid[r]].tolist()
            assert len(set(o)) == len(o)  # a position is committed once
            assert all(bool(d["masked"][r, x]) for x in o)
            assert o == [s[0] for s in expect_sets[r]]
        assert set(d["keep"][valid].unique().tolist()) <= {0.0, 1.0}
        assert (d["keep"][~valid] == 0).all()
    else:
        assert (d["order"] == -1).all()
        assert d["sets"].sum() >= dv.sum()  # every valid depth commits at least one position


def test_features_read_no_token_identities(tiny_block_target):
    """Permuting the vocabulary (token ids) of the root distribution leaves the features unchanged."""
    from spotviz.decision import DecisionRule

    torch.manual_seed(0)
    w, V = 16, tiny_block_target.info.vocab_size
    logp = torch.log_softmax(torch.randn(w, V) * 3, -1)
    masked = torch.rand(w) > 0.3
    state = torch.zeros(40, dtype=torch.long)
    mk = lambda lp: RootView(lo=8, hi=24, state=state, logp=lp, masked=masked, first=[3], step=2,  # noqa: E731
                             rule=DecisionRule("exact", 0.0, 0.9), noise=None)
    perm = torch.randperm(V)
    f1, f2 = position_features(mk(logp)), position_features(mk(logp[:, perm]))
    assert f1.shape == (w, N_FEATURES)
    assert torch.allclose(f1, f2, atol=1e-5)
    t1, _, c1 = coupled_candidates(mk(logp), 4)
    t2, _, c2 = coupled_candidates(mk(logp[:, perm]), 4)
    assert torch.equal(perm[t2], t1) and torch.allclose(c1, c2)


@pytest.mark.parametrize("V", [5, 300])
def test_feature_top_k_are_the_root_probabilities_largest_first(V):
    """The features' first TOPK columns are each position's TOPK largest root probabilities in descending order,
    exactly torch.topk's values (ties and zeros included), zero-padded where the vocabulary is smaller."""
    from spotviz.decision import DecisionRule
    from spotviz.drafter.features import TOPK

    torch.manual_seed(2)
    logits = torch.randn(16, V).mul(3).round()  # (rounded: many tied probabilities)
    logits[:, :3] = float("-inf")  # (probability 0)
    logp = torch.log_softmax(logits, -1)
    view = RootView(lo=8, hi=24, state=torch.zeros(40, dtype=torch.long), logp=logp, masked=torch.rand(16) > 0.3,
                    first=[3], step=2, rule=DecisionRule("exact", 0.0, 0.9), noise=None)
    k = min(TOPK, V)
    want = torch.from_numpy(np.exp(logp.numpy())).topk(k, dim=-1).values  # (the features' own exp: numpy's)
    got = position_features(view)[:, :TOPK]
    assert torch.equal(got[:, :k], want) and not got[:, k:].any()


@pytest.mark.parametrize("T", [0.7, 1.0])
def test_coupled_candidates_at_masked_positions_are_the_noised_argmax(T, tiny_block_target):
    """At T > 0 the drafted tokens of depth d are the best and runner-up of log p / T + g(step + d) at each position
    masked in s1, with the root's log-probability of the best (computed only there); other positions keep the
    noiseless tokens; a later depth range (start > 0) gives the same numbers as those rows of a longer call."""
    from spotviz.decision import DecisionRule
    from spotviz.noise import GumbelNoise

    torch.manual_seed(1)
    w, V = 16, tiny_block_target.info.vocab_size
    logp = torch.log_softmax(torch.randn(w, V) * 3, -1)
    masked = torch.rand(w) > 0.4
    noise = GumbelNoise(5, V)
    view = RootView(lo=8, hi=24, state=torch.zeros(40, dtype=torch.long), logp=logp, masked=masked, first=[3],
                    step=2, rule=DecisionRule("exact", T, 0.9), noise=noise)
    tok1, tok2, logc = coupled_candidates(view, 5)
    for d in range(5):
        for o in range(w):
            if masked[o]:
                scores = logp[o] / T + noise.at(view.step + d, view.lo + o)
                best, second = scores.topk(2).indices.tolist()
            else:
                best, second = logp[o].topk(2).indices.tolist()
            assert (int(tok1[d, o]), int(tok2[d, o])) == (best, second)
            assert float(logc[d, o]) == float(logp[o, best])
    later = coupled_candidates(view, 5, start=3)
    assert all(torch.equal(a[3:], b) for a, b in zip((tok1, tok2, logc), later))


def test_losses_finite_and_fit_runs(data):
    torch.manual_seed(0)
    model = SpotDrafter(DrafterConfig())
    before = {k: v.clone() for k, v in model.state_dict().items()}
    d = data[("exact", 1.0)]
    out = model(d["feats"])
    rem = remaining_masks(d)
    lp = pointer_loss(out, d["logc"], d["order"], rem, d["depth_valid"])
    assert torch.isfinite(lp) and lp > 0
    kl = keep_logits(out, d["order"])
    assert kl.shape == d["order"].shape and torch.isfinite(kl).all()
    res = fit(model, d, d, "exact", epochs=1, lr=1e-3, batch_size=64, log=lambda *a: None)
    assert {"pos_acc@1", "keep_acc"} <= set(res) and all(0 <= v <= 1 for v in res.values())  # (no NaN: JSON cannot hold it)
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())
    t = data[("threshold", 1.0)]
    res = fit(model, t, t, "threshold", epochs=1, lr=1e-3, batch_size=64, log=lambda *a: None)
    assert "set_acc@1" in res and 0 <= res["set_acc@1"] <= 1
    assert evaluate_drafter(model, t, "threshold").keys() == res.keys()


def test_calibrate_template(data, tiny_block_target):
    table = calibrate_template(data[("exact", 1.0)], data[("threshold", 1.0)])
    assert len(table["rank_probs"]) == MAX_DEPTH and len(table["set_params"]) == MAX_DEPTH
    for row in table["rank_probs"]:
        assert all(0 <= x <= 1 for x in row)
        assert sum(row) <= 1 + 1e-6
    assert sum(table["rank_probs"][0]) > 0
    assert all(len(ab) == 2 and all(math.isfinite(x) for x in ab) for ab in table["set_params"])
    # the template drives an exact decode through the verifier
    prop = Calibrated(json.loads(json.dumps(table)))
    for mode in ("exact", "threshold"):
        c = DecodeConfig(mode=mode, threshold=0.05, temperature=1.0, seed=8, gen_length=24, budget=16)
        assert decode_spot(tiny_block_target, PROMPTS[0], c, prop).tokens == \
            decode_standard(tiny_block_target, PROMPTS[0], c).tokens


def test_train_drafter_end_to_end(tmp_path, tiny_block_dir, tiny_block_target, monkeypatch):
    """`train-drafter` on the micro model: files written, loadable through the store, lossless decodes."""
    from spotviz.training import drafter as train
    from spotviz.drafter.registry import load_proposer

    monkeypatch.setattr("spotviz.embedded.prompts.training_prompts", lambda n, seed=0, corpus="shakespeare": (PROMPTS * n)[:n])
    cfg = train.DrafterTrainConfig(model=str(tiny_block_dir), out=str(tmp_path / "dr"), n_prompts=2,
                                   gen_length=24, epochs=1, batch_size=64, val_fraction=0.5)
    report = train.train_drafter(cfg, log=lambda *a: None)
    assert 558_000 <= report["n_params"] <= 682_000
    for sub in ("spot", "spot-sets"):
        assert (tmp_path / "dr" / sub / "drafter.safetensors").is_file()
        meta = json.loads((tmp_path / "dr" / sub / "drafter.json").read_text())
        assert meta["n_params"] == SpotDrafter.load(tmp_path / "dr" / sub).n_params()
    assert json.loads((tmp_path / "dr" / "training.json").read_text())["n_prompts"] == 2
    for name, mode in (("spot", "exact"), ("spot-sets", "threshold"), ("calibrated", "exact")):
        prop = load_proposer(name, tiny_block_target, mode, folder=tmp_path / "dr")
        assert isinstance(prop, (SpotProposer, Calibrated))
        c = DecodeConfig(mode=mode, threshold=0.05, temperature=1.0, seed=2, gen_length=24, budget=8)
        assert decode_spot(tiny_block_target, PROMPTS[1], c, prop).tokens == \
            decode_standard(tiny_block_target, PROMPTS[1], c).tokens
    # light calibration of the trained drafter (transfer path) only refits scalar heads
    cfg2 = train.DrafterTrainConfig(model=str(tiny_block_dir), out=str(tmp_path / "cal"), n_prompts=2,
                                    gen_length=24, epochs=1, batch_size=64, val_fraction=0.5)
    rep2 = train.train_drafter(cfg2, calibrate_from=str(tmp_path / "dr"), log=lambda *a: None)
    assert "before_calibration" in rep2["spot"]
    a, b = SpotDrafter.load(tmp_path / "dr" / "spot"), SpotDrafter.load(tmp_path / "cal" / "spot")
    frozen = [k for k in a.state_dict() if k not in CALIBRATED_PARAMETERS]
    assert all(torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in frozen)


def test_threshold_prompts_gives_the_sets_drafter_its_own_prompt_count(tmp_path, tiny_block_dir, monkeypatch):
    """--threshold-prompts: SPOT-Sets' trajectories come from more prompts (the exact ones among them)."""
    from spotviz.training import drafter as train

    monkeypatch.setattr("spotviz.embedded.prompts.training_prompts",
                        lambda n, seed=0, corpus="shakespeare": [f"{PROMPTS[i % len(PROMPTS)]}{i}" for i in range(n)])
    seen, real = [], train.collect
    monkeypatch.setattr(train, "collect", lambda target, prompts, mode, *a, **k:
                        seen.append((mode, list(prompts))) or real(target, prompts, mode, *a, **k))
    cfg = train.DrafterTrainConfig(model=str(tiny_block_dir), out=str(tmp_path / "dr"), n_prompts=1, threshold_prompts=3,
                                   temperatures=(0.0,), gen_length=16, epochs=1, batch_size=64, val_fraction=0.5)
    report = train.train_drafter(cfg, log=lambda *a: None)
    assert [(m, len(p)) for m, p in seen] == [("exact", 1), ("threshold", 3)]
    assert seen[0][1][0] in seen[1][1] and report["threshold_prompts"] == 3 and report["n_prompts"] == 1


def test_topk_features_widen_only_the_probability_block(tiny_block_target):
    """A top-32 drafter reads the same features as a top-8 one plus 24 more sorted probabilities."""
    from spotviz.decision import DecisionRule
    from spotviz.drafter.features import TEMPERATURE_FEATURE, n_features

    torch.manual_seed(1)
    w, V = 16, tiny_block_target.info.vocab_size
    view = RootView(lo=0, hi=w, state=torch.zeros(w, dtype=torch.long), logp=torch.log_softmax(torch.randn(w, V), -1),
                    masked=torch.rand(w) > 0.3, first=[2], step=1, rule=DecisionRule("exact", 1.0, 0.9), noise=None)
    f8, f32 = position_features(view, 8), position_features(view, 32)
    assert f8.shape == (w, n_features(8)) and f32.shape == (w, n_features(32)) == (w, 47)
    assert torch.equal(f32[:, :8], f8[:, :8]) and torch.equal(f32[:, 32:], f8[:, 8:])
    assert torch.all(f32[:, 8:32] <= f32[:, 7:8]) and torch.all(f32[:, TEMPERATURE_FEATURE] == 1.0)


def test_train_topk32_drafter_end_to_end(tmp_path, tiny_block_dir, tiny_block_target, monkeypatch):
    """`train-drafter --topk 32`: the drafter records its width, loads back, drafts losslessly, and a calibration
    from it keeps reading the top 32."""
    from spotviz.training import drafter as train
    from spotviz.drafter.registry import load_proposer

    monkeypatch.setattr("spotviz.embedded.prompts.training_prompts", lambda n, seed=0, corpus="shakespeare": (PROMPTS * n)[:n])
    cfg = train.DrafterTrainConfig(model=str(tiny_block_dir), out=str(tmp_path / "dr"), n_prompts=2, gen_length=24,
                                   epochs=1, batch_size=64, val_fraction=0.5, topk=32)
    report = train.train_drafter(cfg, log=lambda *a: None)
    assert report["topk"] == {"spot": 32, "spot-sets": 32} and 558_000 <= report["n_params"] <= 682_000
    assert SpotDrafter.load(tmp_path / "dr" / "spot").cfg.topk == 32
    prop = load_proposer("spot", tiny_block_target, "exact", folder=tmp_path / "dr")
    c = DecodeConfig(mode="exact", temperature=1.0, seed=3, gen_length=24, budget=8)
    assert decode_spot(tiny_block_target, PROMPTS[1], c, prop).tokens == \
        decode_standard(tiny_block_target, PROMPTS[1], c).tokens
    # a source whose two heads read different widths (as python-bd's do): each calibrated head keeps its own
    other = train.DrafterTrainConfig(model=str(tiny_block_dir), out=str(tmp_path / "top8"), n_prompts=2,
                                     gen_length=24, epochs=1, batch_size=64, val_fraction=0.5)
    train.train_drafter(other, log=lambda *a: None)
    shutil.rmtree(tmp_path / "dr" / "spot-sets")
    shutil.copytree(tmp_path / "top8" / "spot-sets", tmp_path / "dr" / "spot-sets")
    cal = train.DrafterTrainConfig(model=str(tiny_block_dir), out=str(tmp_path / "cal"), n_prompts=2, gen_length=24,
                                   epochs=1, batch_size=64, val_fraction=0.5, topk=16)  # the source's widths win
    rep = train.train_drafter(cal, calibrate_from=str(tmp_path / "dr"), log=lambda *a: None)
    assert rep["topk"] == {"spot": 32, "spot-sets": 8}
    assert SpotDrafter.load(tmp_path / "cal" / "spot").cfg.n_features == 47
    assert SpotDrafter.load(tmp_path / "cal" / "spot-sets").cfg.n_features == 23
    for mode, name in (("exact", "spot"), ("threshold", "spot-sets")):
        prop = load_proposer(name, tiny_block_target, mode, folder=tmp_path / "cal")
        c = DecodeConfig(mode=mode, threshold=0.05, temperature=1.0, seed=4, gen_length=24, budget=8)
        assert decode_spot(tiny_block_target, PROMPTS[0], c, prop).tokens == \
            decode_standard(tiny_block_target, PROMPTS[0], c).tokens


def test_drafter_with_an_unknown_feature_count_is_refused(tmp_path):
    SpotDrafter(DrafterConfig()).save(tmp_path / "d")
    meta = json.loads((tmp_path / "d" / "drafter.json").read_text())
    (tmp_path / "d" / "drafter.json").write_text(json.dumps(meta | {"n_features": 12}))
    with pytest.raises(ValueError, match="features per position"):
        SpotDrafter.load(tmp_path / "d")


def test_tune_mix_picks_a_weight_per_temperature(tiny_block_target):
    """tune_mix sets sigmoid(mix0 + mix1 * T) to the weight it chose for each temperature in the data."""
    from spotviz.drafter.features import TEMPERATURE_FEATURE
    from spotviz.training.drafter import tune_mix

    parts = [collect(tiny_block_target, ["ROMEO.\nO", "JULIET.\nWhat"], "exact", t, 0.9, 24, seed=2,
                     log=lambda *a: None) for t in (0.0, 1.0)]
    data = {k: torch.cat([p[k] for p in parts]) for k in parts[0]}
    assert set(data["feats"][:, 0, TEMPERATURE_FEATURE].tolist()) == {0.0, 1.0}
    model = SpotDrafter(DrafterConfig())
    chosen = tune_mix(model, data, log=lambda *a: None)
    assert set(chosen) == {0.0, 1.0} and all(0 < w < 1 for w in chosen.values())
    for t, w in chosen.items():
        assert float(torch.sigmoid(model.mix[0] + model.mix[1] * t).detach()) == pytest.approx(w, rel=0.01)  # bf16, as saved


def test_tune_mix_by_passes_keeps_the_weight_with_fewest_target_passes(tiny_block_target):
    """The mixture is chosen by SPOT's target passes per weight: the chosen weight has the fewest (ties: nearest the
    preferred one), the drafter is left at it for every temperature, and decoding again with it takes exactly the
    passes the table reports, with the standard decoder's output."""
    from spotviz.training.drafter import tune_mix_by_passes

    torch.manual_seed(5)
    model = SpotDrafter(DrafterConfig())
    grid = (0.05, 0.5, 0.95)
    chosen, table = tune_mix_by_passes(model, tiny_block_target, PROMPTS[:2], (0.0, 1.0), budget=8, gen_length=24,
                                       grid=grid, prefer={0.0: 0.95, 1.0: 0.05}, log=lambda *a: None)
    assert set(table) == {0.0, 1.0} and all(set(row) == set(grid) for row in table.values())
    for t, w in chosen.items():
        best = min(table[t].values())
        ties = [lam for lam in grid if table[t][lam] == best]
        assert w == (ties[-1] if t == 0.0 else ties[0])  # the tie nearest the preferred weight
        assert float(torch.sigmoid(model.mix[0] + model.mix[1] * t).detach()) == pytest.approx(w, rel=0.01)  # bf16
        prop = SpotProposer(model)
        passes = 0
        for i, prompt in enumerate(PROMPTS[:2]):
            c = DecodeConfig(mode="exact", temperature=t, seed=i, gen_length=24, budget=8, drafter="spot")
            tr = decode_spot(tiny_block_target, prompt, c, prop)
            assert tr.tokens == decode_standard(tiny_block_target, prompt, c).tokens
            passes += len(tr.passes)
        assert passes == table[t][w]


def test_train_drafter_chooses_the_mixture_on_prompts_it_did_not_train_on(tmp_path, tiny_block_dir, tiny_block_target,
                                                                          monkeypatch):
    """With --mix-prompts the pointer mixture comes from decodes of validation prompts (a draw without the training
    prompts); the drafter written holds the chosen weights and its report the passes per weight."""
    from spotviz.training import drafter as train

    def prompts(n, seed=0, corpus="shakespeare"):
        return [f"{PROMPTS[i % len(PROMPTS)]}{seed}-{i % 3}" for i in range(n)]

    monkeypatch.setattr("spotviz.embedded.prompts.training_prompts", prompts)
    seen, real = [], train.tune_mix_by_passes
    monkeypatch.setattr(train, "tune_mix_by_passes", lambda model, target, ps, *a, **k:
                        seen.append(list(ps)) or real(model, target, ps, *a, **k))
    cfg = train.DrafterTrainConfig(model=str(tiny_block_dir), out=str(tmp_path / "dr"), n_prompts=2, gen_length=20,
                                   epochs=1, batch_size=64, val_fraction=0.5, mix_prompts=2, mix_budget=8)
    report = train.train_drafter(cfg, log=lambda *a: None)
    assert len(seen) == 1 and len(seen[0]) == 2 and len(set(seen[0])) == 2
    assert all("29-" in p for p in seen[0])  # the draw of seed + 29; the training prompts are seed + 17's
    mp = report["spot"]["mix_passes"]
    assert mp["prompts"] == 2 and mp["budget"] == 8 and set(mp["passes"]) == {"0.0", "1.0"}
    model = SpotDrafter.load(tmp_path / "dr" / "spot")
    prop = SpotProposer(model, partner=Calibrated.load(tmp_path / "dr" / "calibrated.json"))
    for t, w in report["spot"]["mix"].items():
        assert min(mp["passes"][str(t)].values()) == mp["passes"][str(t)][f"{w:g}"]
        assert float(torch.sigmoid(model.mix[0] + model.mix[1] * float(t)).detach()) == pytest.approx(w, rel=0.01)
        # the drafter as saved (bf16) takes the passes its table reports
        passes = sum(len(decode_spot(tiny_block_target, p, DecodeConfig(mode="exact", temperature=float(t), seed=i,
                                                                        gen_length=20, budget=8, drafter="spot"),
                                     prop).passes) for i, p in enumerate(seen[0]))
        assert passes == mp["passes"][str(t)][f"{w:g}"]


def test_tune_mix_script_retunes_one_temperature_and_keeps_the_other(tmp_path, tiny_block_dir):
    """scripts/tune_mix.py: a copy of the drafter folder whose SPOT drafter takes the weight with the fewest passes
    at the temperature asked for, keeps its weight at the other, and records the passes per weight."""
    import subprocess
    import sys
    from pathlib import Path

    src = tmp_path / "d"
    torch.manual_seed(3)
    model = SpotDrafter(DrafterConfig())
    model.mix.data.copy_(torch.tensor([2.0, -1.0]))  # 0.88 at T=0, 0.73 at T=1
    model.save(src / "spot")
    (src / "calibrated.json").write_text(json.dumps({"rank_probs": [[0.6, 0.2, 0.1]], "set_params": [[8.0, 0.0]]}))
    root = Path(__file__).resolve().parent.parent
    r = subprocess.run([sys.executable, str(root / "scripts" / "tune_mix.py"), str(tiny_block_dir), str(src), "--out",
                        str(tmp_path / "out"), "--prompts", "2", "--budget", "4", "--temperatures", "1",
                        "--gen-length", "16"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    tuned = SpotDrafter.load(tmp_path / "out" / "spot")
    val = json.loads((tmp_path / "out" / "spot" / "drafter.json").read_text())["validation"]
    row = val["mix_passes"]["passes"]["1.0"]
    assert len(row) == 7 and row[f"{val['mix']['1.0']:g}"] == min(row.values())
    mix_at = lambda t: float(torch.sigmoid(tuned.mix[0] + tuned.mix[1] * t).detach())  # noqa: E731
    assert mix_at(1.0) == pytest.approx(val["mix"]["1.0"], rel=0.01)
    assert mix_at(0.0) == pytest.approx(float(torch.sigmoid(torch.tensor(2.0))), rel=0.01)
    assert (tmp_path / "out" / "calibrated.json").is_file() and (src / "spot" / "drafter.json").is_file()
    r = subprocess.run([sys.executable, str(root / "scripts" / "tune_mix.py"), str(tiny_block_dir), str(src), "--out",
                        str(tmp_path / "out")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 2 and "exists" in r.stderr


def test_collect_in_worker_processes_equals_one_process(tiny_block_dir, tiny_block_target):
    """`train-drafter --jobs 2`: the trajectories collected by two spawned workers (runs of prompts, seeds by the
    prompt's place in the whole list) are the tensors of one serial `collect`, in the same order."""
    import multiprocessing as mp

    from spotviz.training.drafter import collect_parallel

    prompts = [f"{PROMPTS[i % 2]}{i}" for i in range(5)]
    with mp.get_context("spawn").Pool(2) as pool:
        for mode, T in (("exact", 1.0), ("threshold", 1.0)):
            serial = collect(tiny_block_target, prompts, mode, T, 0.05, 20, seed=7, log=lambda *a: None)
            par = collect_parallel(pool, str(tiny_block_dir), prompts, mode, T, 0.05, 20, seed=7,
                                   log=lambda *a: None, jobs=2)
            assert serial.keys() == par.keys()
            for k in serial:
                assert serial[k].dtype == par[k].dtype and torch.equal(serial[k], par[k]), k


def test_collect_of_decodes_too_short_to_label_is_empty_not_an_error(tiny_block_target):
    d = collect(tiny_block_target, PROMPTS[:1], "exact", 0.0, 0.9, 1, log=lambda *a: None, topk=8)
    assert d["feats"].shape[0] == 0 and d["feats"].shape[2] == N_FEATURES and d["order"].dtype == torch.long


def test_saved_trajectories_train_the_same_drafters(tmp_path, tiny_block_dir, monkeypatch):
    """--save-trajectories then --trajectories: no decode runs the second time and the drafters are the same
    weights; trajectories of other settings are refused with the setting named."""
    from spotviz.training import drafter as train

    monkeypatch.setattr("spotviz.embedded.prompts.training_prompts", lambda n, seed=0, corpus="shakespeare": (PROMPTS * n)[:n])
    kw = dict(model=str(tiny_block_dir), n_prompts=2, gen_length=20, epochs=1, batch_size=64, val_fraction=0.5)
    train.train_drafter(train.DrafterTrainConfig(out=str(tmp_path / "a"), save_trajectories=True, **kw),
                        log=lambda *a: None)
    saved = tmp_path / "a" / train.TRAJECTORIES
    assert saved.is_file()
    monkeypatch.setattr(train, "collect", lambda *a, **k: pytest.fail("collected again"))
    rep = train.train_drafter(train.DrafterTrainConfig(out=str(tmp_path / "b"), trajectories=str(saved),
                                                       **(kw | {"n_prompts": 99})), log=lambda *a: None)
    assert rep["n_prompts"] == 2  # what the data holds, not the ignored setting
    for sub in ("spot", "spot-sets"):
        a, b = (SpotDrafter.load(tmp_path / d / sub).state_dict() for d in ("a", "b"))
        assert all(torch.equal(a[k], b[k]) for k in a)
    with pytest.raises(ValueError, match=r"other settings \(gen_length 20, here 24\)"):
        train.train_drafter(train.DrafterTrainConfig(out=str(tmp_path / "c"), trajectories=str(saved),
                                                     **(kw | {"gen_length": 24})), log=lambda *a: None)
    (tmp_path / "junk.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ValueError, match="cannot read"):
        train.train_drafter(train.DrafterTrainConfig(out=str(tmp_path / "d"), trajectories=str(tmp_path / "junk.safetensors"),
                                                     **kw), log=lambda *a: None)


def test_a_drafter_run_that_fails_leaves_the_old_drafters_whole(tmp_path, tiny_block_dir, monkeypatch):
    """train-drafter --force over existing drafters: a run stopped after the template was fitted (here: the
    SPOT-Sets fit fails) must not leave a new calibrated.json beside old drafters; a finished run replaces all."""
    from spotviz.training import drafter as train

    monkeypatch.setattr("spotviz.embedded.prompts.training_prompts", lambda n, seed=0, corpus="shakespeare": (PROMPTS * n)[:n])
    kw = dict(model=str(tiny_block_dir), n_prompts=2, gen_length=20, epochs=1, batch_size=64, val_fraction=0.5,
              out=str(tmp_path / "dr"))
    train.train_drafter(train.DrafterTrainConfig(**kw), log=lambda *a: None)
    out = tmp_path / "dr"
    before = {p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert {str(p) for p in before} >= {"calibrated.json", "training.json", "spot/drafter.json", "spot-sets/drafter.json"}
    real_fit = train.fit

    def failing_fit(model, train_data, val, mode, *a, **k):
        if mode == "threshold":
            raise KeyboardInterrupt  # stopped by hand in the middle of the run
        return real_fit(model, train_data, val, mode, *a, **k)

    monkeypatch.setattr(train, "fit", failing_fit)
    with pytest.raises(KeyboardInterrupt):
        train.train_drafter(train.DrafterTrainConfig(**(kw | {"seed": 5})), log=lambda *a: None)
    after = {p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert after == before
    monkeypatch.setattr(train, "fit", real_fit)
    train.train_drafter(train.DrafterTrainConfig(**(kw | {"seed": 5})), log=lambda *a: None)
    assert not (tmp_path / ".dr.partial").exists()
    final = {p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert set(final) == set(before) and final[Path("spot/drafter.safetensors")] != before[Path("spot/drafter.safetensors")]


def test_train_drafter_takes_ones_own_prompts(tmp_path, capsys):
    """train-drafter --prompts FILE (as bench --prompts): the first --n-prompts train, the next choose the mixture;
    without it the prompts come from the model's corpus. A file that cannot serve fails before anything loads."""
    from spotviz.cli import main
    from spotviz.training.drafter import DrafterTrainConfig, prompt_pool, validation_prompts

    mine = [f"Prompt number {i}." for i in range(10)]
    (tmp_path / "mine.json").write_text(json.dumps(mine))
    cfg = DrafterTrainConfig(model="x", out=str(tmp_path / "o"), n_prompts=6, prompts_file=str(tmp_path / "mine.json"))
    assert prompt_pool(cfg, None) == mine[:6] and validation_prompts(cfg, None, 3, 6) == mine[6:9]
    (tmp_path / "one.json").write_text(json.dumps(["Just one."]))
    for bad, says in (("one.json", "holds fewer than 2 prompts"), ("none.json", "none.json: no such file")):
        code = main(["train-drafter", "--prompts", str(tmp_path / bad), "--out", str(tmp_path / "d")])
        err = capsys.readouterr().err
        assert code == 2 and says in err and not (tmp_path / "d").exists(), err


@pytest.mark.parametrize("settings, match", [
    ({"topk": 0}, "--topk"), ({"gen_length": 0}, "--gen-length"), ({"threshold": 0.0}, "--threshold"),
    ({"threshold_prompts": -1}, "--threshold-prompts"), ({"trajectories": "/nonexistent.safetensors"}, "--trajectories"),
    ({"mix_budget": 1}, "--mix-budget"), ({"mix_prompts": -2}, "--mix-prompts"), ({"jobs": 0}, "--jobs"),
])
def test_a_drafter_training_config_is_checked_when_made(settings, match, tmp_path):
    """A library caller's bad setting fails at once, worded as train-drafter's flags (not after collecting)."""
    from spotviz.training import drafter as train

    with pytest.raises(ValueError, match=match):
        train.DrafterTrainConfig(model="math-bd", out=str(tmp_path / "d"), **settings)
    train.DrafterTrainConfig(model="math-bd", out=str(tmp_path / "d"), n_prompts=1, threshold_prompts=3)  # (good)

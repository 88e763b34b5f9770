"""The benchmark command: one table, every row's counts consistent, speculative rows identical to standard."""
import json
from dataclasses import replace

import pytest

from spotviz.eval.bench import file_stem, run_bench, save, to_markdown
from spotviz.cli import main


def test_bench_rows_and_files(tiny_block_dir, tmp_path):
    logs = []
    res = run_bench(model=str(tiny_block_dir), n_prompts=2, gen_length=16, budgets=(2, 4), other_budgets=(4,),
                    temperatures=(0.0, 1.0), transfer=False, log=lambda *a: logs.append(" ".join(map(str, a))))
    # an estimate before the work, an ETA on every row, and the plan it was made from is the work done
    first_row = next(i for i, line in enumerate(logs) if "identical" in line)
    assert any(line.startswith("estimate: ~") for line in logs[:first_row])
    rows = [line for line in logs if "identical" in line]
    assert len(rows) == len(res.rows) and all("ETA" in line for line in rows) and "100% done" in rows[-1]
    # per (mode, T): standard + 3 drafters x budgets; + the coupled-noise ablation at T=1 (both modes)
    assert len(res.rows) == (1 + 3 * 2) + (1 + 3 * 1 + 1) + (1 + 3 * 1) + (1 + 3 * 1 + 1)
    for r in res.rows:
        assert r.identical == 1.0  # lossless, whatever the drafter
        assert r.passes_per_token <= 1.0 + 1e-9
        assert r.mean_accepted_length >= 1.0
    base = [r for r in res.rows if r.drafter == "none"]
    assert all(r.pass_reduction == 1.0 and r.ceiling == 1.0 for r in base)
    assert all(r.ceiling > 0 for r in res.rows) and res.cost_curve  # every row has its zero-overhead ceiling
    ablation = [r for r in res.rows if "ablation" in r.note]
    assert len(ablation) == 2 and all(r.temperature == 1.0 for r in ablation)
    # threshold mode: no row beats the window bound (a pass of its own for every window), which the table states
    assert set(res.window_bound) == {"T=0", "T=1"}
    for r in res.rows:
        if r.mode == "threshold":
            assert r.pass_reduction <= res.window_bound[f"T={r.temperature:g}"] + 1e-9
    assert "Window bound (threshold mode)" in to_markdown(res)
    # why the walks stopped: counted over every tree pass of a speculative row, none for the standard decoder
    assert all(not r.walk_ends for r in base)
    assert all(bool(r.walk_ends) == (r.mean_states > 1) for r in res.rows)  # (a row that drafted trees)
    assert all(set(r.walk_ends) <= {"window", "budget", "position", "token", "end"} for r in res.rows)
    # drafts whose tokens come from noise the target does not use: more walks stop at a wrong token than with the
    # coupled noise, same drafter and budget (what coupled noise is for)
    def token_share(r):
        return r.walk_ends.get("token", 0) / sum(r.walk_ends.values())

    for r in ablation:
        coupled = next(c for c in res.rows if (c.mode, c.temperature, c.drafter, c.budget, c.note)
                       == (r.mode, r.temperature, r.drafter, r.budget, ""))
        assert token_share(r) > token_share(coupled)
    assert "Where the acceptance walks stopped" in to_markdown(res)
    save(res, tmp_path)
    data = json.loads((tmp_path / f"bench-{file_stem(res.model)}.json").read_text())
    assert len(data["rows"]) == len(res.rows)
    md = to_markdown(res)
    assert md.count("\n| exact |") + md.count("\n| threshold |") == len(res.rows) and "zero-overhead ceiling" in md
    assert 0.0 <= res.stale_agreement["T=0"]["stale_agreement"] <= 1.0
    q = res.quality["summary"]  # the greedy outputs are measured for degeneracy next to the agreement
    assert q["outputs"] == 2 and len(res.quality["outputs"]) == 2 and "degenerate" in md
    assert 0.0 < q["min_distinct_share"] <= 1.0 and q["max_longest_run"] >= 1


def test_bench_cli_json(tiny_block_dir, tmp_path, capsys):
    rc = main(["bench", "--model", str(tiny_block_dir), "--n-prompts", "1", "--gen-length", "8", "--budgets", "2",
               "--temperatures", "0", "--no-transfer", "--out", str(tmp_path), "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_prompts"] == 1 and out["rows"][0]["drafter"] == "none"


def test_bench_says_what_it_ran_on_a_prompt_file_of_ones_own_and_more_prompts_than_it_holds(tiny_block_dir, tmp_path,
                                                                                              capsys):
    mine = tmp_path / "mine.txt"
    mine.write_text("ROMEO.\n\nJULIET.\n", encoding="utf-8")
    rc = main(["bench", "--model", str(tiny_block_dir), "--prompts", str(mine), "--n-prompts", "5", "--gen-length", "8",
               "--budgets", "2", "--temperatures", "0", "--modes", "exact", "--drafters", "training-free",
               "--no-transfer", "--out", str(tmp_path / "b")])
    out, err = capsys.readouterr()
    assert rc == 0 and "note: --n-prompts 5: the file holds 2 prompts; running 2" in out
    assert "2 prompts from mine.txt x 8 tokens" in out and "held-out prompts" not in out  # (not the held-out set)
    rc = main(["bench", "--model", str(tiny_block_dir), "--prompts", "3", "--out", str(tmp_path / "c")])
    assert rc == 2 and capsys.readouterr().err.strip() == (
        "error: --prompts 3: no such file (--prompts takes a prompt file; --n-prompts sets how many prompts)")


def test_bench_one_mode_takes_the_headline_budgets(tiny_block_dir, tmp_path, capsys):
    rc = main(["bench", "--model", str(tiny_block_dir), "--n-prompts", "1", "--gen-length", "8", "--budgets", "2,4",
               "--other-budgets", "2", "--temperatures", "0,1", "--modes", "threshold", "--threshold", "0.5",
               "--no-transfer", "--out", str(tmp_path), "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert {r["mode"] for r in out["rows"]} == {"threshold"} and out["threshold"] == 0.5
    spot = [(r["temperature"], r["budget"]) for r in out["rows"] if r["drafter"] == "spot-sets" and not r["note"]]
    assert spot == [(0.0, 2), (0.0, 4), (1.0, 2)]  # --budgets at the first temperature, --other-budgets after
    rc = main(["bench", "--model", str(tiny_block_dir), "--modes", "greedy", "--out", str(tmp_path)])
    assert rc != 0 and capsys.readouterr().err.startswith("error: --modes greedy: choose exact, threshold or both")


def test_bench_pruned_rows(tiny_block_dir, tmp_path):
    res = run_bench(model=str(tiny_block_dir), n_prompts=1, gen_length=16, budgets=(2, 8), temperatures=(0.0,),
                    drafters=("spot",), transfer=False, prune=0.3, log=lambda *a: None)
    pruned = [r for r in res.rows if "pruned" in r.note]
    # one pruned row per swept budget above 2, in both modes
    assert [(r.mode, r.budget) for r in pruned] == [("exact", 8), ("threshold", 8)]
    assert all(r.identical == 1.0 for r in pruned) and res.prune == 0.3


def test_bench_row_warms_up_before_timing(tiny_block_dir):
    # the first speculative decode with a new pass shape checks its batch invariance with extra one-row forwards;
    # a bench row runs one untimed decode first, so its timed first prompt carries none of them
    from spotviz.drafter.registry import load_proposer
    from spotviz.eval.bench import _run
    from spotviz.registry import load_target
    from spotviz.samplers.config import DecodeConfig

    target = load_target(str(tiny_block_dir))
    prompts = ["the cat", "a dog"]
    cfg = DecodeConfig(mode="exact", temperature=0.0, gen_length=16, drafter="training-free", budget=8)
    ticks = []
    traces, base, records = _run(target, prompts, cfg, load_proposer("training-free", target, "exact"), ticks.append,
                                 2.0)
    assert len(traces) == len(base) == 2 and ticks[0] == 2.0  # the warm-up is counted in the progress plan
    # both standard decodes of each prompt (before and after its run), which the observed ceiling prices as a mean
    assert len(records) == 2 * sum(len(b.passes) for b in base)
    assert traces[0].meta.forward_calls_outside == 0
    assert all(a.tokens == b.tokens for a, b in zip(traces, base))
    ticks.clear()  # the standard row warms up too (its tokens/s were a cold first decode's), counted as one decode
    base, again, records = _run(target, prompts, replace(cfg, drafter="none"), tick=ticks.append)
    assert ticks == [1, 1, 1] and base is again and len(base) == 2 and records == []


def test_bench_simulated_curve_times_every_decoder_on_that_curve(tiny_block_dir, tmp_path, capsys):
    curve = tmp_path / "slow-device.json"  # one second a forward, whatever N: a device far slower than this CPU
    curve.write_text(json.dumps({"sizes": [1, 2, 64], "seconds": [1.0, 1.0, 1.0], "fused_sizes": [1, 64],
                                 "fused_seconds": [2.0, 2.0], "device": "slow:0"}))
    rc = main(["bench", "--model", str(tiny_block_dir), "--n-prompts", "1", "--gen-length", "8", "--budgets", "auto,4",
               "--temperatures", "0", "--modes", "exact", "--drafters", "training-free", "--simulate-curve",
               str(curve), "--no-transfer", "--out", str(tmp_path), "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["simulated"].startswith("slow:0") and str(curve) in out["simulated"]
    assert [r["drafter"] for r in out["rows"]] == ["none", "training-free", "training-free"]
    assert all(r["identical"] == 1.0 for r in out["rows"])
    # every pass costs at least the curve's second (real passes here take milliseconds): at most one pass a second
    assert all(0 < r["tokens_per_s"] * r["passes_per_token"] <= 1.0 for r in out["rows"])
    assert out["cost_curve"][0] == [1, 1.0]
    assert "Simulated wall-clock" in (tmp_path / f"bench-{file_stem(out['model'])}.md").read_text()
    for args, message in ((["--simulate-curve", str(tmp_path / "none.json")], f"error: --simulate-curve {tmp_path / 'none.json'}: cannot be read"),
                          (["--drafters", "spot,oracle"], "error: --drafters spot, oracle: choose from spot")):
        rc = main(["bench", "--model", str(tiny_block_dir), "--out", str(tmp_path)] + args)
        assert rc != 0 and capsys.readouterr().err.startswith(message)


@pytest.mark.parametrize("settings, match", [
    ({"n_prompts": 0}, "--n-prompts"), ({"budgets": (0, 4)}, "--budgets"), ({"budgets": ("x",)}, "--budgets"),
    ({"budgets": ()}, "--budgets"), ({"other_budgets": (2, -1)}, "--other-budgets"),
    ({"temperatures": (-3.0,)}, "--temperatures"), ({"temperatures": ()}, "--temperatures"),
    ({"prune": 2.0}, "--prune"), ({"gen_length": 0}, "--gen-length"), ({"threshold": 1.5}, "--threshold"),
])
def test_a_bench_config_is_checked_when_made(settings, match):
    """A library caller's bad setting fails at once, worded as the command line words it (not after the model loaded
    and its cost curve was measured)."""
    from spotviz.eval.bench import BenchConfig

    with pytest.raises(ValueError, match=match):
        BenchConfig(**settings)
    BenchConfig(budgets=("auto", 2), other_budgets=None, temperatures=(0, 1.0))  # (good ones pass)


def test_the_bench_plan_lists_every_row_in_the_order_they_run():
    """Per (mode, temperature): every drafter at every budget of its sweep (SPOT also pruned), at T > 0 the
    coupled-noise ablation, at the first temperature the transfer rows; the ablation and transfers at budget 16 or
    the nearest budget swept."""
    from pathlib import Path

    from spotviz.eval.bench import BenchConfig, PlannedRow, bench_plan

    cfg = BenchConfig(budgets=("auto", 2, 8), other_budgets=(4,), temperatures=(0.0, 1.0),
                      drafters=("spot", "training-free"), prune=0.3)
    plan = bench_plan(cfg, [("from x", Path("x"))])
    assert [(m, t) for m, t, _ in plan] == [("exact", 0.0), ("exact", 1.0), ("threshold", 0.0), ("threshold", 1.0)]
    first = plan[0][2]
    assert first == [PlannedRow("spot", "auto"), PlannedRow("spot", 2), PlannedRow("spot", 8),
                     PlannedRow("spot", 8, "pruned below path prob 0.3", prune=0.3),
                     PlannedRow("training-free", "auto"), PlannedRow("training-free", 2),
                     PlannedRow("training-free", 8), PlannedRow("spot", 8, "transfer from x", folder=Path("x"))]
    assert plan[1][2] == [PlannedRow("spot", 4), PlannedRow("spot", 4, "pruned below path prob 0.3", prune=0.3),
                          PlannedRow("training-free", 4),
                          PlannedRow("spot", 4, "independent noise (ablation)", coupled=False)]
    assert plan[2][2][0] == PlannedRow("spot-sets", 4) and plan[2][2][-1].note == "transfer from x"
    # without spot, no ablation or transfer rows (they are the learned drafter's)
    plan = bench_plan(BenchConfig(budgets=(4,), temperatures=(0.0, 1.0), drafters=("training-free",)),
                      [("from x", Path("x"))])
    assert [r for _, _, rows in plan for r in rows] == [PlannedRow("training-free", 4)] * 4

"""The math corpus: generated word problems, the digit tokenizer, the prompt template and row training."""
from __future__ import annotations

import pytest

from spotviz.embedded.wordproblems import (CHAT_TEMPLATE, DRILL, FAMILIES, HELDOUT_FAMILIES, SPLITS, generate,
                                           parse_answer, split_of)
from spotviz.eval.answers import STEP


def test_generation_is_deterministic_and_seeded():
    a = generate(60, "train", seed=3)
    assert a == generate(60, "train", seed=3)
    assert a != generate(60, "train", seed=4)


def test_at_least_30_families_with_several_phrasings_and_held_out_families():
    assert len(FAMILIES) >= 30
    assert all(len(f.phrasings) >= 3 for f in FAMILIES)
    # a training family is trained on all but its last phrasing: at least three wordings of each kind of problem
    assert all(len(f.phrasings) >= 4 for f in FAMILIES if f.name not in HELDOUT_FAMILIES)
    names = {f.name for f in FAMILIES}
    assert set(HELDOUT_FAMILIES) <= names and len(HELDOUT_FAMILIES) >= 3


@pytest.mark.parametrize("split", SPLITS)
def test_every_solution_computes_each_step_and_ends_with_the_answer(split):
    for p in generate(150, split, seed=0):
        lines = p.solution.split("\n")
        assert lines[-1] == f"The answer is {p.answer}."
        assert p.answer >= 0
        for line in lines[:-1]:
            m = STEP.search(line)
            assert m, line  # one computed step per line
            x, op, y, z = int(m[1]), m[2], int(m[3]), int(m[4])
            assert {"+": x + y, "-": x - y, "x": x * y, "/": x / y}[op] == z, line
        assert lines[-2].endswith(f"{p.answer}.") or f"= ${p.answer}" in lines[-2] or f"= {p.answer} " in lines[-2]
        assert parse_answer(p.solution) == p.answer
        assert p.question[0].isupper() or p.question[0].isdigit()
        assert ". a " not in p.question and ". half" not in p.question  # sentences start with a capital


@pytest.mark.parametrize("split", ["train", "heldout-phrasings"])
def test_arithmetic_drills_compute_every_step_and_stay_out_of_the_round_robin(split):
    drills = generate(300, split, seed=0, families=(DRILL.name,))
    assert {p.family for p in drills} == {"arithmetic"} and all(split_of(p) == split for p in drills)
    ops, chained = set(), 0
    for p in drills:
        lines = p.solution.split("\n")
        assert lines[-1] == f"The answer is {p.answer}." and p.answer >= 0
        for line in lines[:-1]:
            m = STEP.search(line)
            x, op, y, z = int(m[1]), m[2], int(m[3]), int(m[4])
            assert {"+": x + y, "-": x - y, "x": x * y, "/": x / y}[op] == z, line
            ops.add(op)
        chained += len(lines) > 2
    assert ops == set("+-x/") and chained > 10
    assert DRILL not in FAMILIES and "arithmetic" not in {p.family for p in generate(400, "train", seed=0)}


def test_splits_hold_out_families_phrasings_and_samples():
    train = generate(3000, "train", seed=0)
    assert all(split_of(p) == "train" for p in train)
    assert not {p.family for p in train} & set(HELDOUT_FAMILIES)
    by_family = {f.name: f for f in FAMILIES}
    assert all(p.phrasing != len(by_family[p.family].phrasings) - 1 for p in train)
    questions = {p.question for p in train}
    for split in SPLITS[1:]:
        held = generate(100, split, seed=0)
        assert all(split_of(p) == split for p in held)
        assert not questions & {p.question for p in held}
    assert {p.family for p in generate(50, "heldout-families")} == set(HELDOUT_FAMILIES)


@pytest.mark.parametrize("split", SPLITS)
def test_small_number_problems_draw_one_digit_operands_and_leave_the_default_draw_alone(split):
    plain = generate(120, split, seed=2)
    assert generate(120, split, seed=2, small=0.0) == plain  # no extra random draw at 0: held-out sets stay put
    small = generate(120, split, seed=2, small=1.0)
    assert all(split_of(p) == split for p in small)

    def both_one_digit(problems):  # share of problems whose first step has two one-digit operands
        firsts = [STEP.search(p.solution.split("\n")[0]) for p in problems]
        return sum(bool(m) and int(m[1]) <= 9 and int(m[3]) <= 9 for m in firsts) / len(problems)

    assert both_one_digit(small) > 0.45 and both_one_digit(plain) < 0.3
    adds = [p for p in generate(400, "train", seed=2, small=0.5, families=("add",))]
    both_small = sum(all(int(m[i]) <= 9 for i in (1, 3)) for p in adds if (m := STEP.search(p.solution)))
    assert 0.3 < both_small / len(adds) < 0.7  # about half the problems, as asked
    with pytest.raises(ValueError, match="small"):
        generate(5, "train", small=1.5)


def test_parse_answer_reads_the_first_answer_line_only():
    assert parse_answer("He has 3 + 4 = 7 cards.\nThe answer is 7.\nThe answer is 9.") == 7
    assert parse_answer("The answer is $12.") == 12
    assert parse_answer("He has 3 + 4 = 7 cards.") is None


def test_digit_tokenizer_never_merges_digits():
    from spotviz.embedded.corpus import EOT
    from spotviz.embedded.tokenizer import train_tokenizer

    text = EOT.join(p.text for p in generate(400, "train"))
    tok = train_tokenizer(text, 400, split_digits=True)
    assert not [t for t in tok.get_vocab() if sum(c.isdigit() for c in t) > 1]
    ids = tok("The answer is 128.", add_special_tokens=False)["input_ids"]
    pieces = [tok.decode([i]) for i in ids]
    assert "1" in pieces and "2" in pieces and "8" in pieces
    plain = train_tokenizer(text, 400)
    assert [t for t in plain.get_vocab() if sum(c.isdigit() for c in t) > 1]  # plain BPE does merge numbers


def _templated_tokenizer():
    from spotviz.embedded.corpus import EOT
    from spotviz.embedded.tokenizer import train_tokenizer

    tok = train_tokenizer(EOT.join(p.text for p in generate(200, "train")), 300, split_digits=True)
    tok.chat_template = CHAT_TEMPLATE
    return tok


def test_prompt_template_wraps_a_bare_question_once():
    from spotviz.targets.base import apply_chat_template

    tok = _templated_tokenizer()
    q = "Sam has 8 marbles. He finds 5 more. How many marbles does Sam have now?"
    wrapped = apply_chat_template(tok, q)
    assert wrapped == f"Question: {q}\nAnswer:"
    assert apply_chat_template(tok, wrapped) == wrapped  # never twice
    assert apply_chat_template(tok, f"Question: {q}") == wrapped  # the answer cue is added
    partial = wrapped + " Sam has 8 + 5"
    assert apply_chat_template(tok, partial) == partial  # a started answer is continued as it is
    tok.chat_template = None
    assert apply_chat_template(tok, q) == q


@pytest.fixture(scope="module")
def tiny_math_dir(tmp_path_factory):
    from spotviz.training.target import TrainTargetConfig, train_target

    out = tmp_path_factory.mktemp("tiny-math") / "m"
    cfg = TrainTargetConfig(out=str(out), corpus="math", problems=600, vocab_size=300, hidden_size=48,
                            num_hidden_layers=2, num_attention_heads=4, intermediate_size=96, block_size=16,
                            seq_len=128, context=192, batch_size=4, max_steps=6, warmup_steps=2, eval_every=10_000,
                            checkpoint_every=10_000, save_dtype="float32")
    res = train_target(cfg, log=lambda *a, **k: None)
    assert res["steps"] == 6
    return out


def test_row_corpus_noises_only_answer_positions_and_keeps_the_template(tiny_math_dir):
    import numpy as np
    import torch

    from spotviz.training.objective import noise_block
    from spotviz.training.target import TrainTargetConfig
    from spotviz.training.target_data import prepare_problem_data

    cfg = TrainTargetConfig(out=str(tiny_math_dir), corpus="math", seq_len=128)
    tok, (rows, start, blocks), _ = prepare_problem_data(cfg, tiny_math_dir)
    assert rows.shape == (600, 128) and int(blocks.max()) <= 8
    eot = tok.eos_token_id
    for i in range(20):  # each row: the templated question, the answer, then only end-of-text tokens
        n = int((rows[i] != eot).sum())
        assert (rows[i, n:] == eot).all()
        assert tok.decode(rows[i, : start[i]]).startswith("Question: ")
        assert tok.decode(rows[i, : start[i]]).endswith("\nAnswer:")
    maskable = torch.arange(128).unsqueeze(0) >= start[:8].unsqueeze(1)
    noised, m = noise_block(rows[:8], 16, 1, torch.Generator().manual_seed(0), maskable)
    assert not (m & ~maskable).any() and m.any()
    assert np.array_equal(noised[~m].numpy(), rows[:8][~m].numpy())
    assert tok.chat_template == CHAT_TEMPLATE


def test_result_digits_are_the_computed_results_of_each_step(tiny_math_dir):
    import torch

    from spotviz.training.objective import ResultDigits
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_math_dir / "tokenizer"))
    find = ResultDigits(tok)
    problems = generate(60, "train", seed=3) + generate(20, "train", seed=3, families=(DRILL.name,))
    for p in problems:
        ids = tok(p.text, add_special_tokens=False)["input_ids"]
        marked = find(torch.tensor([ids]))[0]
        runs, cur = [], ""
        for i, on in zip(ids, marked.tolist()):
            if on:
                cur += tok.decode([i])
            elif cur:
                runs, cur = runs + [cur], ""
        runs += [cur] if cur else []
        assert runs == [m[4] for m in STEP.finditer(p.solution)], p.text
    # result focus: a chosen row masks exactly one whole result (uniformly chosen), nothing else
    rows = [tok(p.text, add_special_tokens=False)["input_ids"] for p in problems[:40]]
    x = torch.full((40, max(map(len, rows))), tok.eos_token_id)
    for i, r in enumerate(rows):
        x[i, : len(r)] = torch.tensor(r)
    inside, run = find.runs(x)
    gen = torch.Generator().manual_seed(0)
    f = find.focus(x, 1.0, gen)
    for i in range(40):
        picked = set(run[i][f[i]].tolist())
        assert len(picked) == 1 and f[i].sum() == (run[i] == picked.pop()).sum()
    assert len({tuple(run[i][f[i]].tolist()) for i in range(40)} - {()}) > 1  # not always the first result
    assert not find.focus(x, 0.0, gen).any() and 0 < find.focus(x, 0.5, gen).any(1).sum() < 40


def test_weighted_training_loss_and_drill_mix(tmp_path, tiny_math_dir):
    import json

    import torch

    from spotviz.embedded.modeling import SpotDLMConfig, SpotDLMForMaskedLM
    from spotviz.training.objective import block_training_mask, masked_loss
    from spotviz.training.target import TrainTargetConfig, train_target

    model = SpotDLMForMaskedLM(SpotDLMConfig(vocab_size=40, hidden_size=16, num_hidden_layers=1,
                                             num_attention_heads=2, intermediate_size=32,
                                             max_position_embeddings=32, attention="block", block_size=8,
                                             mask_token_id=1, eos_token_id=2, pad_token_id=2))
    x = torch.randint(3, 40, (2, 16), generator=torch.Generator().manual_seed(0))
    m = torch.rand(2, 16, generator=torch.Generator().manual_seed(1)) < 0.5
    noised = torch.where(m, torch.ones_like(x), x)
    tm = block_training_mask(16, 8)
    plain = masked_loss(model, x, noised, m, tm)
    assert torch.allclose(masked_loss(model, x, noised, m, tm, weight=torch.full((2, 16), 3.0)), plain)
    only = torch.zeros(2, 16)
    first = m.nonzero()[0]
    only[first[0], first[1]] = 1.0  # all the weight on one masked position: its own cross-entropy
    one = masked_loss(model, x, noised, m & (torch.arange(16) == first[1]) & (torch.arange(2) == first[0])[:, None], tm)
    assert torch.allclose(masked_loss(model, x, noised, m, tm, weight=only), one)

    base = dict(corpus="math", problems=200, vocab_size=300, hidden_size=32, num_hidden_layers=1,
                num_attention_heads=2, intermediate_size=64, seq_len=128, batch_size=2, max_steps=2,
                warmup_steps=1, eval_every=10_000, checkpoint_every=10_000, save_dtype="float32")
    res = train_target(TrainTargetConfig(out=str(tmp_path / "d"), drills=0.25, result_weight=4.0, result_focus=0.5,
                                         batch_tokens=512, small_numbers=0.3, reword=0.5, **base),
                       log=lambda *a, **k: None)
    assert res["corpus"]["drill_problems"] == 50 and res["config"]["result_weight"] == 4.0
    assert res["corpus"]["small_numbers"] == 0.3 and res["corpus"]["reworded"] == 0.5
    assert json.loads((tmp_path / "d" / "final" / "training.json").read_text())["steps"] == 2
    for bad in (dict(drills=1.0), dict(result_weight=0.0), dict(result_focus=-0.1), dict(batch_tokens=-1),
                dict(small_numbers=1.5), dict(reword=-0.1)):
        with pytest.raises(ValueError):
            train_target(TrainTargetConfig(out=str(tmp_path / "bad"), **(base | bad)), log=lambda *a, **k: None)
    with pytest.raises(ValueError, match="math corpus only"):
        train_target(TrainTargetConfig(out=str(tmp_path / "bad"), corpus="python", drills=0.1), log=print)
    with pytest.raises(ValueError, match="math corpus only"):
        train_target(TrainTargetConfig(out=str(tmp_path / "bad"), corpus="python", small_numbers=0.1), log=print)


def test_embedded_target_applies_the_stored_template(tiny_math_dir):
    from spotviz.registry import load_embedded

    target = load_embedded(tiny_math_dir / "final", device="cpu")
    assert target.info.max_length == 192
    q = "Mia has 12 apples. She finds 3 more. How many apples does Mia have now?"
    assert target.decode(target.encode(q)) == f"Question: {q}\nAnswer:"
    assert target.encode(f"Question: {q}\nAnswer:") == target.encode(q)


def test_cli_decode_takes_the_bare_question_and_shows_the_template(tiny_math_dir, capsys):
    from spotviz.cli import main

    q = "Sam has 8 marbles. He finds 5 more. How many marbles does Sam have now?"
    assert main(["decode", "--model", str(tiny_math_dir / "final"), "--prompt", q, "--gen-length", "16"]) == 0
    assert capsys.readouterr().out.startswith(f"Question: {q}\nAnswer:")


# ------------------------------------------------------------------------------------- answer accuracy (eval)
def test_step_arithmetic_reads_every_computed_step_of_the_generators_solutions():
    from spotviz.eval.answers import step_arithmetic

    for p in generate(400, "train", seed=5):
        n, right = step_arithmetic(p.solution)
        assert n >= 1 and right == n, (p.family, p.solution)
    assert step_arithmetic("Priya has 50 + 60 = 77 badges now.\nThen 77 - 7 = 70.") == (2, 1)
    assert step_arithmetic("She spent 5 x $12 = $60. Each pays $60 / 6 = $10. 7 / 0 = 1.") == (3, 2)
    assert step_arithmetic("The answer is 5.") == (0, 0)


def test_accuracy_summary_per_split_and_family():
    from spotviz.eval.answers import AnswerRow, heldout_problems, summarise, to_markdown

    probs = heldout_problems(per_family=1, seed=1)
    fams = {s: {p.family for sp, p in probs if sp == s} for s in ("heldout-problems", "heldout-families")}
    assert fams["heldout-families"] == set(HELDOUT_FAMILIES) and not fams["heldout-problems"] & set(HELDOUT_FAMILIES)
    rows = [AnswerRow("heldout-problems", "add", "q", 10, 10, "4 + 6 = 10", False, 1, 1),
            AnswerRow("heldout-problems", "add", "q", 10, 9, "4 + 6 = 9", False, 1, 0),
            AnswerRow("heldout-families", "wage", "q", 3, None, "x x x", True, 0, 0)]
    res = summarise(rows)
    assert res["splits"]["heldout-problems"] == {"accuracy": 0.5, "n": 2, "ends_with_answer": 1.0, "degenerate": 0,
                                                 "steps_right": 0.5}
    assert res["splits"]["heldout-families"]["degenerate"] == 1 and res["outputs"][0]["correct"]
    assert "| heldout-problems | 2 | 50.0% | 50% | 100% | 0 |" in to_markdown(res)


def test_rewording_keeps_the_problem_and_the_heldout_swaps_stay_out_of_training():
    import random
    import re

    from spotviz.embedded.reword import HELDOUT_RULES, TRAIN_RULES, reword, reword_heldout, reworded

    digits = lambda q: re.findall(r"\d+", q)  # noqa: E731
    train = generate(1500, "train", seed=3)
    rng = random.Random(0)
    out = [reword(p.question, rng) for p in train]
    assert all(digits(q) == digits(p.question) for q, p in zip(out, train))  # the numbers are the problem's
    assert 0.3 < sum(q != p.question for q, p in zip(out, train)) / len(train) < 0.8
    # the held-out swaps' new words are never what a training rule writes (the reworded split tests new words)
    written = {r for _, reps in TRAIN_RULES for r in reps}
    assert not written & {r for _, reps in HELDOUT_RULES for r in reps}
    q = "Tom has 5 apples. He buys 3 more and gives 2 to a friend. How many apples does Tom have now?"
    assert reword_heldout(q) == ("Tom owns 5 apples. He purchases 3 more and hands 2 to a classmate. "
                                 "How many apples does Tom have at the end?")
    assert reword_heldout(q) == reword_heldout(q)  # deterministic
    assert reword("Every day Ella makes 4 cakes.", rng) == "Every day Ella makes 4 cakes."  # nothing to swap
    # a share of a corpus is reworded; solutions and answers never are
    mixed = reworded(train, 0.5, seed=1)
    assert [(p.solution, p.answer, p.family) for p in mixed] == [(p.solution, p.answer, p.family) for p in train]
    assert 0.1 < sum(a.question != b.question for a, b in zip(mixed, train)) / len(train) < 0.5
    assert mixed == reworded(train, 0.5, seed=1) and reworded(train, 0.0, seed=1) == train


def test_accuracy_reworded_split_is_the_heldout_problems_reworded():
    from spotviz.eval.answers import REWORDED, AnswerRow, heldout_problems, summarise, to_markdown

    probs = heldout_problems(per_family=2, seed=1)
    originals = [p for s, p in probs if s == "heldout-problems"]
    rew = [p for s, p in probs if s == REWORDED]
    assert rew and len(rew) < len(originals)  # only those a held-out swap changes
    assert all(any((o.family, o.answer, o.solution) == (p.family, p.answer, p.solution) and o.question != p.question
                   for o in originals) for p in rew)
    rows = [AnswerRow("heldout-problems", "add", "Tom has 5 and buys 3.", 8, 8, "", False),
            AnswerRow("heldout-problems", "add", "Ann has 7 and finds 1.", 8, 8, "", False),
            AnswerRow(REWORDED, "add", "Tom owns 5 and purchases 3.", 8, 9, "", False)]
    res = summarise(rows)
    assert res["splits"][REWORDED]["accuracy"] == 0.0 and res["splits"][REWORDED]["as_generated"] == 1.0
    assert "the same problems as generated: 100.0% right" in to_markdown(res)


def test_token_budget_batches_hold_more_short_rows():
    import torch

    from spotviz.training.target_data import sample_windows

    rows = torch.arange(100 * 128).view(100, 128)
    blocks = torch.tensor([2] * 50 + [7] * 50)  # rows ending in 2 or in 7 blocks of 16
    gen = torch.Generator().manual_seed(0)
    shapes = {tuple(sample_windows((rows, torch.zeros(100, dtype=torch.long), blocks), 8, 128, gen, 16,
                                   tokens=1024)[0].shape) for _ in range(30)}
    assert shapes == {(32, 32), (9, 112)}  # 1024 // 32 short rows; max(8, 1024 // 112) long ones
    plain = {tuple(sample_windows((rows, torch.zeros(100, dtype=torch.long), blocks), 8, 128, gen, 16)[0].shape)
             for _ in range(30)}
    assert plain == {(8, 32), (8, 112)}


def test_parallel_corpus_draw_is_the_same_for_any_worker_count_and_prepare_only_stops_before_training(
        tmp_path, monkeypatch, capsys):
    """data_workers > 0 draws the training problems in seeded chunks: one worker or two give the same rows, a
    sequential draw (data_workers 0, the older releases' corpus) another; `--prepare-only` writes the corpus and no
    model, and a run on the same folder trains on that corpus."""
    import json

    import numpy as np

    from spotviz import cli
    from spotviz.training import target, target_data

    monkeypatch.setattr(target_data, "CHUNK_PROBLEMS", 150)  # 400 problems: 3 chunks (the jobs are cut in the parent)
    base = dict(corpus="math", problems=400, drills=0.25, reword=0.5, seq_len=128, vocab_size=300)
    rows = {}
    for workers in (0, 1, 2):
        out = tmp_path / f"w{workers}"
        target_data.prepare_data(target.TrainTargetConfig(out=str(out), data_workers=workers, **base), out)
        rows[workers] = np.load(out / "train_rows.npy")
        src = json.loads((out / "source.json").read_text())
        assert src["train_problems"] == 400 and src["drill_problems"] == 100
        assert src["chunked"] == (150 if workers else 0)
    assert np.array_equal(rows[1], rows[2])
    assert not np.array_equal(rows[0], rows[1])
    from transformers import AutoTokenizer

    val = {}  # the validation problems do not depend on the draw (each folder trained its own tokenizer)
    for workers in (0, 1):
        tok = AutoTokenizer.from_pretrained(str(tmp_path / f"w{workers}" / "tokenizer"))
        texts = tok.batch_decode(np.load(tmp_path / f"w{workers}" / "val_rows.npy")[:5].astype(np.int64))
        val[workers] = [t.split("\nAnswer:")[0] for t in texts]  # (rows cut at 127 tokens of either tokenizer)
    assert val[0] == val[1]

    out = tmp_path / "p"
    args = ["train-target", "--corpus", "math", "--out", str(out), "--problems", "300", "--seq-len", "128",
            "--vocab-size", "300", "--hidden-size", "32", "--layers", "1", "--heads", "2", "--intermediate-size",
            "64", "--data-workers", "2", "--device", "cpu"]
    assert cli.main(args + ["--prepare-only"]) == 0
    assert "corpus ready" in capsys.readouterr().out
    assert (out / "train_rows.npy").is_file() and not (out / "checkpoint").exists() and not (out / "final").exists()
    prepared = (out / "train_rows.npy").stat().st_mtime_ns
    assert cli.main(args + ["--max-steps", "2", "--skip-eval"]) == 0
    assert (out / "final" / "model.safetensors").is_file()
    assert (out / "train_rows.npy").stat().st_mtime_ns == prepared  # trained on the prepared corpus
    assert json.loads((out / "final" / "training.json").read_text())["device"] == "cpu"


def _heldout_sentence_patterns():
    """Every sentence of every held-out family's phrasings as a regex (a name, a number, or else one or two words)."""
    import re

    from spotviz.embedded.wordproblems import FAMILY_BY_NAME

    slot = {"a": "[A-Z][a-z]+", "b": "[A-Z][a-z]+"} | {k: r"\d+" for k in ("x", "y", "h", "w", "s", "m", "days")}
    pats = []
    for name in HELDOUT_FAMILIES:
        for phrasing in FAMILY_BY_NAME[name].phrasings:
            for sentence in re.split(r"(?<=[.?])\s+", phrasing):
                parts = re.split(r"\{([^}]+)\}", sentence)  # text, placeholder, text, ...
                pats.append(re.compile("".join(re.escape(t) if i % 2 == 0 else slot.get(t, r"[^\s,.?]+(?: [^\s,.?]+)?")
                                               for i, t in enumerate(parts))))
    return pats


def test_stories_chain_seen_steps_into_many_signatures_and_never_a_heldout_combination():
    import re
    from collections import Counter

    from spotviz.embedded import stories

    probs = stories.generate(20_000, seed=0)
    assert probs[:50] == stories.generate(50, seed=0) and probs[:50] != stories.generate(50, seed=1)
    sigs = Counter(stories.signature(p) for p in probs)
    assert len(sigs) >= 25
    assert all(2 <= len(s) <= 4 and set(s) <= set(stories.KINDS) for s in sigs)
    assert {k for s in sigs for k in s} == set(stories.KINDS)  # every step kind is trained
    held = set(stories.HELDOUT_SIGNATURES.values())
    assert set(stories.HELDOUT_SIGNATURES) == set(HELDOUT_FAMILIES)
    for s in sigs:  # no held-out combination, as the whole story or as consecutive steps inside a longer one
        assert s not in held and not stories.excluded(s)
        assert not any(s[i:i + 2] in held for i in range(len(s) - 1)), s
    # each held-out combination's two steps are trained, each next to other steps
    for a, b in held:
        assert any(s[i] == a for s in sigs for i in range(len(s) - 1)), a
        assert any(s[i] == b for s in sigs for i in range(1, len(s))), b
    patterns = _heldout_sentence_patterns()
    sentences = set()
    for p in probs:
        assert p.family == stories.family_name(stories.signature(p)) and p.phrasing == 0 and split_of(p) == "train"
        lines = p.solution.split("\n")
        assert len(lines) == len(stories.signature(p)) + 1  # one solution line per step
        assert lines[-1] == f"The answer is {p.answer}."
        results = []
        for line in lines[:-1]:
            m = STEP.search(line)
            assert m and len(STEP.findall(line)) == 1, line  # one computed operation per line
            x, op, y, z = int(m[1]), m[2], int(m[3]), int(m[4])
            assert {"+": x + y, "-": x - y, "x": x * y, "/": x / y}[op] == z, line
            assert 0 <= z < 1000 and (op != "/" or x % y == 0), line
            results.append(z)
        assert p.answer == results[-1] and parse_answer(p.solution) == p.answer
        # each step after the first works on an earlier result
        for i, line in enumerate(lines[1:-1], 1):
            m = STEP.search(line)
            assert {int(m[1]), int(m[3])} & set(results[:i]), p.text
        assert p.prompt == f"Question: {p.question}\nAnswer:" and p.text.endswith(p.solution)
        assert "{" not in p.question and "  " not in p.question
        sentences.update(re.split(r"(?<=[.?])\s+", p.question))
    for s in sentences:  # the stories' sentences are their own, never a held-out family's phrasing
        assert not any(pat.fullmatch(s) for pat in patterns), s
    assert all(s[0].isupper() for s in sentences)


def test_training_corpus_mixes_in_a_share_of_stories_and_leaves_the_default_draw_alone(tmp_path):
    from spotviz.embedded import stories
    from spotviz.training.target import TrainTargetConfig, train_target
    from spotviz.training.target_data import training_problems

    cfg = TrainTargetConfig(out=str(tmp_path), corpus="math", seed=2, reword=0.5)
    plain = training_problems(cfg, 200, 10, 0)
    # stories = 0: the draw of earlier releases (word problems, reworded, then drills)
    from spotviz.embedded.reword import reworded

    assert plain == reworded(generate(200, "train", seed=2), 0.5, 2) + generate(10, "train", seed=2,
                                                                                families=(DRILL.name,))
    cfg.stories = 0.5
    mixed = training_problems(cfg, 200, 10, 0)
    told = [p for p in mixed if p.family.startswith(stories.FAMILY_PREFIX)]
    assert len(mixed) == 210 and len(told) == 100
    assert sum(p.family.startswith(stories.FAMILY_PREFIX) for p in mixed[:20]) == 10  # spread evenly
    assert not any(stories.excluded(stories.signature(p)) for p in told)
    assert not {p.family for p in mixed} & set(HELDOUT_FAMILIES)
    assert [p.answer for p in told] == [p.answer for p in stories.generate(100, seed=2)]
    assert mixed == training_problems(cfg, 200, 10, 0) and mixed != training_problems(cfg, 200, 10, 1)
    for bad in (dict(stories=1.5), dict(stories=-0.1)):
        with pytest.raises(ValueError, match="--stories"):
            train_target(TrainTargetConfig(out=str(tmp_path / "bad"), corpus="math", max_steps=1, **bad),
                         log=lambda *a, **k: None)
    with pytest.raises(ValueError, match="math corpus only"):
        train_target(TrainTargetConfig(out=str(tmp_path / "bad"), corpus="python", stories=0.1, max_steps=1),
                     log=lambda *a, **k: None)


def test_the_apps_word_problems_to_try_are_answered_by_the_shipped_model():
    """The app's prompt menu for math-bd promises problems the default model can do: each greedy answer ends with
    the right `The answer is N.`, and SPOT writes exactly the standard decoder's text."""
    from spotviz.engine import decode
    from spotviz.eval.answers import parse_answer
    from spotviz.registry import DEFAULT_MODEL, load_target
    from spotviz.samplers.config import DecodeConfig
    from spotviz.ui.inputs import MATH_PROMPTS, prompts_for

    assert prompts_for(DEFAULT_MODEL) == MATH_PROMPTS == prompts_for("JetLM/SDAR-1.7B-Chat") == prompts_for("sdar-1.7b-chat")
    target = load_target(DEFAULT_MODEL)
    answers = [72, 13, 76, 164, 8, 2]  # worked out by hand, in the menu's order
    for q, answer in zip(MATH_PROMPTS, answers, strict=True):
        standard = decode(target, q, DecodeConfig(gen_length=128))
        spot = decode(target, q, DecodeConfig(gen_length=128, drafter="spot", budget=16))
        assert parse_answer(standard.text) == answer and standard.text.rstrip().endswith(f"The answer is {answer}."), \
            (q, standard.text)
        assert spot.tokens == standard.tokens

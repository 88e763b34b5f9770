"""Light rewording of word-problem questions: the same problem in words a person might use instead.

A model trained on a few phrasings per family learns those sentences, not the problem: on release 12's `math-bd`,
67 held-out problems of training families answered 87% right as generated and 46% right after a handful of
synonym swaps ("in all" -> "in total", "buys" -> "purchases", "each" -> "every", ...), with the numbers, the
story and the solution unchanged. So a share of the training questions (`train-target --reword SHARE`) is
reworded: each rule of `TRAIN_RULES` that matches is applied with probability 1/2, with one of its
replacements drawn at random. The worked solution is never touched (it is the standard the model writes).

Rules are regular expressions over the question text, chosen so that every replacement keeps the meaning and
the grammar of the phrasings they can meet (tests/test_wordproblems.py rewords 1,500 generated training questions
and checks that every number survives). `HELDOUT_RULES` is a second, disjoint set of swaps never used in training: the `accuracy`
command's "reworded" split applies all of them to held-out problems of the training families, so what it
measures is robustness to words the model never saw reworded, not recall of the training rewrites.
"""
from __future__ import annotations

import dataclasses
import random
import re

Rule = tuple[str, tuple[str, ...]]  # (pattern, replacements; a replacement may use the pattern's groups)

TRAIN_RULES: tuple[Rule, ...] = (
    (r"\bin all\b", ("altogether", "all together", "combined")),
    (r"\baltogether\b", ("in all", "combined")),
    (r"\bhave now\?", ("have now in all?", "have after that?", "have at this point?")),
    (r"\bhave left\?", ("have remaining?", "still have?", "have left over?")),
    (r"\bare left\?", ("remain?", "are still left?", "are left over?")),
    (r"\bbuys\b", ("gets", "picks up")),
    (r"\bbought\b", ("got", "picked up")),
    (r"\bgives\b", ("passes", "sends")),
    (r"\bgave\b", ("passed", "sent")),
    (r"\bfinds\b", ("discovers", "comes across")),
    (r"\bfound\b", ("discovered", "came across")),
    (r"\bcollected\b", ("gathered", "saved up")),
    (r"\bfriend(s?)\b", (r"cousin\1", r"neighbor\1", r"pal\1")),
    (r"\beach (?=(day|friend|cousin|neighbor|pal|hour|box|bag|basket|pack|jar|crate|tray|bucket)\b)", ("every ",)),
    (r"\bHow much money does\b", ("How much cash does", "What amount of money does")),
    (r"\bHow many (\w+) does\b", (r"How many \1 in total does", r"What number of \1 does")),
    (r"\bowns\b", ("has", "keeps")),
)

HELDOUT_RULES: tuple[Rule, ...] = (
    (r"\bin all\b", ("in total",)),
    (r"\bhave now\?", ("have at the end?",)),
    (r"\bbuys\b", ("purchases",)),
    (r"\bgives\b", ("hands",)),
    (r"\bfriend\b", ("classmate",)),
    (r"\bHow much money\b", ("How many dollars",)),
    (r"\bhas (?=\$?\d)", ("owns ",)),
)


def reword(question: str, rng: random.Random, rules: tuple[Rule, ...] = TRAIN_RULES, p: float = 0.5) -> str:
    """The question with each matching rule applied with probability p (every occurrence, one replacement drawn
    per rule). p = 1 applies every rule (the held-out rewording)."""
    for pattern, replacements in rules:
        if re.search(pattern, question) and (p >= 1 or rng.random() < p):
            question = re.sub(pattern, rng.choice(replacements), question)
    return question


def reword_heldout(question: str) -> str:
    """The held-out rewording (every HELDOUT_RULES swap; deterministic): the `accuracy` command's reworded split."""
    return reword(question, random.Random(0), HELDOUT_RULES, p=1.0)


def reworded(problems: list, share: float, seed: int) -> list:
    """`problems` (wordproblems.Problem) with a `share` of their questions reworded by TRAIN_RULES, deterministic in
    `seed`. Solutions, answers and the other problems are unchanged."""
    rng = random.Random(f"reword:{seed}")
    return [dataclasses.replace(p, question=reword(p.question, rng)) if rng.random() < share else p
            for p in problems]

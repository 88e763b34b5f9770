"""Does a word-problem model get the answers right? Answer accuracy of greedy (T=0) decoding on held-out problems.

Problems come from the generator (embedded/wordproblems.py), never from training: held-out problems of the
training families, the same problems reworded by swaps never used in training (embedded/reword.py HELDOUT_RULES:
"in all" -> "in total", "buys" -> "purchases", ...; only the problems a swap changes), held-out phrasings of the
training families, and whole held-out families. The model sees only the
bare question (its prompt template adds "Question:" / "Answer:"); its answer is the number of the first
"The answer is N." line. Reported per split and per family, with the share of outputs that end with an answer
line, the share that are degenerate (eval/quality.py), and how often the computed steps' arithmetic is right
(every "a op b = c" line of a solution, op one of + - x /, checked on its own: a model can copy the right
operands and still get the sum wrong).
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import asdict, dataclass, replace

from ..embedded.reword import reword_heldout
from ..embedded.wordproblems import FAMILIES, HELDOUT_FAMILIES, SPLITS, Problem, generate, parse_answer
from .quality import output_quality


@dataclass
class AnswerRow:
    split: str
    family: str
    question: str
    answer: int
    predicted: int | None
    text: str
    degenerate: bool
    steps: int = 0  # "a op b = c" steps written
    steps_right: int = 0  # of those, arithmetically right

    @property
    def correct(self) -> bool:
        return self.predicted == self.answer


STEP = re.compile(r"\$?(\d+) ([-+x/]) \$?(\d+) = \$?(\d+)")


def step_arithmetic(text: str) -> tuple[int, int]:
    """(steps written, steps right) over the "a op b = c" computations of a solution."""
    steps = right = 0
    for a, op, b, c in ((int(m[1]), m[2], int(m[3]), int(m[4])) for m in STEP.finditer(text)):
        steps += 1
        right += {"+": a + b == c, "-": a - b == c, "x": a * b == c, "/": b != 0 and a == b * c}[op]
    return steps, right


REWORDED = "reworded-problems"  # the held-out problems of training families, reworded (module docstring)


def heldout_problems(per_family: int = 4, seed: int = 1) -> list[tuple[str, Problem]]:
    """`per_family` problems of every family in each held-out split, as (split, problem) pairs, then the
    held-out problems that the held-out rewording changes, reworded (split REWORDED)."""
    out = []
    train_families = [f.name for f in FAMILIES if f.name not in HELDOUT_FAMILIES]
    for split in SPLITS[1:]:
        fams = HELDOUT_FAMILIES if split == "heldout-families" else train_families
        for name in fams:
            out += [(split, p) for p in generate(per_family, split, seed=seed, families=(name,))]
    reworded = [(REWORDED, replace(p, question=q)) for s, p in out
                if s == "heldout-problems" and (q := reword_heldout(p.question)) != p.question]
    return out + reworded


def answer_accuracy(target, problems: list[tuple[str, Problem]], gen_length: int = 128, log=None) -> dict:
    """Greedy-decode each problem's bare question with the standard decoder; accuracy per split and family."""
    from ..samplers.config import DecodeConfig
    from ..samplers.standard import decode_standard

    import time

    from .progress import duration

    rows, t0 = [], time.perf_counter()
    if log:
        log(f"decoding {len(problems)} held-out problems with the standard decoder (greedy, up to {gen_length} "
            "tokens each); an estimate follows the first")
    for i, (split, p) in enumerate(problems):
        trace = decode_standard(target, p.question, DecodeConfig(mode="exact", temperature=0.0, gen_length=gen_length))
        ids = [t for t in trace.tokens if t not in target.info.eos_ids]
        rows.append(AnswerRow(split, p.family, p.question, p.answer, parse_answer(trace.text), trace.text,
                              output_quality(ids).degenerate, *step_arithmetic(trace.text)))
        if log and i == 0 and len(problems) > 1:
            log(f"  the first took {time.perf_counter() - t0:.2f} s: about "
                f"{duration((time.perf_counter() - t0) * len(problems))} for all {len(problems)}")
        elif log and (i + 1) % 50 == 0:
            log(f"  {i + 1}/{len(problems)} problems decoded")
    return summarise(rows)


def summarise(rows: list[AnswerRow]) -> dict:
    by_split: dict = defaultdict(list)
    by_family: dict = defaultdict(list)
    for r in rows:
        by_split[r.split].append(r)
        by_family[(r.split, r.family)].append(r)

    def acc(rs):
        return {"accuracy": sum(r.correct for r in rs) / len(rs), "n": len(rs),
                "ends_with_answer": sum(r.predicted is not None for r in rs) / len(rs),
                "degenerate": sum(r.degenerate for r in rs),
                "steps_right": sum(r.steps_right for r in rs) / max(1, sum(r.steps for r in rs))}

    splits = {s: acc(rs) for s, rs in by_split.items()}
    if REWORDED in splits:  # the same problems as generated, for the comparison (matched by family and numbers)
        key = lambda r: (r.family, tuple(re.findall(r"\d+", r.question)))  # noqa: E731
        reworded = {key(r) for r in by_split[REWORDED]}
        same = [r for r in by_split.get("heldout-problems", []) if key(r) in reworded]
        splits[REWORDED]["as_generated"] = sum(r.correct for r in same) / max(1, len(same))
    return {"splits": splits,
            "families": [{"split": s, "family": f} | acc(rs) for (s, f), rs in by_family.items()],
            "outputs": [asdict(r) | {"correct": r.correct} for r in rows]}


def to_markdown(res: dict) -> str:
    lines = ["| split | problems | answer accuracy | computed steps right | ends with an answer | degenerate |",
             "|---|---|---|---|---|---|"]
    for s, a in res["splits"].items():
        lines.append(f"| {s} | {a['n']} | {100 * a['accuracy']:.1f}% | {100 * a['steps_right']:.0f}% | "
                     f"{100 * a['ends_with_answer']:.0f}% | {a['degenerate']} |")
    if REWORDED in res["splits"]:
        r = res["splits"][REWORDED]
        lines += ["", f"{REWORDED}: the {r['n']} held-out problems a held-out swap changes, reworded; the same problems "
                      f"as generated: {100 * r['as_generated']:.1f}% right."]
    lines += ["", "| split | family | problems | answer accuracy |", "|---|---|---|---|"]
    for f in res["families"]:
        lines.append(f"| {f['split']} | {f['family']} | {f['n']} | {100 * f['accuracy']:.0f}% |")
    return "\n".join(lines) + "\n"

"""How much of a word-problem model's arithmetic is computing: teacher-forced result accuracy.

For each generated held-out problem, every token of its worked solution is given except the digits of the
computed results (the `c` of each `a op b = c` line) and of the final `The answer is N.`; one forward of the
model in its training layout (block-causal, the given tokens as the clean copy) predicts every masked digit at
once, and a result counts as right when all its digits are the argmax. Read it beside `accuracy`'s "computed
steps right" (free decoding): this one removes copying, decoding order and earlier mistakes, and shows whether
the model can do the sum at all. Per split and operation:

    python scripts/probe_arithmetic.py [--model assets/models/math-bd] [--problems 200] [--seed 7]

(All digits of a result are predicted in one pass here, while a decoder commits them one at a time, so this is
a slightly harder test than decoding for the digits after the first.)
"""
from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from spotviz.embedded.wordproblems import DRILL, generate  # noqa: E402
from spotviz.eval.answers import STEP  # noqa: E402
from spotviz.training.objective import ResultDigits, block_training_mask, training_logits  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="assets/models/math-bd")
    ap.add_argument("--problems", type=int, default=200, help="problems per split")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    from transformers import AutoTokenizer

    from spotviz.embedded.modeling import SpotDLMForMaskedLM

    torch.set_num_threads(1)
    tok = AutoTokenizer.from_pretrained(a.model)
    model = SpotDLMForMaskedLM.from_pretrained(a.model).float().eval()
    find = ResultDigits(tok)
    answer = re.compile(r"The answer is \$?(\d+)\.")
    right, total = Counter(), Counter()
    splits = {"heldout-problems": None, "heldout-phrasings": None, "heldout-families": None,
              "arithmetic drills (heldout-problems)": (DRILL.name,)}
    for split, fams in splits.items():
        for p in generate(a.problems, split.split(" ")[-1].strip("()"), seed=a.seed, families=fams):
            ids = tok(p.text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
            x = torch.tensor([ids])
            inside, run = find.runs(x)
            text_ids = x[0].tolist()
            # the final answer's digits too (else a result would be copied from the line below it)
            tail = tok(" " + answer.search(p.solution)[1] + ".", add_special_tokens=False)["input_ids"]
            n = len(ids) - 1 - len(tail)
            if text_ids[n: len(ids) - 1] == tail:
                inside[0, n + 1: len(ids) - 2] = True  # the digits between the space and the full stop
            noised = torch.where(inside, torch.full_like(x, model.config.mask_token_id), x)
            with torch.no_grad():
                logits = training_logits(model, x, noised, block_training_mask(x.shape[1], model.config.block_size))
            ok = logits.argmax(-1) == x
            for k, m in enumerate(STEP.finditer(p.solution), start=1):
                key = (split, m[2])
                total[key] += 1
                right[key] += bool(ok[run == k].all())
    print(f"{a.model}: teacher-forced result accuracy ({a.problems} problems per split, seed {a.seed})")
    print("| split | + | - | x | / | all |\n|---|---|---|---|---|---|")
    for split in splits:
        cells = []
        for op in "+-x/":
            n = total[(split, op)]
            cells.append(f"{100 * right[(split, op)] / n:.0f}% of {n}" if n else "-")
        n_all = sum(total[(split, op)] for op in "+-x/")
        cells.append(f"{100 * sum(right[(split, op)] for op in '+-x/') / max(n_all, 1):.0f}%")
        print(f"| {split} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

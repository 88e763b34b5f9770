"""Compare two SPOT drafter folders on one target: target passes saved on the held-out prompts, per budget and
temperature, beside the training-free order (and the calibrated template: --baselines), plus each drafter's
validation figures (exact mode: the SPOT drafters in spot/; threshold mode: the SPOT-Sets drafters in spot-sets/).
Passes are counted, not timed, so the figures do not depend on how busy the machine is. Every speculative decode is
checked against the standard decoder.

Used to choose the drafter's input width (the root's top-8 vs top-32 probabilities per position):

    python -m spotviz train-drafter --model python-bd --n-prompts 40 --topk 32 --out runs/drafters-top32
    python scripts/compare_drafters.py python-bd assets/drafters/python-bd runs/drafters-top32 --out docs/drafter-topk.md

and SPOT-Sets drafters trained on more threshold trajectories (train-drafter --threshold-prompts):

    python scripts/compare_drafters.py math-bd assets/drafters/math-bd runs/sets960 --mode threshold
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from spotviz.drafter.model import SpotDrafter  # noqa: E402
from spotviz.drafter.registry import load_proposer  # noqa: E402
from spotviz.embedded.prompts import heldout_prompts  # noqa: E402
from spotviz.registry import load_target  # noqa: E402
from spotviz.samplers.config import DecodeConfig  # noqa: E402
from spotviz.samplers.spot import decode_spot  # noqa: E402
from spotviz.samplers.standard import decode_standard  # noqa: E402

VALIDATION_KEYS = {"exact": ("pos_acc@1", "pos_acc@2", "pos_acc@4", "pos_acc@8", "keep_acc"),
                   "threshold": ("set_acc@1", "set_acc@2")}
SUB = {"exact": "spot", "threshold": "spot-sets"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("drafters", nargs=2, metavar="DRAFTER_DIR", help="two folders holding spot/ (and spot-sets/)")
    ap.add_argument("--prompts", type=int, default=10)
    ap.add_argument("--gen-length", type=int, default=128)
    ap.add_argument("--budgets", default="4,16,32")
    ap.add_argument("--temperatures", default="0,1")
    ap.add_argument("--mode", choices=("exact", "threshold"), default="exact")
    ap.add_argument("--threshold", type=float, default=0.9)
    ap.add_argument("--baselines", default="training-free",
                    help="baseline columns, separated by commas: training-free, calibrated (the first folder's "
                         "calibrated.json); none for no baseline")
    ap.add_argument("--out", default=None, help="also write the table as markdown here")
    a = ap.parse_args()
    sub, keys = SUB[a.mode], VALIDATION_KEYS[a.mode]
    torch.set_num_threads(1)
    target = load_target(a.model)
    prompts = heldout_prompts(target)[: a.prompts]
    budgets = [int(b) for b in a.budgets.split(",")]
    temps = [float(t) for t in a.temperatures.split(",")]
    names = [Path(d).as_posix() for d in a.drafters]
    drafters = [SpotDrafter.load(Path(d) / sub) for d in a.drafters]
    proposers = [load_proposer(sub, target, a.mode, folder=Path(d)) for d in a.drafters]
    baselines = [b for b in a.baselines.split(",") if b and b != "none"]
    for b in baselines:
        if b not in ("training-free", "calibrated"):
            ap.error(f"--baselines: unknown baseline {b!r} (training-free, calibrated)")
        proposers.append(load_proposer(b, target, a.mode, folder=Path(a.drafters[0]) if b == "calibrated" else None))
    t0 = time.time()
    lines = [f"### {sub} drafters on {a.model}: {len(prompts)} held-out prompts x {a.gen_length} tokens, {a.mode} mode",
             "", "| drafter | top-k | parameters | " + " | ".join(keys) + " |",
             "|---|---|---|" + "---|" * len(keys)]
    for name, d in zip(names, drafters):
        val = json.loads((Path(name) / sub / "drafter.json").read_text()).get("validation", {})
        lines.append(f"| {name} | {d.cfg.topk} | {d.n_params():,} | "
                     + " | ".join(f"{val.get(k, float('nan')):.3f}" for k in keys) + " |")
    lines += ["", "| T | budget | " + " | ".join(f"pass reduction, {n} (top-{d.cfg.topk})" for n, d in zip(names, drafters))
              + "".join(f" | {b}" for b in baselines) + " | identical output |",
              "|---|---|" + "---|" * (len(drafters) + len(baselines) + 1)]
    for T in temps:
        std = []
        for i, p in enumerate(prompts):
            cfg = DecodeConfig(mode=a.mode, threshold=a.threshold, temperature=T, seed=i, gen_length=a.gen_length)
            std.append(decode_standard(target, p, cfg))
        n_std = sum(s.counters.target_passes for s in std)
        for budget in budgets:
            row, same = [], 0
            for prop in proposers:
                n = 0
                for i, p in enumerate(prompts):
                    cfg = DecodeConfig(mode=a.mode, threshold=a.threshold, temperature=T, seed=i,
                                       gen_length=a.gen_length, budget=budget)
                    tr = decode_spot(target, p, cfg, prop)
                    n += tr.counters.target_passes
                    same += tr.tokens == std[i].tokens
                row.append(n_std / n)
            lines.append(f"| {T:g} | {budget} | " + " | ".join(f"{r:.2f}x" for r in row)
                         + f" | {100 * same / (len(prompts) * len(proposers)):.0f}% |")
            print(lines[-1], flush=True)
    lines += ["", f"({time.time() - t0:.0f} s; pass reduction = standard decoder's target passes / SPOT's, summed "
              "over the prompts)"]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        Path(a.out).write_text(text)


if __name__ == "__main__":
    main()

"""Quick figures for a freshly trained target (used to pick the block size and to check a training run):
greedy-output quality, previous-pass agreement at T=0 and T=1, and the training-free drafter's pass reduction.

    python scripts/probe_target.py runs/probe-b16/final [--prompts 6] [--gen-length 128] [--budget 32]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from spotviz.embedded.prompts import heldout_prompts  # noqa: E402
from spotviz.engine import decode  # noqa: E402
from spotviz.eval.quality import greedy_quality  # noqa: E402
from spotviz.eval.stats import stale_agreement  # noqa: E402
from spotviz.registry import load_target  # noqa: E402
from spotviz.samplers.config import DecodeConfig  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--prompts", type=int, default=6)
    ap.add_argument("--gen-length", type=int, default=128)
    ap.add_argument("--budget", type=int, default=32)
    ap.add_argument("--drafter", default="training-free")
    a = ap.parse_args()
    torch.set_num_threads(1)
    target = load_target(a.model)
    prompts = heldout_prompts(target)[: a.prompts]
    out = {"model": a.model, "quality": greedy_quality(target, prompts, a.gen_length)["summary"]}
    for t in (0.0, 1.0):
        out[f"agreement_T{t:g}"] = stale_agreement(target, prompts, gen_length=a.gen_length, temperature=t)["stale_agreement"]
        std = spec = 0
        for i, p in enumerate(prompts):
            base = dict(temperature=t, seed=i, gen_length=a.gen_length)
            s = decode(target, p, DecodeConfig(**base))
            d = decode(target, p, DecodeConfig(**base, drafter=a.drafter, budget=a.budget))
            assert d.tokens == s.tokens, "speculative output differs from standard"
            std += s.counters.target_passes
            spec += d.counters.target_passes
        out[f"pass_reduction_T{t:g}"] = std / spec
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

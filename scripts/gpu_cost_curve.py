"""What a target pass over N states costs on an accelerator: f(N)/f(1) for the embedded models and for a
published-architecture model built from its config with random weights (SDAR-1.7B-shaped: Qwen3, 28 layers,
hidden 2048, vocab 151936, blocks of 32), in bf16 and fp32; then SPOT's wall-clock on the embedded models there.

    python scripts/gpu_cost_curve.py --device cuda --out gpu-cost            # everything (~10 min on one GPU)
    python scripts/gpu_cost_curve.py --device cuda --skip-bench              # the curves only (~3 min)
    python scripts/gpu_cost_curve.py --device cpu --models none --sdar-layers 2 --sdar-hidden 256 \
        --sdar-vocab 4096 --dtypes fp32 --sizes 1,2,4 --skip-bench          # a smoke run of the script itself

The curve is samplers/forward_cost.measure (the function `--budget auto` uses): per size, same-shape calls in a row
after a warm-up, their median, each size between two timings of one state that agree, f(N)/f(1) the median over
three rounds; on an accelerator in wall time after a
device synchronisation. Random weights cost what trained ones do: a forward's time depends on shapes, not on
values. Writes <out>/gpu-cost-curve.json and .md (and the bench tables of the embedded models, with every row's
zero-overhead ceiling beside the measured wall ratio).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import torch  # noqa: E402

SDAR_1_7B = dict(vocab_size=151936, hidden_size=2048, intermediate_size=6144, num_hidden_layers=28,
                 num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=40960,
                 rope_theta=1_000_000.0, rms_norm_eps=1e-6, tie_word_embeddings=True)
SIZES = (1, 2, 4, 8, 16, 32, 64)
FUSED = (1, 2, 4, 8, 16, 32)


def sdar_shaped(device, dtype, layers: int | None, hidden: int | None, vocab: int | None = None, block_size: int = 32):
    """An SDAR-1.7B-shaped block-diffusion target with random weights (targets/published.BlockCausalTarget on a
    stock Qwen3ForCausalLM, as the SDAR adapter loads the published weights)."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from spotviz.targets.base import TargetInfo
    from spotviz.targets.adapters import BlockCausalTarget

    cfg = dict(SDAR_1_7B)
    if layers:
        cfg["num_hidden_layers"] = layers
    if vocab:
        cfg["vocab_size"] = vocab
    if hidden:  # a narrower smoke model: keep 128-wide heads where they fit
        cfg.update(hidden_size=hidden, intermediate_size=3 * hidden, num_attention_heads=max(1, hidden // 128),
                   num_key_value_heads=max(1, hidden // 256), head_dim=min(128, hidden))
    with torch.device(device):
        model = Qwen3ForCausalLM(Qwen3Config(**cfg)).to(dtype).eval()
    n_params = sum(p.numel() for p in model.parameters())
    name = f"sdar-1.7b-shaped-random ({n_params / 1e9:.2f}B, {str(dtype).replace('torch.', '')})"
    info = TargetInfo(name=name, attention="block", block_size=block_size, mask_id=cfg["vocab_size"] - 1,
                      eos_ids=(0,), vocab_size=cfg["vocab_size"], max_length=4096)
    return BlockCausalTarget(model, None, info)


def curve_row(target, label: str, sizes=SIZES) -> dict:
    from spotviz.samplers.forward_cost import measure

    t0 = time.perf_counter()
    curve = measure(target, sizes=sizes, fused_sizes=[n for n in FUSED if n <= max(sizes)],
                    max_seconds=600)  # (every size and round: this script is the measurement, no run waits on it)
    f1 = curve.seconds[0]
    row = {"target": label, "device": curve.device, "dtype": curve.dtype, "clock": curve.clock,
           "f1_ms": 1000 * f1, "ratios": {n: s / f1 for n, s in zip(curve.sizes, curve.seconds)},
           "fused_ratios": {n: s / f1 for n, s in zip(curve.fused_sizes, curve.fused_seconds)},
           "seconds": curve.seconds, "fused_seconds": curve.fused_seconds, "measure_s": time.perf_counter() - t0}
    print(f"{label}: f(1) = {row['f1_ms']:.2f} ms; f(N)/f(1): "
          + "  ".join(f"N={n}: {r:.2f}" for n, r in row["ratios"].items()), flush=True)
    return row


def markdown(rows: list[dict], sizes=SIZES) -> str:
    head = "| target | device | dtype | f(1) ms | " + " | ".join(f"N={n}" for n in sizes) + " | fused N=1 / 8 |"
    lines = ["### f(N)/f(1): a pass over N states in standard passes", "", head,
             "|---" * (5 + len(sizes)) + "|"]
    for r in rows:
        fz = r["fused_ratios"]
        fused = f"{fz.get(1, float('nan')):.2f} / {fz.get(8, float('nan')):.2f}" if fz else "-"
        lines.append(f"| {r['target']} | {r['device']} | {r['dtype']} | {r['f1_ms']:.2f} | "
                     + " | ".join(f"{r['ratios'][n]:.2f}" for n in sizes) + f" | {fused} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="auto", help="auto (cuda when available), cuda, cuda:N, mps or cpu")
    ap.add_argument("--models", default="all", help="embedded models, comma-separated (all: every one shipped; "
                                                    "none: skip them); a folder works too")
    ap.add_argument("--dtypes", default="bf16,fp32", help="for the SDAR-shaped model")
    ap.add_argument("--no-sdar", action="store_true", help="skip the SDAR-1.7B-shaped model")
    ap.add_argument("--sdar-layers", type=int, default=None, help="fewer layers (smoke runs)")
    ap.add_argument("--sdar-hidden", type=int, default=None, help="a narrower model (smoke runs)")
    ap.add_argument("--sdar-vocab", type=int, default=None, help="a smaller vocabulary (smoke runs)")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="the N measured")
    ap.add_argument("--skip-bench", action="store_true", help="only the curves, not SPOT's wall-clock")
    ap.add_argument("--bench-prompts", type=int, default=10)
    ap.add_argument("--gen-length", type=int, default=128)
    ap.add_argument("--temperatures", default="0,1", help="of the bench, comma-separated")
    ap.add_argument("--budgets", default="auto,4,8,16", help="of the bench's exact mode (threshold mode: auto,8)")
    ap.add_argument("--out", default="gpu-cost", help="folder for the JSON and markdown results")
    a = ap.parse_args(argv)

    from spotviz.engine import set_threads
    from spotviz.registry import EMBEDDED, load_target
    from spotviz.targets.base import pick_device

    set_threads(1)
    device = pick_device(a.device)
    sizes = tuple(int(x) for x in a.sizes.split(","))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    names = [] if a.models == "none" else list(EMBEDDED) if a.models == "all" else a.models.split(",")
    rows, md = [], []

    def write():  # after every row, so that a run stopped early keeps what it measured
        (out / "gpu-cost-curve.json").write_text(json.dumps({"device": str(device), "curves": rows}, indent=1))
        (out / "gpu-cost-curve.md").write_text("\n".join([markdown(rows, sizes)] + md))

    print(f"device {device}" + (f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else ""))
    for name in names:
        target = load_target(name, device=str(device))
        rows.append(curve_row(target, name, sizes))
        write()
        del target
    if not a.no_sdar:
        for dt in a.dtypes.split(","):
            dtype = {"bf16": torch.bfloat16, "fp32": torch.float32, "fp16": torch.float16}[dt.strip()]
            target = sdar_shaped(device, dtype, a.sdar_layers, a.sdar_hidden, a.sdar_vocab)
            rows.append(curve_row(target, target.info.name, sizes))
            write()
            del target
            if device.type == "cuda":
                torch.cuda.empty_cache()
    if not a.skip_bench:
        from spotviz.eval.bench import run_bench, save, to_markdown

        for name in names:  # SPOT's wall-clock there: paired with the standard decoder, auto and fixed budgets
            budgets = tuple(b if b == "auto" else int(b) for b in a.budgets.split(","))
            temps = tuple(float(t) for t in a.temperatures.split(","))
            res = run_bench(model=name, n_prompts=a.bench_prompts, gen_length=a.gen_length, budgets=budgets,
                            other_budgets=("auto", 8), temperatures=temps, drafters=("spot",), transfer=False)
            save(res, out)
            md.append(to_markdown(res))
            write()
    write()
    print(markdown(rows, sizes))
    print(f"written to {out}/")
    return 0


if __name__ == "__main__":
    from spotviz.cli import exit_with, reporting_errors  # (bad input, a device or model that cannot be used: one line)

    exit_with(reporting_errors(main))

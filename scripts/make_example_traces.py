"""Make the example traces the app shows at once (assets/traces/), with the real engine and real models.

    python scripts/make_example_traces.py                     # every embedded model present (math-bd first)
    python scripts/make_example_traces.py --model runs/x/final --model-name shakespeare-bd@step900 --gen-length 64

For each example (a prompt and decoding settings) it decodes with the first drafter that works for the model
(in the example's order of preference, e.g. spot, then training-free), then with the standard decoder on the
same prompt and seed, checks that both outputs are identical, and writes both traces plus index.json (the list
the app's "Example traces" menu reads). Nothing is hand-made: rerun this whenever the models or drafters change.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# (slug, prompt, settings, drafters in order of preference), per training corpus.
# The math examples are problems math-bd answers right (checked with the standard decoder; it answers 98% of
# held-out problems right, README section Models): the first is GSM8K's first problem as it is, the one SPOT's own
# demo decodes, here in exact and in threshold mode; at T=1 the model samples its words (seeds 0-7 all
# write 20 + 30 = 50 with the counter-based noise of session 34). Threshold mode at tau 0.99: release 17's model
# is so sure of this answer that at
# tau 0.9 the threshold decoder writes it in 4 passes, one per block, and SPOT-Sets has nothing left to save; at 0.99
# it takes 6 and SPOT-Sets 4.
MATH_EXAMPLES = [
    ("natalia", "Natalia sold 48 clips in April and half as many clips in May. How many clips did Natalia sell in "
     "all?", {"mode": "exact", "temperature": 0.0, "seed": 0}, ["spot", "training-free"]),
    ("marbles-t1", "Sam has 20 marbles. He finds 30 more. How many marbles does Sam have now?",
     {"mode": "exact", "temperature": 1.0, "seed": 2}, ["spot", "training-free"]),
    ("clips-threshold", "Natalia sold 48 clips in April and half as many clips in May. How many clips did Natalia "
     "sell in all?", {"mode": "threshold", "threshold": 0.99, "temperature": 0.0, "seed": 2},
     ["spot-sets", "training-free"]),
]
PYTHON_EXAMPLES = [
    ("fibonacci", 'def fibonacci(n):\n    """Return the', {"mode": "exact", "temperature": 0.0, "seed": 0},
     ["spot", "training-free"]),
    ("stack-t1", "class Stack:\n    def __init__(self):\n", {"mode": "exact", "temperature": 1.0, "seed": 1},
     ["spot", "training-free"]),
    ("main-threshold", 'if __name__ == "__main__":\n', {"mode": "threshold", "threshold": 0.9, "temperature": 0.0,
                                                          "seed": 2}, ["spot-sets", "training-free"]),
]
EXAMPLES = [
    ("romeo", "ROMEO.\n", {"mode": "exact", "temperature": 0.0, "seed": 0}, ["spot", "training-free"]),
    ("hamlet-t1", "HAMLET.\nTo be", {"mode": "exact", "temperature": 1.0, "seed": 1}, ["spot", "training-free"]),
    ("lear-threshold", "KING LEAR.\n", {"mode": "threshold", "threshold": 0.5, "temperature": 0.0, "seed": 2},
     ["spot-sets", "training-free"]),
]


def decode_first(target, prompt: str, settings: dict, drafters: list[str], gen_length: int, budget: int):
    from spotviz.engine import decode
    from spotviz.samplers.config import DecodeConfig

    errors = []
    for d in drafters:
        try:
            cfg = DecodeConfig(gen_length=gen_length, drafter=d, budget=budget, **settings)
            return d, decode(target, prompt, cfg)
        except Exception as e:  # noqa: BLE001 - try the next drafter, say why
            errors.append(f"{d}: {e}")
    raise RuntimeError("no drafter worked: " + "; ".join(errors))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="append", help="model name or folder (repeatable; default: the embedded "
                                                     "models that exist)")
    ap.add_argument("--model-name", default=None, help="name recorded in the traces for a --model folder")
    ap.add_argument("--out", default=str(ROOT / "assets" / "traces"))
    ap.add_argument("--gen-length", type=int, default=64)
    ap.add_argument("--budget", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    ap.add_argument("--keep", action="store_true", help="keep the other traces in --out and in its index (default: replace them all)")
    a = ap.parse_args()

    import torch

    torch.set_num_threads(a.threads)
    from spotviz.registry import EMBEDDED, load_embedded, load_target
    from spotviz.views.headline import drafter_name, times
    from spotviz.views import identical_output

    models = a.model or [m for m, folder in EMBEDDED.items() if (folder / "model.safetensors").is_file()]
    if not models:
        print("no model available: train one (python -m spotviz train-target) or pass --model", file=sys.stderr)
        return 1
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if not a.keep:
        for old in out.glob("*.json"):
            old.unlink()
    index = []
    for model in models:
        if a.model_name and Path(model).is_dir():
            target = load_embedded(model, a.model_name)
        else:
            target = load_target(model)
        tag = re.sub(r"[^A-Za-z0-9_.-]+", "_", target.info.name)
        from spotviz.embedded.prompts import corpus_of

        corpus = corpus_of(target)
        examples = {"python": PYTHON_EXAMPLES, "math": MATH_EXAMPLES}.get(corpus, EXAMPLES)
        gen_length = max(a.gen_length, 96) if corpus == "math" else a.gen_length  # a 3-step solution is ~60 tokens
        # models after the first get their first example only (keeps the shipped folder small)
        examples = examples if model == models[0] else examples[:1]
        for slug, prompt, settings, drafters in examples:
            try:
                drafter, main_t = decode_first(target, prompt, settings, drafters, gen_length, a.budget)
            except RuntimeError as e:
                print(f"skip {slug} on {target.info.name}: {e}", file=sys.stderr)
                continue
            base_t = decode_first(target, prompt, settings, ["none"], gen_length, a.budget)[1]
            same = identical_output(main_t, base_t)
            if not same:
                print(f"WARNING: {slug}: {drafter} output differs from the standard decoder's", file=sys.stderr)
            f_main, f_base = f"{tag}-{slug}-{drafter}.json", f"{tag}-{slug}-standard.json"
            main_t.save(out / f_main)
            base_t.save(out / f_base)
            c, b = main_t.counters, base_t.counters
            mode = settings["mode"] + (f" tau={settings['threshold']:g}" if settings["mode"] == "threshold" else "")
            head = prompt.splitlines()[0].rstrip(':')
            head = head if len(head) <= 48 else head[:45].rsplit(" ", 1)[0] + " ..."
            # what tells the examples apart first (a menu cuts long titles), then the prompt's start
            title = (f"{target.info.name} · {drafter_name(drafter)}, {mode}, T={settings['temperature']:g}: "
                     f"{times(b.target_passes / max(c.target_passes, 1))}× fewer passes — {head}")  # (as the page rounds)
            index.append({"title": title, "main": f_main, "baseline": f_base})
            print(f"{title} ({c.target_passes} vs {b.target_passes} passes, identical output: {same}) -> {f_main}")
    if a.keep and (out / "index.json").is_file():  # the examples not re-recorded stay listed, in their place
        kept = json.loads((out / "index.json").read_text(encoding="utf-8")).get("examples", [])
        fresh = {e["main"]: e for e in index}
        merged = [fresh.pop(e["main"], e) for e in kept if (out / e["main"]).is_file()]
        index = merged + list(fresh.values())
    (out / "index.json").write_text(json.dumps({"examples": index}, indent=1, ensure_ascii=False) + "\n")
    total = sum(p.stat().st_size for p in out.glob("*.json"))
    print(f"wrote {len(index)} examples to {out} ({total / 1e3:.0f} kB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

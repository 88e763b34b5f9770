"""Choose an existing SPOT drafter's pointer mixture again, by its target passes on validation prompts (what
`train-drafter --mix-prompts` does after training), without training it again:

    python scripts/tune_mix.py math-bd assets/drafters/math-bd --out runs/drafters-retuned [--prompts 40] \
        [--budget 32] [--temperatures 0,1]

OUT receives a copy of the drafter folder whose spot/ drafter holds the chosen weights (drafter.json: the weights
and the passes per weight under validation.mix_passes); compare it with scripts/compare_drafters.py. The validation
prompts are a draw of the training distribution without the drafter's training prompts (training.json says how many
there were); the partner is the folder's calibrated template, as the drafter ships with it.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from spotviz.drafter.model import SpotDrafter  # noqa: E402
from spotviz.drafter.proposers import Calibrated  # noqa: E402
from spotviz.registry import load_target  # noqa: E402
from spotviz.training.drafter import (DrafterTrainConfig, mix_record, tune_mix_by_passes,  # noqa: E402
                                     validation_prompts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("drafters", metavar="DRAFTER_DIR", help="a folder holding spot/ and calibrated.json")
    ap.add_argument("--out", required=True, help="folder for the retuned copy (must not exist)")
    ap.add_argument("--prompts", type=int, default=40)
    ap.add_argument("--budget", type=int, default=32)
    ap.add_argument("--temperatures", default="0,1")
    ap.add_argument("--gen-length", type=int, default=128)
    a = ap.parse_args()
    src, out = Path(a.drafters), Path(a.out)
    if out.exists():
        ap.error(f"--out {out} exists; give a new folder")
    if not (src / "spot" / "drafter.safetensors").is_file() or not (src / "calibrated.json").is_file():
        ap.error(f"{src} has no spot/ drafter or no calibrated.json")
    torch.set_num_threads(1)
    target = load_target(a.model)
    trained = json.loads((src / "training.json").read_text()) if (src / "training.json").is_file() else {}
    counts = [v for v in (trained.get("n_prompts"), trained.get("threshold_prompts")) if v]
    n_pool = max(x for v in counts for x in (v.values() if isinstance(v, dict) else [v])) if counts else 0
    cfg = DrafterTrainConfig(model=a.model, out=str(out), gen_length=a.gen_length)
    prompts = validation_prompts(cfg, target, a.prompts, n_pool)
    model = SpotDrafter.load(src / "spot")
    temps = [float(t) for t in a.temperatures.split(",")]
    before = {t: float(torch.sigmoid(model.mix[0] + model.mix[1] * t).detach()) for t in (0.0, 1.0)}
    print(f"{len(prompts)} validation prompts (the drafter's {n_pool} training prompts left out); mixture now "
          + ", ".join(f"T={t:g}: {w:.3f}" for t, w in before.items()))
    chosen, table = tune_mix_by_passes(model, target, prompts, temps, partner=Calibrated.load(src / "calibrated.json"),
                                       budget=a.budget, gen_length=a.gen_length, prefer=before,
                                       keep={t: w for t, w in before.items() if t not in temps})
    shutil.copytree(src, out)
    meta = json.loads((src / "spot" / "drafter.json").read_text())
    validation = meta.get("validation", {}) | mix_record(chosen, table, len(prompts), a.budget)
    model.save(out / "spot", extra={"validation": validation, "calibrated_from": meta.get("calibrated_from", "")})
    if isinstance(trained.get("spot"), dict):  # the folder's training record says the same
        trained["spot"] = trained["spot"] | mix_record(chosen, table, len(prompts), a.budget)
        (out / "training.json").write_text(json.dumps(trained, indent=1))
    print(f"chosen {chosen}; written to {out}")


if __name__ == "__main__":
    main()

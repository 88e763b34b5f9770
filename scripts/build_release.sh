#!/usr/bin/env bash
# Rebuild everything shipped under assets/ from trained target models (runs/<name>/final), in order:
# models -> drafters (SPOT, SPOT-Sets, calibrated template) -> transfer calibration -> benchmarks -> example traces.
#
#   bash scripts/build_release.sh [N_PROMPTS_BD] [N_PROMPTS_MDLM] [PRUNE]
#
# Drafter training and calibration run two jobs side by side (one per embedded model, one thread each). The
# block model's benchmark, whose wall-clock ratios the README quotes, runs alone with every core. The benchmark
# settings are the ones quoted in the README (sized for a 2-core CPU; raise --n-prompts and budgets elsewhere).
set -euo pipefail
cd "$(dirname "$0")/.."
n_bd=${1:-80}
n_mdlm=${2:-40}
prune=${3:-0.2}
models=(shakespeare-bd shakespeare-mdlm)
other() { [ "$1" = shakespeare-bd ] && echo shakespeare-mdlm || echo shakespeare-bd; }
n_prompts() { [ "$1" = shakespeare-bd ] && echo "$n_bd" || echo "$n_mdlm"; }

for m in "${models[@]}"; do
  rm -rf "assets/models/$m" && mkdir -p assets/models
  cp -r "runs/$m/final" "assets/models/$m"
done
mkdir -p runs/release
for m in "${models[@]}"; do
  OMP_NUM_THREADS=1 python -m spotviz train-drafter --model "$m" --prompts "$(n_prompts "$m")" \
    > "runs/release/drafter-$m.log" 2>&1 &
done
wait
for m in "${models[@]}"; do
  o=$(other "$m")
  OMP_NUM_THREADS=1 python -m spotviz train-drafter --model "$m" --prompts 6 --calibrate "assets/drafters/$o" \
    --out "assets/drafters/$m/from-$o" > "runs/release/calibrate-$m.log" 2>&1 &
done
wait
OMP_NUM_THREADS=2 python -m spotviz bench --model shakespeare-mdlm --n-prompts 2 --gen-length 64 --budgets 4,16 \
  --other-budgets 16 --out runs/bench > runs/release/bench-shakespeare-mdlm.log 2>&1
OMP_NUM_THREADS=2 python -m spotviz bench --model shakespeare-bd --n-prompts 4 --gen-length 128 \
  --budgets 2,4,8,16,32 --other-budgets 4,32 --prune "$prune" --out runs/bench \
  > runs/release/bench-shakespeare-bd.log 2>&1
cp runs/bench/bench-*.md runs/bench/bench-*.json docs/
python scripts/make_example_traces.py
echo "release built"

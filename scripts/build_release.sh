#!/usr/bin/env bash
# Rebuild everything shipped under assets/ from trained target models (runs/<name>/final), in order:
# models -> drafters (SPOT, SPOT-Sets, calibrated template) -> transfer calibration -> benchmark -> example traces.
#
#   bash scripts/build_release.sh [N_DRAFTER_PROMPTS] [N_BENCH_PROMPTS]
#
# Two jobs run side by side (one per embedded model), each on one thread.
set -euo pipefail
cd "$(dirname "$0")/.."
n_train=${1:-40}
n_bench=${2:-8}
export OMP_NUM_THREADS=1
models=(shakespeare-bd shakespeare-mdlm)
other() { [ "$1" = shakespeare-bd ] && echo shakespeare-mdlm || echo shakespeare-bd; }

for m in "${models[@]}"; do
  rm -rf "assets/models/$m" && mkdir -p assets/models
  cp -r "runs/$m/final" "assets/models/$m"
done
mkdir -p runs/release
for m in "${models[@]}"; do
  python -m spotviz train-drafter --model "$m" --prompts "$n_train" > "runs/release/drafter-$m.log" 2>&1 &
done
wait
for m in "${models[@]}"; do
  o=$(other "$m")
  python -m spotviz train-drafter --model "$m" --prompts 10 --calibrate "assets/drafters/$o" \
    --out "assets/drafters/$m/from-$o" > "runs/release/calibrate-$m.log" 2>&1 &
done
wait
for m in "${models[@]}"; do
  python -m spotviz bench --model "$m" --n-prompts "$n_bench" --budgets 4,8,16,32,64 --out runs/bench \
    > "runs/release/bench-$m.log" 2>&1 &
done
wait
cp runs/bench/bench-*.md runs/bench/bench-*.json docs/ 2>/dev/null || true
if [ -f scripts/make_example_traces.py ]; then python scripts/make_example_traces.py; fi
echo "release built"

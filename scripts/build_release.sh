#!/usr/bin/env bash
# Rebuild everything shipped under assets/ from trained target models (runs/<name>/final), in order:
# models -> drafters (SPOT, SPOT-Sets, calibrated template) -> transfer calibration -> benchmark -> example traces.
#
#   bash scripts/build_release.sh [N_DRAFTER_PROMPTS]
#
# Two jobs run side by side (one per embedded model), each on one thread. The benchmark settings are the ones
# quoted in the README (sized for a 2-core CPU; raise --n-prompts and the budgets on a bigger machine).
set -euo pipefail
cd "$(dirname "$0")/.."
n_train=${1:-40}
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
  python -m spotviz train-drafter --model "$m" --prompts 6 --calibrate "assets/drafters/$o" \
    --out "assets/drafters/$m/from-$o" > "runs/release/calibrate-$m.log" 2>&1 &
done
wait
python -m spotviz bench --model shakespeare-bd --n-prompts 3 --gen-length 128 --budgets 2,4,8,16,32 \
  --other-budgets 8,32 --out runs/bench > runs/release/bench-shakespeare-bd.log 2>&1 &
python -m spotviz bench --model shakespeare-mdlm --n-prompts 2 --gen-length 64 --budgets 4,16 \
  --other-budgets 16 --out runs/bench > runs/release/bench-shakespeare-mdlm.log 2>&1 &
wait
cp runs/bench/bench-*.md runs/bench/bench-*.json docs/ 2>/dev/null || true
if [ -f scripts/make_example_traces.py ]; then python scripts/make_example_traces.py; fi
echo "release built"

#!/usr/bin/env bash
# Rebuild what is shipped under assets/ for the embedded models trained in runs/<name>/final, in order:
# models -> drafters (SPOT, SPOT-Sets, calibrated template) -> transfer calibrations -> benchmarks -> example traces.
#
#   bash scripts/build_release.sh [MODEL ...]        # default: math-bd python-bd shakespeare-bd shakespeare-mdlm
#
# A model whose runs/<name>/final is missing keeps its shipped weights (its drafters are still retrained).
# Environment: N_PROMPTS (drafter training prompts, default 60; math-bd: 240, its problems are short; SPOT_PROMPTS and
# SETS_PROMPTS for math-bd's SPOT and SPOT-Sets drafters, default 600 and 2400), BENCH_PROMPTS
# (default 40 for math-bd, 20 for python-bd, 4 otherwise), BUDGETS (exact mode, first temperature: default 2,4,8,16,32,64), OTHER_BUDGETS (default 4,16,32).
# Drafter jobs run side by side (one thread each); each benchmark runs alone, one torch thread, so its paired
# wall-clock ratios are measured on a quiet core.
set -euo pipefail
cd "$(dirname "$0")/.."
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(math-bd python-bd shakespeare-bd shakespeare-mdlm)
n_prompts=${N_PROMPTS:-60}
budgets=${BUDGETS:-2,4,8,16,32,64}
other_budgets=${OTHER_BUDGETS:-4,16,32}
# transfer pairs: the drafter of the first model calibrated for the second
# shipped transfer drafters (assets/ stays small): math-bd's to and from the two other block models
pairs=("python-bd math-bd" "shakespeare-bd math-bd" "math-bd python-bd" "math-bd shakespeare-bd")
mkdir -p runs/release

for m in "${models[@]}"; do
  if [ -d "runs/$m/final" ]; then
    rm -rf "assets/models/$m" && mkdir -p assets/models
    cp -r "runs/$m/final" "assets/models/$m"
  fi
done
# math-bd: SPOT-Sets learns from threshold trajectories of SETS_PROMPTS (default 2400) problems (cheap to collect:
# several commits per pass; 960 instead of 240 raised its set accuracy from 65% to 77%), SPOT from SPOT_PROMPTS (600)
for m in "${models[@]}"; do
  n=$([ "$m" = math-bd ] && echo "${N_PROMPTS:-240}" || echo "$n_prompts")
  sets=$([ "$m" = math-bd ] && echo "${SETS_PROMPTS:-2400}" || echo 0)
  OMP_NUM_THREADS=1 python -m spotviz train-drafter --model "$m" --n-prompts "$n" --threshold-prompts "$sets" \
    --threads 1 --out "assets/drafters/$m" --force > "runs/release/drafter-$m.log" 2>&1 &
done
wait
# python-bd's and math-bd's SPOT drafters read the top-32 probabilities (measured better on python-bd:
# docs/drafter-topk-python-bd.md); their SPOT-Sets drafters keep the top 8
for m in python-bd math-bd; do
  case " ${models[*]} " in *" $m "*)
    n=$([ "$m" = math-bd ] && echo "${SPOT_PROMPTS:-600}" || echo "$n_prompts")
    OMP_NUM_THREADS=1 python -m spotviz train-drafter --model "$m" --n-prompts "$n" --threshold-prompts 24 --threads 1 --topk 32 \
      --out "runs/release/$m-top32" > "runs/release/drafter-$m-top32.log" 2>&1
    cp "runs/release/$m-top32/spot/"* "assets/drafters/$m/spot/" ;;
  esac
done
for pair in "${pairs[@]}"; do
  read -r src dst <<< "$pair"
  case " ${models[*]} " in *" $src "*|*" $dst "*) ;; *) continue ;; esac
  OMP_NUM_THREADS=1 python -m spotviz train-drafter --model "$dst" --n-prompts 6 --threads 1 \
    --calibrate "assets/drafters/$src" --out "assets/drafters/$dst/from-$src" --force > "runs/release/calibrate-$dst-from-$src.log" 2>&1 &
done
wait
for m in "${models[@]}"; do
  n=${BENCH_PROMPTS:-$(case "$m" in math-bd) echo 40 ;; python-bd) echo 20 ;; *) echo 4 ;; esac)}
  python -m spotviz bench --model "$m" --n-prompts "$n" --gen-length 128 --budgets "$budgets,auto" \
    --other-budgets "$other_budgets,auto" --threads 1 --out runs/bench > "runs/release/bench-$m.log" 2>&1
  cp "runs/bench/bench-$m.md" "runs/bench/bench-$m.json" docs/
done
python scripts/make_example_traces.py
echo "release built"

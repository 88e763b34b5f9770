#!/usr/bin/env bash
# Rebuild what is shipped under assets/ for the embedded models trained in runs/<name>/final, in order:
# models -> drafters (SPOT, SPOT-Sets, calibrated template) -> transfer calibrations -> benchmarks -> example traces.
#
#   bash scripts/build_release.sh [MODEL ...]        # default: python-bd shakespeare-bd shakespeare-mdlm
#
# A model whose runs/<name>/final is missing keeps its shipped weights (its drafters are still retrained).
# Environment: N_PROMPTS (drafter training prompts, default 60), BENCH_PROMPTS (default 20 for python-bd, 4
# otherwise), BUDGETS (exact mode, first temperature: default 2,4,8,16,32,64), OTHER_BUDGETS (default 4,16,32).
# Drafter jobs run side by side (one thread each); each benchmark runs alone, one torch thread, so its paired
# wall-clock ratios are measured on a quiet core.
set -euo pipefail
cd "$(dirname "$0")/.."
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(python-bd shakespeare-bd shakespeare-mdlm)
n_prompts=${N_PROMPTS:-60}
budgets=${BUDGETS:-2,4,8,16,32,64}
other_budgets=${OTHER_BUDGETS:-4,16,32}
# transfer pairs: the drafter of the first model calibrated for the second
pairs=("shakespeare-bd python-bd" "python-bd shakespeare-bd")  # shipped transfer drafters (assets/ stays small)
mkdir -p runs/release

for m in "${models[@]}"; do
  if [ -d "runs/$m/final" ]; then
    rm -rf "assets/models/$m" && mkdir -p assets/models
    cp -r "runs/$m/final" "assets/models/$m"
  fi
done
for m in "${models[@]}"; do
  OMP_NUM_THREADS=1 python -m spotviz train-drafter --model "$m" --n-prompts "$n_prompts" --threads 1 \
    --out "assets/drafters/$m" --force > "runs/release/drafter-$m.log" 2>&1 &
done
wait
# python-bd's SPOT drafter reads the top-32 probabilities (measured better there: docs/drafter-topk-python-bd.md);
# its SPOT-Sets drafter keeps the top 8
case " ${models[*]} " in *" python-bd "*)
  OMP_NUM_THREADS=1 python -m spotviz train-drafter --model python-bd --n-prompts "$n_prompts" --threads 1 --topk 32 \
    --out runs/release/python-bd-top32 > runs/release/drafter-python-bd-top32.log 2>&1
  cp runs/release/python-bd-top32/spot/* assets/drafters/python-bd/spot/ ;;
esac
for pair in "${pairs[@]}"; do
  read -r src dst <<< "$pair"
  case " ${models[*]} " in *" $src "*|*" $dst "*) ;; *) continue ;; esac
  OMP_NUM_THREADS=1 python -m spotviz train-drafter --model "$dst" --n-prompts 6 --threads 1 \
    --calibrate "assets/drafters/$src" --out "assets/drafters/$dst/from-$src" --force > "runs/release/calibrate-$dst-from-$src.log" 2>&1 &
done
wait
for m in "${models[@]}"; do
  n=${BENCH_PROMPTS:-$([ "$m" = python-bd ] && echo 20 || echo 4)}
  python -m spotviz bench --model "$m" --n-prompts "$n" --gen-length 128 --budgets "$budgets,auto" \
    --other-budgets "$other_budgets,auto" --threads 1 --out runs/bench > "runs/release/bench-$m.log" 2>&1
  cp "runs/bench/bench-$m.md" "runs/bench/bench-$m.json" docs/
done
python scripts/make_example_traces.py
echo "release built"

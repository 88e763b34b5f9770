#!/usr/bin/env bash
# Rebuild what is shipped for the embedded models trained in runs/<name>/final, in order:
# models -> drafters (SPOT, SPOT-Sets, calibrated template) -> answer accuracy (math-bd) -> transfer calibrations
# -> example traces -> benchmarks (one per model and temperature) -> docs/.
#
#   bash scripts/build_release.sh [MODEL ...]        # default: math-bd python-bd shakespeare-bd shakespeare-mdlm
#   DRY_RUN=1 bash scripts/build_release.sh math-bd  # print the jobs, run nothing
#   FROM=accuracy bash scripts/build_release.sh math-bd  # resume after the drafters (their runs in runs/release/)
#
# A model whose runs/<name>/final is missing keeps its shipped weights (its drafters are still retrained).
# Jobs run side by side, one torch thread each, at most JOBS at a time (default: this machine's cores); a bench
# gets a core to itself only if JOBS=1, so on a 2-core machine its wall-clock ratios are paired per prompt but
# noisier than on a quiet core (the pass counts are exact either way).
# Drafters: math-bd's and python-bd's SPOT drafter reads the root's top-32 probabilities (docs/drafter-topk-python-bd.md)
# and is trained on SPOT_PROMPTS exact trajectories (math-bd 2400, else 60), its pointer mixture chosen by target
# passes on 40 validation prompts (train-drafter --mix-prompts); the calibrated template's exact-mode ranks come from
# the same job (the drafter's partner). Their SPOT-Sets drafter (top 8) and the template's threshold fits come from a
# second job, math-bd with SETS_PROMPTS threshold trajectories (2400: cheap to collect, several commits per pass; 960
# instead of 240 raised its set accuracy from 65% to 77%) and 240 exact ones.
# Benchmarks: BENCH_PROMPTS (default 40 for math-bd, 20 for python-bd, 4 otherwise), BUDGETS (exact mode, default
# auto,2,4,8,16,32,64), OTHER_BUDGETS (threshold mode, default auto,4,16,32), TEMPERATURES (default 0 1); written to
# docs/bench-<model>-T<t>.{md,json}. Logs and intermediate drafters: runs/release/.
# DRAFTER_JOBS (default 1): worker processes each drafter job collects its trajectories with (train-drafter --jobs):
# on a many-core machine (e.g. 16 cores, 2 math-bd drafter jobs) DRAFTER_JOBS=7 collects ~7x sooner.
set -euo pipefail
cd "$(dirname "$0")/.."
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(math-bd python-bd shakespeare-bd shakespeare-mdlm)
jobs_max=${JOBS:-$(nproc)}
budgets=${BUDGETS:-auto,2,4,8,16,32,64}
other_budgets=${OTHER_BUDGETS:-auto,4,16,32}
temperatures=${TEMPERATURES:-0 1}
R=runs/release
# shipped transfer drafters (assets/ stays small): math-bd's to and from the two other block models
pairs=("python-bd math-bd" "shakespeare-bd math-bd" "math-bd python-bd" "math-bd shakespeare-bd")
export OMP_NUM_THREADS=1
mkdir -p "$R"
has() { case " ${models[*]} " in *" $1 "*) return 0 ;; esac; return 1; }

pids=()
job() {  # job LOG CMD...: run in the background, at most jobs_max at a time
  local log=$1; shift
  if [ -n "${DRY_RUN:-}" ]; then echo "$* > $log"; return; fi
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
  "$@" > "$log" 2>&1 &
  pids+=("$!:$log")
}
finish() {  # wait for every job started; stop with its log's name if one failed
  local p failed=0
  for p in "${pids[@]}"; do wait "${p%%:*}" || { echo "failed: see ${p#*:}" >&2; failed=1; }; done
  pids=()
  [ "$failed" = 0 ] || exit 1
}

for m in "${models[@]}"; do
  if [ -d "runs/$m/final" ] && [ -z "${DRY_RUN:-}" ]; then
    rm -rf "assets/models/$m" && mkdir -p assets/models
    cp -r "runs/$m/final" "assets/models/$m"
  fi
done

# 1. drafters (FROM=accuracy: keep the ones trained in $R and go on from their assembly)
for m in "${models[@]}"; do
  [ "${FROM:-}" != accuracy ] || break
  td="python -m spotviz train-drafter --model $m --threads 1 --jobs ${DRAFTER_JOBS:-1}"
  case $m in
    math-bd|python-bd)
      spot=${SPOT_PROMPTS:-$([ "$m" = math-bd ] && echo 2400 || echo 60)}
      sets=$([ "$m" = math-bd ] && echo "${SETS_PROMPTS:-2400}" || echo 0)  # (0: as --n-prompts)
      exact=$([ "$m" = math-bd ] && echo 240 || echo 60)
      job "$R/drafter-$m-spot.log" $td --n-prompts "$spot" --threshold-prompts 24 --topk 32 --out "$R/$m-spot"
      job "$R/drafter-$m-sets.log" $td --n-prompts "$exact" --threshold-prompts "$sets" --topk 8 --out "$R/$m-sets" ;;
    *)
      job "$R/drafter-$m.log" $td --n-prompts 60 --threshold-prompts 0 --out "assets/drafters/$m" --force ;;
  esac
done
finish
for m in math-bd python-bd; do  # assemble: spot/ from the first job, spot-sets/ and the template from the second
  has "$m" || continue
  [ -z "${DRY_RUN:-}" ] || { echo "assemble assets/drafters/$m from $R/$m-spot and $R/$m-sets"; continue; }
  d=assets/drafters/$m
  rm -rf "$d/spot" "$d/spot-sets" && mkdir -p "$d"
  cp -r "$R/$m-spot/spot" "$d/spot" && cp -r "$R/$m-sets/spot-sets" "$d/spot-sets"
  # the template: its exact-mode ranks from the first job (the SPOT drafter's partner there, against which its
  # mixture was chosen), its threshold-mode fits from the second (which collected the threshold trajectories)
  python - "$R/$m-spot/calibrated.json" "$R/$m-sets/calibrated.json" "$d/calibrated.json" <<'PY'
import json, sys
exact, sets = (json.load(open(f)) for f in sys.argv[1:3])
json.dump({"rank_probs": exact["rank_probs"], "set_params": sets["set_params"]}, open(sys.argv[3], "w"), indent=1)
PY
  python - "$R/$m-spot/training.json" "$R/$m-sets/training.json" "$d/training.json" <<'PY'
import json, sys
spot, sets = (json.load(open(f)) for f in sys.argv[1:3])
out = dict(sets)
# (each job's training.json counts its exact prompts in n_prompts, its threshold prompts in threshold_prompts)
out["n_prompts"] = {"spot": spot["n_prompts"], "spot-sets": sets["threshold_prompts"] or sets["n_prompts"],
                    "calibrated": spot["n_prompts"]}
out["topk"] = {"spot": spot["topk"]["spot"], "spot-sets": sets["topk"]["spot-sets"]}
out["spot"] = spot["spot"]
out["n_params"] = {"spot": spot["n_params"], "spot-sets": sets["n_params"]}  # (each job counts its own inputs)
out["note"] = (f"spot: top-{out['topk']['spot']} inputs, {out['n_prompts']['spot']} prompts; spot-sets: top-"
               f"{out['topk']['spot-sets']} inputs, threshold trajectories of {out['n_prompts']['spot-sets']} prompts; "
               "the calibrated template's exact ranks from the first job, its threshold fits from the second "
               "(scripts/build_release.sh).")
json.dump(out, open(sys.argv[3], "w"), indent=1)
PY
done

# 2. answer accuracy (math-bd: the tables are in the log, every output in docs/accuracy-math-bd.json) and the
# transfer calibrations
if has math-bd; then
  job "$R/accuracy-math-bd.log" python -m spotviz accuracy --model math-bd --per-family 8 --threads 1 \
    --out docs/accuracy-math-bd.json
fi
for pair in "${pairs[@]}"; do
  read -r src dst <<< "$pair"
  has "$src" || has "$dst" || continue
  job "$R/calibrate-$dst-from-$src.log" python -m spotviz train-drafter --model "$dst" --n-prompts 6 --threads 1 \
    --calibrate "assets/drafters/$src" --out "assets/drafters/$dst/from-$src" --force
done
finish

# 3. example traces (every model present), then the benchmarks
if [ -n "${DRY_RUN:-}" ]; then echo "python scripts/make_example_traces.py"; else
  python scripts/make_example_traces.py > "$R/examples.log" 2>&1; fi
for m in "${models[@]}"; do
  n=${BENCH_PROMPTS:-$(case "$m" in math-bd) echo 40 ;; python-bd) echo 20 ;; *) echo 4 ;; esac)}
  for t in $temperatures; do
    job "$R/bench-$m-T$t.log" python -m spotviz bench --model "$m" --n-prompts "$n" --gen-length 128 --threads 1 \
      --budgets "$budgets" --other-budgets "$other_budgets" --temperatures "$t" --out "$R/bench-$m-T$t"
  done
done
finish
[ -z "${DRY_RUN:-}" ] || exit 0
for m in "${models[@]}"; do
  for t in $temperatures; do
    cp "$R/bench-$m-T$t/bench-$m.md" "docs/bench-$m-T$t.md"
    cp "$R/bench-$m-T$t/bench-$m.json" "docs/bench-$m-T$t.json"
  done
done
echo "release built: the figures in README.md and docs/*.md that quote these benchmarks are yours to update"

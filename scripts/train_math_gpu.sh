#!/usr/bin/env bash
# Continue math-bd's training on one CUDA GPU: two variants side by side (a 5M-parameter model leaves an H200
# mostly idle, so two runs cost about what one does), each from the shipped model, on 2M freshly drawn problems.
#
#   bash scripts/train_math_gpu.sh smoke          # 3 steps on cuda (fails fast on a broken setup)
#   bash scripts/train_math_gpu.sh prepare        # draw + tokenize both corpora (CPU only: overlap it with GPU work)
#   bash scripts/train_math_gpu.sh train 4.5      # train both for 4.5 minutes each, in parallel
#   bash scripts/train_math_gpu.sh pack DEST      # DEST/A.tgz, DEST/B.tgz (the exported folders) + the logs
#
# Runs in $RUNS (default /tmp/math-gpu). Variant A rewords 60% of the training questions (as release 16 did),
# B 85%; everything else is release 16's recipe with an 8x larger batch and a higher learning rate. Evaluate
# the two here with `python -m spotviz accuracy --model DIR/final` and keep the better one.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-/tmp/math-gpu}
PY=${PYTHON:-python3}
mkdir -p "$RUNS"
BASE=(-m spotviz train-target --corpus math --init-from assets/models/math-bd --seq-len 128 --context 256
      --drills 0.4 --result-weight 4 --result-focus 0.5 --small-numbers 0.2 --batch-size 32 --seed 11
      --threads 1 --skip-eval --device "${DEVICE:-cuda}")
RUN=(--problems 2000000 --data-workers 7 --batch-tokens 32768 --lr 1e-3 --eval-every 500 --checkpoint-every 5000)
declare -A REWORD=([A]=0.6 [B]=0.85)

case "${1:-}" in
  smoke)
    "$PY" "${BASE[@]}" --out "$RUNS/smoke" --problems 3000 --data-workers 2 --max-steps 3 --eval-every 2 \
      --batch-tokens 32768 --reword 0.6 ;;
  prepare)
    for v in A B; do "$PY" "${BASE[@]}" --out "$RUNS/$v" "${RUN[@]}" --reword "${REWORD[$v]}" --prepare-only \
      >>"$RUNS/$v.log" 2>&1 & done
    wait ;;
  train)
    for v in A B; do "$PY" "${BASE[@]}" --out "$RUNS/$v" "${RUN[@]}" --reword "${REWORD[$v]}" --minutes "${2:?minutes}" \
      >>"$RUNS/$v.log" 2>&1 & done
    wait ;;
  pack)
    mkdir -p "${2:?destination}"
    for v in A B; do
      [ -d "$RUNS/$v/final" ] && tar czf "$2/$v.tgz" -C "$RUNS/$v" final
      tail -c 20000 "$RUNS/$v.log" >"$2/$v.log" || true
    done ;;
  *) echo "usage: $0 smoke | prepare | train MINUTES | pack DEST" >&2; exit 2 ;;
esac

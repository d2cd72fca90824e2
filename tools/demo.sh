#!/usr/bin/env bash
# demo.sh: README command (1). Fine-tunes a model on SST-2 with Sparse-MeZO and shows the result.
#   The model: SmolLM2-135M-Instruct (weights/fetch_smollm2.sh fetches it once; 98 MB). It
#   prints SmolLM2's zero-shot SST-2 dev accuracy, fine-tunes it with S-MeZO into runs/demo with
#   the dev accuracy every EVERY steps, and prints that curve beside the zero-shot number
#   (runs/demo/plot.svg draws it).
#   With a GPU (a CUDA build of smezo that can open a device: `smezo info --device cuda`
#   succeeds): 500 steps on the GPU (sparsity 0.8, lr 1e-5, f32 storage so small updates are
#   not rounded away; batch 16, dev accuracy on 500 examples every 100 steps; not yet run on a
#   GPU, the settings are tools/claim/zo_grid.py's S-MeZO ones).
#   Without one, on the CPU: the settings measured to learn on 2 cores (RESULTS.md): see CPU_*
#   below; about 17 minutes there (2026-11-28, 0.41 steps/s with the evaluations).
#   If SmolLM2 cannot be fetched (no network): the bundled stories260K, 200 steps, into
#   runs/demo (what README (1) ran before).
#
#   tools/demo.sh [--dry-run] [--out DIR]
# --dry-run prints the commands instead of running them. Environment: SMEZO (the binary,
# default build/smezo), SMEZO_DEMO_DEVICE=auto|cpu|cuda (default auto), SMEZO_DEMO_MODEL=
# auto|smollm2|stories260K (default auto: SmolLM2 when it can be fetched), SMEZO_DEMO_STEPS (a
# shorter run, for tests), SMEZO_DEMO_EXAMPLES (fewer dev and test examples, for tests),
# SMEZO_DEMO_FETCH (the fetch command, for tests). Exits non-zero when a step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
SMEZO=${SMEZO:-build/smezo}
DEVICE=${SMEZO_DEMO_DEVICE:-auto}
OUT=runs/demo
DRY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY=1 ;;
    --out) OUT=$2; shift ;;
    *) echo "demo.sh: error: unknown argument '$1' (usage: tools/demo.sh [--dry-run] [--out DIR])" >&2; exit 2 ;;
  esac
  shift
done

run() {
  echo "+ $*"
  if [ "$DRY" = 0 ]; then "$@"; fi
}

if [ "$DEVICE" = auto ]; then
  DEVICE=cpu
  if "$SMEZO" info --device cuda >/dev/null 2>&1; then DEVICE=cuda; fi
fi
echo "demo: device $DEVICE ($([ "$DEVICE" = cuda ] && echo "a GPU is visible to this CUDA build" || echo "no GPU, or a build without CUDA: the CPU"))"

MODEL=${SMEZO_DEMO_MODEL:-auto}
case "$MODEL" in
  auto|smollm2)
    if run ${SMEZO_DEMO_FETCH:-weights/fetch_smollm2.sh}; then MODEL=smollm2
    elif [ "$MODEL" = smollm2 ]; then echo "demo: error: SmolLM2 could not be fetched (above)" >&2; exit 1
    else echo "demo: SmolLM2 could not be fetched (above): the bundled stories260K instead"; MODEL=stories260K; fi ;;
  stories260K) ;;
  *) echo "demo.sh: error: SMEZO_DEMO_MODEL=$MODEL: auto, smollm2 or stories260K" >&2; exit 2 ;;
esac

if [ "$MODEL" = stories260K ]; then
  run "$SMEZO" train --task sst2 --steps "${SMEZO_DEMO_STEPS:-200}" --batch 8 --max-len 64 --lr 2e-3 \
    --eval-every 50 --dev-examples "${SMEZO_DEMO_EXAMPLES:-100}" --test-examples "${SMEZO_DEMO_EXAMPLES:-200}" \
    --device "$DEVICE" --out "$OUT"
  exit 0
fi

# SmolLM2. CPU_*: measured on the 2-core VM (RESULTS.md): dev accuracy 0.606 zero-shot -> 0.710 after
# 400 steps (6 min 56 s on 2026-11-26, on a VM with AVX-512; 15 to 17 min in a fresh clone on 2026-11-28).
CPU_STEPS=400 CPU_EVERY=50 CPU_LR=3e-5 CPU_SPARSITY=0.75 CPU_DEV=500 CPU_TEST=200
if [ "$DEVICE" = cuda ]; then
  STEPS=500 EVERY=100 LR=1e-5 SPARSITY=0.8 DEV=500 TEST=1000 DTYPE=(--dtype f32)
else
  STEPS=$CPU_STEPS EVERY=$CPU_EVERY LR=$CPU_LR SPARSITY=$CPU_SPARSITY DEV=$CPU_DEV TEST=$CPU_TEST DTYPE=()
fi
STEPS=${SMEZO_DEMO_STEPS:-$STEPS}
DEV=${SMEZO_DEMO_EXAMPLES:-$DEV}
TEST=${SMEZO_DEMO_EXAMPLES:-$TEST}
GGUF=weights/SmolLM2-135M-Instruct.Q4_1.gguf
run "$SMEZO" eval --model "$GGUF" --device "$DEVICE" "${DTYPE[@]}" --task sst2 --mode zero-shot --split dev \
  --dev-examples "$DEV" --max-len 128 --out "$OUT.zero-shot.json"
run "$SMEZO" train --model "$GGUF" --device "$DEVICE" "${DTYPE[@]}" --task sst2 --method smezo --sparsity "$SPARSITY" \
  --lr "$LR" --steps "$STEPS" --batch 16 --max-len 128 --eval-every "$EVERY" --dev-examples "$DEV" \
  --test-examples "$TEST" --out "$OUT"
if [ "$DRY" = 0 ]; then
  zero=$(grep -o '"accuracy": *[0-9.]*' "$OUT.zero-shot.json" | head -1 | grep -o '[0-9.]*$')
  echo "demo: SmolLM2-135M, SST-2 dev accuracy ($DEV examples), zero-shot: $zero"
  grep '"dev_acc"' "$OUT/metrics.jsonl" |
    sed -E 's/.*"dev_acc": *([0-9.eE+-]+).*"step": *([0-9]+).*/demo: SST-2 dev accuracy after step \2: \1/'
  echo "demo: the curve is drawn in $OUT/plot.svg; the run's numbers are in $OUT/summary.json"
fi

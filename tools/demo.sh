#!/usr/bin/env bash
# demo.sh: README command (1). Fine-tunes a model on SST-2 with Sparse-MeZO and shows the result.
#   With a GPU (a CUDA build of smezo that can open a device: `smezo info --device cuda`
#   succeeds): fetches SmolLM2-135M-Instruct (weights/fetch_smollm2.sh), measures its
#   zero-shot accuracy on the 500 dev examples, fine-tunes it on the GPU for 500 steps
#   (S-MeZO, sparsity 0.8, lr 1e-5, f32 storage so small updates are not rounded away; batch
#   16, dev accuracy every 100 steps) into runs/demo, and prints the dev accuracy curve beside
#   the zero-shot one. (Not yet run on a GPU: the settings are tools/zo_grid.py's S-MeZO ones.)
#   Without one: today's CPU default, exactly the command README (1) always ran: the bundled
#   stories260K, 200 steps, into runs/demo.
#
#   tools/demo.sh [--dry-run] [--out DIR]
# --dry-run prints the commands instead of running them. Environment: SMEZO (the binary,
# default build/smezo), SMEZO_DEMO_DEVICE=auto|cpu|cuda (default auto), SMEZO_DEMO_STEPS (a
# shorter run, for tests), SMEZO_DEMO_EXAMPLES (fewer dev and test examples, for tests). Exits
# non-zero when a step fails.
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
echo "demo: device $DEVICE ($([ "$DEVICE" = cuda ] && echo "a GPU is visible to this CUDA build" || echo "no GPU, or a build without CUDA: the CPU default"))"

if [ "$DEVICE" = cpu ]; then
  run "$SMEZO" train --task sst2 --steps "${SMEZO_DEMO_STEPS:-200}" --batch 8 --max-len 64 --lr 2e-3 \
    --eval-every 50 --dev-examples "${SMEZO_DEMO_EXAMPLES:-100}" --test-examples "${SMEZO_DEMO_EXAMPLES:-200}" --out "$OUT"
  exit 0
fi

GGUF=weights/SmolLM2-135M-Instruct.Q4_1.gguf
run weights/fetch_smollm2.sh
run "$SMEZO" eval --model "$GGUF" --device cuda --dtype f32 --task sst2 --mode zero-shot --split dev --dev-examples "${SMEZO_DEMO_EXAMPLES:-500}" \
  --max-len 128 --out "$OUT.zero-shot.json"
run "$SMEZO" train --model "$GGUF" --device cuda --dtype f32 --task sst2 --method smezo --sparsity 0.8 --lr 1e-5 \
  --steps "${SMEZO_DEMO_STEPS:-500}" --batch 16 --max-len 128 --eval-every 100 --dev-examples "${SMEZO_DEMO_EXAMPLES:-500}" \
  --test-examples "${SMEZO_DEMO_EXAMPLES:-1000}" --out "$OUT"
if [ "$DRY" = 0 ]; then
  zero=$(grep -o '"accuracy": *[0-9.]*' "$OUT.zero-shot.json" | head -1 | grep -o '[0-9.]*$')
  echo "demo: SST-2 dev accuracy, zero-shot: $zero"
  grep '"dev_acc"' "$OUT/metrics.jsonl" |
    sed -E 's/.*"dev_acc": *([0-9.eE+-]+).*"step": *([0-9]+).*/demo: SST-2 dev accuracy after step \2: \1/'
fi

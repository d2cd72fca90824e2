#!/usr/bin/env bash
# quant_accuracy.sh: issue 43's accuracy table. SmolLM2-135M-Instruct Q4_1 on SST-2 on the CPU, the demo's
#   CPU settings (batch 16, max-len 128, dev 500 examples, test 200), 400 steps, seeds 1..3, rows:
#     --tune scales, mezo and smezo (the mode's defaults, eps 1e-5, lr 3e-6; --freeze-embeddings), each
#       scored on its exported GGUF re-loaded (checkpoint/model.gguf: the f16-rounded scales), not the masters
#     --tune lora (r 8, q v) over the packed base
#     full S-MeZO (sparsity 0.75, lr 3e-5, dequantised f32: tools/demo.sh's CPU run)
#     scales-smezo-m (not in the default rows): scales-smezo with Q4_1's m (and K-quants' dmin) tuned too
#   and prints a markdown table of dev and test accuracy, mean ± std over the seeds. About 12 runs of
#   15-25 minutes each on 2 cores: run it when the machine is free.
#
#   tools/quant_accuracy.sh [--seeds "1 2 3"] [--steps N] [--rows "scales-mezo scales-smezo lora full"] [--out DIR]
# Environment: SMEZO (the binary, default build/smezo), SMEZO_SMOLLM2 (the GGUF). Runs that finished
# (their eval JSON present) are not run again.
set -euo pipefail
cd "$(dirname "$0")/.."
SMEZO=${SMEZO:-build/smezo}
GGUF=${SMEZO_SMOLLM2:-weights/SmolLM2-135M-Instruct.Q4_1.gguf}
SEEDS="1 2 3" STEPS=400 ROWS="scales-mezo scales-smezo lora full" OUT=runs/quant_accuracy
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) SEEDS=$2; shift ;;
    --steps) STEPS=$2; shift ;;
    --rows) ROWS=$2; shift ;;
    --out) OUT=$2; shift ;;
    *) echo "quant_accuracy.sh: error: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
[ -f "$GGUF" ] || { echo "quant_accuracy.sh: error: $GGUF missing ---> HINT: weights/fetch_smollm2.sh" >&2; exit 1; }
COMMON=(--task sst2 --batch 16 --max-len 128 --dev-examples 500 --test-examples 200 --eval-every 100)

row_args() {
  case "$1" in
    scales-mezo) echo "--tune scales --method mezo --freeze-embeddings" ;;
    scales-smezo) echo "--tune scales --method smezo --freeze-embeddings" ;;
    scales-smezo-m) echo "--tune scales --method smezo --freeze-embeddings --scales-m" ;;
    lora) echo "--tune lora --weights packed --lora-r 8 --lr 1e-3 --eps 1e-2" ;;
    full) echo "--method smezo --sparsity 0.75 --lr 3e-5" ;;
    *) echo "quant_accuracy.sh: error: unknown row '$1'" >&2; exit 2 ;;
  esac
}

# dev and test accuracy of one finished run: the re-loaded exported GGUF for the scales rows
score() {
  local row=$1 dir=$2 seed=$3
  if [[ $row == scales-* ]]; then
    for split in dev test; do
      # --seed: the run's data seed (its seed), so dev and test are the examples the run held out
      [ -f "$dir/$split.json" ] || "$SMEZO" eval --model "$dir/checkpoint/model.gguf" --task sst2 --split "$split" \
        --seed "$seed" --max-len 128 --dev-examples 500 --test-examples 200 --out "$dir/$split.json" >/dev/null
    done
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["accuracy"], json.load(open(sys.argv[2]))["accuracy"])' \
      "$dir/dev.json" "$dir/test.json"
  else
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["final_dev_acc"], s["test_acc"])' "$dir/summary.json"
  fi
}

mkdir -p "$OUT"
TABLE="$OUT/table.md"
echo "| row | dev acc per seed | dev mean ± std | test acc per seed | test mean ± std |" > "$TABLE"
echo "|---|---|---|---|---|" >> "$TABLE"
for row in $ROWS; do
  read -r -a args <<< "$(row_args "$row")"
  results=()
  for seed in $SEEDS; do
    dir="$OUT/$row-seed$seed"
    if [ ! -f "$dir/summary.json" ] || ! grep -q '"completed"' "$dir/summary.json"; then
      echo "+ $SMEZO train --model $GGUF ${args[*]} --seed $seed --steps $STEPS ${COMMON[*]} --out $dir"
      "$SMEZO" train --model "$GGUF" "${args[@]}" --seed "$seed" --steps "$STEPS" "${COMMON[@]}" --out "$dir" \
        $([ -d "$dir" ] && echo --resume) > "$dir.log" 2>&1
    fi
    results+=("$(score "$row" "$dir" "$seed")")
  done
  python3 - "$row" "${results[@]}" >> "$TABLE" <<'PY'
import statistics, sys
row, pairs = sys.argv[1], [tuple(float(x) for x in p.split()) for p in sys.argv[2:]]
def stats(xs):
    return "%.1f ± %.1f" % (100 * statistics.mean(xs), 100 * statistics.stdev(xs) if len(xs) > 1 else 0.0)
dev, test = [p[0] for p in pairs], [p[1] for p in pairs]
print("| %s | %s | %s | %s | %s |" % (row, " / ".join("%.3f" % x for x in dev), stats(dev),
                                     " / ".join("%.3f" % x for x in test), stats(test)))
PY
done
cat "$TABLE"

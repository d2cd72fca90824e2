#!/usr/bin/env bash
# own_data_demo.sh: fine-tuning on your own data, on the CPU.
#   1. tools/fixtures/make_demo_data.py makes a small generation dataset from the shared assets: BoolQ as
#      "passage + question -> yes/no", JSON Lines files and a task spec (DIR/data).
#   2. smezo eval prints SmolLM2-135M's dev exact match and token F1 before any training.
#   3. smezo train fine-tunes it on the files three times: every weight with S-MeZO (DIR/full),
#      LoRA adapters (rank 8 on q and v, S-MeZO over the adapters; DIR/lora, a PEFT adapter), and
#      a prefix (5 virtual tokens per layer, MeZO's prefix mode, S-MeZO over the prefix; DIR/prefix,
#      a PEFT PREFIX_TUNING adapter).
#   4. A table of dev and test EM/F1 before and after, from the runs' summary.json.
# The settings are small enough for 2 CPU cores (a few minutes per run: batch 8, passages cut to
# 40 words, 100 dev and 100 test examples); they show the commands and what a short run does, not
# tuned hyperparameters.
#
#   tools/own_data_demo.sh [--dry-run] [--out DIR]      (default DIR: runs/own-data)
# --dry-run prints the commands. Environment: SMEZO (the binary, default build/smezo),
# SMEZO_DEMO_STEPS (training steps per run, default 100), SMEZO_DEMO_EXAMPLES (dev and test
# examples, default 100), SMEZO_DEMO_MODEL (default weights/SmolLM2-135M-Instruct.Q4_1.gguf,
# fetched by weights/fetch_smollm2.sh when missing), SMEZO_DEMO_DEVICE (default cpu).
set -euo pipefail
cd "$(dirname "$0")/.."
SMEZO=${SMEZO:-build/smezo}
OUT=runs/own-data
DRY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY=1 ;;
    --out) OUT=$2; shift ;;
    *) echo "own_data_demo.sh: error: unknown argument '$1' (usage: tools/own_data_demo.sh [--dry-run] [--out DIR])" >&2
       exit 2 ;;
  esac
  shift
done
STEPS=${SMEZO_DEMO_STEPS:-100}
N=${SMEZO_DEMO_EXAMPLES:-100}
MODEL=${SMEZO_DEMO_MODEL:-weights/SmolLM2-135M-Instruct.Q4_1.gguf}
DEVICE=${SMEZO_DEMO_DEVICE:-cpu}
EVERY=$(( STEPS / 2 > 0 ? STEPS / 2 : 1 ))

run() {
  echo "+ $*"
  if [ "$DRY" = 0 ]; then "$@"; fi
}

if [ ! -f "$MODEL" ]; then
  if [ "$MODEL" = weights/SmolLM2-135M-Instruct.Q4_1.gguf ]; then run weights/fetch_smollm2.sh
  else echo "own_data_demo: error: SMEZO_DEMO_MODEL=$MODEL does not exist" >&2; exit 1; fi
fi
DATA=$OUT/data
run python3 tools/fixtures/make_demo_data.py --out "$DATA" --train 1000 --dev "$N" --test "$N"
FILES=(--task-spec "$DATA/spec.json" --train-file "$DATA/train.jsonl" --dev-file "$DATA/dev.jsonl"
       --test-file "$DATA/test.jsonl" --dev-examples "$N" --test-examples "$N")
COMMON=(--model "$MODEL" --device "$DEVICE" --max-len 128)
run "$SMEZO" eval "${COMMON[@]}" --task-spec "$DATA/spec.json" --split dev --dev-file "$DATA/dev.jsonl" \
  --dev-examples "$N" --out "$OUT/before-dev.json"
run "$SMEZO" eval "${COMMON[@]}" --task-spec "$DATA/spec.json" --split test --test-file "$DATA/test.jsonl" \
  --test-examples "$N" --out "$OUT/before-test.json"
run "$SMEZO" train "${COMMON[@]}" "${FILES[@]}" --tune full --method smezo --sparsity 0.75 --lr 3e-5 \
  --steps "$STEPS" --batch 8 --eval-every "$EVERY" --out "$OUT/full"
run "$SMEZO" train "${COMMON[@]}" "${FILES[@]}" --tune lora --lora-r 8 --lora-alpha 16 --lora-targets q,v \
  --method smezo --sparsity 0.75 --lr 1e-4 --eps 1e-2 --steps "$STEPS" --batch 8 --eval-every "$EVERY" \
  --out "$OUT/lora"
run "$SMEZO" train "${COMMON[@]}" "${FILES[@]}" --tune prefix --prefix-tokens 5 \
  --method smezo --sparsity 0.75 --lr 1e-3 --eps 1e-1 --steps "$STEPS" --batch 8 --eval-every "$EVERY" \
  --out "$OUT/prefix"
if [ "$DRY" = 0 ]; then
  python3 - "$OUT" "$STEPS" <<'PY'
import json, sys
out, steps = sys.argv[1], sys.argv[2]
def get(path, *keys):
    d = json.load(open(path))
    for k in keys:
        if k in d:
            return d[k]
    raise SystemExit("own_data_demo: %s has none of %s" % (path, ", ".join(keys)))
rows = [("SmolLM2-135M, no training", get(out + "/before-dev.json", "em"), get(out + "/before-dev.json", "f1"),
         get(out + "/before-test.json", "em"), get(out + "/before-test.json", "f1"))]
for name, run in (("full S-MeZO, %s steps" % steps, "full"), ("LoRA r=8 (q,v), S-MeZO, %s steps" % steps, "lora"),
                  ("prefix, 5 tokens, S-MeZO, %s steps" % steps, "prefix")):
    s = out + "/" + run + "/summary.json"
    rows.append((name, get(s, "final_dev_em"), get(s, "final_dev_f1"), get(s, "test_em"), get(s, "test_f1")))
print("\nown_data_demo: BoolQ as a generation task (yes/no), exact match and token F1")
print("| run | dev EM | dev F1 | test EM | test F1 |\n|---|---|---|---|---|")
for r in rows:
    print("| %s | %.3f | %.3f | %.3f | %.3f |" % r)
print("(the runs: %s/full, %s/lora and %s/prefix; their dev curves: plot.svg in each)" % (out, out, out))
PY
fi

#!/usr/bin/env bash
# smollm2_evals.sh: SmolLM2-135M-Instruct (GGUF) on SST-2, RTE and BoolQ, zero-shot and 16-shot
# in-context, on the CPU: `smezo eval` and, on exactly the same examples and text,
# transformers (tools/oracles/eval_oracle.py). Prints one line per evaluation; results in OUT/.
#   tools/oracles/smollm2_evals.sh [OUT] [ZERO_SHOT_EXAMPLES] [ICL_EXAMPLES]
# Defaults: build-cpu/evals, 100, 50 (subsets of the 1000 sampled test examples, chosen by
# --test-examples with the default data seed 42; 2 cores make the full sets take hours).
set -euo pipefail
OUT=${1:-build-cpu/evals}
N0=${2:-100}
NK=${3:-50}
SMEZO=${SMEZO:-build-cpu/smezo}
GGUF=${SMEZO_SMOLLM2:-weights/SmolLM2-135M-Instruct.Q4_1.gguf}
PY=${PYTHON:-/tmp/oracle-venv/bin/python}
mkdir -p "$OUT"
for mode in zero-shot icl; do
  for task in sst2 rte boolq; do
    n=$N0; extra=""
    if [ "$mode" = icl ]; then n=$NK; extra="--shots 16"; fi
    name="$task-$mode"
    if [ -f "$OUT/$name.json" ] && [ -f "$OUT/$name.jsonl" ]; then echo "$name: smezo done before"; else
    "$SMEZO" eval --model "$GGUF" --task "$task" --mode "$mode" $extra --test-examples "$n" \
      --out "$OUT/$name.json" --examples-out "$OUT/$name.jsonl" 2>&1 | tee "$OUT/$name.smezo.txt"
    fi
    "$PY" tools/oracles/eval_oracle.py --gguf "$GGUF" --examples "$OUT/$name.jsonl" --out "$OUT/$name.oracle.json" \
      2>/dev/null | tee "$OUT/$name.oracle.txt" || true
  done
done

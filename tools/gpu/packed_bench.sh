#!/usr/bin/env bash
# The S-MeZO step over a base kept in GGUF blocks (issue 43), beside the bf16 one, in one call:
# `smezo bench --shape SHAPE` (random weights, built in memory) three ways, each its own process:
#   bf16     every weight in the device's default dtype (bf16 on CUDA), full S-MeZO: the baseline
#   scales   the matrices as random QUANT blocks kept packed, --tune scales (f32 master scales)
#   lora     the same blocks, --tune lora (rank 8 on q and v): every pass dequantises every weight
# Each process's device memory is sampled by nvidia-smi (CUDA context included). Writes
# $OUT/packed_bench.md: per (mode, T) forward ms, S-MeZO step ms, step / its own forward (floor 2),
# step / the bf16 forward, peak device MiB and the backend's own allocations; the JSON lines beside it.
#   OUT=DIR SMEZO=build/smezo tools/gpu/packed_bench.sh [--shape llama-7b] [--quant Q4_K] [--device cuda]
#                                                        [--seqs 64,256] [--batch 16] [--reps 5]
set -euo pipefail
SHAPE=llama-7b QUANT=Q4_K DEVICE=cuda SEQS=64,256 BATCH=16 REPS=5
while [ $# -gt 0 ]; do
  case "$1" in
    --shape) SHAPE=$2; shift ;;
    --quant) QUANT=$2; shift ;;
    --device) DEVICE=$2; shift ;;
    --seqs) SEQS=$2; shift ;;
    --batch) BATCH=$2; shift ;;
    --reps) REPS=$2; shift ;;
    *) echo "packed_bench.sh: error: unknown argument $1 ---> HINT: see the comment at the top" >&2; exit 2 ;;
  esac
  shift
done
: "${OUT:?packed_bench.sh: error: set OUT to the folder for the results}"
SMEZO=${SMEZO:-build/smezo}
mkdir -p "$OUT"

# one mode: the bench's JSON lines to $OUT/MODE.jsonl, the peak device MiB to $OUT/MODE.device_mb
run_mode() {
  local mode=$1; shift
  local smi=""
  : > "$OUT/$mode.samples"
  if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$OUT/$mode.samples" &
    smi=$!
  fi
  local rc=0
  "$SMEZO" bench --shape "$SHAPE" --device "$DEVICE" --batch "$BATCH" --seq "$SEQS" --reps "$REPS" --warmup 1 \
    --phases forward,smezo-step --json "$OUT/$mode.jsonl" "$@" > /dev/null 2> "$OUT/$mode.log" || rc=$?
  if [ -n "$smi" ]; then kill "$smi" 2> /dev/null || true; wait "$smi" 2> /dev/null || true; fi
  sort -n "$OUT/$mode.samples" | tail -1 > "$OUT/$mode.device_mb"
  if [ "$rc" != 0 ]; then
    echo "packed_bench.sh: $mode failed (exit $rc):" >&2
    tail -5 "$OUT/$mode.log" >&2
    exit 1
  fi
  echo "packed_bench.sh: $mode done"
}

run_mode bf16
run_mode scales --quant "$QUANT" --tune scales
run_mode lora --quant "$QUANT" --tune lora

python3 - "$OUT" "$SHAPE" "$QUANT" "$DEVICE" <<'PY'
import json, os, sys
out, shape, quant, device = sys.argv[1:5]
rows = {}
for mode in ("bf16", "scales", "lora"):
    peak = open(os.path.join(out, mode + ".device_mb")).read().strip()
    for line in open(os.path.join(out, mode + ".jsonl")):
        j = json.loads(line)
        r = rows.setdefault((mode, j["seq"]), {"peak": peak or "n/a"})
        r[j["phase"]] = j["ms"]
        r["allocated"] = j["backend_allocated_MB"]
        r["dtype"] = j["dtype"]  # the device's default: bf16 on CUDA, f32 on the CPU
lines = ["| mode | T | forward ms | S-MeZO step ms | step / own forward (floor 2) | step / bf16 forward | "
         "peak device MiB (nvidia-smi) | backend allocated MB |", "|---|---|---|---|---|---|---|---|"]
for (mode, t), r in sorted(rows.items(), key=lambda kv: (kv[0][1], ("bf16", "scales", "lora").index(kv[0][0]))):
    base = rows[("bf16", t)]["forward"]
    name = "%s, full S-MeZO" % r["dtype"].lower() if mode == "bf16" else "packed %s, --tune %s" % (quant, mode)
    lines.append("| %s | %d | %.1f | %.1f | %.2f | %.2f | %s | %.1f |" % (
        name, t, r["forward"], r["smezo-step"], r["smezo-step"] / r["forward"], r["smezo-step"] / base,
        r["peak"], r["allocated"]))
text = "%s, %s, random weights (smezo bench --shape; tools/gpu/packed_bench.sh)\n\n" % (shape, device) + \
    "\n".join(lines) + "\n"
open(os.path.join(out, "packed_bench.md"), "w").write(text)
print(text, end="")
PY

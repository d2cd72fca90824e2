#!/usr/bin/env bash
# The model-level step benchmark beside the PyTorch peer, on the GPU machine:
# for each shape, `smezo bench --shape S --device cuda` (forward, MeZO and S-MeZO steps, probe
# pair and two passes) and ../shared/anchors/torch_mezo.py (the reference implementations'
# MeZO/S-MeZO step in PyTorch + transformers) in the same session, then the ratio table the
# issue's targets need (markdown, for RESULTS.md) on stdout and in $OUT/step_bench.md.
#
#   here, once:   cp -r ../shared/anchors carry/anchors      (git-ignored; carried to the GPU)
#   GPU machine:  bash tools/gpu/step_bench.sh [--shapes "llama-7b mistral-7b"] [--batch 16]
#                                          [--seqs 64,160,256] [--reps 5] [--no-torch]
#   or:           bash tools/gpu/gpu_check.sh --bench            (runs this with its defaults)
# Needs build/smezo built with nvcc ($SMEZO names another binary). --device cpu (and --shapes
# tiny) runs the same commands on the CPU, as the CPU dry run of tools/gpu_backlog.sh does. Without torch (or with --no-torch) the peer columns come
# from the recorded anchor file (carry/anchors/torch_mezo_h100.jsonl, T = 64 and 256 only),
# and the table says so. Each shape is one process of each program, so GPU memory is freed
# between them; llama-30b needs ~65 GB in bf16 (H100 80 GB: run it on its own).
#
# Targets (H100, ratios from one run):
#   S-MeZO step <= 2.2x our own plain forward at T = 160 and 256 (llama-7b, mistral-7b)
#   torch S-MeZO step / our S-MeZO step >= 5 at T = 160/256, >= 12 at T = 64 (llama-7b,
#     mistral-7b, opt-13b), >= 20 on smollm2-135m
#   our plain forward <= torch's plain forward at every shape
# Notes: torch's forward computes logits for every position (labels = ids), ours for the last
# row of each sequence (what a classification loss reads); torch's S-MeZO masks 80% of each
# linear (its default --sparsity 0.8), ours 75%: both are kept as the programs define them.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-build/step_bench}
SHAPES="smollm2-135m llama-7b mistral-7b opt-13b"
BATCH=16 SEQS=64,160,256 REPS=5 TORCH=1 DEVICE=cuda
SMEZO=${SMEZO:-build/smezo}
while [ $# -gt 0 ]; do
  case "$1" in
    --shapes) SHAPES=$2; shift ;;
    --device) DEVICE=$2; shift ;;
    --batch) BATCH=$2; shift ;;
    --seqs) SEQS=$2; shift ;;
    --reps) REPS=$2; shift ;;
    --no-torch) TORCH=0 ;;
    *) echo "step_bench.sh: unknown option $1 (--shapes, --device, --batch, --seqs, --reps, --no-torch)" >&2; exit 2 ;;
  esac
  shift
done
ANCHORS=${ANCHORS:-carry/anchors}
[ -d "$ANCHORS" ] || ANCHORS=../shared/anchors
[ -x "$SMEZO" ] || { echo "step_bench.sh: $SMEZO missing: build it first (make)" >&2; exit 1; }
mkdir -p "$OUT"
if [ "$TORCH" = 1 ] && ! python3 -c "import torch, transformers" 2>/dev/null; then
  echo "step_bench.sh: torch/transformers not importable: peer columns from $ANCHORS/torch_mezo_h100.jsonl" >&2
  TORCH=0
fi
: > "$OUT/smezo.jsonl"
: > "$OUT/torch.jsonl"
for shape in $SHAPES; do
  echo "step_bench: smezo $shape" >&2
  "$SMEZO" bench --shape "$shape" --device "$DEVICE" --batch "$BATCH" --seq "$SEQS" --reps "$REPS" \
    --probes both >> "$OUT/smezo.jsonl" 2> "$OUT/smezo_$shape.log" \
    || echo "step_bench: smezo $shape FAILED (see $OUT/smezo_$shape.log)" >&2
  if [ "$TORCH" = 1 ]; then
    echo "step_bench: torch $shape" >&2
    seq_args=$(echo "$SEQS" | tr ',' '\n' | sed 's/^/--seq /' | paste -sd' ' -)
    # shellcheck disable=SC2086
    python3 "$ANCHORS/torch_mezo.py" --shape "$shape" --batch "$BATCH" $seq_args --reps "$REPS" \
      >> "$OUT/torch.jsonl" 2> "$OUT/torch_$shape.log" \
      || echo "step_bench: torch $shape FAILED (see $OUT/torch_$shape.log)" >&2
  fi
done
[ "$TORCH" = 1 ] || cp "$ANCHORS/torch_mezo_h100.jsonl" "$OUT/torch.jsonl"

python3 - "$OUT/smezo.jsonl" "$OUT/torch.jsonl" "$TORCH" > "$OUT/step_bench.md" <<'EOF'
import json, sys
ours, peer, live = {}, {}, sys.argv[3] == "1"
for line in open(sys.argv[1]):
    j = json.loads(line)
    key = (j["shape"], j["batch"], j["seq"])
    name = j["phase"] + ("/" + j["probes"] if "probes" in j else "")
    ours.setdefault(key, {"device": j.get("hostname", "")})[name] = j["ms"]
for line in open(sys.argv[2]):
    j = json.loads(line)
    peer[(j["shape"], j["batch"], j["seq"])] = j
def f(x, d=1):
    return "–" if x is None else f"{x:.{d}f}"
def ratio(a, b):
    return None if a is None or b is None else a / b
print("peer: " + ("torch_mezo.py run in this session" if live else "recorded anchor file (not this session)"))
print()
print("| shape | B | T | our fwd ms | MeZO step (pair) | S-MeZO step (pair) | S-MeZO (2 passes) | torch fwd | torch MeZO | torch S-MeZO "
      "| S-MeZO / our fwd (≤ 2.2) | torch S-MeZO / ours (≥ 5; ≥ 12 at T=64; ≥ 20 smollm2) | our fwd / torch fwd (≤ 1) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for key in sorted(ours):
    o, p = ours[key], peer.get(key, {})
    fwd, mz, sm, sm2 = o.get("forward"), o.get("mezo-step/pair"), o.get("smezo-step/pair"), o.get("smezo-step/separate")
    tf, tm, ts = p.get("forward_ms"), p.get("mezo_step_ms"), p.get("smezo_step_ms")
    print(f"| {key[0]} | {key[1]} | {key[2]} | {f(fwd)} | {f(mz)} | {f(sm)} | {f(sm2)} | {f(tf)} | {f(tm)} | {f(ts)} "
          f"| {f(ratio(sm, fwd), 2)} | {f(ratio(ts, sm), 2)} | {f(ratio(fwd, tf), 2)} |")
EOF
cat "$OUT/step_bench.md"

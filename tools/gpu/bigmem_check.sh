#!/usr/bin/env bash
# The GPU figures for a big model from a file: peak host RSS, start-up phases and peak
# device memory of an S-MeZO run, next to the estimate `smezo info` prints. Run on the GPU
# machine after a build (tools/gpu/gpu_check.sh builds), with python3 + torch + transformers for
# the random checkpoint (written once into $DIR, bf16, one or more safetensors shards):
#   bash tools/gpu/bigmem_check.sh 7b    # LLaMA-7B shape  (13.5 GB on disk)
#   bash tools/gpu/bigmem_check.sh 13b   # LLaMA-13B shape (26 GB on disk)
#   DEVICE=cpu bash tools/gpu/bigmem_check.sh tiny   # the same commands on stories260K (written as
#                                    # a Hugging Face directory by smezo convert; no torch), 2 steps
# It prints one line per figure. The targets: peak host RSS <= 2 GB, start-up
# (startup_s summed up to the first step, file in the page cache) <= 15 s for 7B, peak device
# memory (nvidia-smi, which includes the CUDA context) <= weights + 1 GB.
# Environment: OUT (build/bigmem_check), DIR (the checkpoint, $OUT/llama-SHAPE), SMEZO (the
# binary, build/smezo), DEVICE (cuda), CLEAN=1 (delete the checkpoint and the run afterwards:
# 2 x 13.5 GB for 7B, 2 x 26 GB for 13B).
set -euo pipefail
cd "$(dirname "$0")/../.."
SHAPE=${1:-7b}
OUT=${OUT:-build/bigmem_check}
DIR=${DIR:-$OUT/llama-$SHAPE}
SMEZO=${SMEZO:-build/smezo}
DEVICE=${DEVICE:-cuda}
mkdir -p "$OUT"
# bf16 on the GPU (the CPU stores f32 only); the tiny shape runs a short smoke test.
DTYPE=bf16 TRAIN="--max-len 256 --batch 16 --steps 60 --dev-examples 100"
[ "$DEVICE" = cpu ] && DTYPE=f32
case "$SHAPE" in
  7b) ARGS="hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32" ;;
  13b) ARGS="hidden_size=5120, intermediate_size=13824, num_hidden_layers=40, num_attention_heads=40" ;;
  tiny) TRAIN="--max-len 64 --batch 2 --steps 2 --dev-examples 4 --train-examples 16" ;;
  *) echo "bigmem_check.sh: shape 7b, 13b or tiny" >&2; exit 2 ;;
esac
if [ "$SHAPE" = tiny ] && [ ! -f "$DIR/config.json" ]; then
  "$SMEZO" convert --out "$DIR" --dtype f32 > /dev/null
elif [ ! -f "$DIR/config.json" ]; then
  python3 - <<PY
import torch, transformers
cfg = transformers.LlamaConfig($ARGS, vocab_size=32000, max_position_embeddings=2048)
with torch.device("cuda"):
    model = transformers.LlamaForCausalLM(cfg).to(torch.bfloat16)
model.save_pretrained("$DIR", safe_serialization=True)
PY
  cp "${SMEZO_ASSETS:-carry/assets}/tokenizers/llama2.model" "$DIR/tokenizer.model" 2>/dev/null || true
fi
cat "$DIR"/*.safetensors > /dev/null  # warm the page cache: the start-up target assumes it
"$SMEZO" info "$DIR" --batch 16 --max-len 256 | tail -3 | tee "$OUT/estimate.txt"
: > "$OUT/device_mb.txt"
SMI=""
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$OUT/device_mb.txt" &
  SMI=$!
fi
rm -rf "$OUT/run"
# shellcheck disable=SC2086
/usr/bin/time -v "$SMEZO" train --model "$DIR" --device "$DEVICE" --dtype "$DTYPE" --task boolq \
  $TRAIN --eval-every 0 --skip-test --out "$OUT/run" \
  2> "$OUT/train.log" || { tail -5 "$OUT/train.log"; [ -n "$SMI" ] && kill $SMI; exit 1; }
[ -n "$SMI" ] && kill $SMI
echo "peak host RSS:     $(grep 'Maximum resident' "$OUT/train.log" | awk '{printf "%.2f GB", $6/1e6}')"
peak_mb=$(sort -n "$OUT/device_mb.txt" | tail -1)
echo "peak device (smi): ${peak_mb:-n/a (no nvidia-smi)} MiB"
python3 - "$OUT/run/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
st = s["startup_s"]
print("start-up:          %.1f s to the end of the first step (%s)" % (sum(st.values()), ", ".join("%s %.2f" % kv for kv in st.items())))
print("finish:            %s" % s["finish_s"])
print("backend allocated: %.0f MB, estimated %.0f MB" % (s["peak_backend_memory_MB"], s["estimated_backend_memory_MB"]))
PY
if [ "${CLEAN:-0}" = 1 ]; then rm -rf "$DIR" "$OUT/run"; fi

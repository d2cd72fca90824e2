#!/usr/bin/env bash
# Issue #10's GPU figures for a big model from a file: peak host RSS, start-up phases and peak
# device memory of an S-MeZO run, next to the estimate `smezo info` prints. Run on the GPU
# machine after a build (tools/gpu_check.sh builds), with python3 + torch + transformers for
# the random checkpoint (written once into $DIR, bf16, one or more safetensors shards):
#   bash tools/bigmem_check.sh 7b    # LLaMA-7B shape  (13.5 GB on disk)
#   bash tools/bigmem_check.sh 13b   # LLaMA-13B shape (26 GB on disk)
# It prints one line per figure. The targets (issue #10): peak host RSS <= 2 GB, start-up
# (startup_s summed up to the first step, file in the page cache) <= 15 s for 7B, peak device
# memory (nvidia-smi, which includes the CUDA context) <= weights + 1 GB.
set -euo pipefail
cd "$(dirname "$0")/.."
SHAPE=${1:-7b}
OUT=${OUT:-build/bigmem_check}
DIR=${DIR:-$OUT/llama-$SHAPE}
mkdir -p "$OUT"
case "$SHAPE" in
  7b) ARGS="hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32" ;;
  13b) ARGS="hidden_size=5120, intermediate_size=13824, num_hidden_layers=40, num_attention_heads=40" ;;
  *) echo "bigmem_check.sh: shape 7b or 13b" >&2; exit 2 ;;
esac
if [ ! -f "$DIR/config.json" ]; then
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
./build/smezo info "$DIR" --batch 16 --max-len 256 | tail -3 | tee "$OUT/estimate.txt"
nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$OUT/device_mb.txt" &
SMI=$!
rm -rf "$OUT/run"
/usr/bin/time -v ./build/smezo train --model "$DIR" --device cuda --dtype bf16 --task boolq \
  --max-len 256 --batch 16 --steps 60 --eval-every 0 --dev-examples 100 --skip-test --out "$OUT/run" \
  2> "$OUT/train.log" || { tail -5 "$OUT/train.log"; kill $SMI; exit 1; }
kill $SMI
echo "peak host RSS:     $(grep 'Maximum resident' "$OUT/train.log" | awk '{printf "%.2f GB", $6/1e6}')"
echo "peak device (smi): $(sort -n "$OUT/device_mb.txt" | tail -1) MiB"
python3 - "$OUT/run/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
st = s["startup_s"]
print("start-up:          %.1f s to the end of the first step (%s)" % (sum(st.values()), ", ".join("%s %.2f" % kv for kv in st.items())))
print("finish:            %s" % s["finish_s"])
print("backend allocated: %.0f MB, estimated %.0f MB" % (s["peak_backend_memory_MB"], s["estimated_backend_memory_MB"]))
PY

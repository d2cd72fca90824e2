#!/usr/bin/env bash
# gguf_export_ci.sh: CI's round trip of the --tune scales export (issue 43): a scale-patched GGUF
# read back by the gguf package and by transformers (tools/oracles/gguf_export_oracle.py, checks a
# and b), on SmolLM2 and on a random LLaMA with every block type. Run from the repo root after make
# (build/smezo, build/patch_scales) and weights/fetch_smollm2.sh. SmolLM2's file is a --tune scales run's checkpoint.
#
#   tools/oracles/gguf_export_ci.sh            checks a, b
#   tools/oracles/gguf_export_ci.sh llama      check c (llama.cpp) on SmolLM2 and the random model:
#                                              builds llama-cpp-python from source into its own venv
#                                              first (8.5 CPU-minutes; 42 min on a busy 2-core VM),
#                                              or uses $SMEZO_LLAMA_VENV's
#
# The oracle's Python packages, pinned, go into a venv under $SMEZO_PY_CACHE (default
# ~/.cache/smezo), named by the pins and reused while they stay the same: the first run downloads
# them from PyPI (torch's PyPI wheel for Linux is the CUDA build, whose libraries it loads even on
# a CPU; PyPI has no CPU-only wheel), later runs find them.
set -euo pipefail
cd "$(dirname "$0")/../.."
ORACLE_PINS="torch==2.15.0 transformers==5.24.0 accelerate==1.15.0 gguf==0.19.0 numpy==2.4.6 safetensors==0.8.0 sentencepiece==0.2.3"
LLAMA_PINS="llama-cpp-python==0.3.36 numpy==2.4.6 safetensors==0.8.0"
CACHE=${SMEZO_PY_CACHE:-$HOME/.cache/smezo}
WORK=build/gguf_export
VENV_NEEDS_GB=${SMEZO_VENV_NEEDS_GB:-8}
SMOLLM2=${SMEZO_SMOLLM2:-weights/SmolLM2-135M-Instruct.Q4_1.gguf}

# venv NAME PINS [VAR=VALUE...]: prints the venv's folder, made and filled (pip under those
# variables) once per set of pins; .complete marks a venv whose install finished.
venv() {
  local name=$1 pins=$2
  shift 2
  local dir
  dir="$CACHE/venv-$name-$(echo "$pins" | sha256sum | cut -c1-12)"
  if [ ! -e "$dir/.complete" ]; then
    rm -rf "$dir"
    mkdir -p "$CACHE"
    # torch's CUDA wheel and its nvidia-* libraries fill about 5.6 GB; pip unpacks beside them
    local free_gb
    free_gb=$(( $(df -Pk "$CACHE" | awk 'NR == 2 { print $4 }') / 1048576 ))
    if [ "$free_gb" -lt "$VENV_NEEDS_GB" ]; then
      echo "gguf_export_ci: error: $CACHE has $free_gb GB free; the $name venv needs about $VENV_NEEDS_GB" \
        "---> HINT: free space there, or set SMEZO_PY_CACHE to a folder on a larger disk" >&2
      return 1
    fi
    # set -e does not reach into $(...): each step's failure is checked here, so a venv whose
    # install failed is never marked complete (one CI run went on without the gguf package)
    # shellcheck disable=SC2086
    if ! python3 -m venv "$dir" >&2 ||
       ! env "$@" "$dir/bin/pip" install -q --no-cache-dir --disable-pip-version-check $pins >&2; then
      rm -rf "$dir"
      echo "gguf_export_ci: error: filling the $name venv ($pins) failed (pip's message above)" >&2
      return 1
    fi
    touch "$dir/.complete"
  fi
  echo "$dir"
}

mkdir -p "$WORK"
[ -f "$SMOLLM2" ] || { echo "gguf_export_ci: $SMOLLM2 absent: run weights/fetch_smollm2.sh"; exit 1; }
# The patched GGUFs. SmolLM2's is what users get: the checkpoint of a 2-step `--tune scales` run (eps and
# lr 1e-5: about 1.4 M scale bytes move); the random model's is build/patch_scales' (seeded factors).
rm -rf "$WORK/scales-run"
build/smezo train --model "$SMOLLM2" --tune scales --task sst2 --steps 2 --batch 2 --max-len 32 \
  --train-examples 8 --dev-examples 0 --skip-test --eps 1e-5 --lr 1e-5 --out "$WORK/scales-run" > /dev/null
cp "$WORK/scales-run/checkpoint/model.gguf" "$WORK/smollm2-patched.gguf"

if [ "${1:-}" = llama ]; then
  start=$SECONDS
  LLAMA_VENV=${SMEZO_LLAMA_VENV:-$(venv llama "$LLAMA_PINS" CMAKE_BUILD_PARALLEL_LEVEL=2 \
    CMAKE_ARGS="-DLLAVA_BUILD=OFF -DMTMD_BUILD=OFF -DGGML_NATIVE=OFF" PIP_NO_BINARY=llama-cpp-python)}
  echo "gguf_export_ci: llama-cpp-python venv ready in $((SECONDS - start)) s ($LLAMA_VENV)"
  [ -f "$WORK/random-patched.gguf" ] || { echo "gguf_export_ci: run it without 'llama' first (the random model)"; exit 1; }
  rc=0
  for model in smollm2 random; do
    base=$SMOLLM2
    [ $model = random ] && base=$WORK/random.gguf
    "$LLAMA_VENV/bin/python" tools/oracles/gguf_export_oracle.py --base "$base" \
      --patched "$WORK/$model-patched.gguf" --checks c --workdir "$WORK/oracle-$model" || rc=1
  done
  exit $rc
fi

start=$SECONDS
VENV=$(venv oracle "$ORACLE_PINS")
echo "gguf_export_ci: oracle venv ready in $((SECONDS - start)) s ($VENV)"
"$VENV/bin/python" tools/fixtures/make_random_llama_gguf.py "$SMOLLM2" "$WORK/random.gguf"
build/patch_scales "$WORK/random.gguf" "$WORK/random-patched.gguf" --seed 43 --spread 0.01
rc=0
for model in smollm2 random; do
  base=$SMOLLM2
  [ $model = random ] && base=$WORK/random.gguf
  echo "gguf_export_ci: $model"
  "$VENV/bin/python" tools/oracles/gguf_export_oracle.py --base "$base" --patched "$WORK/$model-patched.gguf" \
    --checks a,b --workdir "$WORK/oracle-$model" 2>&1 | grep -v "it/s]" || rc=1
done
exit $rc

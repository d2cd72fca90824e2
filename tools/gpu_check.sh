#!/usr/bin/env bash
# One full check on the GPU machine (device tool), logs under $OUT, a short table last:
#   tools/deps.sh download            # here, once: the Debian .debs into deps/ (git-ignored)
#   cp -r ../shared/assets carry/     # here: the assets the tests read (git-ignored)
#   device run, carry [deps, carry]:  bash tools/gpu_check.sh [--bench]
# Steps: unpack the debs, build for the GPU found, run the whole test suite (GPU tests run
# instead of skipping), run the Hugging Face oracle on --device cuda.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu_check}
mkdir -p "$OUT"
export SMEZO_ASSETS=${SMEZO_ASSETS:-$PWD/carry/assets}
status() { printf '%-28s %s\n' "$1" "$2" >> "$OUT/summary.txt"; }
: > "$OUT/summary.txt"

nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
tools/deps.sh unpack > "$OUT/deps.log" 2>&1 && status deps ok || status deps FAILED
if make -j"$(nproc)" DEPS=deps/root all build/smezo_tests > "$OUT/build.log" 2>&1; then
  status build ok
else
  status build FAILED; tail -30 "$OUT/build.log"; cat "$OUT/summary.txt"; exit 1
fi
./build/smezo_tests > "$OUT/tests.log" 2>&1
status tests "$(tail -n 1 "$OUT/tests.log")"
grep -E '^\[  (FAILED|SKIPPED) ' "$OUT/tests.log" | sort -u | head -40 >> "$OUT/summary.txt"
if python3 tools/hf_oracle.py --device cuda --smezo build/smezo --workdir "$OUT/oracle" \
     --assets "$SMEZO_ASSETS" > "$OUT/oracle.log" 2>&1; then
  status oracle PASS
else
  status oracle FAILED
fi
tail -n 20 "$OUT/oracle.log" >> "$OUT/summary.txt"
if [ "${1:-}" = "--bench" ]; then
  ./build/smezo bench --kernel linear --json "$OUT/bench_linear_bf16.jsonl" > "$OUT/bench_linear_bf16.txt" 2>&1
  status bench "rc=$?"
  tail -n 16 "$OUT/bench_linear_bf16.txt" >> "$OUT/summary.txt"
fi
cat "$OUT/summary.txt"

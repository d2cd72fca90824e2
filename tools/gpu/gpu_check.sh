#!/usr/bin/env bash
# One full check on the GPU machine (device tool), logs under $OUT, a short table last:
#   tools/deps.sh download            # here, once: the Debian .debs into deps/ (git-ignored)
#   cp -r ../shared/assets carry/     # here: the assets the tests read (git-ignored)
#   device run, carry [deps, carry]:  bash tools/gpu/gpu_check.sh [--bench] [--sanitize] [--determinism]
# Always: unpack the debs, build for the GPU found, run the whole test suite (GPU tests run
# instead of skipping), run the Hugging Face oracle on --device cuda. Options add:
#   --bench        the kernel benchmark (smezo bench --kernel linear), then the model-level
#                  step benchmark beside PyTorch (tools/gpu/step_bench.sh; carry ../shared/anchors
#                  as carry/anchors: cp -r ../shared/anchors carry/)
#   --sanitize     compute-sanitizer memcheck (with leak check), racecheck, synccheck and
#                  initcheck over the GPU tests, one line each
#   --determinism  tools/checks/determinism_check.sh on cuda in bf16 and f32: two identical runs,
#                  kill -9 + --resume, replay on the GPU, a CPU replay of the f32 run
#   --gpu-test-filter  print the gtest filter of the suites that run CUDA code (tests/*.cu), the
#                  selection --sanitize runs each tool over, and exit (tools/gpu_backlog.sh uses it)
set -uo pipefail
cd "$(dirname "$0")/../.."
# The suites that run CUDA code (tests/*.cu), as a gtest filter.
gpu_test_filter() {
  grep -ho '^TEST\(_F\)\?([A-Za-z0-9_]*' tests/*.cu | sed 's/.*(//' | sort -u | sed 's/$/.*/' | paste -sd: -
}
BENCH=0 SANITIZE=0 DETERMINISM=0
for arg in "$@"; do
  case "$arg" in
    --bench) BENCH=1 ;;
    --sanitize) SANITIZE=1 ;;
    --determinism) DETERMINISM=1 ;;
    --gpu-test-filter) gpu_test_filter; exit 0 ;;
    *) echo "gpu_check.sh: unknown option $arg (--bench, --sanitize, --determinism, --gpu-test-filter)" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-build/gpu_check}
mkdir -p "$OUT"
export SMEZO_ASSETS=${SMEZO_ASSETS:-$PWD/carry/assets}
status() { printf '%-28s %s\n' "$1" "$2" >> "$OUT/summary.txt"; }
: > "$OUT/summary.txt"

nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
tools/deps.sh unpack > "$OUT/deps.log" 2>&1 && status deps ok || status deps FAILED
. tools/mpi_env.sh  # the unpacked Open MPI wheel, if any: the build gets MPI, the MPI tests run
if make -j"$(nproc)" DEPS=deps/root all build/smezo_tests > "$OUT/build.log" 2>&1; then
  status build ok
else
  status build FAILED; tail -30 "$OUT/build.log"; cat "$OUT/summary.txt"; exit 1
fi
./build/smezo_tests > "$OUT/tests.log" 2>&1
status tests "$(tail -n 1 "$OUT/tests.log")"
grep -E '^\[  (FAILED|SKIPPED) ' "$OUT/tests.log" | sort -u | head -40 >> "$OUT/summary.txt"
if python3 tools/oracles/hf_oracle.py --device cuda --smezo build/smezo --workdir "$OUT/oracle" \
     --assets "$SMEZO_ASSETS" > "$OUT/oracle.log" 2>&1; then
  status oracle PASS
else
  status oracle FAILED
fi
tail -n 20 "$OUT/oracle.log" >> "$OUT/summary.txt"

if [ "$BENCH" = 1 ]; then
  ./build/smezo bench --kernel linear --json "$OUT/bench_linear_bf16.jsonl" > "$OUT/bench_linear_bf16.txt" 2>&1
  status bench "rc=$?"
  tail -n 16 "$OUT/bench_linear_bf16.txt" >> "$OUT/summary.txt"
  OUT="$OUT/step_bench" tools/gpu/step_bench.sh ${STEP_BENCH_ARGS:-} > "$OUT/step_bench.txt" 2>&1
  status step_bench "rc=$?"
  tail -n 20 "$OUT/step_bench.txt" >> "$OUT/summary.txt"
fi

if [ "$SANITIZE" = 1 ]; then
  # The suites that run CUDA code; each tool over all of them.
  gpu_tests=$(gpu_test_filter)
  for tool in memcheck racecheck synccheck initcheck; do
    extra=""
    [ "$tool" = memcheck ] && extra="--leak-check full"
    # cuBLAS's own Hopper GEMM kernels report shared-memory hazards of their own (H200, CUDA 13,
    # 2026-11-25); ours are all checked (the same exclusion as tools/gpu/gpu_backlog_jobs.py)
    [ "$tool" = racecheck ] && extra="--kernel-name-exclude kns=nvjet"
    start=$(date +%s)
    # shellcheck disable=SC2086
    compute-sanitizer --tool "$tool" $extra --error-exitcode 99 \
      ./build/smezo_tests --gtest_filter="$gpu_tests" > "$OUT/sanitize_$tool.log" 2>&1
    rc=$?
    summary_line=$(grep -E '^========= (ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY)' "$OUT/sanitize_$tool.log" | tail -n 1)
    if [ "$rc" = 0 ]; then
      status "sanitize $tool" "PASS ($(( $(date +%s) - start )) s) ${summary_line#========= }"
    else
      status "sanitize $tool" "FAILED rc=$rc ${summary_line#========= } (see sanitize_$tool.log)"
    fi
  done
fi

if [ "$DETERMINISM" = 1 ]; then
  for dtype in bf16 f32; do
    tools/checks/determinism_check.sh --device cuda --dtype "$dtype" --steps 300 --kills 3 \
      --workdir "/tmp/smezo-determinism-$dtype" > "$OUT/determinism_$dtype.txt" 2>&1
    while IFS= read -r line; do status "$(echo "$line" | awk '{print $1" "$2}')" "$(echo "$line" | cut -c29-)"; done \
      < <(grep -E 'PASS|FAIL' "$OUT/determinism_$dtype.txt")
  done
fi
cat "$OUT/summary.txt"

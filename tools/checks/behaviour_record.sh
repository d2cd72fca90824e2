#!/usr/bin/env bash
# The behaviour record of a restructuring: short stories260K training runs whose seed logs
# and final weights must stay byte-identical while the code is restructured.
#   tools/checks/behaviour_record.sh [--smezo build/smezo] [--device cpu|cuda] [--label NAME] [--workdir DIR]
#                                    [--model PATH --tokenizer PATH]
# For each method (MeZO, R-MeZO, S-MeZO) and layout (one process with the probe pair, and with
# --probes separate; 2-rank data parallel and a 2-stage pipeline under mpirun, where mpirun is
# found) it runs 8 steps and prints one line:
#   <label> <method> <layout> seed_log=<sha256 of seed_log.txt> weights=<sha256 of model.safetensors>
# Compare two records with diff: every line must be equal. The seed log holds only the run's
# identity and its steps (no times or paths), so its hash is comparable across checkouts.
# --model/--tokenizer record another model than the bundled stories260K (a family's tiny folder:
# mistral, opt, ...; its vocabulary must be the tokenizer's).
# --device cuda runs the emulated CUDA target when given build-emu/smezo (--dtype f32).
# Exit status: the number of runs that failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
SMEZO=build/smezo DEVICE=cpu LABEL="" WORK="" MODEL_ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --smezo) SMEZO=$2; shift 2 ;;
    --device) DEVICE=$2; shift 2 ;;
    --label) LABEL=$2; shift 2 ;;
    --workdir) WORK=$2; shift 2 ;;
    --model) MODEL_ARGS+=(--model "$2"); shift 2 ;;
    --tokenizer) MODEL_ARGS+=(--tokenizer "$2"); shift 2 ;;
    *) echo "behaviour_record.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
LABEL=${LABEL:-$DEVICE}
WORK=${WORK:-$(mktemp -d /tmp/smezo-behaviour.XXXXXX)}
rm -rf "$WORK" && mkdir -p "$WORK"
. tools/mpi_env.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader \
  OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1 \
  OMPI_MCA_hwloc_base_binding_policy=none OMPI_MCA_plm_rsh_agent=false OMP_NUM_THREADS=1

args=(train --device "$DEVICE" --task sst2 --steps 8 --batch 4 --max-len 32 --lr 2e-3 --eval-every 4
      --dev-examples 8 --test-examples 8 --flush-every 1 --checkpoint-every 4 --seed 11 --progress-every 1000
      ${MODEL_ARGS[@]+"${MODEL_ARGS[@]}"})
[ "$DEVICE" = cuda ] && args+=(--dtype f32)
layouts=(single separate)
if command -v mpirun > /dev/null 2>&1 && "$SMEZO" --version 2>/dev/null | grep -q "with MPI"; then
  layouts+=(dp2 pp2)
else
  echo "# no mpirun or no MPI in $SMEZO: the data-parallel and pipeline layouts are not recorded" >&2
fi
failed=0
for method in mezo rmezo smezo; do
  for layout in "${layouts[@]}"; do
    out="$WORK/$method-$layout"
    case $layout in
      single | separate) cmd=("$SMEZO") ;;
      dp2) cmd=(timeout 300 mpirun --oversubscribe -np 2 "$SMEZO") ;;
      pp2) cmd=(timeout 300 mpirun --oversubscribe -np 2 "$SMEZO") ;;
    esac
    extra=(--method "$method" --out "$out")
    [ "$layout" = pp2 ] && extra+=(--pipeline-stages 2)
    [ "$layout" = separate ] && extra+=(--probes separate)
    if "${cmd[@]}" "${args[@]}" "${extra[@]}" > "$out.log" 2>&1; then
      printf '%s %s %s seed_log=%s weights=%s\n' "$LABEL" "$method" "$layout" \
        "$(sha256sum < "$out/seed_log.txt" | cut -c1-16)" \
        "$(sha256sum < "$out/checkpoint/model.safetensors" | cut -c1-16)"
    else
      printf '%s %s %s FAILED (see %s.log)\n' "$LABEL" "$method" "$layout" "$out"
      failed=$((failed + 1))
    fi
  done
done
exit $failed

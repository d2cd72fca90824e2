#!/usr/bin/env bash
# Determinism, kill/resume and replay of `smezo train` on one device, one line per check:
#   tools/checks/determinism_check.sh [--device cuda] [--dtype bf16] [--smezo build/smezo]
#                              [--model PATH] [--steps 200] [--kills 3] [--workdir DIR]
# 1. determinism   the same train command twice: identical seed logs and weights
# 2. kill-resume   --kills runs killed with SIGKILL at random logged steps, each resumed with
#                  --resume: identical to the uninterrupted run
# 3. replay        `smezo replay` on the same device rebuilds the run's weights bit for bit
# 4. cpu-replay    (cuda, f32 only) a CPU replay of the GPU run matches it bit for bit
# Exit status: the number of failed checks. Used by tools/gpu/gpu_check.sh; runs on the CPU too,
# and in CI on the emulated CUDA target (--smezo build-emu/smezo, LABEL=cuda-emulated/f32).
set -uo pipefail
cd "$(dirname "$0")/../.."
SMEZO=build/smezo DEVICE=cpu DTYPE="" MODEL="" STEPS=200 KILLS=3 WORK=""
while [ $# -gt 0 ]; do
  case "$1" in
    --smezo) SMEZO=$2; shift 2 ;;
    --device) DEVICE=$2; shift 2 ;;
    --dtype) DTYPE=$2; shift 2 ;;
    --model) MODEL=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --kills) KILLS=$2; shift 2 ;;
    --workdir) WORK=$2; shift 2 ;;
    *) echo "determinism_check.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
WORK=${WORK:-$(mktemp -d /tmp/smezo-determinism.XXXXXX)}
mkdir -p "$WORK"
label=${LABEL:-"$DEVICE/${DTYPE:-default}"}  # LABEL: e.g. say the device is emulated
failed=0
report() {  # name PASS|FAIL detail
  printf '%-12s %-14s %s  %s\n' "$1" "$label" "$2" "$3"
  [ "$2" = PASS ] || failed=$((failed + 1))
}

train_args=(train --device "$DEVICE" --task sst2 --steps "$STEPS" --batch 4 --max-len 48 --lr 2e-3
            --eval-every 0 --dev-examples 8 --test-examples 8 --flush-every 1 --seed 7)
[ -n "$DTYPE" ] && train_args+=(--dtype "$DTYPE")
[ -n "$MODEL" ] && train_args+=(--model "$MODEL")
BASE=${MODEL:-../shared/assets/models/stories260K.bin}
[ -n "${SMEZO_ASSETS:-}" ] && [ -z "$MODEL" ] && BASE=$SMEZO_ASSETS/models/stories260K.bin

same_run() {  # dir_a dir_b: seed logs and weights byte-identical
  cmp -s "$1/seed_log.txt" "$2/seed_log.txt" && cmp -s "$1/checkpoint/model.safetensors" "$2/checkpoint/model.safetensors"
}
records() {  # logged steps so far (0 before the log exists)
  local n
  n=$(grep -c '^[0-9]' "$1/seed_log.txt" 2>/dev/null)
  echo "${n:-0}"
}

# 1. determinism
for r in a b; do
  "$SMEZO" "${train_args[@]}" --out "$WORK/run_$r" > "$WORK/run_$r.log" 2>&1 \
    || { report determinism FAIL "run $r failed: $(tail -n 1 "$WORK/run_$r.log")"; exit 1; }
done
if same_run "$WORK/run_a" "$WORK/run_b"; then
  report determinism PASS "two runs of $STEPS steps: seed logs and weights identical"
else
  report determinism FAIL "two identical commands gave different seed logs or weights ($WORK)"
fi

# 2. kill -9 at random logged steps, then --resume
ok=0
for k in $(seq 1 "$KILLS"); do
  d="$WORK/kill_$k"
  target=$(( (RANDOM % (STEPS - 10)) + 5 ))
  "$SMEZO" "${train_args[@]}" --out "$d" > "$d.log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null && [ "$(records "$d")" -lt "$target" ]; do sleep 0.01; done
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  at=$(records "$d")
  "$SMEZO" "${train_args[@]}" --out "$d" --resume >> "$d.log" 2>&1 \
    || { echo "  resume $k failed: $(tail -n 1 "$d.log")"; continue; }
  if same_run "$WORK/run_a" "$d"; then ok=$((ok + 1)); else echo "  kill $k at step $at: differs ($d)"; fi
done
if [ "$ok" = "$KILLS" ]; then
  report kill-resume PASS "$KILLS kill -9 + --resume, each identical to the uninterrupted run"
else
  report kill-resume FAIL "$ok of $KILLS resumed runs identical"
fi

# 3. replay on the same device
if "$SMEZO" replay "$BASE" "$WORK/run_a/seed_log.txt" --device "$DEVICE" --out "$WORK/replay" \
     > "$WORK/replay.log" 2>&1 \
   && cmp -s "$WORK/replay/model.safetensors" "$WORK/run_a/checkpoint/model.safetensors"; then
  report replay PASS "smezo replay rebuilt the weights of $STEPS steps bit for bit"
else
  report replay FAIL "$(tail -n 1 "$WORK/replay.log")"
fi

# 4. a CPU replay of a GPU f32 run
if [ "$DEVICE" = cuda ] && [ "$DTYPE" = f32 ]; then
  if "$SMEZO" replay "$BASE" "$WORK/run_a/seed_log.txt" --device cpu --out "$WORK/replay_cpu" \
       > "$WORK/replay_cpu.log" 2>&1 \
     && cmp -s "$WORK/replay_cpu/model.safetensors" "$WORK/run_a/checkpoint/model.safetensors"; then
    report cpu-replay PASS "a CPU replay of the GPU run matched it bit for bit"
  else
    report cpu-replay FAIL "$(tail -n 1 "$WORK/replay_cpu.log")"
  fi
fi
exit "$failed"

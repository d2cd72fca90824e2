#!/usr/bin/env bash
# An emulated build's host object (no device code): the CPU build's own object when it is the
# same, else compiled (make emu; see the Makefile's emulated-target section).
#   tests/emu/host_object.sh CPU_OBJECT EMU_OBJECT COMPILE_COMMAND...
# The two builds compile host code with the same flags but for -DSMEZO_EMU and the CUDA headers
# (the emulator's in tests/emu/include, the toolkit's in the CPU build). So an object whose
# dependencies (CPU_OBJECT's .d file, written by -MMD) name no CUDA file, and whose files never
# include a CUDA header nor name SMEZO_WITH_CUDA or SMEZO_EMU outside a // comment line, is the
# same object: it is copied (and says so). Otherwise COMPILE_COMMAND runs. The files' text is
# read as well as their names because -MMD leaves out headers found in system folders: where the
# toolkit's headers are in /usr/include (Debian's package), the .d of a file including
# <cuda_runtime.h> does not name it.
set -euo pipefail
cpu=$1 emu=$2
shift 2
deps=${cpu%.o}.d
if [ -f "$deps" ]; then
  # the .d's prerequisites: the names after the first colon of each rule, continuation marks dropped
  files=$(sed -e 's/^[^:]*://' -e 's/\\$//' "$deps" | tr ' ' '\n' | grep -v '^$' | sort -u)
  cuda_marks='SMEZO_EMU|SMEZO_WITH_CUDA|#[[:space:]]*include[[:space:]]*<(cuda|cublas|curand|nvtx|nvToolsExt)'
  # whole-line // comments are skipped: a comment that names SMEZO_WITH_CUDA changes no object
  # (read into a variable, not piped: under pipefail an early-exiting grep -q could read as no
  # match); the text is read only when no dependency's name says cuda
  if ! grep -q cuda <<<"$files" && ! grep -qE "$cuda_marks" <<<"$(grep -hvsE '^[[:space:]]*//' $files || true)"; then
    echo "cp $cpu $emu  (host code without CUDA: the CPU build's object)"
    cp "$cpu" "$emu"
    rm -f "${emu%.o}.d"
    exit 0
  fi
fi
echo "$*"
exec "$@"

#!/usr/bin/env bash
# Everything owed to a GPU, run in short device calls, resumably. The work is done by
# tools/gpu/gpu_backlog.py (python3, standard library only); `tools/gpu_backlog.sh --help` says more.
#   tools/gpu_backlog.sh --plan                       items, estimates, schedule, what to carry
#   tools/gpu_backlog.sh prepare                      here: deps/ and carry/backlog/ for the calls
#   tools/gpu_backlog.sh next --budget-s 540          on the GPU machine, once per device call
#   DEVICE=cpu tools/gpu_backlog.sh next --dry-run    every job's commands on tiny settings
#   DEVICE=cuda-emu SMEZO_BIN=build-emu/smezo tools/gpu_backlog.sh next --dry-run   the same, emulated CUDA (before a lease)
exec python3 "$(dirname "$0")/gpu/gpu_backlog.py" "$@"

#!/usr/bin/env bash
# Runs a GoogleTest binary as SHARDS processes side by side (GTEST_TOTAL_SHARDS). The CPU suite
# keeps about one core busy, so on 2 cores two shards take about half the time (make test runs
# 2 unless TEST_SHARDS says otherwise; 1 where a GPU was found, whose tests time things).
#   tests/run_shards.sh BINARY SHARDS [gtest arguments...]
# Shard 0's output is shown as it runs, each other shard's when it ends; last comes one closing
# section for all shards: gtest's failed and skipped lists and the binary's line
# "LABEL: N passed, N failed, N skipped", summed (what tools/checks/ci_summary.py reads).
# Exit status: 1 if any shard failed.
set -uo pipefail
bin=$1 shards=$2
shift 2
if [ "$shards" -le 1 ]; then exec "$bin" "$@"; fi
logs=$(dirname "$bin")/test_logs
mkdir -p "$logs"
pids=()
for ((i = 1; i < shards; i++)); do
  GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i "$bin" "$@" > "$logs/shard$i.log" 2>&1 &
  pids+=($!)
done
echo "run_shards: $bin as $shards shards side by side (shard 0 shown as it runs; the others' logs in $logs/)"
GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=0 "$bin" "$@" 2>&1 | tee "$logs/shard0.log"
rc=${PIPESTATUS[0]}
for ((i = 1; i < shards; i++)); do
  wait "${pids[i - 1]}" || rc=1
  echo "== shard $i of $shards ($logs/shard$i.log)"
  cat "$logs/shard$i.log"
done
[ "$rc" = 0 ] || rc=1
# The summed closing section: each log's last closing line, and the names under gtest's
# "[  FAILED  ] N tests, listed below:" and "[  SKIPPED ] N tests, listed below:" headers.
awk -v shards="$shards" '
  FNR == 1 { list = "" }
  /^\[  (FAILED|SKIPPED) \] [0-9]+ tests?, listed below:/ { list = ($2 == "FAILED") ? "f" : "s"; next }
  list != "" && /^\[  (FAILED|SKIPPED) \] [^ ]+/ && !/ tests?, listed below/ {
    name = $0; sub(/^\[  (FAILED|SKIPPED) \] /, "", name)
    if (list == "f") failed[++nf] = name; else skipped[++ns] = name
    next
  }
  { list = "" }
  /^[A-Za-z_-]+: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped *$/ { last[FILENAME] = $0 }
  END {
    p = f = s = 0; label = ""
    for (file in last) {
      split(last[file], w, " "); label = w[1]; p += w[2]; f += w[4]; s += w[6]; n++
    }
    print "== all " shards " shards"
    if (nf) { print "[  FAILED  ] " nf " tests, listed below:"; for (i = 1; i <= nf; i++) print "[  FAILED  ] " failed[i] }
    if (ns) { print "[  SKIPPED ] " ns " tests, listed below:"; for (i = 1; i <= ns; i++) print "[  SKIPPED ] " skipped[i] }
    if (n < shards) { print "run_shards: " shards - n " shard(s) ended without a closing line (crashed?)"; exit 1 }
    print label " " p " passed, " f " failed, " s " skipped"
  }' "$logs"/shard*.log || rc=1
exit "$rc"

#!/usr/bin/env bash
# newcomer_check.sh: the README's commands run as a new user runs them, in a fresh clone.
#
#   tools/checks/newcomer_check.sh clone DIR   git clone this checkout's HEAD into DIR/main, with
#                                       DIR/shared -> this checkout's ../shared beside it (nothing
#                                       else: no build, no weights, no runs/)
#   tools/checks/newcomer_check.sh run 1       (in a clone) README command 1 exactly as README.md writes
#                                       it (tools/checks/readme_commands.py), then checks what it
#                                       documents: runs/demo/summary.json completed, the dev
#                                       accuracy after training above the zero-shot one it printed
#                                       (runs/demo.zero-shot.json), plot.svg and checkpoint/
#   tools/checks/newcomer_check.sh run 2       (in a clone) README command 2 exactly as written
#   tools/checks/newcomer_check.sh run examples
#                                       (in a clone, after command 1) every later ```sh block of
#                                       the README, then those of the docs pages
#                                       tools/checks/readme_commands.py lists (EXAMPLE_PAGES), in order,
#                                       as one `bash -e` script
#   tools/checks/newcomer_check.sh check-demo [OUT]
#                                       only the checks of run 1, on the demo's run folder OUT
#                                       (default runs/demo) and OUT.zero-shot.json
# Each run prints its seconds and exits non-zero when the command or a check fails. .ci/run
# runs clone, run 1, run 2 and run examples, then its other phases in the same clone.
set -euo pipefail

die() { echo "newcomer_check: error: $*" >&2; exit 1; }

clone() {
  local dest=$1 top shared
  top=$(git -C "$(dirname "$0")/../.." rev-parse --show-toplevel) || die "not in a git checkout"
  shared=$(cd "$top/.." && pwd)/shared
  [ -d "$shared/assets" ] || die "no $shared/assets beside the checkout: the README's commands need ../shared"
  [ ! -e "$dest/main" ] || die "$dest/main exists: give an empty folder"
  mkdir -p "$dest"
  git clone --quiet --no-hardlinks "$top" "$dest/main"
  ln -sfn "$shared" "$dest/shared"
  echo "newcomer_check: cloned $(git -C "$dest/main" rev-parse --short=12 HEAD) into $dest/main (../shared -> $shared)"
}

# The demo's documented outputs (README, "Run 1"): fails naming what is missing or wrong.
check_demo() {  # [OUT]: the demo's run folder (default runs/demo)
  python3 - "${1:-runs/demo}" <<'EOF'
import json, os, sys
out = sys.argv[1]
def fail(msg):
    sys.exit("newcomer_check: README command 1: " + msg)
need = [out + ".zero-shot.json"] + [os.path.join(out, f) for f in (
        "summary.json", "plot.svg", "metrics.jsonl", "seed_log.txt", "checkpoint/config.json")]
for p in need:
    if not os.path.isfile(p):
        fail(p + " was not written")
zero = json.load(open(out + ".zero-shot.json"))["accuracy"]
s = json.load(open(os.path.join(out, "summary.json")))
if s.get("status") != "completed":
    fail("%s/summary.json status is %r, not 'completed'" % (out, s.get("status")))
for key in ("steps", "best_dev_acc", "test_acc"):
    if not isinstance(s.get(key), (int, float)):
        fail("%s/summary.json has no number %r (%r)" % (out, key, s.get(key)))
dev = s.get("final_dev_acc")
if not isinstance(dev, (int, float)) or not dev > zero:
    fail("dev accuracy after training %r is not above the zero-shot %r" % (dev, zero))
print("newcomer_check: README command 1: zero-shot dev accuracy %.4f -> %.4f after %d steps "
      "(best %.4f, test %.4f); summary.json completed, plot.svg, checkpoint/ written"
      % (zero, dev, s["steps"], s["best_dev_acc"], s["test_acc"]))
EOF
}

run() {
  local which=$1 cmd start=$SECONDS label="README command $1"
  [ "$which" != examples ] || label="the README's examples"
  [ -f README.md ] && [ -d .git ] || die "run from the top of a clone (tools/checks/newcomer_check.sh clone DIR)"
  if [ "$which" = examples ]; then
    cmd=$(python3 tools/checks/readme_commands.py examples)
    echo "newcomer_check: the README's examples (every later \`\`\`sh block, then the docs pages'):"
    printf '%s\n' "$cmd" | sed 's/^/  | /'
    bash -e -x -c "$cmd"
  else
    cmd=$(python3 tools/checks/readme_commands.py "$which")
    echo "newcomer_check: README command $which, as written: $cmd"
    bash -c "$cmd"
  fi
  [ "$which" != 1 ] || check_demo
  echo "newcomer_check: $label passed in $((SECONDS - start)) s"
}

case "${1:-}" in
  clone) [ $# = 2 ] || die "usage: tools/checks/newcomer_check.sh clone DIR"; clone "$2" ;;
  run) [ $# = 2 ] || die "usage: tools/checks/newcomer_check.sh run 1|2|examples"; run "$2" ;;
  check-demo) [ $# -le 2 ] || die "usage: tools/checks/newcomer_check.sh check-demo [OUT]"; check_demo "${2:-}" ;;
  *) echo "usage: tools/checks/newcomer_check.sh clone DIR | run 1|2|examples | check-demo [OUT]" >&2; exit 2 ;;
esac

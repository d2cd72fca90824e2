#!/usr/bin/env bash
# ci_run_selftest.sh: runs .ci/run's own logic (phases, lanes, the EXIT trap and the closing
# summary) in seconds, on a scratch tree where every command it calls is a stub, so a change to
# .ci/run can be checked without the hour of a real run.
#
#   tools/checks/ci_run_selftest.sh [FAIL]
#
# The scratch tree holds a copy of .ci/run and tools/checks/ci_summary.py, a clone folder whose
# newcomer_check.sh, own_data_demo.sh, determinism_check.sh, kernel_resources.py and
# tools/oracles/gguf_export_ci.sh are stubs, and a `make` stub first on PATH. Each stub prints what
# its real command's log would end with (a gtest closing line "LABEL: N passed, 0 failed, 0
# skipped", a determinism "PASS" line) and exits 0, unless its command line contains FAIL (a
# planted failure), then it prints a failure and exits 1. The output is .ci/run's; the exit status
# is .ci/run's.
#   FAIL="EMU_SCHED=rev"   a run in a lane fails: every phase still runs, rc 1
#   FAIL="BUILD=build-asan" a build that later phases need fails: CI ends there, rc 1
#   FAIL="run 2"           README command 2 fails (its log has a failed test): CI goes on, rc 1
# tests/test_ci_run.cpp runs these cases and checks the summary line and the phases run.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
scratch=$(mktemp -d /tmp/smezo-ci-selftest.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
export CI_STUB_FAIL=${1:-}

mkdir -p "$scratch/checkout/.ci" "$scratch/checkout/tools/checks" "$scratch/checkout/tests" \
         "$scratch/newcomer/main/tools/checks" "$scratch/bin"
cp "$top/.ci/run" "$scratch/checkout/.ci/run"
cp "$top/tools/checks/ci_summary.py" "$scratch/checkout/tools/checks/"
echo "# no test skips in the stubs' logs" > "$scratch/checkout/tests/ci_expected_skips.txt"

# stub BODY...: a script that fails when its command line holds $CI_STUB_FAIL, else runs BODY.
stub() {
  local path=$1
  shift
  {
    echo '#!/usr/bin/env bash'
    echo 'if [ -n "$CI_STUB_FAIL" ] && [[ "$0 $*" == *"$CI_STUB_FAIL"* ]]; then'
    echo '  echo "stub: $(basename "$0") $* FAILS (planted)"; echo "stub: 0 passed, 1 failed, 0 skipped"; exit 1'
    echo 'fi'
    echo "$@"
  } > "$path"
  chmod +x "$path"
}
stub "$scratch/bin/make" 'case " $* " in
  *" emu-test "*) echo "emulated: 3 passed, 0 failed, 0 skipped";;
  *" san-test "*) echo "smezo_tests: 5 passed, 0 failed, 0 skipped"; echo "san-test: ✓ no sanitizer report";;
  *) echo "stub: make $*";;
esac'
stub "$scratch/newcomer/main/tools/checks/newcomer_check.sh" '[ "$2" = 2 ] && echo "smezo_tests: 7 passed, 0 failed, 0 skipped"; true'
stub "$scratch/newcomer/main/tools/checks/determinism_check.sh" 'echo "determinism  cuda-emulated/f32 PASS  stub"'
cat > "$scratch/newcomer/main/tools/checks/kernel_resources.py" <<'EOF'
import os, sys
if os.environ.get("CI_STUB_FAIL") and os.environ["CI_STUB_FAIL"] in " ".join(sys.argv):
    sys.exit("stub: kernel_resources.py FAILS (planted)")
print("kernel_resources: stub")
EOF
stub "$scratch/newcomer/main/tools/own_data_demo.sh" 'echo "own_data_demo: stub"'
mkdir -p "$scratch/newcomer/main/tools/oracles"
stub "$scratch/newcomer/main/tools/oracles/gguf_export_ci.sh" 'echo "gguf_export_ci: stub"'

rc=0
PATH="$scratch/bin:$PATH" CI_SKIP_PREAMBLE=1 CI_NEWCOMER="$scratch/newcomer" \
  bash "$scratch/checkout/.ci/run" || rc=$?
exit $rc

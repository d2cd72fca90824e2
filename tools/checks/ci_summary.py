#!/usr/bin/env python3
"""What CI ran, in one line: the closing counts of every test run of .ci/run, summed, and the
tests each run skipped checked against the committed list tests/ci_expected_skips.txt.

    tools/checks/ci_summary.py [--expected tests/ci_expected_skips.txt] RUN=LOG [RUN=LOG ...]

Each LOG is the output of one run: a GoogleTest binary ("LABEL: N passed, N failed, N skipped"
closing line, then gtest's "[  SKIPPED ] Suite.Test" list), or tools/checks/determinism_check.sh
("NAME LABEL PASS|FAIL ..." lines, counted as passed/failed). For a gtest run the set of
skipped tests must equal the lines "RUN Suite.Test" of the expected file: a test that starts
to skip (a lost fixture, a failed download, a broken device check) or stops skipping fails CI
until the list is updated in the same commit. A line "RUN? Suite.Test" names a test that may
skip or run there (it depends on the machine, e.g. a CPU without AVX-512): either is fine, and
the line says which it did. Prints one line per run, the differences, and
last the plain line "ci: N passed, N failed, N skipped". Exit status 1 on any failed test,
any skip difference or an unreadable log.
"""
import argparse
import re
import sys

CLOSING = re.compile(r"^(?:[\w-]+: )?(\d+) passed, (\d+) failed, (\d+) skipped\s*$")
SKIP_HEADER = re.compile(r"^\[  SKIPPED \] \d+ tests?, listed below:")
SKIP_LINE = re.compile(r"^\[  SKIPPED \] (\S+)\s*$")
CHECK_LINE = re.compile(r"^\S+\s+\S+\s+(PASS|FAIL)\s")


def read_gtest(text):
    """(passed, failed, skipped, set of skipped names) from the last closing line and list."""
    counts = None
    for line in text.splitlines():
        m = CLOSING.match(line)
        if m:
            counts = tuple(int(g) for g in m.groups())
    if counts is None:
        return None
    skipped, lines = set(), text.splitlines()
    starts = [i for i, line in enumerate(lines) if SKIP_HEADER.match(line)]
    if starts:
        for line in lines[starts[-1] + 1:]:
            m = SKIP_LINE.match(line)
            if not m:
                break
            skipped.add(m.group(1))
    return counts + (skipped,)


def read_checks(text):
    results = [m.group(1) for m in map(CHECK_LINE.match, text.splitlines()) if m]
    if not results:
        return None
    return results.count("PASS"), results.count("FAIL"), 0, None


def read_expected(path):
    """({run: tests that must skip}, {run: tests that may skip})."""
    expected, optional = {}, {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2:
                sys.exit(f"{path}:{n}: expected 'RUN Suite.Test' or 'RUN? Suite.Test', got {line!r}")
            if parts[0].endswith("?"):
                optional.setdefault(parts[0][:-1], set()).add(parts[1])
            else:
                expected.setdefault(parts[0], set()).add(parts[1])
    return expected, optional


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--expected", default="tests/ci_expected_skips.txt")
    ap.add_argument("runs", nargs="+", metavar="RUN=LOG")
    args = ap.parse_args()
    expected, optional = read_expected(args.expected)
    total = [0, 0, 0]
    bad = False
    for spec in args.runs:
        run, _, path = spec.partition("=")
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as e:
            print(f"ci: {run}: cannot read {path}: {e}")
            bad = True
            continue
        got = read_gtest(text) or read_checks(text)
        if got is None:
            print(f"ci: {run}: no closing 'N passed, N failed, N skipped' line and no check lines in {path}")
            bad = True
            continue
        passed, failed, skipped, names = got
        total = [total[0] + passed, total[1] + failed, total[2] + skipped]
        print(f"ci: {run}: {passed} passed, {failed} failed, {skipped} skipped")
        bad |= failed > 0
        if names is None:
            continue
        want, may = expected.get(run, set()), optional.get(run, set())
        for name in sorted(may):
            print(f"ci: {run}: {name} {'skipped' if name in names else 'ran'} (it may skip on this machine)")
        names = names - may
        for name in sorted(names - want):
            print(f"ci: {run}: {name} SKIPPED but is not in {args.expected} (a test that stopped running?)")
            bad = True
        for name in sorted(want - names):
            print(f"ci: {run}: {name} is listed in {args.expected} but did not skip (update the list)")
            bad = True
    print(f"ci: {total[0]} passed, {total[1]} failed, {total[2]} skipped")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""Markdown table rows from `smezo bench --shape ... --profile` JSON lines.

Usage: build/smezo bench --shape smollm2-135m --device cpu --profile ... > bench.jsonl
       python3 tools/gpu/profile_rows.py --label "before (4fc3b59)" bench.jsonl [more.jsonl ...]

One row per JSON line that has a "profile" object: label, phase (probes), T, the step's ms,
then GEMM, noise, attention and rest as ms and share of the step; --header prints the table's
head first. Lines without a profile (a run without --profile) are skipped; none at all is an
error (exit status 1).
"""
import argparse
import json
import sys


def rows(lines, label):
    out = []
    for line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue
        j = json.loads(line)
        p = j.get("profile")
        if p is None:
            continue
        step = p["step_ms"]
        parts = " | ".join(f"{p[k]:.1f} ({100 * p[k] / step:.1f}%)" if step > 0 else f"{p[k]:.1f}"
                           for k in ("gemm_ms", "noise_ms", "attention_ms", "rest_ms"))
        phase = j["phase"] + (f" ({j['probes']})" if "probes" in j else "")
        out.append(f"| {label} | {j['shape']} b{j['batch']} | {phase} | {j['seq']} | {step:.1f} | {parts} |")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", help="JSON lines files (default: stdin)")
    ap.add_argument("--label", default="", help="the first column, e.g. before (commit)")
    ap.add_argument("--header", action="store_true", help="print the table's head first")
    a = ap.parse_args()
    lines = []
    for f in a.files or ["-"]:
        lines += (sys.stdin if f == "-" else open(f)).read().splitlines()
    found = rows(lines, a.label)
    if not found:
        print("profile_rows: no JSON line with a \"profile\" (run the bench with --profile)", file=sys.stderr)
        return 1
    if a.header:
        print("| run | shape | phase | T | step ms | GEMM ms (share) | noise ms | attention ms | rest ms |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())

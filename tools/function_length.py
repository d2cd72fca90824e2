"""Checks that no function in the given folders is longer than a limit (issue 23: the trainer in
phases; no function in src/train over about 80 lines).

Usage: python3 tools/function_length.py [--limit N] [--root DIR] FOLDER...

A function is counted from the first line of its signature (a line that starts in column 0,
after the previous top-level item) to its closing brace in column 0, in the .cpp/.cu/.h files
of each FOLDER (relative to --root). House style (docs/ARCHITECTURE.md, "Principles") puts both there; lambdas
and class bodies count towards the function or item that holds them. Prints one line per
function over the limit, then a count; exit status 1 when there is one.
"""
import argparse
import os
import sys


def long_functions(path, limit):
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    item_start = None  # first column-0 line of the current top-level item
    for i, line in enumerate(lines):
        top = line[:1] not in ("", " ", "\t")
        if not top or line.startswith(("//", "#")):
            continue
        if line.startswith("}"):
            closes_function = "namespace" not in line and not line.startswith("};")
            if closes_function and item_start is not None and i - item_start + 1 > limit:
                out.append((item_start + 1, i - item_start + 1, lines[item_start].strip()))
            item_start = None
        elif line.startswith("namespace") or line.rstrip().endswith((";", "}")):
            item_start = None  # a namespace, a declaration, a one-line definition
        elif item_start is None:
            item_start = i
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=80)
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("folders", nargs="+")
    args = ap.parse_args()
    found = 0
    for folder in args.folders:
        base = os.path.join(args.root, folder)
        for name in sorted(os.listdir(base)):
            if not name.endswith((".cpp", ".cu", ".h")):
                continue
            for line, length, signature in long_functions(os.path.join(base, name), args.limit):
                print(f"{folder}/{name}:{line}: {length} lines (limit {args.limit}): {signature[:100]}")
                found += 1
    print(f"function_length: {found} function(s) over {args.limit} lines in {', '.join(args.folders)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

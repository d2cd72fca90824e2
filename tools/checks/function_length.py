"""Checks that no function in the given folders (and their subfolders) is longer than a limit
(code in phases; no function in src/ or cuda/ over about 80 lines).

Usage: python3 tools/checks/function_length.py [--limit N] [--root DIR] [--allow FILE] FOLDER...

A function is counted from the first line of its signature (a line that starts in column 0,
after the previous top-level item) to its closing brace in column 0, in the .cpp/.cu/.cuh/.h
files under each FOLDER (relative to --root). House style (docs/ARCHITECTURE.md, "Principles") puts both there;
lambdas and class bodies count towards the function or item that holds them.

The allowlist (--allow, default <root>/tools/checks/function_length_allow.txt) names the functions
that may stay longer, one a line: `path:function  reason` (path relative to --root, function
as written before its parameter list, e.g. `cuda/linear.cu:CudaBackend::linear`; '#' starts a
comment). A line without a reason, or one naming no function over the limit in the folders
checked, is an error, so the list only ever holds what still needs it.

Prints one line per function over the limit (allowed ones with their reason), then a count of
those not allowed; exit status 1 when there is one or the allowlist has an error.
"""
import argparse
import os
import re
import sys

SOURCE_ENDINGS = (".cpp", ".cu", ".cuh", ".h")


def function_name(lines, start):
    """The name before the parameter list of the item starting at lines[start]:
    `void CudaBackend::linear(` gives CudaBackend::linear; template<...> lines and
    __launch_bounds__(...) are skipped."""
    text = ""
    for line in lines[start:start + 10]:
        if not text and line.startswith("template"):
            continue
        text = re.sub(r"__launch_bounds__\s*\([^()]*\)", "", text + " " + line)
        if "(" in text:
            break
    m = re.search(r"([~\w:]+)\s*\(", text)
    return m.group(1) if m else "?"


def long_functions(path, limit):
    """(first line, length, function name, signature) of every function over limit lines."""
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
                out.append((item_start + 1, i - item_start + 1, function_name(lines, item_start),
                            lines[item_start].strip()))
            item_start = None
        elif line.startswith("namespace") or line.rstrip().endswith((";", "}")):
            item_start = None  # a namespace, a declaration, a one-line definition
        elif item_start is None:
            item_start = i
    return out


def source_files(root, folder):
    """The source files under root/folder, subfolders included, as paths relative to root."""
    found = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(SOURCE_ENDINGS):
                found.append(os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/"))
    return found


def read_allowlist(path, shown):
    """{'path:function': (line number, reason)}, and the error lines (naming the file `shown`)."""
    allowed, errors = {}, []
    if not os.path.exists(path):
        return allowed, errors
    for n, raw in enumerate(open(path, encoding="utf-8").read().split("\n"), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, reason = (line.split(None, 1) + [""])[:2]
        if ":" not in key or not reason.strip():
            errors.append(f"{shown}:{n}: expected `path:function  reason`, got: {raw.strip()}")
        else:
            allowed[key] = (n, reason.strip())
    return allowed, errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=80)
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    ap.add_argument("--allow", help="the allowlist (default <root>/tools/checks/function_length_allow.txt)")
    ap.add_argument("folders", nargs="+")
    args = ap.parse_args()
    allow_path = args.allow or os.path.join(args.root, "tools", "checks", "function_length_allow.txt")
    shown = os.path.relpath(allow_path, args.root)
    shown = allow_path if shown.startswith("..") else shown
    allowed, errors = read_allowlist(allow_path, shown)
    used, checked, found = set(), set(), 0
    for folder in args.folders:
        for rel in source_files(args.root, folder):
            checked.add(rel)
            for line, length, name, signature in long_functions(os.path.join(args.root, rel), args.limit):
                key = f"{rel}:{name}"
                where = f"{rel}:{line}: {length} lines (limit {args.limit}): {signature[:100]}"
                if key in allowed:
                    used.add(key)
                    print(f"{where} (allowed: {allowed[key][1]})")
                else:
                    print(where)
                    found += 1
    for key, (n, _) in sorted(allowed.items(), key=lambda kv: kv[1][0]):
        if key.split(":", 1)[0] in checked and key not in used:
            errors.append(f"{shown}:{n}: {key} is not a function over {args.limit} lines: remove the line")
    for e in errors:
        print(f"function_length: {e}")
    print(f"function_length: {found} function(s) over {args.limit} lines in {', '.join(args.folders)}")
    return 1 if found or errors else 0


if __name__ == "__main__":
    sys.exit(main())

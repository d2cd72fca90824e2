"""Checks the include direction between the top-level folders (issue 23, part 5).

Usage: python3 tools/include_check.py [--root DIR]

Each folder of the product may include, with #include "folder/...", only the folders its row
in ALLOWED names (its own always). The rows are the layering README.md's "Layout" describes:
common and the public API at the bottom, then the backend interface, the two backends, the
model, and the run-time layers above it, the command line on top. Folders without a row
(tests, tools, docs) may include anything. Relative includes ("x.h", "../cuda/x.h") are
resolved against the including file first. Prints one line per include against the
direction, then a count; exit status 1 when there is one.
"""
import argparse
import os
import re
import sys

# folder -> the folders it may include (besides itself). "include" is include/smezo ("smezo/").
ALLOWED = {
    "src/common": {"smezo"},
    "include/smezo": {"smezo"},
    "src/backend": {"src/common", "smezo"},
    "src/cpu": {"src/common", "smezo", "src/backend"},
    "cuda": {"src/common", "smezo", "src/backend"},
    "src/run": {"src/common", "smezo"},
    "src/dist": {"src/common", "smezo"},
    "src/tokenizer": {"src/common", "smezo", "src/formats"},
    # the model asks the CUDA backend's plan (cuda/cuda_plan.h, host only) for its estimate
    "src/formats": {"src/common", "smezo", "src/backend"},
    "src/model": {"src/common", "smezo", "src/backend", "src/formats", "cuda/cuda_plan.h"},
    "src/tasks": {"src/common", "smezo", "src/formats", "src/tokenizer"},
    "src/setup": {"src/common", "smezo", "src/backend", "src/cpu", "cuda", "src/formats", "src/model",
                  "src/tokenizer"},
    "src/train": {"src/common", "smezo", "src/backend", "src/dist", "src/formats", "src/model", "src/run",
                  "src/setup", "src/tasks", "src/tokenizer"},
    "bench": {"src/common", "smezo", "src/backend", "src/cpu", "cuda", "src/formats", "src/model", "src/run",
              "src/setup", "src/tasks", "src/tokenizer", "src/train"},
    "src/cli": {"src/common", "smezo", "src/backend", "src/cpu", "cuda", "src/dist", "src/formats", "src/model",
                "src/run", "src/setup", "src/tasks", "src/tokenizer", "src/train", "bench"},
}
SKIP = ("cuda/emu/",)  # the emulator is a tool of its own (cuda/emu/README.md)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
EXTS = (".h", ".cpp", ".cu", ".cuh")


def folder_of(path):
    """The ALLOWED row a repository path belongs to, or None."""
    best = None
    for folder in ALLOWED:
        if path == folder or path.startswith(folder + "/"):
            if best is None or len(folder) > len(best):
                best = folder
    return best


def resolve(root, including, name):
    """The repository path an include names: beside the file, else from -I. -Iinclude -Isrc."""
    here = os.path.normpath(os.path.join(os.path.dirname(including), name))
    if os.path.exists(os.path.join(root, here)):
        return here
    for base in ("", "include", "src"):
        p = os.path.normpath(os.path.join(base, name))
        if os.path.exists(os.path.join(root, p)):
            return p
    return None  # a system or generated header


def allowed(target, rules):
    for rule in rules:
        if rule == "smezo":
            rule = "include/smezo"
        if target == rule or target.startswith(rule + "/"):
            return True
    return False


def violations(root):
    found = []
    for top in ("src", "cuda", "bench", "include"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith(EXTS):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), root)
                if path.startswith(SKIP):
                    continue
                folder = folder_of(path)
                if folder is None:
                    continue
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for m in INCLUDE.finditer(text):
                    target = resolve(root, path, m.group(1))
                    if target is None or folder_of(target) == folder:
                        continue
                    if not allowed(target, ALLOWED[folder]):
                        line = text.count("\n", 0, m.start()) + 1
                        found.append(f"{path}:{line}: includes {target} ({folder} may include: "
                                     f"{', '.join(sorted(ALLOWED[folder])) or 'only itself'})")
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    args = ap.parse_args()
    found = violations(os.path.abspath(args.root))
    for line in found:
        print(line)
    print(f"include_check: {len(found)} include(s) against the direction")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

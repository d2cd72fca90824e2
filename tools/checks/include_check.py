"""Checks that the product's folders include each other in one strict order.

Usage: python3 tools/checks/include_check.py [--root DIR] [--print-order]

Every product folder has a rank; a folder may include (#include "folder/...") only folders of
lower rank, and itself. So no two folders include each other and no longer loop can form.
The order, bottom to top (--print-order prints it; ORDER below is read from these lines):
   1  include/smezo   the public API (included as "smezo/...")
   2  src/common      errors, the noise spec, half floats, mapped files, checked sizes
   3  src/run         a run's folder: progress, metrics, seed log, plot, summary
   4  src/dist        MPI ranks
   5  src/backend     the op interface: Backend, Tensor, dtypes, a backend's memory plan
   6  src/formats     file containers: safetensors, GGUF, JSON
   7  src/tokenizer
   8  src/tasks
   9  src/model       the transformer over backend ops, its readers and its memory estimate
  10  src/cpu         the CPU backend: above the model, which knows only backend/
  11  cuda            the CUDA backend (its emulator is a test tool: tests/emu/)
  12  src/setup       opening a model: backend, weights, tokenizer, dtype
  13  src/train
  14  bench
  15  src/cli         the command line; nothing includes it
A folder under src/ without a rank is itself an error. Tests, tools and docs may include
anything. Relative includes ("x.h", "../cuda/x.h") are resolved against the including file
first. Prints one line per include against the order, then a count; exit status 1 when there
is one.
"""
import argparse
import os
import re
import sys

ORDER = [m.group(2) for m in re.finditer(r"^ +(\d+) +(\S+)", __doc__, re.M)]
RANK = {folder: rank for rank, folder in enumerate(ORDER, 1)}
SKIP = ()  # folders never checked (none: tests/, with the emulator, has no rank and may include anything)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
EXTS = (".h", ".cpp", ".cu", ".cuh")


def folder_of(path):
    """The ranked folder a repository path belongs to, or None."""
    for folder in ORDER:
        if path == folder or path.startswith(folder + "/"):
            return folder
    return None


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


def product_files(root):
    for top in ("src", "cuda", "bench", "include"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                path = os.path.relpath(os.path.join(dirpath, name), root)
                if name.endswith(EXTS) and not path.startswith(SKIP):
                    yield path


def violations(root):
    found = []
    for path in product_files(root):
        folder = folder_of(path)
        if folder is None:
            if path.startswith("src/"):
                found.append(f"{path}: {os.path.dirname(path)} has no rank in include_check.py's order")
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for m in INCLUDE.finditer(text):
            target = resolve(root, path, m.group(1))
            other = folder_of(target) if target else None
            if other is not None and RANK[other] > RANK[folder]:
                line = text.count("\n", 0, m.start()) + 1
                found.append(f"{path}:{line}: includes {target}: {folder} (rank {RANK[folder]}) may include "
                             f"only lower ranks, {other} is rank {RANK[other]}")
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    ap.add_argument("--print-order", action="store_true", help="print the folders by rank, bottom first")
    args = ap.parse_args()
    if args.print_order:
        for folder in ORDER:
            print(f"{RANK[folder]:2d} {folder}")
        return 0
    found = violations(os.path.abspath(args.root))
    for line in found:
        print(line)
    print(f"include_check: {len(found)} include(s) against the order")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

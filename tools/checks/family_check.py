"""Checks that no code outside the model-family descriptors asks which family a model is.

Usage: python3 tools/checks/family_check.py [--root DIR]

A family is data (src/model/family.h): its descriptor file src/model/family_<name>.cpp holds its
names, config reading and writing and tensor list, and everything else reads ModelConfig's
feature fields (qkv_bias, qk_norm, position, rope_scaling, ...). In src/, cuda/, bench/ and
include/ (the descriptors and the registry family.cpp excepted) it fails on:
  - the old Architecture enum or its values (ARCH_LLAMA, ARCH_MISTRAL, ARCH_OPT, ...);
  - a comparison of a config's family (`.family ==`, `.family !=`, `family_of(...).name ==`);
  - a family's name, model_type or GGUF architecture compared as a string literal (`== "opt"`,
    `!= "qwen2"`, ... for every name the descriptors declare) on a line that speaks of a
    model_type, an architecture, an arch or a family (tokenizer.ggml.model "llama" is not one).
Prints one line per finding, then a count; exit status 1 when there is one.
"""
import argparse
import os
import re
import sys

TOPS = ("src", "cuda", "bench", "include")
EXTS = (".h", ".cpp", ".cu", ".cuh")
DESCRIPTOR = re.compile(r"^src/model/family(_[a-z0-9_]+)?\.(cpp|h)$")
ARCH = re.compile(r"\b(Architecture|ARCH_[A-Z0-9_]+)\b")
ABOUT_FAMILY = re.compile(r"model_type|architecture|\barch|family", re.I)
FAMILY_COMPARE = re.compile(r"(\.family|family_of\([^)]*\)\.name|->name)\s*[!=]=|[!=]=\s*[\w.>-]*\.family\b")


def family_names(root):
    """The quoted names of every descriptor: `extern const FamilyDescriptor k..Family = {"llama", ...`."""
    names = set()
    folder = os.path.join(root, "src", "model")
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if not DESCRIPTOR.match("src/model/" + name):
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            for m in re.finditer(r"FamilyDescriptor\s+\w+\s*=\s*\{([^;]*)\};", f.read(), re.S):
                names.update(n for n in re.findall(r'"([^"]+)"', m.group(1)) if re.fullmatch(r"[a-z0-9_]+", n))
    return names


def findings(root):
    names = family_names(root)
    alternatives = "|".join(map(re.escape, sorted(names))) or "$^"
    literal = re.compile(r'[!=]=\s*"(?:%s)"|"(?:%s)"\s*[!=]=' % (alternatives, alternatives))
    out = []
    for top in TOPS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                path = os.path.relpath(os.path.join(dirpath, name), root)
                if not name.endswith(EXTS) or DESCRIPTOR.match(path):
                    continue
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        code = line.split("//", 1)[0]
                        for rx, what in ((ARCH, "the Architecture enum"), (FAMILY_COMPARE, "a family comparison"),
                                         (literal, "a family name compared as a string")):
                            if rx is literal and not ABOUT_FAMILY.search(code):
                                continue
                            if rx.search(code):
                                out.append(f"{path}:{n}: {what} outside the descriptors: {line.strip()}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    args = ap.parse_args()
    found = findings(os.path.normpath(args.root))
    for line in found:
        print(line)
    print(f"family_check: {len(found)} family switch(es) outside src/model/family*.cpp")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

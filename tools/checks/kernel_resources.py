"""The resources of every production CUDA kernel, as ptxas reports them, against a committed table:
registers, stack frame and spill bytes per kernel on the target architecture.

Usage: python3 tools/checks/kernel_resources.py [--check | --update] [--table FILE] [--ptxas-log FILE]

Compiles each cuda/*.cu for the device only (nvcc -cubin -arch=sm_ARCH -Xptxas -v, the
Makefile's -O3 and include folders), reads ptxas's "Function properties" lines, and names each
kernel by its demangled name without the parameter list (anonymous-namespace hashes dropped), so
the names do not change from build to build. --ptxas-log reads a saved ptxas log instead
(one "== FILE" line before each file's output), for tests.

--check (the default): prints the table as measured and fails (exit 1) when a kernel has more
stack or spill bytes than the table says, a kernel is not in the table, or the table names a
kernel that is no longer built. Register counts that differ are printed, not failed. --update
writes the measured table to --table (default cuda/kernel_resources.txt): do that, and commit it,
when a change to a kernel's resources is intended.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
HEADER = ("# Resources of the production CUDA kernels on sm_{arch}, from ptxas -v\n"
          "# (tools/checks/kernel_resources.py --update writes it; CI checks it).\n"
          "# file  kernel  registers  stack_bytes  spill_store_bytes  spill_load_bytes\n")


def demangle(names):
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True)
    return out.stdout.split("\n")[: len(names)]


def short_name(demangled):
    name = demangled.replace("(anonymous namespace)::", "").replace("smezo::", "")
    if name.startswith("void "):  # a template's demangled name starts with its return type
        name = name[5:]
    depth = 0
    for i, ch in enumerate(name):  # cut the parameter list: the first '(' outside template brackets
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            return name[:i]
    return name


def parse_log(text, source):
    """ptxas -v output of one file -> {kernel: (registers, stack, spill stores, spill loads)}."""
    rows, mangled, order = {}, None, []
    for line in text.split("\n"):
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            mangled = m.group(1)
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and mangled:
            rows[mangled] = [None, int(m.group(1)), int(m.group(2)), int(m.group(3))]
            continue
        m = re.search(r"Compiling entry function '(\S+)'", line)
        if m:
            order.append(m.group(1))
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and mangled in rows:
            rows[mangled][0] = int(m.group(1))
    entries = [k for k in order if k in rows]  # kernels only, not device functions
    names = demangle(entries) if entries else []
    return {(source, short_name(n)): tuple(rows[k]) for k, n in zip(entries, names)}


def measure(arch):
    table = {}
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted(glob.glob(os.path.join(ROOT, "cuda", "*.cu"))):
            cmd = ["nvcc", "-std=c++17", "-O3", "-I" + ROOT, "-I" + os.path.join(ROOT, "include"),
                   "-I" + os.path.join(ROOT, "src"), f"-arch=sm_{arch}", "-cubin", "-Xptxas", "-v",
                   "-o", os.path.join(tmp, "k.cubin"), path]
            out = subprocess.run(cmd, capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"kernel_resources: nvcc failed on {path}:\n{out.stderr}")
            table.update(parse_log(out.stderr + out.stdout, os.path.basename(path)))
    return table


def read_log(path):
    table, name, chunk = {}, None, []
    for line in open(path, encoding="utf-8").read().split("\n") + ["== end"]:
        if line.startswith("== "):
            if name:
                table.update(parse_log("\n".join(chunk), name))
            name, chunk = line[3:].strip(), []
        else:
            chunk.append(line)
    return table


def read_table(path):
    table = {}
    for line in open(path, encoding="utf-8"):
        if line.startswith("#") or not line.strip():
            continue
        f = line.rstrip("\n").split("\t")
        table[(f[0], f[1])] = tuple(int(x) for x in f[2:6])
    return table


def format_table(table, arch):
    lines = [HEADER.format(arch=arch)]
    for (source, kernel), r in sorted(table.items()):
        lines.append("\t".join([source, kernel] + [str(x) for x in r]) + "\n")
    return "".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--table", default=os.path.join(ROOT, "cuda", "kernel_resources.txt"))
    ap.add_argument("--ptxas-log")
    ap.add_argument("--arch", default="90a")
    args = ap.parse_args()
    measured = read_log(args.ptxas_log) if args.ptxas_log else measure(args.arch)
    if args.update:
        with open(args.table, "w", encoding="utf-8") as f:
            f.write(format_table(measured, args.arch))
        print(f"kernel_resources: wrote {len(measured)} kernels to {args.table}")
        return 0
    recorded = read_table(args.table) if os.path.exists(args.table) else {}
    problems = []
    for key, (regs, stack, st, ld) in sorted(measured.items()):
        name = f"{key[0]} {key[1]}"
        if key not in recorded:
            problems.append(f"{name}: not in the table ({regs} registers, {stack} B stack, {st}/{ld} B spills)")
            continue
        r_regs, r_stack, r_st, r_ld = recorded[key]
        if stack > r_stack or st > r_st or ld > r_ld:
            problems.append(f"{name}: {stack} B stack, {st}/{ld} B spill stores/loads; the table says "
                            f"{r_stack} B, {r_st}/{r_ld} B")
        elif regs != r_regs:
            print(f"kernel_resources: note: {name} uses {regs} registers, the table says {r_regs}")
    for key in sorted(set(recorded) - set(measured)):
        problems.append(f"{key[0]} {key[1]}: in the table but no longer built")
    for p in problems:
        print(f"kernel_resources: {p}")
    spilling = sum(1 for r in measured.values() if r[1] or r[2] or r[3])
    print(f"kernel_resources: {len(measured)} kernels, {spilling} with stack or spills, {len(problems)} problem(s)"
          + (" ---> HINT: fix the kernel, or if the change is intended: python3 tools/checks/kernel_resources.py "
             "--update, and commit cuda/kernel_resources.txt" if problems else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

"""Kernel classes of a GPU profile: the name patterns that sort every kernel of a forward or an
S-MeZO step into GEMM, perturb, update, noise, attention, conversion, norms/elementwise, ... are kept
here and nowhere else; and the readers of the profilers' CSV: `nsys stats --report
cuda_gpu_kern_sum` and `cuda_gpu_trace`, and `ncu --csv` (the details page, one row per metric, or
the raw page, one column per metric). A kernel that no pattern matches is reported by name in the
class "unclassified", never dropped.

  python3 tools/gpu/kernel_classes.py --check-kernels cuda/kernel_resources.txt
      every production kernel (that file lists them all, CI keeps it current) is in a class
      other than unclassified and bench; exit status 1 naming any that is not
  python3 tools/gpu/kernel_classes.py (--nsys-trace F | --nsys-kern-sum F | --ncu F) [--step-ms MS]
      ms per class as a markdown table (rows add up to the kernels' time; with --step-ms a last
      row "gaps" = the step's time less the kernels', so they add up to the step)

Only the Python standard library is used (the GPU machine and CI have no extra packages).
"""
import argparse
import csv
import io
import re
import sys

# (class, pattern searched in the kernel's name), first match wins. Perturb comes first: a kernel
# that folds the update into the W' pass (issue 41, item 3) is a perturb pass that also updates.
CLASSES = [
    # sign_noise_kernel<T, op>: op 0 and 1 form W' (one tensor, the pair), 2 updates (cuda/sign_noise.cu's SignOp)
    ("perturb", r"perturb|sign_noise_kernel<[^,<>]*, *(\(int\))?[01]>"),
    ("update", r"\bupdate_kernel\b|sign_noise_kernel<[^,<>]*, *(\(int\))?2>"),
    ("noise", r"noise_fill_kernel|philox_raw_kernel|noise_floor_kernel"),
    ("attention", r"attention_kernel"),
    ("fused linear", r"fused_linear"),
    ("GEMM", r"nvjet|gemm|gemv|xmma|cutlass|cublas|splitKreduce"),
    ("conversion", r"convert_input_kernel|convert_kernel|check_kernel|round_kernel"),
    # --weights packed: GGUF blocks dequantised into the W' block (cuda/packed_dequant.cu)
    ("dequantise", r"dequant_packed_kernel"),
    ("norms/elementwise", r"norm_kernel|rope_kernel|swiglu_kernel|relu_kernel|add_kernel|add_scaled_kernel|"
                          r"gather_rows_kernel|embed_rows_kernel|bias_epilogue_kernel"),
    ("threshold", r"abs_radix_hist_kernel"),
    ("memcpy/memset", r"^\[CUDA mem|^CUDA mem|\bmemcpy\b|\bmemset\b"),
    ("bench", r"excess_fill_kernel|bench_fill_kernel|weight_read_kernel|copy_words_kernel|max_diff_kernel"),
]
UNCLASSIFIED = "unclassified"
ORDER = [c for c, _ in CLASSES] + [UNCLASSIFIED]
_COMPILED = [(c, re.compile(p)) for c, p in CLASSES]


def classify(name):
    for cls, rx in _COMPILED:
        if rx.search(name):
            return cls
    return UNCLASSIFIED


# ---- reading the profilers' CSV ---------------------------------------------------------------

_UNIT_NS = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9, "second": 1e9}


def _number(text):
    text = (text or "").strip().replace(",", "")
    try:
        return float(text)
    except ValueError:
        return None


def _csv_table(text, must_have):
    """The rows of the first CSV table in text whose header has every column of must_have (a
    profiler prints notes and banners around it: "==PROF== ...", "Generating SQLite file ...")."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if all(col in line for col in must_have):
            body = [ln for ln in lines[i:] if ln.strip() and not ln.startswith("==")]
            return list(csv.DictReader(io.StringIO("\n".join(body))))
    return None


def _column(row, prefix):
    """(value, ns per unit) of the first column whose name starts with prefix: 'Duration (ns)'."""
    for key, value in row.items():
        if key and key.startswith(prefix):
            m = re.search(r"\((\w+)\)", key)
            return value, _UNIT_NS.get(m.group(1), 1.0) if m else 1.0
    return None, 1.0


def read_nsys_trace(text):
    """nsys stats --report cuda_gpu_trace --format csv: [(name, start_ns, duration_ns)], kernels and
    memory operations in the order of their start."""
    rows = _csv_table(text, ("Start", "Duration", "Name"))
    if rows is None:
        raise ValueError("no cuda_gpu_trace table (a header with Start, Duration and Name)")
    out = []
    for row in rows:
        start, s_unit = _column(row, "Start")
        dur, d_unit = _column(row, "Duration")
        if _number(start) is None or _number(dur) is None:
            continue
        out.append((row.get("Name", "").strip(), _number(start) * s_unit, _number(dur) * d_unit))
    return sorted(out, key=lambda r: r[1])


def read_nsys_kern_sum(text):
    """nsys stats --report cuda_gpu_kern_sum --format csv: [(name, total_ns, instances)]."""
    rows = _csv_table(text, ("Total Time", "Instances", "Name"))
    if rows is None:
        raise ValueError("no cuda_gpu_kern_sum table (a header with Total Time, Instances and Name)")
    out = []
    for row in rows:
        total, unit = _column(row, "Total Time")
        if _number(total) is None:
            continue
        out.append((row.get("Name", "").strip(), _number(total) * unit, int(_number(row.get("Instances")) or 0)))
    return out


def read_ncu(text):
    """ncu --csv: [{"id", "name", "metrics": {metric: value}}] in the order ncu reports them (one
    per kernel, or per range with --replay-mode app-range). The details page (one row per metric:
    Metric Name, Metric Unit, Metric Value) and the raw page (one column per metric, a row of units
    after the header) are both read; times are converted to ns."""
    rows = _csv_table(text, ('"ID"', "Metric Name", "Metric Value"))
    results = {}
    if rows is not None:
        for row in rows:
            rid = row.get("ID", "").strip()
            rec = results.setdefault(rid, {"id": rid, "name": _ncu_name(row), "metrics": {}})
            value = _number(row.get("Metric Value"))
            if value is not None:
                rec["metrics"][row.get("Metric Name", "").strip()] = value * _UNIT_NS.get(
                    (row.get("Metric Unit") or "").strip(), 1.0)
        return list(results.values())
    rows = _csv_table(text, ('"ID"', "Kernel Name"))
    if rows is None:
        raise ValueError("no ncu CSV table (a header with ID and Kernel Name)")
    units = rows[0] if rows and not (rows[0].get("ID") or "").strip() else {}
    out = []
    for row in rows[1 if units else 0:]:
        metrics = {}
        for key, value in row.items():
            if key and "__" in key and _number(value) is not None:
                metrics[key] = _number(value) * _UNIT_NS.get((units.get(key) or "").strip(), 1.0)
        out.append({"id": row.get("ID", "").strip(), "name": _ncu_name(row), "metrics": metrics})
    return out


def _ncu_name(row):
    return (row.get("Kernel Name") or row.get("Range Name") or row.get("Name") or "").strip()


# ---- the table --------------------------------------------------------------------------------

def class_times(kernels):
    """kernels: [(name, ns, launches)] -> ({class: ns}, {class: launches}, [unclassified names])."""
    ns, count, strangers = {}, {}, []
    for name, t, n in kernels:
        cls = classify(name)
        ns[cls] = ns.get(cls, 0.0) + t
        count[cls] = count.get(cls, 0) + n
        if cls == UNCLASSIFIED and name not in strangers:
            strangers.append(name)
    return ns, count, strangers


def kernels_of(args):
    """[(name, ns, launches)] from the file the arguments name."""
    if args.nsys_trace:
        return [(n, d, 1) for n, _, d in read_nsys_trace(open(args.nsys_trace).read())]
    if args.nsys_kern_sum:
        return read_nsys_kern_sum(open(args.nsys_kern_sum).read())
    return ncu_kernels(read_ncu(open(args.ncu).read()))


def ncu_kernels(results):
    """ncu's results as [(name, ns, 1)]: each kernel's gpu__time_duration.sum (a result without it
    is an error: the profile did not measure what the table needs)."""
    out = []
    for r in results:
        if "gpu__time_duration.sum" not in r["metrics"]:
            raise ValueError("ncu result %s (%s) has no gpu__time_duration.sum" % (r["id"], r["name"][:60]))
        out.append((r["name"], r["metrics"]["gpu__time_duration.sum"], 1))
    return out


def table(ns, count, strangers, step_ms=None):
    total = sum(ns.values()) / 1e6
    whole = step_ms if step_ms is not None else total
    lines = ["| class | launches | ms | share |", "|---|---|---|---|"]
    for cls in ORDER:
        if cls in ns:
            lines.append("| %s | %d | %.3f | %.1f%% |" % (cls, count[cls], ns[cls] / 1e6, 100 * ns[cls] / 1e6 / whole))
    if step_ms is not None:
        lines.append("| gaps (step - kernels) | – | %.3f | %.1f%% |" % (step_ms - total, 100 * (step_ms - total) / whole))
    lines.append("| = %s | %d | %.3f | 100.0%% |" % ("step" if step_ms is not None else "kernels", sum(count.values()),
                                                   whole))
    if strangers:
        lines += [""] + ["unclassified: %s" % name for name in strangers]
    return "\n".join(lines)


def check_kernels(path):
    """Every production kernel listed in kernel_resources.txt falls in a class of the step."""
    bad = []
    for line in open(path):
        parts = line.split("\t")
        if line.startswith("#") or len(parts) < 2:
            continue
        cls = classify(parts[1])
        if cls in (UNCLASSIFIED, "bench"):
            bad.append("%s (%s): %s" % (parts[1], parts[0], cls))
    for b in bad:
        print("kernel_classes: %s ---> HINT: add a pattern to CLASSES in tools/gpu/kernel_classes.py" % b)
    if not bad:
        print("kernel_classes: every kernel of %s is in a class" % path)
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check-kernels", metavar="RESOURCES")
    ap.add_argument("--nsys-trace")
    ap.add_argument("--nsys-kern-sum")
    ap.add_argument("--ncu")
    ap.add_argument("--step-ms", type=float)
    a = ap.parse_args()
    if a.check_kernels:
        return check_kernels(a.check_kernels)
    if not (a.nsys_trace or a.nsys_kern_sum or a.ncu):
        ap.error("give --check-kernels, --nsys-trace, --nsys-kern-sum or --ncu")
    ns, count, strangers = class_times(kernels_of(a))
    print(table(ns, count, strangers, a.step_ms))
    return 0


if __name__ == "__main__":
    sys.exit(main())

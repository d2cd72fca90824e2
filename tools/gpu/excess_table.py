"""The one table of the GPU call that explains the S-MeZO step's excess (issue 41), from the folder
tools/gpu/step_excess.py filled: markdown that RESULTS.md takes as is. Columns: each (shape, T) of
the call, then what the performance model predicted (issue 41, read on 63f4738: predictions, not
measurements). Row groups:
  step: CLASS / forward: CLASS   ms per kernel class (tools/gpu/kernel_classes.py) of one S-MeZO
        step (probe pair) and of one forward, then "gaps" = the measured time less the kernels', so
        each group adds up to the measured time on its last row
  excess                         step - 2 x forward (measured)
  step, W' block N MiB           the step at each W' block size
  layer, ORDER                   one layer's W' blocks at M = B x T rows per probe: serial, two
                                 streams, two streams with an SM target, the product
  perturb / copy                 the W' pass beside a copy of equal bytes, per noise kind (GB/s, the
                                 ratio of times, the pass scaled to every linear weight)
  bytes/s, DRAM                  the layer's kernels' model bytes over their event times; ncu's DRAM
                                 bytes over one layer against the model's
  fused / W'                     the fused kernel's pair time over W' + cuBLAS's at the 7B shapes, per
                                 noise kind
A part that did not run says why in the notes under the table; "–" is a cell nobody measured.

  python3 tools/gpu/excess_table.py DIR
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import kernel_classes  # noqa: E402

# Issue 41's performance model for llama-7b at T = 64 (B = 16, bf16): what the call checks.
PREDICTED = {
    "step: perturb": "10–13 ms: 6 B per weight (~10 ms) and ~40 instructions of gaussian noise per weight",
    "step: update": "8–11 ms: W read and written, the noise made again",
    "step: gaps": "35–50% of the excess is unexplained by any per-weight cost",
    "excess (step − 2 × forward)": "37.6 ms on 1303ad2 (24.4 at T = 256); gaussian noise ≈ half of it",
    "perturb pair, gaussian: GB/s (model ms)": "model ms within the perturb row's 10–13",
    "perturb/copy time, gaussian": "> 1: arithmetic-bound (the noise)",
    "noise in the pair pass ≈ perturb − copy, gaussian (model ms)": "≈ 8.5 ms at perfect issue",
    "forward, --graphs on": "issue 41's target: ≤ 3 ms at smollm2-135m T = 64 (6.2 off); each pass re-captured: may not win",
    "fused / W′ pair, 4096×4096, gaussian": "≈ 14 at M = 1,024 (2,100 µs against 150); > 1 at every shape",
}
FUSED_SHAPES = ["4096x4096", "11008x4096", "4096x11008", "32000x4096"]


def read_jsonl(path):
    out = []
    if os.path.exists(path):
        for line in open(path, errors="replace"):
            line = line.strip()
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def fmt(v, digits=2):
    return "–" if v is None else ("%.*f" % (digits, v))


class Table:
    def __init__(self, columns):
        self.columns = columns  # [(shape, T)]
        self.rows = []          # (label, {column: text})

    def put(self, label, col, text):
        for name, cells in self.rows:
            if name == label:
                cells[col] = text
                return
        self.rows.append((label, {col: text}))

    def markdown(self):
        head = "| | " + " | ".join("%s T=%d" % c for c in self.columns) + " | predicted (issue 41, llama-7b T=64) |"
        lines = [head, "|---" * (len(self.columns) + 2) + "|"]
        for label, cells in self.rows:
            lines.append("| %s | %s | %s |" % (label, " | ".join(cells.get(c, "–") for c in self.columns),
                                               PREDICTED.get(label, "")))
        return "\n".join(lines)


def measured_ms(timings, shape, T, phase, block=None):
    """The unprofiled median of a phase (the default W' block unless block is given)."""
    for j in timings:
        if j.get("shape") == shape and j.get("seq") == T and j.get("phase") == phase and \
                j.get("probes", "pair") == "pair" and (block is None or j.get("weight_block_mib") == block):
            return j["ms"]
    return None


def breakdown_rows(t, d, call, timings, notes):
    """step: / forward: class rows, from the profiled runs (or the op-level split): per group, the
    classes in kernel_classes.ORDER, then gaps, then the measured time they add up to."""
    b = read_json(os.path.join(d, "breakdown", "breakdown.json")) or {}
    notes.append("kernel breakdown: %s" % b.get("how", "not run"))
    classes = kernel_classes.ORDER + ["linear (op-level)", "update (op-level)", "attention (op-level)",
                                      "other ops (op-level)"]
    for phase, group in (("smezo-step", "step"), ("forward", "forward")):
        cells = {}  # label -> {column: text}, filled for every column before the rows are put in order
        for shape, T in t.columns:
            whole = measured_ms(timings, shape, T, phase, call.get("default_block_mib", 64) if group == "step" else None)
            run = b.get("runs", {}).get("%s_%d_%s" % (shape, T, phase))
            if run and whole is None:
                whole = run.get("ms")  # the profiled rep's own time (the unprofiled one is missing)
            if whole is not None:
                cells.setdefault("%s (measured)" % group, {})[(shape, T)] = fmt(whole)
            if not run or whole is None:
                continue
            for cls, ms in run.get("classes", {}).items():
                cells.setdefault("%s: %s" % (group, cls), {})[(shape, T)] = "%s (%.0f%%)" % (fmt(ms), 100 * ms / whole)
            gaps = whole - sum(run.get("classes", {}).values())
            cells.setdefault("%s: gaps" % group, {})[(shape, T)] = "%s (%.0f%%)" % (fmt(gaps), 100 * gaps / whole)
            for name in run.get("unclassified", []):
                notes.append("unclassified kernel in %s %s T=%d: %s" % (phase, shape, T, name[:160]))
        labels = ["%s: %s" % (group, c) for c in classes] + ["%s: gaps" % group, "%s (measured)" % group]
        for label in labels:
            for col, text in cells.get(label, {}).items():
                t.put(label, col, text)


def excess_rows(t, timings, call):
    block = call.get("default_block_mib", 64)
    for shape, T in t.columns:
        step, fwd = measured_ms(timings, shape, T, "smezo-step", block), measured_ms(timings, shape, T, "forward")
        if step is not None and fwd is not None:
            t.put("excess (step − 2 × forward)", (shape, T), "%s (step = %.2f× fwd)" % (fmt(step - 2 * fwd), step / fwd))
        for j in timings:
            if j.get("shape") == shape and j.get("seq") == T and j.get("phase") == "smezo-step" and \
                    "weight_block_mib" in j:
                t.put("step, W′ block %g MiB" % j["weight_block_mib"], (shape, T), fmt(j["ms"]))


def graphs_rows(t, d, call, timings):
    """--graphs on against off (timings: off, at the default W' block), forward and step."""
    graphs = read_jsonl(os.path.join(d, "graphs.jsonl"))
    block = call.get("default_block_mib", 64)
    for shape, T in t.columns:
        for phase, label in (("forward", "forward"), ("smezo-step", "step")):
            on, off = measured_ms(graphs, shape, T, phase), measured_ms(timings, shape, T, phase,
                                                                        block if phase == "smezo-step" else None)
            if on is not None:
                t.put("%s, --graphs on" % label, (shape, T),
                      fmt(on) + (" (%.2f× off)" % (on / off) if off else ""))


def layer_rows(t, d, call):
    batch = call.get("batch", 16)
    for shape, T in t.columns:
        rows = read_jsonl(os.path.join(d, "excess_%s.jsonl" % shape))
        m = batch * T
        for j in rows:
            if j.get("m") != m:
                continue
            if j["part"] == "layer":
                check = "" if j.get("check") == "PASS" else " FAIL"
                t.put("layer, %s (%d blocks of %g MiB)" % (j["order"], j["blocks"], j["block_mib"]), (shape, T),
                      fmt(j["ms"], 3) + check)
            elif j["part"] == "bytes":
                t.put("layer bytes/s, %s kernels (events)" % j["kind"], (shape, T), "%.0f GB/s" % j["gb_per_s"])
        perturb = {(j["kind"], j["noise"]): j for j in rows if j["part"] == "perturb"}
        copy = perturb.get(("copy-pair", "-"))
        for (kind, noise), j in sorted(perturb.items()):
            if kind != "pair":
                continue
            t.put("perturb pair, %s: GB/s (model ms)" % noise, (shape, T), "%.0f (%s)" % (j["gb_per_s"], fmt(j["model_ms"])))
            if copy:
                t.put("perturb/copy time, %s" % noise, (shape, T), fmt(j["ms"] / copy["ms"]))
                t.put("noise in the pair pass ≈ perturb − copy, %s (model ms)" % noise, (shape, T),
                      fmt(j["model_ms"] - copy["model_ms"]))
        if copy:
            t.put("copy of equal bytes: GB/s (model ms)", (shape, T), "%.0f (%s)" % (copy["gb_per_s"], fmt(copy["model_ms"])))


def dram_rows(t, d, call, notes):
    info = read_json(os.path.join(d, "dram.json")) or {}
    notes.append("DRAM traffic: %s" % info.get("how", "not run"))
    shape = info.get("shape")
    if not info.get("results"):
        return
    regions = [j for j in read_jsonl(os.path.join(d, "dram.jsonl")) if j["part"] == "region"]
    batch = call.get("batch", 16)
    for region, res in zip(regions, info["results"]):
        moved = res.get("dram__bytes_read.sum", 0) + res.get("dram__bytes_write.sum", 0)
        ns = res.get("gpu__time_duration.sum")
        text = "%.2f× model (%.0f GB/s)" % (moved / region["model_bytes"], moved / ns) if ns else \
            "%.2f× model" % (moved / region["model_bytes"])
        if region["what"] == "copy-pair":
            for T in [c[1] for c in t.columns if c[0] == shape]:
                t.put("DRAM bytes of a copy (ncu; calibration)", (shape, T), text)
        else:
            T = region["m"] // batch
            t.put("DRAM bytes of a serial layer (ncu)", (shape, T), text)


def fused_rows(t, d, call):
    batch = call.get("batch", 16)
    for j in read_jsonl(os.path.join(d, "fused.jsonl")):
        T = j.get("rows_per_probe", 0) // batch
        shape = "%dx%d" % (j["N"], j["K"])
        col = next((c for c in t.columns if c[1] == T and c[0] == call.get("fused_of")), None)
        if col and j.get("pair_wprime_ms") and j.get("pair_fused_ms"):
            t.put("fused / W′ pair, %s, %s" % (shape.replace("x", "×"), j.get("noise", "?")), col,
                  "%s (W′ %s ms)" % (fmt(j["pair_fused_ms"] / j["pair_wprime_ms"]), fmt(j["pair_wprime_ms"], 3)) +
                  ("" if j.get("check") == "PASS" else " FAIL"))


def read_json(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None


def build(d):
    call = read_json(os.path.join(d, "call.json")) or {}
    columns = [(s, T) for s in call.get("shapes", []) for T in call.get("seqs", [])]
    t, notes = Table(columns), []
    timings = read_jsonl(os.path.join(d, "timings.jsonl"))
    breakdown_rows(t, d, call, timings, notes)
    excess_rows(t, timings, call)
    graphs_rows(t, d, call, timings)
    layer_rows(t, d, call)
    dram_rows(t, d, call, notes)
    fused_rows(t, d, call)
    head = "GPU call of issue 41 (%s): %s · commit %s · %s · B = %s, %s\n\n" % (
        "tools/gpu/step_excess.py" + (" --tiny: a DRY RUN on tiny settings" if call.get("tiny") else ""),
        call.get("date", "?"), call.get("commit", "?"), call.get("device", "?"), call.get("batch", "?"),
        call.get("dtype", "bf16"))
    for part, status in call.get("parts", {}).items():
        if not status.startswith("done"):
            notes.append("part %s: %s" % (part, status))
    return head + t.markdown() + "\n\n" + "\n".join("- " + n for n in notes) + "\n"


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    sys.stdout.write(build(sys.argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The GPU call that explains the S-MeZO step's excess over two forwards (issue 41): every part in one
command on the GPU machine (the backlog's job 4.excess), its files in DIR, one markdown table last
(DIR/excess.md, tools/gpu/excess_table.py).

  python3 tools/gpu/step_excess.py --out DIR [--smezo build/smezo] [--tiny]

Parts, in this order (each writes DIR/<part>.log; one that fails is named under the table and the
others still run; BACKLOG_DEADLINE, the backlog's end of the call, stops the parts in time to print):
  timings    smezo bench --shape S --device cuda --seq 64,256 --probes pair --phases forward,smezo-step
             --weight-block-mib 64,8,16,32: forward and step unprofiled, the step at each W' block size
  breakdown  one forward and one S-MeZO step per (shape, T), each its own process under a profiler,
             `smezo bench ... --reps 1 --profile-rep`: nsys (--capture-range=cudaProfilerApi; when it is
             on the machine and makes a report) else ncu (--profile-from-start off, gpu__time_duration.sum
             per kernel, --cache-control none --clock-control none: ncu serialises kernels, so the gaps are
             the unprofiled time less the kernels') else, with neither, `bench --profile`'s op-level
             split (a synchronisation per op; the table says so)
  excess     smezo bench --kernel excess --weights-of S --m B*T: the perturb pass beside a copy of equal
             bytes per noise kind; one layer serial / two streams / SM target / product; bytes per second
  graphs     the same forward and step with --graphs on (smollm2-135m first), beside timings' --graphs off
  fused      smezo bench --kernel linear at llama-7b's shapes, M = 1,024 and 4,096: fused / W' + cuBLAS
  dram       ncu --replay-mode app-range --cache-control none --clock-control none, DRAM bytes read and
             written over one serial layer per M and over a copy (calibration); without ncu the
             excess part's bytes per second are what there is
--tiny: the shape "tiny", T = 8 and 16, B = 2, one rep: the dry run on the emulated CUDA build.
Only the Python standard library is used.
"""
import argparse
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import excess_table  # noqa: E402
import kernel_classes  # noqa: E402

REAL = {"shapes": ["llama-7b", "smollm2-135m"], "seqs": [64, 256], "batch": 16, "reps": 5, "warmup": 1,
        "blocks": [64, 8, 16, 32, 384], "fused_of": "llama-7b",
        "excess": ["--reps", "10", "--warmup", "3", "--noises", "gaussian,rademacher,sign"],
        "fused": ["--shapes", "4096x4096,11008x4096,4096x11008,32000x4096", "--reps", "5", "--warmup", "2"],
        "dram_of": "llama-7b", "flat": []}
TINY = {"shapes": ["tiny"], "seqs": [8, 16], "batch": 2, "reps": 1, "warmup": 1, "blocks": [64, 1],
        "excess": ["--reps", "1", "--warmup", "0", "--noises", "gaussian,rademacher,sign"], "fused_of": "tiny",
        "fused": ["--shapes", "64x64,96x64", "--reps", "1", "--warmup", "0"], "dram_of": "tiny",
        "flat": ["--flat-elements", "65536", "--flush-mib", "1"]}
NCU_BASE = ["--clock-control", "none", "--cache-control", "none", "--csv", "--print-units", "base"]
DRAM_METRICS = "dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
# One profiled process at most (a 7B load, ~1,600 kernels under ncu): one that runs longer is cut,
# so that the other shapes and parts keep their time (the table then lacks that column).
PROFILED_RUN_S = 150


class Call:
    def __init__(self, out, smezo, tiny):
        self.out, self.smezo, self.tiny = out, smezo, tiny
        self.cfg = TINY if tiny else REAL
        self.profilers = ["nsys", "ncu"]
        deadline = float(os.environ.get("BACKLOG_DEADLINE", "0") or 0)
        self.deadline = deadline if deadline > 0 else None
        self.info = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "commit": git_commit(), "tiny": tiny,
                     "device": device_name(), "shapes": self.cfg["shapes"], "seqs": self.cfg["seqs"],
                     "batch": self.cfg["batch"], "dtype": "bf16", "default_block_mib": 64,
                     "fused_of": self.cfg["fused_of"], "parts": {}}

    def left(self):
        return None if self.deadline is None else self.deadline - time.time()

    def run(self, argv, log, timeout=None, stdout=None):
        """argv with stdout into the file stdout (or log) and stderr into log; its exit status (124 when
        it timed out or the call's deadline came first)."""
        left = self.left()
        if left is not None:
            timeout = min(timeout or left, left - 10)
            if timeout <= 5:
                return 124
        with open(log, "ab") as err:
            err.write(("$ %s\n" % " ".join(shlex.quote(a) for a in argv)).encode())
            err.flush()
            out = open(stdout, "wb") if stdout else err
            try:
                return subprocess.run(argv, stdout=out, stderr=err, cwd=ROOT, timeout=timeout).returncode
            except subprocess.TimeoutExpired:
                err.write(b"(timed out)\n")
                return 124
            finally:
                if stdout:
                    out.close()

    def bench(self, *args):
        return [self.smezo, "bench"] + [str(a) for a in args]


def git_commit():
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    return (r.stdout.strip() or "unknown") + (" + local changes" if dirty else "")


def device_name():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
        return out or "no GPU visible"
    except (OSError, subprocess.TimeoutExpired):
        return "no nvidia-smi (emulated CUDA or no GPU)"


def find_tool(name):
    """The tool on PATH, or where CUDA and Nsight install it."""
    found = shutil.which(name)
    if found:
        return found
    patterns = ["/usr/local/cuda/bin/%s" % name, "/opt/nvidia/nsight-systems*/bin/%s" % name,
                "/opt/nvidia/nsight-compute/*/%s" % name, "/usr/local/cuda/nsight-*/bin/%s" % name]
    for p in patterns:
        hits = sorted(glob.glob(p))
        if hits:
            return hits[-1]
    return None


# ---- the parts -----------------------------------------------------------------------------------

def part_timings(c):
    cfg, log = c.cfg, os.path.join(c.out, "timings.log")
    open(os.path.join(c.out, "timings.jsonl"), "w").close()
    rc = 0
    for shape in cfg["shapes"]:
        part = os.path.join(c.out, "timings_%s.jsonl" % shape)
        rc |= c.run(c.bench("--shape", shape, "--device", "cuda", "--batch", cfg["batch"], "--seq",
                            ",".join(map(str, cfg["seqs"])), "--probes", "pair", "--phases", "forward,smezo-step",
                            "--weight-block-mib", ",".join(map(str, cfg["blocks"])), "--reps", cfg["reps"],
                            "--warmup", cfg["warmup"], "--json", part), log, stdout=os.devnull)
        with open(os.path.join(c.out, "timings.jsonl"), "a") as f:
            f.write(open(part).read() if os.path.exists(part) else "")
    return "done" if rc == 0 else "failed (exit status %d; timings.log)" % rc


def part_graphs(c):
    """--graphs on at the default W' block: timings holds the same runs with graphs off."""
    cfg, log, out = c.cfg, os.path.join(c.out, "graphs.log"), os.path.join(c.out, "graphs.jsonl")
    open(out, "w").close()
    rc = 0
    for shape in sorted(cfg["shapes"], key=lambda s: s != "smollm2-135m"):
        part = os.path.join(c.out, "graphs_%s.jsonl" % shape)
        rc |= c.run(c.bench("--shape", shape, "--device", "cuda", "--batch", cfg["batch"], "--seq",
                            ",".join(map(str, cfg["seqs"])), "--probes", "pair", "--phases", "forward,smezo-step",
                            "--graphs", "on", "--reps", cfg["reps"], "--warmup", cfg["warmup"], "--json", part),
                    log, stdout=os.devnull)
        with open(out, "a") as f:
            f.write(open(part).read() if os.path.exists(part) else "")
    return "done" if rc == 0 else "failed (exit status %d; graphs.log)" % rc


def profiled_cmd(c, shape, T, phase, reps=1):
    return c.bench("--shape", shape, "--device", "cuda", "--batch", c.cfg["batch"], "--seq", T, "--probes", "pair",
                   "--phases", phase, "--reps", reps, "--warmup", 1)


def profile_with_ncu(c, ncu, shape, T, phase, stem, log):
    """One phase under ncu: [(name, ns, 1)] per kernel of the profiled rep, or None."""
    csv_path = stem + ".ncu.csv"
    rc = c.run([ncu, "--profile-from-start", "off", "--metrics", "gpu__time_duration.sum"] + NCU_BASE +
               profiled_cmd(c, shape, T, phase) + ["--profile-rep", "--json", stem + ".json"], log,
               timeout=PROFILED_RUN_S, stdout=csv_path)
    if rc != 0:
        return None
    return kernel_classes.ncu_kernels(kernel_classes.read_ncu(open(csv_path, errors="replace").read()))


def profile_with_nsys(c, nsys, shape, T, phase, stem, log):
    """One phase under nsys (capture range = the profiled rep): [(name, ns, 1)], or None."""
    rc = c.run([nsys, "profile", "--trace=cuda", "--capture-range=cudaProfilerApi", "--capture-range-end=stop",
                "--force-overwrite=true", "-o", stem] + profiled_cmd(c, shape, T, phase) +
               ["--profile-rep", "--json", stem + ".json"], log, timeout=PROFILED_RUN_S)
    if rc != 0 or not os.path.exists(stem + ".nsys-rep"):
        return None
    rc = c.run([nsys, "stats", "--report", "cuda_gpu_trace", "--format", "csv", "--force-export=true", "--output",
                stem, stem + ".nsys-rep"], log)
    trace = stem + "_cuda_gpu_trace.csv"
    if rc != 0 or not os.path.exists(trace):
        return None
    return [(n, d, 1) for n, _, d in kernel_classes.read_nsys_trace(open(trace, errors="replace").read())]


def op_level(c, shape, T, phase, stem, log):
    """No profiler: bench --profile's split (ms per op kind, a synchronisation after each op)."""
    rc = c.run(profiled_cmd(c, shape, T, phase, reps=c.cfg["reps"]) + ["--profile", "--json", stem + ".json"], log,
               stdout=os.devnull)
    rows = excess_table.read_jsonl(stem + ".json")
    if rc != 0 or not rows:
        return None
    p = rows[-1]["profile"]
    return {"linear (op-level)": p["gemm_ms"], "update (op-level)": p["noise_ms"],
            "attention (op-level)": p["attention_ms"], "other ops (op-level)": p["rest_ms"] - p["outside_ops_ms"]}


def choose_profiler(c, log):
    """(name, path, why the others are not used): nsys or ncu when a tiny run under it gives kernels."""
    why = []
    tiny = Call(c.out, c.smezo, True)
    stem = os.path.join(c.out, "breakdown", "smoke")
    for name, fn in (("nsys", profile_with_nsys), ("ncu", profile_with_ncu)):
        if name not in c.profilers:
            continue
        path = find_tool(name)
        if path is None:
            why.append("%s: not on this machine" % name)
            continue
        try:
            kernels = fn(tiny, path, "tiny", 8, "forward", stem + "_" + name, log)
        except (OSError, ValueError) as e:
            kernels, err = None, e
        else:
            err = None
        if kernels:
            return name, path, why
        why.append("%s (%s): a tiny profiled run gave no kernel%s (breakdown.log)" % (name, path, ": %s" % err if err else ""))
    return "op-level", None, why


def part_breakdown(c):
    d = os.path.join(c.out, "breakdown")
    os.makedirs(d, exist_ok=True)
    log = os.path.join(c.out, "breakdown.log")
    name, path, why = choose_profiler(c, log)
    how = {"nsys": "nsys, the profiled rep's kernels (cuda_gpu_trace)",
           "ncu": "ncu --profile-from-start off, gpu__time_duration.sum per kernel (serialised, caches and clocks "
                  "left alone); gaps = the unprofiled time less the kernels'",
           "op-level": "NO PROFILER: bench --profile's op-level split (a synchronisation after each op; linear = "
                       "GEMM + perturb + conversion)"}[name]
    summary = {"profiler": name, "how": how + ("; " + "; ".join(why) if why else ""), "runs": {}}
    failed = []
    for shape in c.cfg["shapes"]:
        for T in c.cfg["seqs"]:
            for phase in ("forward", "smezo-step"):
                key = "%s_%d_%s" % (shape, T, phase)
                stem = os.path.join(d, key)
                try:
                    if name == "op-level":
                        classes, strangers = op_level(c, shape, T, phase, stem, log), []
                    else:
                        kernels = (profile_with_nsys if name == "nsys" else profile_with_ncu)(c, path, shape, T, phase,
                                                                                          stem, log)
                        classes = strangers = None
                        if kernels:
                            ns, count, strangers = kernel_classes.class_times(kernels)
                            classes = {k: v / 1e6 for k, v in ns.items()}
                except (OSError, ValueError) as e:
                    classes, strangers = None, []
                    with open(log, "a") as f:
                        f.write("%s: %s\n" % (key, e))
                if not classes:
                    failed.append(key)
                    continue
                rows = excess_table.read_jsonl(stem + ".json")
                summary["runs"][key] = {"classes": classes, "unclassified": strangers,
                                        "ms": rows[-1]["ms"] if rows else None}
                with open(os.path.join(d, "breakdown.json"), "w") as f:
                    json.dump(summary, f, indent=1)
    with open(os.path.join(d, "breakdown.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return "done (%s)" % name if not failed else "failed for %s (breakdown.log)" % ", ".join(failed)


def part_excess(c):
    log, rc = os.path.join(c.out, "excess.log"), 0
    for shape in c.cfg["shapes"]:
        ms = ",".join(str(c.cfg["batch"] * T) for T in c.cfg["seqs"])
        rc |= c.run(c.bench("--kernel", "excess", "--weights-of", shape, "--m", ms, "--json",
                            os.path.join(c.out, "excess_%s.jsonl" % shape), *(c.cfg["excess"] + c.cfg["flat"])),
                    log, stdout=os.path.join(c.out, "excess_%s.txt" % shape))
    return "done" if rc == 0 else "failed (exit status %d; excess.log, excess_*.txt)" % rc


def part_fused(c):
    ms = ",".join(str(c.cfg["batch"] * T) for T in c.cfg["seqs"])
    rc = c.run(c.bench("--kernel", "linear", "--m", ms, "--json", os.path.join(c.out, "fused.jsonl"), *c.cfg["fused"]),
               os.path.join(c.out, "fused.log"), stdout=os.path.join(c.out, "fused.txt"))
    return "done" if rc == 0 else "failed (exit status %d; fused.log, fused.txt)" % rc


def part_dram(c):
    shape, log = c.cfg["dram_of"], os.path.join(c.out, "dram.log")
    ms = ",".join(str(c.cfg["batch"] * T) for T in c.cfg["seqs"])
    cmd = c.bench("--kernel", "excess", "--weights-of", shape, "--m", ms, "--noises", "gaussian", "--dram-range", "--json", os.path.join(c.out, "dram.jsonl"), "--reps", 1, "--warmup", 1, *c.cfg["flat"])
    ncu = find_tool("ncu")
    info = {"shape": shape}
    if ncu is None:
        rc = c.run(cmd, log, stdout=os.path.join(c.out, "dram.txt"))  # the regions are marked all the same
        info["how"] = "NOT MEASURED: no ncu on this machine; the layer's bytes/s from events stand in"
        status = "done (no ncu)" if rc == 0 else "failed (exit status %d; dram.log)" % rc
    else:
        csv_path = os.path.join(c.out, "dram.ncu.csv")
        rc = c.run([ncu, "--replay-mode", "app-range", "--metrics", DRAM_METRICS] + NCU_BASE + cmd, log, stdout=csv_path)
        try:
            info["results"] = [r["metrics"] for r in kernel_classes.read_ncu(open(csv_path, errors="replace").read())]
        except (OSError, ValueError) as e:
            info["results"], rc = [], rc or 1
            info["error"] = str(e)
        info["how"] = "ncu --replay-mode app-range (%s), %s over each bracketed region" % (ncu, DRAM_METRICS)
        status = "done" if rc == 0 and info["results"] else "failed (exit status %d; dram.log)" % rc
    with open(os.path.join(c.out, "dram.json"), "w") as f:
        json.dump(info, f, indent=1)
    return status


PARTS = [("timings", part_timings), ("breakdown", part_breakdown), ("excess", part_excess), ("graphs", part_graphs),
         ("fused", part_fused), ("dram", part_dram)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--smezo", default="build/smezo")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--parts", default=",".join(p for p, _ in PARTS))
    ap.add_argument("--profilers", default="nsys,ncu", help="the profilers the breakdown tries, in order")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    c = Call(os.path.abspath(a.out), a.smezo, a.tiny)
    c.profilers = a.profilers.split(",")
    wanted = a.parts.split(",")
    for name, fn in PARTS:
        if name not in wanted:
            continue
        left = c.left()
        if left is not None and left < 30:
            c.info["parts"][name] = "not run: the call's deadline (%d s left)" % left
            continue
        t0 = time.time()
        try:
            c.info["parts"][name] = fn(c)
        except (OSError, ValueError, KeyError) as e:
            c.info["parts"][name] = "failed: %s: %s" % (type(e).__name__, e)
        print("[step_excess] %-9s %5.0f s  %s" % (name, time.time() - t0, c.info["parts"][name]), flush=True)
        with open(os.path.join(c.out, "call.json"), "w") as f:
            json.dump(c.info, f, indent=1)
    text = excess_table.build(c.out)
    with open(os.path.join(c.out, "excess.md"), "w") as f:
        f.write(text)
    print(text)
    return 0 if all(s.startswith("done") for s in c.info["parts"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())

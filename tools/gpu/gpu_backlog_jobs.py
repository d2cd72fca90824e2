"""What tools/gpu_backlog.sh runs: the jobs of each item, in priority order, with their
commands (real, and on tiny settings for a dry run), their estimates and where those come from,
what each must show, and how its result is read (a post). tools/gpu/gpu_backlog.py is the runner:
state, scheduling, device calls, the plan and prepare. Edit this file to add a job, correct an
estimate (MEASURED_S once a GPU has timed a job) or change what a job checks.

Only the Python standard library is used.
"""
import glob
import json
import os
import re
import shlex
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)  # tools/
ROOT = os.path.dirname(TOOLS)
sys.path[:0] = [HERE, os.path.join(TOOLS, "claim")]  # the backlog beside the claim grid it runs
sys.dont_write_bytecode = True  # no tools/__pycache__ in the tree (it would travel to the GPU)
import gpu_prebuilt  # noqa: E402  (the binaries prepare builds here for the GPU machine)
import zo_grid  # noqa: E402  (the grid's size and planning figures)

FINISH_MARGIN_S = 20  # kept from a call's budget for writing the outputs (the grid stops this much earlier too)
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
GGUF_BYTES = 98362432

# SmolLM2 on the CPU (RESULTS.md, "SmolLM2-135M end to end on the CPU"): (examples, accuracy %)
# of smezo eval with --test-examples N, data seed 42, --max-len 256; the GPU must give the same.
CPU_TABLE = {("sst2", "zero-shot"): (100, 58.0), ("rte", "zero-shot"): (50, 48.0),
             ("boolq", "zero-shot"): (50, 60.0), ("sst2", "icl"): (30, 83.3),
             ("rte", "icl"): (30, 46.7), ("boolq", "icl"): (30, 40.0)}

# Measured seconds per job, replacing the estimates below (backlog.md lists each job's time).
# 2026-11-25, one H200 (16 cores), main 4fc3b59: the item-1 jobs and 6.mpi at once, in each other's company (so a parallel job's time includes its slowdown). initcheck was
# stopped by the budget at 372 s with one of its 2 shards unfinished: at least that.
MEASURED_S = {
    "1.tests": (91, "H200 2026-11-25, 4 shards"),
    "1.memcheck": (157, "H200 2026-11-25, 2 shards"),
    "1.racecheck": (231, "H200 2026-11-25, 4 shards"),
    "1.synccheck": (153, "H200 2026-11-25, 2 shards"),
    "1.initcheck": (420, "H200 2026-11-25: > 372 s, 2 shards, unfinished"),
    "1.determinism-bf16": (76, "H200 2026-11-25"),
    "1.determinism-f32": (82, "H200 2026-11-25"),
    "6.mpi": (19, "H200 2026-11-25"),
    "2.gguf": (1, "H200 2026-11-26"),
    "2.suite-smollm2": (41, "H200 2026-11-26, 16 tests"),
    "2.greedy": (3, "H200 2026-11-26"),
    "2.evals": (3, "H200 2026-11-26"),
    "3.calibrate": (34, "H200 2026-11-26"),
    "4.step-bench": (83, "H200 2026-11-26, peer in the same call"),
    "5.bigmem-7b": (82, "H200 2026-11-26"),
    "5.bench-30b": (76, "H200 2026-11-26"),
    "7.step-bench-rest": (88, "H200 2026-11-26, peer in the same call"),
    "7.bigmem-13b": (147, "H200 2026-11-26"),
    "7.demo": (24, "H200 2026-11-26, 500 steps at 26.6 steps/s"),
}


def q(s):
    return shlex.quote(str(s))


def lines_matching(text, pattern, limit=20):
    rx = re.compile(pattern)
    return [ln.rstrip() for ln in text.splitlines() if rx.search(ln)][:limit]


def tail(text, n):
    return [ln.rstrip() for ln in text.strip().splitlines()[-n:]]


read_json = zo_grid.read_json  # a JSON file's content, or None when unreadable


def job_record(st, jid):
    """A job's entry in the backlog's state (state.json)."""
    return st["jobs"].setdefault(jid, {"status": "pending", "attempts": 0, "seconds": 0.0, "calls": 0,
                                       "note": "", "figures": [], "command": ""})


# ---- context: where things are, real or dry ---------------------------------------------------

class Ctx:
    """What a job's command needs: the mode (cuda on the GPU machine; cpu or cuda-emu for a dry
    run), the binaries, the state folder and the assets."""

    def __init__(self, dry, mode, state, smezo="build/smezo", tests="build/smezo_tests"):
        self.dry, self.mode, self.state = dry, mode, state
        self.dev = "cpu" if mode == "cpu" else "cuda"
        self.smezo, self.tests = smezo, tests
        self.deadline = None
        self.need_tests = True  # whether a pending job runs the test binary (build it too)
        self.st = {"jobs": {}, "calls": []}  # the backlog's state (posts read a job's record)
        self.fallback_ids = set()  # jobs that ran a dry run's stand-in command
        self.listing = False  # the plan lists the commands as a call on the GPU machine runs them

    def record(self, jid):
        return job_record(self.st, jid)

    def work(self, jid):
        return os.path.join(self.state, "work", jid)

    def logs(self, jid):
        return os.path.join(self.state, "logs", jid)

    def _ingested_or_shared(self, name):
        mine = os.path.join(self.state, name)
        return mine if self.listing or os.path.isdir(mine) else os.path.join(SHARED, name)

    @property
    def assets(self):
        return self._ingested_or_shared("assets")

    @property
    def anchors(self):
        return self._ingested_or_shared("anchors")

    @property
    def gguf(self):
        return os.path.join(self.state, "weights", GGUF_NAME)

    @property
    def model(self):
        """SmolLM2 for real; the bundled stories260K in a dry run."""
        return os.path.join(self.assets, "models", "stories260K.bin") if self.dry else self.gguf

    def remaining(self):
        return max(0, int(self.deadline - time.time())) if self.deadline else 0


# ---- the jobs ----------------------------------------------------------------------------------

class Job:
    """One command of an item. est_s: estimated seconds on an H100 (in the company the job
    usually has: the estimates of parallel jobs include their slowdown); basis: where the
    number comes from. needs: what must exist first ("build", "gguf", or another job's id,
    which must have finished in any way); tools: programs it cannot do without ("torch",
    "sanitizer", "mpi", "cuda"); exclusive: it times something, so it runs alone; resumable: a deadline
    stops it and the next call continues it; share_s: after this many seconds a resumable job
    yields to the next item (it continues after it); per_machine: its product lives on the
    machine (a fresh machine redoes it, in est_redo_s seconds)."""

    def __init__(self, jid, title, est_s, basis, cmd, post=None, needs=("build",), tools=(),
                 exclusive=False, resumable=False, share_s=0, per_machine=False, fallback=None, est_redo_s=None,
                 lost_on_new_machine_s=None):
        self.id, self.title, self.est_s, self.basis = jid, title, est_s, basis
        # a resumable job whose finished parts come back and are carried to the next machine
        # (the grid's finished runs): what a new machine loses of it, the parts in flight
        self.lost_on_new_machine_s = lost_on_new_machine_s
        self.est_redo_s = est_s if est_redo_s is None else est_redo_s
        self.item = int(jid.split(".")[0])
        self.cmd, self.post, self.needs, self.tools = cmd, post or post_rc, needs, tools
        self.exclusive, self.resumable, self.share_s = exclusive, resumable, share_s
        self.per_machine, self.fallback = per_machine, fallback

    def estimate(self):
        return MEASURED_S[self.id][0] if self.id in MEASURED_S else self.est_s


# A post(ctx, job, rc, log) reads what a job wrote and returns (status, figures): status done,
# failed or partial; figures[0] is the headline that backlog.md's table shows, the rest the key
# figures beneath the job's command.

def post_rc(ctx, job, rc, log):
    last = (tail(log, 1) or [""])[0]
    return ("done" if rc == 0 else "failed"), [last if rc == 0 else "exit status %d: %s" % (rc, last)] + tail(log, 6)


def post_count(pattern_ok, pattern_bad):
    """Counts PASS/✓ and FAIL/✗ lines: the headline, then those lines."""
    def post(ctx, job, rc, log):
        good, bad = lines_matching(log, pattern_ok, 40), lines_matching(log, pattern_bad, 40)
        ok = rc == 0 and good and not bad
        return ("done" if ok else "failed"), ["%d passed, %d failed (exit status %d)" % (len(good), len(bad), rc)] + \
            bad + good
    return post


def post_build(ctx, job, rc, log):
    ok = rc == 0 and os.access(os.path.join(ROOT, ctx.smezo), os.X_OK) and \
        (not ctx.need_tests or os.access(os.path.join(ROOT, ctx.tests), os.X_OK))
    prebuilt = re.search(r"^\[prebuilt\] (.*)$", log, re.M)
    head = ("built" if ok else "build FAILED") + (" (%s)" % prebuilt.group(1) if prebuilt else "") + (
        " (dry run: the given binaries)" if ctx.mode == "cuda-emu" else
        " (dry run: make -n only, the binaries there)" if ctx.dry else "")
    return ("done" if ok else "failed"), [head] + (lines_matching(log, r"^(✓|✗|.*[Ee]rror)", 12) or tail(log, 6))


def shards_cmd(n, prefix, argv):
    return "python3 tools/gpu/gpu_backlog.py _shards %d %s %s" % (n, q(prefix), argv)


def sanitizer_sites(text, limit=8):
    """compute-sanitizer's reports grouped by what and where: "N x message @ site", most frequent
    first. A report is the lines from "========= <message>" to the next "========= " alone; its
    site is the kernel of a race or device access ("at kernel+0x..", with file:line when built
    with -lineinfo), else the first host frame in a smezo source file (a host API access)."""
    counts, block = {}, []

    def close():
        if not block:
            return
        msg = re.sub(r"0x[0-9a-f]+", "ADDR", block[0].strip())
        site = ""
        for ln in block[1:] + block[:1]:
            m = re.search(r"\bat (?:0x[0-9a-f]+ in )?(.+?)\+0x[0-9a-f]+(?: in (\S+:\d+))?", ln)
            if m:
                site = m.group(1) + (" (%s)" % m.group(2) if m.group(2) else "")
                break
        if not site:  # the innermost three frames in source files of ours (callers follow "<")
            frames = [m.group(1) for m in (re.search(r"Host Frame: .* in (\S+\.(?:cu|cpp|h):\d+)", ln)
                                           for ln in block) if m]
            site = "host " + " < ".join(frames[:3]) if frames else ""
        key = "%s @ %s" % (msg[:160], site or "?")
        counts[key] = counts.get(key, 0) + 1

    for ln in text.splitlines():
        if not ln.startswith("========= "):
            continue
        body = ln[len("========= "):]
        if not body.strip():
            close()
            block = []
        elif not body.startswith(" ") and not re.match(r"(ERROR|RACECHECK|LEAK) SUMMARY|COMPUTE-SANITIZER|"
                                                       r"Target application|Error: process didn't", body):
            close()
            block = [body]
        elif block:
            block.append(body)
    close()
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    return ["%d x %s" % (n, key) for key, n in ranked[:limit]]


def post_shards(ctx, job, rc, log):
    """The _shards summary: the tests' counts over the shards, the sanitizer's error counts, the
    failed tests and their rerun alone, one line per shard. On the GPU machine a GPU test that
    skips ("no CUDA device") is a failure: the point of the run is that none skips."""
    shards = lines_matching(log, r"^\[shards\] \d+/\d+ rc=", 40)
    counts = [0, 0, 0]
    for ln in shards:
        m = re.search(r"(?:smezo_tests|emulated): (\d+) passed, (\d+) failed, (\d+) skipped", ln)
        if m:
            counts = [a + int(b) for a, b in zip(counts, m.groups())]
    # "ERROR SUMMARY: N errors" (memcheck, synccheck, initcheck) or "RACECHECK SUMMARY: N hazards
    # displayed"; not "ERROR SUMMARY: M errors were not printed", which repeats part of N
    errors = sum(int(n) for n in re.findall(r"(?:ERROR SUMMARY: (\d+) errors?(?![\w ]*were not)|"
                                           r"RACECHECK SUMMARY: (\d+) hazards?)", log) for n in n if n)
    head = "%d shard(s), %d exited non-zero; tests: %d passed, %d failed, %d skipped" % (
        len(shards), sum(" rc=0 " not in ln for ln in shards), counts[0], counts[1], counts[2])
    if "compute-sanitizer" in job.cmd(ctx) and job.id not in ctx.fallback_ids:
        head += "; sanitizer errors: %d" % errors
    figures = [head] + lines_matching(log, r"^\[shards\] (failed|rerun)", 4) + shards
    skips, shard_logs = 0, ""
    for path in sorted(glob.glob(os.path.join(ctx.logs(job.id), "*.log"))):
        text = open(path, errors="replace").read()
        skips += text.count("no CUDA device: skipped")
        shard_logs += text + "\n"
    figures += ["sanitizer: %s" % site for site in sanitizer_sites(shard_logs)]
    if not ctx.dry and skips:
        return "failed", figures + ["%d GPU tests skipped (no CUDA device): this build or machine sees no GPU" % skips]
    return ("done" if rc == 0 and len(shards) else "failed"), figures


def post_greedy(ctx, job, rc, log):
    work = ctx.work(job.id)
    if ctx.dry:
        want = [open(os.path.join(ctx.assets, "models", "stories260K.greedy200.txt")).read()]
    else:
        cases = json.load(open(os.path.join(ROOT, "tests", "fixtures", "smollm2_greedy.json")))["cases"]
        want = [c["prompt"] + c["text"] + "\n" for c in cases]
    figures, ok = [], rc == 0
    for k, w in enumerate(want):
        try:
            got = open(os.path.join(work, "greedy%d.txt" % k)).read()
        except OSError:
            got = None
        same = got == w
        ok = ok and same
        figures.append("greedy %d: %s: %r" % (k, "same text as the reference" if same else "DIFFERS", (got or "")[:120]))
    head = "%d of %d greedy continuations equal the reference (%s)" % (
        sum("same text" in f for f in figures), len(want),
        "stories260K's golden 200 tokens" if ctx.dry else "transformers, tests/fixtures/smollm2_greedy.json")
    return ("done" if ok else "failed"), [head] + figures


def post_evals(ctx, job, rc, log):
    work, figures, ok = ctx.work(job.id), [], rc == 0
    for (task, mode), (n, cpu_pct) in sorted(CPU_TABLE.items()):
        res = read_json(os.path.join(work, "%s-%s.json" % (task, mode)))
        acc = res.get("accuracy") if res else None
        if not isinstance(acc, (int, float)):
            ok = False
            figures.append("%s %s: no accuracy written" % (task, mode))
            continue
        if ctx.dry:
            figures.append("%s %s: %.1f %% (tiny settings, nothing to compare)" % (task, mode, 100 * acc))
            continue
        same = round(acc * n) == round(cpu_pct * n / 100.0)
        ok = ok and same
        figures.append("%s %s, %d examples: %.1f %% on %s, %.1f %% on the CPU: %s" %
                       (task, mode, n, 100 * acc, ctx.dev, cpu_pct, "equal" if same else "DIFFERENT"))
    head = ("%d evaluations written (tiny settings)" % sum("tiny" in f for f in figures) if ctx.dry else
            "%d of %d accuracies equal the CPU table" % (sum(f.endswith("equal") for f in figures), len(CPU_TABLE)))
    return ("done" if ok else "failed"), [head] + figures


def post_calibrate(ctx, job, rc, log):
    cal = read_json(os.path.join(ctx.state, "grid", "calibration.json"))
    if rc != 0 or not cal:
        return "failed", tail(log, 8)
    grid = zo_grid.select_grid("smollm2-lease", "sst2", ctx.dry)
    figures = lines_matching(log, r"^\|", 10)
    figures.insert(0, "measured: %.1f ms/step alone (planned %.0f), %.2fx with %d runs at once (planned %.1fx): "
                   "SST-2 grid %.1f min (planned %.1f)" %
                   (cal["ms_per_step_alone"], grid["step_ms"], cal["speedup"], cal["best_jobs"], grid["speedup"],
                    zo_grid.grid_seconds(grid, cal["ms_per_step_alone"], cal["speedup"]) / 60.0,
                    zo_grid.grid_seconds(grid, grid["step_ms"], grid["speedup"]) / 60.0))
    return "done", figures


def post_grid(ctx, job, rc, log):
    """Done when the grid is complete; partial while it progresses (the deadline stopped it, or
    runs finished); failed when a call finishes no run and some fail (a persistent error)."""
    summary = lines_matching(log, r"^\[zo_grid\] (started \d+, failed|--jobs auto)", 4)
    table = os.path.join(ctx.work(job.id), "report", "table.md")
    progress = lines_matching(log, r"^\[zo_grid\] started \d+, failed", 1)
    figures = (progress or ["(no progress line)"]) + [f for f in summary if f not in progress] + \
        (open(table).read().strip().splitlines() if os.path.exists(table) else ["(no table yet)"])
    if "grid complete" in log:  # the table must have every method's row and a curve
        report = os.path.dirname(table)
        rows = open(table).read() if os.path.exists(table) else ""
        missing = [m for m in ("MeZO", "R-MeZO", "S-MeZO") if "| %s |" % m not in rows]
        if missing or not glob.glob(os.path.join(report, "dev_acc_*.svg")):
            return "failed", figures + ["the table lacks %s, or there is no dev_acc_*.svg in %s" %
                                        (", ".join(missing) or "nothing", report)]
        return "done", figures
    m = re.search(r"started (\d+), failed (\d+), unfinished (\d+)", log)
    if rc not in (0, 1) or not m:
        return "failed", figures + tail(log, 6)
    rec = ctx.record(job.id)
    before, unfinished, failed = rec.get("unfinished"), int(m.group(3)), int(m.group(2))
    rec["unfinished"] = unfinished
    if failed and "deadline: stopped" not in log and (before is None or unfinished >= before):
        return "failed", figures + ["no progress: %d run(s) failed and none finished (see their run.log)" % failed] + \
            tail(log, 4)
    return "partial", figures


def post_file(name, pattern=r"\S"):
    """A post that also requires work/NAME to exist and match, and shows it."""
    def post(ctx, job, rc, log):
        path = os.path.join(ctx.work(job.id), name)
        text = open(path).read() if os.path.exists(path) else ""
        if rc != 0 or not re.search(pattern, text):
            return "failed", tail(log, 8) + ["%s: %s" % (name, "missing" if not text else "not as expected")]
        rows = text.strip().splitlines()
        return "done", ["%d table row(s); %s" % (len([r for r in rows if re.match(r"\| [a-z]", r)]) - 1, rows[0])] + \
            rows[:24]
    return post


def post_bigmem(ctx, job, rc, log):
    figures = lines_matching(log, r"^(peak|start-up|finish|backend|  (cuda|cpu) )", 10)
    ok = rc == 0 and any(f.startswith("peak host RSS") for f in figures)
    return ("done" if ok else "failed"), (figures if ok else ["exit status %d" % rc] + figures + tail(log, 8))


def grid_cmd(ctx, tasks, report_dir, grid="smollm2-lease", runs="grid"):
    """zo_grid run of a grid's tasks in STATE/runs (--jobs auto from 3.calibrate's figures), then its table."""
    common = "--grid %s --tasks %s --smezo %s --model %s --runs %s" % (
        grid, tasks, q(ctx.smezo), q(ctx.model), q(os.path.join(ctx.state, runs)))
    if runs != "grid":
        common += " --calibration %s" % q(os.path.join(ctx.state, "grid", "calibration.json"))
    if ctx.dry:
        common += " --tiny --device %s" % ctx.dev
    deadline = "" if not ctx.deadline else " --deadline-s %d" % max(1, ctx.remaining() - FINISH_MARGIN_S)
    if ctx.listing:
        deadline = " --deadline-s SECONDS_LEFT_MINUS_%d" % FINISH_MARGIN_S
    return ("python3 tools/claim/zo_grid.py run %s --jobs auto --drop-checkpoints --poll-s 0.2%s; rc=$?; "
            "python3 tools/claim/zo_grid.py table --runs %s --report %s; exit $rc" %
            (common, deadline, q(os.path.join(ctx.state, runs)), q(report_dir)))


def step_bench_cmd(ctx, jid, shapes, extra):
    env = "OUT=%s SMEZO=%s ANCHORS=%s " % (q(ctx.work(jid)), q(ctx.smezo), q(ctx.anchors))
    if ctx.dry:
        return env + "bash tools/gpu/step_bench.sh --shapes tiny --device %s --seqs 16 --reps 1 --no-torch" % ctx.dev
    return env + "bash tools/gpu/step_bench.sh --shapes %s %s" % (q(shapes), extra)


# The fused perturbed linear against W' + cuBLAS at LLaMA-7B's and SmolLM2's weight shapes, 16 to
# 4096 rows per probe: the crossover table that cuda_plan.h's fused_crossover_table is to hold
# (until it does, --linear-path auto takes W' everywhere). A dry run times one small shape.
LINEAR_CROSSOVER_SHAPES = "4096x4096,11008x4096,4096x11008,32000x4096,576x576,192x576,1536x576,576x1536,49152x576"


def linear_crossover_cmd(ctx, jid):
    out = ctx.work(jid)
    shapes, m, reps = ("64x64", "16", "1") if ctx.dry else (LINEAR_CROSSOVER_SHAPES, "16,64,256,1024,4096", "10")
    return "mkdir -p %s && %s bench --kernel linear --shapes %s --m %s --reps %s --json %s > %s" % (
        q(out), q(ctx.smezo), shapes, m, reps, q(os.path.join(out, "fused_crossover.jsonl")),
        q(os.path.join(out, "crossover.txt")))


def excess_cmd(ctx):
    """tools/gpu/step_excess.py into the job's work folder; --tiny in a dry run."""
    return "python3 tools/gpu/step_excess.py --out %s --smezo %s%s" % (
        q(ctx.work("4.excess")), q(ctx.smezo), " --tiny" if ctx.dry else "")


def post_excess(ctx, job, rc, log):
    """Done when every part ran and the table has the step's measured row; the whole table is the
    job's figures (backlog.md carries it back), any unclassified kernel or FAIL named first."""
    path = os.path.join(ctx.work(job.id), "excess.md")
    rows = open(path).read().strip().splitlines() if os.path.exists(path) else []
    parts = lines_matching(log, r"^\[step_excess\]", 8)
    alarms = [r for r in rows if "unclassified kernel" in r or "FAIL" in r or r.startswith("- part ")]
    ok = rc == 0 and any(r.startswith("| step (measured) |") for r in rows)
    how = next((r[len("- kernel breakdown: "):].split(";")[0] for r in rows if r.startswith("- kernel breakdown: ")), "")
    head = "%s: %d table rows; breakdown by %s; %s" % (
        "table written" if rows else "no excess.md", sum(r.startswith("| ") for r in rows), how[:70] or "nothing",
        "; ".join(alarms[:3]) or "every part done, no unclassified kernel")
    return ("done" if ok else "failed"), [head] + parts + rows + ([] if rows else tail(log, 8))


def packed_bench_cmd(ctx):
    """tools/gpu/packed_bench.sh: llama-7b as bf16 and as Q4_K blocks (tiny, Q4_0 in a dry run)."""
    env = "OUT=%s SMEZO=%s " % (q(ctx.work("5.bench-q4-7b")), q(ctx.smezo))
    if ctx.dry:
        return env + "bash tools/gpu/packed_bench.sh --shape tiny --quant Q4_0 --device %s --seqs 16 --batch 2 " \
            "--reps 1" % ctx.dev
    return env + "bash tools/gpu/packed_bench.sh --shape llama-7b --quant Q4_K --device %s" % ctx.dev


def bigmem_cmd(ctx, jid, shape):
    env = "OUT=%s SMEZO=%s CLEAN=1 DEVICE=%s " % (q(ctx.work(jid)), q(ctx.smezo), ctx.dev)
    return env + "bash tools/gpu/bigmem_check.sh %s" % ("tiny" if ctx.dry else shape)


def build_cmd(ctx):
    if ctx.dry:  # no rebuild in a dry run (CI has built): check the command, use the binaries there
        check = "test -x %s && test -x %s" % (q(ctx.smezo), q(ctx.tests))
        if ctx.mode == "cuda-emu":
            return check + " && echo 'given binaries: %s, %s'" % (ctx.smezo, ctx.tests)
        return ("env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -n DEPS=deps/root all build/smezo_tests > /dev/null && "
                "echo 'make -n: ok' && " + check)
    carried = ctx.listing or glob.glob(os.path.join(ROOT, "deps", "debs", "*.deb"))  # the GPU machine has them
    unpack = "tools/deps.sh unpack && " if carried else ""
    deps = "DEPS=deps/root " if unpack else ""
    tests = " build/smezo_tests" if ctx.need_tests else ""  # item 1 done: the CLI is enough
    make = "make -j$(nproc) %sall%s" % (deps, tests)
    if ctx.listing or os.path.exists(os.path.join(ctx.state, "carry", gpu_prebuilt.TARBALL)):
        # the binaries built by prepare, if they are of these sources and run here; else make
        make = "{ python3 tools/gpu/gpu_backlog.py _prebuilt %s || %s; }" % (q(ctx.state), make)
    return unpack + ". tools/mpi_env.sh && " + make


# cuBLAS's Hopper GEMM kernels (nvjet_sm90_*, CUDA 13): racecheck reports shared-memory hazards
# inside them (2026-11-25, H200: 35 reports, all in nvjet kernels, none in ours). They are the
# library's code, which smezo cannot change; racecheck checks every kernel of ours without them.
RACECHECK_EXCLUDE = "kns=nvjet"


def sanitizer_job(tool, shards, est, basis):
    extra = {"memcheck": " --leak-check full", "racecheck": " --kernel-name-exclude " + RACECHECK_EXCLUDE}.get(tool, "")
    extra += " --print-limit 2000"  # every report counted by site (post_shards), not only the first 100

    def cmd(ctx):
        # the dry run on the CPU uses the same selection; the GPU suites skip themselves there
        tests = "%s --gtest_filter=$(bash tools/gpu/gpu_check.sh --gpu-test-filter)" % q(ctx.tests)
        return shards_cmd(shards, os.path.join(ctx.logs("1." + tool), tool),
                          "compute-sanitizer --tool %s%s --error-exitcode 99 %s" % (tool, extra, tests))

    def fallback(ctx):  # no compute-sanitizer here: the same shards of the same tests, unwrapped (on the
        # CPU the GPU suites skip at once; under the emulated CUDA build they would all run: one suite)
        selection = "CudaCheck.*" if ctx.mode == "cuda-emu" else "$(bash tools/gpu/gpu_check.sh --gpu-test-filter)"
        return shards_cmd(shards, os.path.join(ctx.logs("1." + tool), tool),
                          "%s --gtest_filter=%s" % (q(ctx.tests), selection))

    return Job("1." + tool, "compute-sanitizer %s over the GPU suites, %d shards" % (tool, shards), est, basis,
               cmd, post_shards, tools=("sanitizer",), fallback=fallback)


def determinism_job(dtype, est):
    def cmd(ctx):
        settings = "--steps 12 --kills 1" if ctx.dry else "--steps 300 --kills 3"
        dt = "" if ctx.dev == "cpu" else " --dtype %s" % dtype  # the CPU stores f32 only
        return "tools/checks/determinism_check.sh --smezo %s --device %s%s %s --workdir %s" % (
            q(ctx.smezo), ctx.dev, dt, settings, q(ctx.work("1.determinism-" + dtype)))
    return Job("1.determinism-" + dtype, "determinism, kill -9/--resume, replay (%s, stories260K)" % dtype, est,
               "300 steps of stories260K x 3 runs + 3 kills; tiny on a GPU (estimate)", cmd,
               post_count(r" PASS ", r" FAIL "))


def evals_cmd(ctx):
    out, cmds = ctx.work("2.evals"), []
    for (task, mode), (n, _) in sorted(CPU_TABLE.items()):
        name = os.path.join(out, "%s-%s" % (task, mode))
        shots = " --shots %d" % (2 if ctx.dry else 16) if mode == "icl" else ""
        size = "--train-examples 16 --test-examples 4" if ctx.dry else "--test-examples %d" % n
        dtype = "" if ctx.dev == "cpu" else " --dtype f32"
        cmds.append("%s eval --model %s --device %s%s --task %s --mode %s%s %s --out %s --examples-out %s > %s 2>&1 & "
                    "pids=\"$pids $!\";" % (q(ctx.smezo), q(ctx.model), ctx.dev, dtype, task, mode, shots, size,
                                            q(name + ".json"), q(name + ".jsonl"), q(name + ".log")))
    return "pids=; " + " ".join(cmds) + " rc=0; for p in $pids; do wait $p || rc=1; done; exit $rc"


# The suite's SmolLM2 tests (the CUDA logits and greedy text against transformers' among them)
# skip in 1.tests, which runs before the GGUF has arrived: here they run with it.
SMOLLM2_TESTS = "*SmolLM2*:ModelTokenizer.GenerateWithoutBosNeedsAPrompt"


def smollm2_suite_cmd(ctx):
    where = "" if ctx.dry else "env SMEZO_SMOLLM2=%s " % q(ctx.gguf)
    return shards_cmd(1, os.path.join(ctx.logs("2.suite-smollm2"), "tests"),
                      "%s%s --gtest_filter='%s'" % (where, q(ctx.tests), SMOLLM2_TESTS))


def post_smollm2_suite(ctx, job, rc, log):
    status, figures = post_shards(ctx, job, rc, log)
    missing = sum(open(p, errors="replace").read().count("SmolLM2 GGUF not found")
                  for p in glob.glob(os.path.join(ctx.logs(job.id), "*.log")))
    if missing and not ctx.dry:
        return "failed", figures + ["%d tests skipped: the GGUF was not found at %s" % (missing, ctx.gguf)]
    return status, figures


def greedy_cmd(ctx):
    out = ctx.work("2.greedy")
    if ctx.dry:
        return "%s generate --device %s --temperature 0 --steps 200 > %s" % (
            q(ctx.smezo), ctx.dev, q(os.path.join(out, "greedy0.txt")))
    cases = json.load(open(os.path.join(ROOT, "tests", "fixtures", "smollm2_greedy.json")))["cases"]
    return " && ".join("%s generate --model %s --device cuda --dtype f32 --prompt %s --temperature 0 --new-tokens %d > %s"
                       % (q(ctx.smezo), q(ctx.model), q(c["prompt"]), len(c["new_ids"]),
                          q(os.path.join(out, "greedy%d.txt" % k))) for k, c in enumerate(cases))


def oracle_cmd(ctx):
    """tools/oracles/hf_oracle.py, then the PEFT round trip (tools/oracles/peft_oracle.py) with PEFT installed from
    the wheels call 1 carries in deps/wheels (the GPU machine has torch and transformers, not PEFT:
    `gpu_backlog.py _pylib`); the job fails when either does. A dry run without PEFT skips it."""
    hf = "python3 tools/oracles/hf_oracle.py --device %s --smezo %s --workdir %s --assets %s%s" % (
        ctx.dev, q(ctx.smezo), q(ctx.work("1.oracle")), q(ctx.assets), " --cases llama_gqa --dtypes fp32" if ctx.dry else "")
    pylib = os.path.join(ctx.state, "pylib")
    peft_run = "PYTHONPATH=%s${PYTHONPATH:+:$PYTHONPATH} python3 tools/oracles/peft_oracle.py --device %s --smezo %s " \
               "--workdir %s --assets %s" % (q(pylib), ctx.dev, q(ctx.smezo), q(os.path.join(ctx.work("1.oracle"), "peft")),
                                              q(ctx.assets))
    install = "python3 tools/gpu/gpu_backlog.py _pylib %s" % q(ctx.state)
    if ctx.dry:
        peft_run = "%s; if PYTHONPATH=%s python3 -c 'import peft' 2>/dev/null; then %s; else " \
                   "echo 'tools/oracles/peft_oracle.py not run: no peft here (a dry run; prepare downloads its wheels)'; fi" % (
                       install, q(pylib), peft_run)
    else:
        peft_run = "%s && %s" % (install, peft_run)
    return "%s; a=$?; %s; b=$?; [ $a -eq 0 ] && [ $b -eq 0 ]" % (hf, peft_run)


def oracle_fallback(ctx):
    """No torch here: both scripts compile, and the install of the carried wheels is shown."""
    return ("python3 -c 'for f in (\"tools/oracles/hf_oracle.py\", \"tools/oracles/peft_oracle.py\"): "
            "compile(open(f).read(), f, \"exec\")' && echo 'tools/oracles/hf_oracle.py and tools/oracles/peft_oracle.py compile' && "
            "python3 tools/gpu/gpu_backlog.py _pylib --dry %s" % q(ctx.state))


def listed_jobs():
    """The jobs of items 1-8, in priority order: item (1) first. Estimates are H100 seconds. The
    claim's (item 9) are in gpu_backlog_claim.py, built on this file's Job and posts; the runner
    puts them after these."""
    grid_sst2 = zo_grid.select_grid("smollm2-lease", "sst2")
    grid_rest = zo_grid.select_grid("smollm2-lease", "rte,boolq")
    sst2_s = zo_grid.grid_seconds(grid_sst2, grid_sst2["step_ms"], grid_sst2["speedup"]) + 30
    rest_s = zo_grid.grid_seconds(grid_rest, grid_rest["step_ms"], grid_rest["speedup"]) + 60
    grid_basis = "zo_grid.py plan at the planned ms/step and speed-up (estimates), + model loads"
    # a new machine restarts the runs that were in flight: one run's time with 4 at once
    wave_s = grid_sst2["steps"] * grid_sst2["step_ms"] / 1000.0 * 4 / grid_sst2["speedup"]
    return [
        Job("1.build", "deps unpacked, the binaries prepare built here put in place and run once; if they cannot "
            "be used, make -j all build/smezo_tests (skipped while the sources are unchanged)", 45,
            "carried binaries: untar and a smoke test, 2-3 s measured (H200, 2026-11-26; planned with 45 s for a "
            "fresh machine's deps); make on the machine instead: 337 s measured (H200, 16 cores, 2026-11-25)", build_cmd, post_build, needs=(), per_machine=True, est_redo_s=45),
        Job("1.tests", "the whole test suite on CUDA, 4 shards at once (failures rerun alone)", 180,
            "not timed on the GPU machine; ~400 tests, 4 shards (estimate)",
            lambda c: shards_cmd(2 if c.dry else 4, os.path.join(c.logs("1.tests"), "tests"),
                                 q(c.tests) + (" --gtest_filter=ZoGrid.TableFromFakeRuns:ZoGrid.TableWithoutRunsIsAnError:"
                                                "CudaCheck.*" if c.dry else "") + " --rerun-failed"),
            post_shards),
        Job("1.oracle", "Hugging Face transformers vs smezo logits (tools/oracles/hf_oracle.py), every family (34 cases on the CPU); PEFT loads smezo's "
            "LoRA and prefix adapters and smezo PEFT's (tools/oracles/peft_oracle.py)", 120,
            "hf_oracle.py: 72 s measured (H200 2026-11-25); peft_oracle.py: 48 s on 2 CPU cores here (estimate)",
            oracle_cmd, post_count(r"\bPASS\b", r"\bFAIL(ED)?\b"), tools=("torch",), fallback=oracle_fallback),
        sanitizer_job("memcheck", 2, 150, "memcheck with leak check over the 46 GPU tests (estimate)"),
        sanitizer_job("racecheck", 4, 180, "267 s over 37 GPU tests alone on 2026-11-22 (RESULTS.md), 4 shards"),
        sanitizer_job("synccheck", 2, 120, "as memcheck, without the leak check (estimate)"),
        sanitizer_job("initcheck", 2, 120, "as memcheck (estimate)"),
        determinism_job("bf16", 90),
        determinism_job("f32", 120),
        Job("2.gguf", "SmolLM2 GGUF joined from the carried parts, sha256 checked", 10, "unxz of 86 MiB (4.5 s here)",
            lambda c: "python3 tools/gpu/gpu_backlog.py _join-gguf %s%s" % (q(c.state), "" if c.dry else " --install"),
            needs=("parts",), per_machine=True),
        Job("2.suite-smollm2", "the suite's SmolLM2 tests with the GGUF (skipped in 1.tests, before it came)", 60,
            "about 15 tests, the CUDA logits and greedy text against transformers' among them (estimate)",
            smollm2_suite_cmd, post_smollm2_suite, needs=("build", "gguf")),
        Job("2.greedy", "SmolLM2 greedy text on CUDA = transformers' (tests/fixtures/smollm2_greedy.json)", 20,
            "2 x 24 tokens (estimate)", greedy_cmd, post_greedy, needs=("build", "gguf")),
        Job("2.evals", "SmolLM2 zero-shot and 16-shot SST-2/RTE/BoolQ on CUDA = the CPU table", 60,
            "6 evals of 30-100 examples at once (estimate)", evals_cmd, post_evals, needs=("build", "gguf")),
        Job("3.calibrate", "lease grid: ms/step of SmolLM2 alone and 1/2/4/8 runs at once (the best --jobs)", 75,
            "100 steps per count at the planned 40 ms/step, + loads (estimate)",
            lambda c: "python3 tools/claim/zo_grid.py calibrate --grid smollm2-lease --tasks sst2 --smezo %s --model %s "
                      "--runs %s %s" % (q(c.smezo), q(c.model), q(os.path.join(c.state, "grid")),
                                        "--tiny --device %s --jobs-list 1,2 --steps 2" % c.dev if c.dry
                                        else "--jobs-list 1,2,4,8 --steps 100"),
            post_calibrate, needs=("build", "gguf"), exclusive=True),
        Job("3.grid", "lease grid, SST-2: MeZO/R-MeZO/S-MeZO x 3 lrs, 3 seeds, 1,500 steps; table + SVGs",
            round(sst2_s), grid_basis, lambda c: grid_cmd(c, "sst2", os.path.join(c.work("3.grid"), "report")),
            post_grid, needs=("build", "gguf", "3.calibrate"), exclusive=True, resumable=True,
            share_s=round(1.5 * sst2_s), lost_on_new_machine_s=wave_s),
        Job("4.step-bench", "step_bench smollm2-135m and llama-7b beside the PyTorch peer (same session)", 180,
            "smezo ~1 min, torch_mezo.py ~2 min for the two shapes (estimate)",
            lambda c: step_bench_cmd(c, "4.step-bench", "smollm2-135m llama-7b", ""),
            post_file("step_bench.md", r"\| (smollm2-135m|tiny) \|"), exclusive=True),
        Job("4.linear-crossover", "the fused perturbed linear against W' + cuBLAS: the crossover table "
            "(smezo bench --kernel linear, 9 shapes x 16..4096 rows)", 120,
            "45 (shape, rows) cases x 2 noises x 10 reps + warm-up (estimate)",
            lambda c: linear_crossover_cmd(c, "4.linear-crossover"),
            post_file("crossover.txt", r"crossover: fused / W'"), tools=("cuda",), exclusive=True),
        Job("4.excess", "the call that explains the S-MeZO step's excess (issue 41; tools/gpu/step_excess.py): "
            "kernel classes of a step and a forward (llama-7b, smollm2-135m; T = 64, 256), the step at W' blocks of "
            "8-384 MiB, --graphs on against off, perturb beside a copy, one layer on two streams, DRAM bytes, fused / W' at "
            "M = 1,024 and 4,096",
            330, "three 7B loads (~10 s each) + 8 profiled processes + the kernel benches, ~4.5 min (estimate)",
            excess_cmd, post_excess, tools=("cuda",), exclusive=True),
        Job("5.bigmem-7b", "bigmem 7b: host RSS, start-up, device memory of a 7B run from a file", 150,
            "random 7B written by torch (13.5 GB), 60 steps, BF16 checkpoint (estimate)",
            lambda c: bigmem_cmd(c, "5.bigmem-7b", "7b"), post_bigmem, tools=("torch",), exclusive=True,
            fallback=lambda c: bigmem_cmd(c, "5.bigmem-7b", "tiny")),
        Job("5.bench-30b", "llama-30b S-MeZO/MeZO steps (random weights on the GPU) beside the recorded peer", 90,
            "65 GB of random bf16 weights, T = 64 and 256, 5 reps (estimate)",
            lambda c: step_bench_cmd(c, "5.bench-30b", "llama-30b", "--seqs 64,256 --no-torch"),
            post_file("step_bench.md", r"\| (llama-30b|tiny) \|"), exclusive=True),
        Job("5.bench-q4-7b", "llama-7b S-MeZO step over Q4_K blocks kept packed (--tune scales, --tune lora) beside "
            "the bf16 step, device memory of each (issue 43; tools/gpu/packed_bench.sh)", 120,
            "three 7B processes (bf16 load ~20 s, Q4_K ~10 s each), T = 64 and 256, 5 reps (estimate)",
            packed_bench_cmd, post_file("packed_bench.md", r"\| packed Q4_(K|0), --tune lora \|"), exclusive=True),
        Job("6.mpi", "2 ranks sharing the GPU: data parallel and a 2-stage pipeline replay bit for bit", 60,
            "stories260K, 10 steps x 3 runs + replays (estimate)",
            lambda c: "BUILD=%s DEVICE=%s bash tools/gpu/mpi_gpu_check.sh 2" % (q(os.path.dirname(c.smezo)), c.dev),
            post_count(r"^mpi_gpu_check: ✓", r"^mpi_gpu_check: ✗"),
            tools=("mpi",)),
        Job("7.step-bench-rest", "step_bench mistral-7b and opt-13b beside the PyTorch peer", 150,
            "as 4.step-bench, T = 64 and 256, 3 reps (estimate)",
            lambda c: step_bench_cmd(c, "7.step-bench-rest", "mistral-7b opt-13b", "--seqs 64,256 --reps 3"),
            post_file("step_bench.md", r"\| (mistral-7b|tiny) \|"), exclusive=True),
        Job("7.bigmem-13b", "bigmem 13b", 210, "as 5.bigmem-7b with 26 GB (estimate)",
            lambda c: bigmem_cmd(c, "7.bigmem-13b", "13b"), post_bigmem, tools=("torch",), exclusive=True,
            fallback=lambda c: bigmem_cmd(c, "7.bigmem-13b", "tiny")),
        Job("7.demo", "README command 1 on the GPU (tools/demo.sh: SmolLM2, 500 S-MeZO steps)", 75,
            "500 steps at the planned 40 ms + evals (estimate)",
            lambda c: "SMEZO=%s SMEZO_DEMO_DEVICE=%s%s bash tools/demo.sh --out %s" % (
                q(c.smezo), c.dev, " SMEZO_DEMO_STEPS=2 SMEZO_DEMO_EXAMPLES=8" if c.dry else "",
                q(os.path.join(c.work("7.demo"), "demo"))),
            post_count(r"^(demo: SST-2 dev accuracy|done: dev acc)", r"^smezo: error"), needs=("build", "gguf")),
        Job("8.grid-rest", "lease grid, RTE and BoolQ (when the budget allows; not in the 40 minutes)",
            round(rest_s), grid_basis, lambda c: grid_cmd(c, "rte,boolq", os.path.join(c.work("8.grid-rest"), "report")),
            post_grid, needs=("build", "gguf", "3.grid"), exclusive=True, resumable=True,
            lost_on_new_machine_s=wave_s),
    ]


ITEM_TITLES = {
    1: "the whole test suite on CUDA with sanitizers, the HF oracle, determinism",
    2: "SmolLM2 on CUDA: greedy text and accuracies equal to the CPU table",
    3: "the lease-sized paper grid (zo_grid.py smollm2-lease), SST-2",
    4: "step_bench smollm2-135m and llama-7b beside the PyTorch peer; the fused linear's crossover table; the call "
       "that explains the step's excess (issue 41)",
    5: "bigmem 7b, the llama-30b bench and the 7B step over Q4_K blocks (issue 43)",
    6: "the MPI GPU check",
    7: "the remaining shapes (mistral-7b, opt-13b, bigmem 13b) and README's demo",
    8: "optional, after the list: the lease grid's RTE and BoolQ",
    9: "optional, after the list: the claim grid (zo_grid.py smollm2-claim: does S-MeZO beat MeZO on SmolLM2?) "
       "in slices, one lease after another, and the PyTorch peer (tools/claim/zo_peer.py) on SST-2 beside it",
}

# What each job must show (the old "Waiting for a GPU" table's column; the checks in the posts
# above decide done/failed where a rule can).
SHOWS = {
    "1.build": "✓ CUDA (sm_90a) and ✓ MPI (the Open MPI 5 wheel) in make info",
    "1.tests": "every test passes, no CUDA test skips; new since the last GPU run: NoiseCuda.*, "
               "StochasticRoundingCuda.*, BackendOps.LinearProbePair, BackendOps.LinearPerturbed*, UploadStoredCuda.*, "
               "CheckpointDtype.CudaBf16WeightsWriteBf16, MpiTrain.*/MpiPipeline.* under Open MPI 5",
    "1.oracle": "16/16 PASS on cuda (fp32, fp16, bf16); peft_oracle.py 9/9 PASS (10/10 where python3 has the "
                "sentencepiece and protobuf packages, which its tokenizer check needs: else it SKIPs)",
    "1.memcheck": "0 errors, no leaks", "1.racecheck": "0 hazards", "1.synccheck": "0 errors",
    "1.initcheck": "0 errors",
    "1.determinism-bf16": "two runs identical, kill -9 + --resume identical, replay bit for bit",
    "1.determinism-f32": "the same, and a CPU replay of the GPU run bit for bit",
    "2.gguf": "sha256 b179c952… after the join",
    "2.suite-smollm2": "every test passes, none skips (GgufSmolLM2.LogitsMatchTransformersOnCuda, "
                       "ModelTokenizer.SmolLM2GreedyMatchesTransformersOnCuda among them)",
    "2.greedy": "transformers' greedy text, token for token (2 prompts x 24 tokens)",
    "2.evals": "the CPU table's accuracies: zero-shot 58.0/48.0/60.0, 16-shot 83.3/46.7/40.0 (SST-2/RTE/BoolQ)",
    "3.calibrate": "ms/step of SmolLM2 on the H100 (replaces the 40 ms estimate) and the best runs-at-once",
    "3.grid": "test accuracy mean ± std over 3 seeds, best dev, steps to MeZO's final dev accuracy, ms/step, "
              "memory; dev-accuracy SVG",
    "4.step-bench": "S-MeZO step <= 2.2x our forward; >= 20x the peer's S-MeZO step on smollm2-135m, >= 5x on "
                    "llama-7b (>= 12x at T = 64); our forward <= the peer's",
    "4.excess": "excess.md: per (shape, T) the step's and the forward's kernel classes adding up to their measured "
                "times (no unclassified kernel), the step at W' blocks of 8-384 MiB, forward and step with --graphs on / off "
                "(target: smollm2-135m forward <= 3 ms at T = 64), perturb / copy per noise kind, one "
                "layer serial / two streams / SM target / product, DRAM bytes against the model (or why not), fused / "
                "W' pair at llama-7b's shapes (the fused kernel is deleted if it loses at every one)",
    "5.bigmem-7b": "peak host RSS <= 2 GB; start-up <= 15 s (file cached); device <= weights + 1 GB; BF16 checkpoint",
    "5.bench-30b": "device <= weights + 1 GB; the S-MeZO step beside the peer's recorded 3.0 s (T = 256)",
    "5.bench-q4-7b": "device memory of --tune scales and of --tune lora <= 6 GB, the CUDA context aside (nvidia-smi's "
                     "peak less about 0.5 GB; smezo info predicts 5.2 GB); each step / its own forward and / the bf16 "
                     "forward, beside the bf16 step; RESULTS.md's memory table gets the measured rows",
    "6.mpi": "data parallel and a 2-stage pipeline: the 2-rank seed log replays on one process bit for bit",
    "7.step-bench-rest": "as 4.step-bench: >= 5x the peer's S-MeZO step (>= 12x at T = 64)",
    "7.bigmem-13b": "as 5.bigmem-7b, for 13B",
    "7.demo": "zero-shot SST-2 dev accuracy, then dev accuracy every 100 steps rising above it",
    "8.grid-rest": "3.grid's table for RTE and BoolQ",
    "9.claim-sst2": "claim.md for SST-2: paired S-MeZO - MeZO test accuracy, 95% t interval, the verdict; no best "
                    "setting left on an edge; dev-curve SVG with min-max bands",
    "9.peer-sst2": "the peer's MeZO and S-MeZO at our best SST-2 settings, 3 seeds: at every dev evaluation each mean "
                   "inside the other's seed range (compare.md lists where not)",
    "9.claim-rest": "claim.md for RTE and BoolQ, as 9.claim-sst2",
}

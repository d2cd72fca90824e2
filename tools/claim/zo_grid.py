#!/usr/bin/env python3
"""Runs a named grid of `smezo train` / `smezo eval` jobs and builds the comparison table.

The paper's comparison (MeZO vs R-MeZO vs S-MeZO) as a resumable batch job:

  tools/claim/zo_grid.py plan  --grid smollm2-lease [--tasks sst2] [--step-ms 40 --speedup 2]
                                                                  runs, total steps, GPU minutes
  tools/claim/zo_grid.py calibrate --grid smollm2-lease --model M --runs DIR [--jobs-list 1,2,4,8]
                                                                  ms/step, and the best --jobs
  tools/claim/zo_grid.py run   --grid smollm2-lease --model M --runs DIR [--jobs auto] [--deadline-s 540]
  tools/claim/zo_grid.py table --runs DIR [--report DIR]                RESULTS-ready table, claim.md + SVG plots
  tools/claim/zo_grid.py compare --runs DIR --peer PEER_DIR [--task sst2]  our dev curves against tools/claim/zo_peer.py's

Grids: `smollm2-lease` fits a short GPU lease (tools/gpu_backlog.sh runs it: SST-2 first,
RTE and BoolQ when the budget allows); `smollm2-paper` is the long-GPU grid (the paper's
whole search at 5,000 steps: hours of GPU, not for a 30-minute lease); `smollm2-quick` sizes a
budget; `smollm2-claim` decides whether S-MeZO beats MeZO (3,000 steps, lr x sparsity, best
settings on an edge of their range extended once, 3-5 seeds; claim.md states the verdict by the
rule in tools/claim/zo_claim.py; several leases, run in slices by the backlog's item 9); `ci-tiny` and
`ci-claim` are the runner's own tests on the CPU. `--tasks` runs a subset of a grid's
tasks; `--tiny` shrinks a grid to a smoke test of its own commands (first task, each method's
first learning rate, two seeds, 2 steps; the CPU dry run of tools/gpu_backlog.sh uses it).

`run` is safe to call again and again (one GPU call at a time, say): finished jobs (a
summary.json with status "completed", or an eval .json) are skipped, a job killed earlier is
continued with `smezo train ... --resume` (bit-identical to an uninterrupted run), and at the
deadline the running jobs are killed and left to resume next time. The grid has two phases
per task and method: a search over the method's learning rates (and S-MeZO's sparsities) with
the first seed, then the setting with the best final dev accuracy again with the other seeds
(the first seed's run is reused). Zero-shot and in-context baselines run as `smezo eval`.
`calibrate` runs 1, 2, 4, ... copies of one training run at once and writes the steps per
second of each count to DIR/calibration.json; `run --jobs auto` then uses the best count.

Only the Python standard library is used (the GPU machine and CI have no extra packages).
"""
import argparse
import json
import math
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no tools/__pycache__ in the tree (it would travel to the GPU)
import zo_claim  # noqa: E402  (edges, extensions, the paired report)
import zo_stats  # noqa: E402
from zo_stats import band_curve, mean_curve, steps_to_reach  # noqa: E402

# ---- grids ------------------------------------------------------------------------------

# MeZO's protocol: 1000 train / 500 dev examples sampled from the task's training split, its
# validation set as the test set (1000 test examples at most), batch 16, eps 1e-3,
# classification loss with candidate scoring (smezo train's defaults). Storage is f32: a 135M
# model fits easily, and updates of ~1e-7 would vanish in bf16.
#
# The time a grid takes is steps x ms/step. The planning figures below were MEASURED by the
# backlog's 3.calibrate (`zo_grid.py calibrate`, 100 S-MeZO steps per count) on an H200 on
# 2026-11-27, main 1303ad2 (shared gpu-results 2026-11-27-h200-1303ad2, backlog-grid-call.md):
# 52.5 ms/step alone, and 8 runs at once on the one GPU gave 88.6 steps/s together, 4.66x one run
# (2: 2.07x, 4: 3.72x). The lease grid's SST-2 then took 331 s against 300 planned. (2026-11-26,
# main e060df8, had measured 31.5 ms alone and 2.82x at 8: the same 11 ms of GPU per step.)
# An H100 has the same SMs with less memory bandwidth; the figures plan its leases too.
SMOLLM2_H100_STEP_MS = 52.5
SMOLLM2_H100_SPEEDUP = 4.66
SMOLLM2_ESTIMATE_BASIS = ("measured by 3.calibrate on an H200 on 2026-11-27 (main 1303ad2): 52.5 ms/step alone; "
                          "8 runs at once 4.66x the steps/s of one (2: 2.07x, 4: 3.72x)")
SMOLLM2_ESTIMATE_NOTE = ("measured on an H200, 2026-11-27: 52.5 ms/step alone and 4.66x from 8 concurrent runs "
                         "(`zo_grid.py calibrate` measures them again)")

_SMOLLM2_DATA = ["--train-examples", "1000", "--dev-examples", "500", "--test-examples", "1000"]

GRIDS = {
    # The grid for a short GPU lease: three learning rates per method inside
    # 1e-5..5e-5 (useful on a 135M model at batch 16 and eps 1e-3; 1e-4 diverges for MeZO),
    # S-MeZO and R-MeZO at sparsity 0.75, 3 seeds, 1,500 steps, dev accuracy every 250 steps.
    # SST-2 alone is 15 runs (9 search + 6 seed runs) = 22,500 steps; run it first
    # (--tasks sst2), RTE and BoolQ when the budget allows.
    "smollm2-lease": {
        "label": "lease-sized: SST-2 (22,500 steps) fits a 30-minute GPU lease beside the other "
                 "items of tools/gpu_backlog.sh; RTE and BoolQ when the budget allows",
        "tasks": ["sst2", "rte", "boolq"],
        "methods": {
            "mezo": {"lr": [1e-5, 2e-5, 5e-5], "sparsity": [0.0]},
            "rmezo": {"lr": [1e-5, 2e-5, 5e-5], "sparsity": [0.75]},
            "smezo": {"lr": [1e-5, 2e-5, 5e-5], "sparsity": [0.75]},
        },
        "seeds": [42, 43, 44],
        "steps": 1500, "eval_every": 250, "batch": 16, "max_len": 256,
        "dev_examples": 500, "test_examples": 1000,
        "train_args": ["--device", "cuda", "--dtype", "f32", "--eps", "1e-3"] + _SMOLLM2_DATA,
        "evals": [("zero-shot", 0, 256), ("icl", 16, 2048)],
        "eval_args": ["--device", "cuda", "--dtype", "f32"],
        "step_ms": SMOLLM2_H100_STEP_MS, "speedup": SMOLLM2_H100_SPEEDUP, "estimate_note": SMOLLM2_ESTIMATE_NOTE,
    },
    # Can Sparse-MeZO's claim be decided on SmolLM2? The lease grid (1,500 steps) left S-MeZO's
    # best lr at the top of its range, leading at 500 and 1,000 steps and trailing at 1,500. Here:
    # twice the steps, R-MeZO and S-MeZO over lr x sparsity up to 2e-4, every best setting that
    # sits on an edge of its range extended once (tools/claim/zo_claim.py), 3 seeds of each best
    # setting, and seeds 45 and 46 of MeZO and S-MeZO where the paired 95% interval of S-MeZO -
    # MeZO still holds 0. Hours of GPU in all: tools/gpu_backlog.sh runs it in slices, a lease
    # at a time, carrying the finished runs forward; `zo_grid.py table` writes claim.md.
    "smollm2-claim": {
        "label": "the claim: MeZO vs R-MeZO vs S-MeZO on SST-2, RTE and BoolQ, 3,000 steps, edges extended once, "
                 "3-5 seeds; several leases (tools/gpu_backlog.sh runs it in slices)",
        "tasks": ["sst2", "rte", "boolq"],
        "methods": {
            "mezo": {"lr": [1e-5, 2e-5, 3e-5], "sparsity": [0.0]},
            "rmezo": {"lr": [3e-5, 5e-5, 1e-4, 2e-4], "sparsity": [0.5, 0.75, 0.9]},
            "smezo": {"lr": [3e-5, 5e-5, 1e-4, 2e-4], "sparsity": [0.5, 0.75, 0.9]},
        },
        "seeds": [42, 43, 44], "extra_seeds": [45, 46], "extend_edges": True,
        "steps": 3000, "eval_every": 250, "batch": 16, "max_len": 256,
        "dev_examples": 500, "test_examples": 1000,
        "train_args": ["--device", "cuda", "--dtype", "f32", "--eps", "1e-3"] + _SMOLLM2_DATA,
        "evals": [("zero-shot", 0, 256), ("icl", 16, 2048)],
        "eval_args": ["--device", "cuda", "--dtype", "f32"],
        "step_ms": SMOLLM2_H100_STEP_MS, "speedup": SMOLLM2_H100_SPEEDUP, "estimate_note": SMOLLM2_ESTIMATE_NOTE,
    },
    # The paper's whole search at the paper's length: FOR A LONG GPU RUN (hours: 63 runs,
    # 315,000 steps), not for a 30-minute lease. Its learning rates are the paper's appendix
    # grids for a 7B model; on SmolLM2-135M the useful rates are higher (smollm2-lease).
    "smollm2-paper": {
        "label": "long GPU only: 63 runs, 315,000 steps (hours); the paper's 7B learning rates",
        "tasks": ["sst2", "rte", "boolq"],
        "methods": {
            "mezo": {"lr": [1e-6, 2e-6, 5e-6], "sparsity": [0.0]},
            "rmezo": {"lr": [2e-6, 5e-6, 1e-5], "sparsity": [0.8]},
            "smezo": {"lr": [2e-6, 5e-6, 1e-5], "sparsity": [0.5, 0.7, 0.8]},
        },
        "seeds": [42, 43, 44],
        "steps": 5000, "eval_every": 250, "batch": 16, "max_len": 256,
        "dev_examples": 500, "test_examples": 1000,
        "train_args": ["--device", "cuda", "--dtype", "f32", "--eps", "1e-3"],
        "evals": [("zero-shot", 0, 256), ("icl", 16, 2048)],
        "eval_args": ["--device", "cuda", "--dtype", "f32"],
        "step_ms": SMOLLM2_H100_STEP_MS, "speedup": SMOLLM2_H100_SPEEDUP, "estimate_note": SMOLLM2_ESTIMATE_NOTE,
    },
    # A fifth of the steps and one lr per method, to size a session's budget first.
    "smollm2-quick": {
        "label": "budget sizing: one lr per method, one seed, 1,000 steps",
        "tasks": ["sst2", "rte", "boolq"],
        "methods": {
            "mezo": {"lr": [2e-6], "sparsity": [0.0]},
            "rmezo": {"lr": [5e-6], "sparsity": [0.8]},
            "smezo": {"lr": [5e-6], "sparsity": [0.8]},
        },
        "seeds": [42],
        "steps": 1000, "eval_every": 100, "batch": 16, "max_len": 256,
        "dev_examples": 500, "test_examples": 1000,
        "train_args": ["--device", "cuda", "--dtype", "f32", "--eps", "1e-3"],
        "evals": [("zero-shot", 0, 256)],
        "eval_args": ["--device", "cuda", "--dtype", "f32"],
        "step_ms": SMOLLM2_H100_STEP_MS, "speedup": SMOLLM2_H100_SPEEDUP, "estimate_note": SMOLLM2_ESTIMATE_NOTE,
    },
    # The runner's own test: the bundled stories260K on the CPU, a few steps.
    "ci-tiny": {
        "label": "the runner's own test (stories260K on the CPU)",
        "tasks": ["sst2"],
        "methods": {
            "mezo": {"lr": [1e-3], "sparsity": [0.0]},
            "smezo": {"lr": [1e-3, 3e-3], "sparsity": [0.75]},
        },
        "seeds": [1, 2],
        "steps": 40, "eval_every": 10, "batch": 2, "max_len": 32,
        "dev_examples": 8, "test_examples": 8,
        "train_args": ["--device", "cpu", "--train-examples", "32", "--dev-examples", "8",
                       "--test-examples", "8", "--flush-every", "2"],
        "evals": [("zero-shot", 0, 32)],
        "eval_args": ["--device", "cpu", "--dev-examples", "8", "--test-examples", "8"],
    },
    # The claim machinery's own test on the CPU: S-MeZO's two learning rates put its best on an
    # edge (extended once), and seed 3 runs where the paired interval holds 0.
    "ci-claim": {
        "label": "the claim runner's own test (stories260K on the CPU)",
        "tasks": ["sst2"],
        "methods": {
            "mezo": {"lr": [1e-3], "sparsity": [0.0]},
            "smezo": {"lr": [1e-3, 3e-3], "sparsity": [0.75]},
        },
        "seeds": [1, 2], "extra_seeds": [3], "extend_edges": True,
        "steps": 20, "eval_every": 10, "batch": 2, "max_len": 32,
        "dev_examples": 8, "test_examples": 8,
        "train_args": ["--device", "cpu", "--train-examples", "32", "--dev-examples", "8",
                       "--test-examples", "8", "--flush-every", "2"],
        "evals": [("zero-shot", 0, 32)],
        "eval_args": ["--device", "cpu", "--dev-examples", "8", "--test-examples", "8"],
    },}

# What --tiny keeps of a grid: its commands and methods, on a smoke-test scale (any device).
TINY = {"steps": 2, "eval_every": 1, "batch": 2, "max_len": 32, "dev_examples": 4, "test_examples": 4,
        "data_args": ["--train-examples", "16", "--dev-examples", "4", "--test-examples", "4"]}


def drop_options(args, names):
    """args without the named options and their values (every option named takes one value)."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in names:
            skip = True
        else:
            out.append(a)
    return out


def set_device(args, device):
    return drop_options(args, {"--device"}) + ["--device", device]


def select_grid(name, tasks="", tiny=False, device=""):
    """The named grid, restricted to --tasks (comma-separated, in the grid's order), shrunk by
    --tiny, with --device replaced."""
    grid = dict(GRIDS[name])
    if tasks:
        wanted = [t for t in tasks.split(",") if t]
        unknown = [t for t in wanted if t not in grid["tasks"]]
        if unknown:
            raise SystemExit("zo_grid: grid %s has no task %s (it has %s)" %
                             (name, ",".join(unknown), ",".join(grid["tasks"])))
        grid["tasks"] = [t for t in grid["tasks"] if t in wanted]
    if tiny:
        data = {"--train-examples", "--dev-examples", "--test-examples", "--flush-every"}
        grid["tasks"] = grid["tasks"][:1]
        grid["methods"] = {m: {"lr": s["lr"][:1], "sparsity": s["sparsity"][:1]} for m, s in grid["methods"].items()}
        grid["seeds"] = grid["seeds"][:2]
        grid["extra_seeds"] = grid.get("extra_seeds", [])[:1]
        for key in ("steps", "eval_every", "batch", "max_len", "dev_examples", "test_examples"):
            grid[key] = TINY[key]
        grid["train_args"] = drop_options(grid["train_args"], data) + TINY["data_args"]
        grid["eval_args"] = drop_options(grid["eval_args"], data) + TINY["data_args"]
        grid["evals"] = [(mode, min(shots, 2), TINY["max_len"]) for mode, shots, _ in grid["evals"]]
    if device:
        grid["train_args"] = set_device(grid["train_args"], device)
        grid["eval_args"] = set_device(grid["eval_args"], device)
    return grid


def fmt_num(x):
    """A learning rate or sparsity as it appears in run names: 2e-06 -> 2e-6, 0.8 -> 0.8."""
    s = "%g" % x
    return s.replace("e-0", "e-").replace("e+0", "e+")


def train_name(task, method, sparsity, lr, seed):
    s = "" if method == "mezo" else "-s%s" % fmt_num(sparsity)
    return "%s/%s%s-lr%s-seed%d" % (task, method, s, fmt_num(lr), seed)


def search_runs(grid):
    """(name, task, method, sparsity, lr, seed) of the search phase: first seed, every setting."""
    seed = grid["seeds"][0]
    for task in grid["tasks"]:
        for method, space in grid["methods"].items():
            for sp in space["sparsity"]:
                for lr in space["lr"]:
                    yield (train_name(task, method, sp, lr, seed), task, method, sp, lr, seed)


def train_command(grid, smezo, model, runs_dir, job):
    name, task, method, sp, lr, seed = job
    cmd = [smezo, "train", "--task", task, "--method", method, "--lr", repr(lr),
           "--steps", str(grid["steps"]), "--batch", str(grid["batch"]),
           "--max-len", str(grid["max_len"]), "--eval-every", str(grid["eval_every"]),
           "--seed", str(seed), "--out", os.path.join(runs_dir, name)] + grid["train_args"]
    if method != "mezo":
        cmd += ["--sparsity", repr(sp)]
    if model:
        cmd += ["--model", model]
    return cmd


def eval_jobs(grid):
    for task in grid["tasks"]:
        for mode, shots, max_len in grid["evals"]:
            name = "%s/eval-%s%s" % (task, mode, "-k%d" % shots if shots else "")
            yield name, task, mode, shots, max_len


def eval_command(grid, smezo, model, runs_dir, job):
    name, task, mode, shots, max_len = job
    cmd = [smezo, "eval", "--task", task, "--mode", mode, "--split", "test",
           "--max-len", str(max_len), "--batch", str(grid["batch"]),
           "--out", os.path.join(runs_dir, name + ".json")] + grid["eval_args"]
    if shots:
        cmd += ["--shots", str(shots)]
    if model:
        cmd += ["--model", model]
    return cmd


# ---- reading runs -----------------------------------------------------------------------

def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def run_state(run_dir):
    """'done', 'partial' (a seed log exists: resume it), 'failed' or 'new'."""
    summary = read_json(os.path.join(run_dir, "summary.json"))
    if summary is not None and summary.get("status") == "completed":
        return "done"
    if summary is not None and str(summary.get("status", "")).startswith("stopped"):
        return "failed"
    if os.path.exists(os.path.join(run_dir, "seed_log.txt")):
        return "partial"
    return "new"


def dev_curve(run_dir):
    """[(step, dev_acc)] in step order from metrics.jsonl (full-dev evaluations only)."""
    points = {}
    try:
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # a partial last line
                if isinstance(rec.get("dev_acc"), (int, float)):
                    points[int(rec["step"])] = float(rec["dev_acc"])
    except OSError:
        pass
    return sorted(points.items())


def best_finished(jobs, runs_dir):
    """(the finished job with the best final dev accuracy or None, whether any job may still
    finish: one neither completed nor failed)."""
    best, pending = None, False
    for job in jobs:
        summary = read_json(os.path.join(runs_dir, job[0], "summary.json"))
        if summary is None or summary.get("status") != "completed":
            pending = pending or run_state(os.path.join(runs_dir, job[0])) != "failed"
            continue
        acc = summary.get("final_dev_acc")
        acc = acc if isinstance(acc, (int, float)) else -1.0
        if best is None or acc > best[0]:
            best = (acc, job)
    return (best[1] if best else None), pending


def best_settings(grid, runs_dir):
    """{(task, method): job} of the finished search run with the best final dev accuracy, once
    every search run of that task and method is finished (else absent)."""
    groups = {}
    for job in search_runs(grid):
        groups.setdefault((job[1], job[2]), []).append(job)
    out = {}
    for key, jobs in groups.items():
        best, pending = best_finished(jobs, runs_dir)
        if best is not None and not pending:
            out[key] = best
    return out


def with_seed(job, seed):
    name, task, method, sp, lr, _ = job
    return (train_name(task, method, sp, lr, seed), task, method, sp, lr, seed)


_WARNED = set()  # the edge warnings this process printed (all_jobs runs at every poll)


def note_extension(runs_dir, key, best, sides, added):
    """Warns once per process, and records in TASK/extension-METHOD.json (the report reads it),
    that a best setting sat on an edge and which runs extend its range."""
    task, method = key
    record = {"best_after_search": "sparsity %s, lr %s" % (fmt_num(best[3]), fmt_num(best[4])), "edges": zo_claim.describe_edges(sides),
              "added": ", ".join(j[0] for j in added)}
    path = os.path.join(runs_dir, task, "extension-%s.json" % method)
    if read_json(path) != record:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(record, f, indent=1)
    if key not in _WARNED:
        _WARNED.add(key)
        print("[zo_grid] WARNING: %s %s: the best setting after the search (%s) sits on an edge of its range (%s): "
              "extending once with %s" % (task, method, record["best_after_search"], record["edges"], record["added"]),
              flush=True)


def decided_settings(grid, runs_dir):
    """({(task, method): job of the setting the other seeds run}, [edge-extension jobs]). A grid
    with "extend_edges" runs one step beyond an edge the search's best sits on (tools/claim/zo_claim.py)
    before deciding; the best over the search and the extension is then the setting."""
    decided, extension = {}, []
    for key, best in sorted(best_settings(grid, runs_dir).items()):
        space = grid["methods"][key[1]]
        sides, settings = zo_claim.extension_settings((best[3], best[4]), space) if grid.get("extend_edges") else ([], [])
        if not settings:
            decided[key] = best
            continue
        added = [with_seed((None, key[0], key[1], sp, lr, None), grid["seeds"][0]) for sp, lr in settings]
        note_extension(runs_dir, key, best, sides, added)
        extension += added
        final, pending = best_finished([best] + added, runs_dir)
        if not pending:
            decided[key] = final
    return decided, extension


def seed_tests(job, seeds, runs_dir):
    """({seed: test accuracy} of a setting's finished seeds, whether a seed may still finish)."""
    tests, pending = {}, False
    for seed in seeds:
        run = with_seed(job, seed)[0]
        summary = read_json(os.path.join(runs_dir, run, "summary.json"))
        if summary is not None and summary.get("status") == "completed" and \
                isinstance(summary.get("test_acc"), (int, float)):
            tests[seed] = summary["test_acc"]
        elif run_state(os.path.join(runs_dir, run)) != "failed":
            pending = True
    return tests, pending


def extra_seed_jobs(grid, runs_dir, decided):
    """A grid's "extra_seeds" for MeZO and S-MeZO of a task whose paired 95% interval of S-MeZO -
    MeZO test accuracy over the first seeds holds 0 (zo_claim's rule), once those are finished."""
    jobs = []
    for task in grid["tasks"] if grid.get("extra_seeds") else []:
        pair = [decided.get((task, m)) for m in ("smezo", "mezo")]
        if None in pair:
            continue
        (ours, p1), (theirs, p2) = [seed_tests(job, grid["seeds"], runs_dir) for job in pair]
        seeds = sorted(set(ours) & set(theirs))
        if p1 or p2 or not zo_stats.straddles_zero(zo_stats.paired_interval([(ours[s], theirs[s]) for s in seeds])):
            continue
        jobs += [with_seed(job, seed) for job in pair for seed in grid["extra_seeds"]]
    return jobs


def all_jobs(grid, runs_dir, extra_seeds=True):
    """Every job runnable now, in order: search runs, edge extensions, the seed runs of decided
    settings, evals, and last (as the budget allows) the extra seeds of undecided tasks."""
    decided, extension = decided_settings(grid, runs_dir)
    jobs = [("train", j) for j in list(search_runs(grid)) + extension]
    for key, job in sorted(decided.items()):
        jobs += [("train", with_seed(job, seed)) for seed in grid["seeds"][1:]]
    jobs += [("eval", j) for j in eval_jobs(grid)]
    if extra_seeds:
        jobs += [("train", j) for j in extra_seed_jobs(grid, runs_dir, decided)]
    return jobs


def job_finished(kind, job, runs_dir):
    if kind == "eval":
        return read_json(os.path.join(runs_dir, job[0] + ".json")) is not None
    return run_state(os.path.join(runs_dir, job[0])) in ("done", "failed")


# ---- run ----------------------------------------------------------------------------------

def extension_bound(grid):
    """The most edge-extension runs one task can add: per method, one per dimension searched
    with two or more values, and the corner when there are two."""
    if not grid.get("extend_edges"):
        return 0
    n = 0
    for space in grid["methods"].values():
        dims = sum(len(space[d]) >= 2 for d in ("lr", "sparsity"))
        n += dims + (1 if dims == 2 else 0)
    return n


def grid_size(grid):
    """Runs, steps and evaluated examples of a whole grid (the seed phase included), and the
    most its edge extensions and extra seeds can add."""
    n_search = len(list(search_runs(grid)))
    n_seed = len(grid["tasks"]) * len(grid["methods"]) * (len(grid["seeds"]) - 1)
    n_train = n_search + n_seed
    n_extension = len(grid["tasks"]) * extension_bound(grid)
    paired = sum(m in grid["methods"] for m in ("mezo", "smezo")) == 2
    n_extra = len(grid["tasks"]) * 2 * len(grid.get("extra_seeds", [])) if paired else 0
    dev_evals = grid["steps"] // grid["eval_every"] if grid["eval_every"] else 1
    per_run = dev_evals * grid.get("dev_examples", 500) + grid.get("test_examples", 1000)
    baselines = len(list(eval_jobs(grid))) * grid.get("test_examples", 1000)
    return {"search_runs": n_search, "seed_runs": n_seed, "evals": len(list(eval_jobs(grid))),
            "train_steps": n_train * grid["steps"], "eval_examples": n_train * per_run + baselines,
            "extension_runs": n_extension, "extra_seed_runs": n_extra,
            "max_train_steps": (n_train + n_extension + n_extra) * grid["steps"],
            "max_eval_examples": (n_train + n_extension + n_extra) * per_run + baselines}


def grid_seconds(grid, step_ms, speedup, most=False):
    """Estimated GPU seconds: training steps plus evaluation, where a batch of evaluated examples
    counts as one step (one forward of `batch` sequences, as a step's probe pair is one forward
    of two), over the throughput gain of concurrent runs. most: with every edge extension and
    extra seed the grid may add."""
    size = grid_size(grid)
    prefix = "max_" if most else ""
    step_equivalents = size[prefix + "train_steps"] + size[prefix + "eval_examples"] / grid["batch"]
    return step_equivalents * step_ms / 1000.0 / speedup


def cmd_plan(args):
    grid = select_grid(args.grid, args.tasks, args.tiny, args.device)
    size = grid_size(grid)
    print("grid %s%s: %s" % (args.grid, " (tasks %s)" % args.tasks if args.tasks else "", grid.get("label", "")))
    print("  %d search runs + %d seed runs (after the search) = %d training runs x %d steps = %d steps; "
          "%d evals; %d evaluated examples (dev every %d steps, test at the end, baselines)" %
          (size["search_runs"], size["seed_runs"], size["search_runs"] + size["seed_runs"], grid["steps"],
           size["train_steps"], size["evals"], size["eval_examples"], grid["eval_every"]))
    if size["extension_runs"] or size["extra_seed_runs"]:
        print("  then at most %d edge-extension runs (one step beyond an edge a best setting sits on) and %d "
              "extra-seed runs (seeds %s of MeZO and S-MeZO where the paired 95%% interval holds 0): at most %d "
              "steps" % (size["extension_runs"], size["extra_seed_runs"],
                         ", ".join(str(s) for s in grid.get("extra_seeds", [])), size["max_train_steps"]))
    step_ms = args.step_ms or grid.get("step_ms", 0.0)
    speedup = args.speedup or grid.get("speedup", 1.0)
    if step_ms:
        stated = "stated" if args.step_ms else grid.get("estimate_note", "the grid's planning figure")
        secs = grid_seconds(grid, step_ms, speedup)
        print("  estimated GPU time at %g ms/step and %.1fx from concurrent runs (%s): %.1f min "
              "(%.0f s; an evaluation batch of %d examples counted as one step)" %
              (step_ms, speedup, stated, secs / 60.0, secs, grid["batch"]))
        if size["extension_runs"] or size["extra_seed_runs"]:
            most = grid_seconds(grid, step_ms, speedup, most=True)
            print("  with every extension and extra seed: at most %.1f min (%.0f s)" % (most / 60.0, most))
    if args.commands:
        for job in search_runs(grid):
            print("  " + " ".join(shlex.quote(c) for c in train_command(grid, "smezo", args.model, args.runs, job)))
        for job in eval_jobs(grid):
            print("  " + " ".join(shlex.quote(c) for c in eval_command(grid, "smezo", args.model, args.runs, job)))
    return 0


def launch(cmd, log_path):
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    log = open(log_path, "ab")
    log.write(("\n$ %s\n" % " ".join(shlex.quote(c) for c in cmd)).encode())
    log.flush()
    # A new process group, so the deadline can stop the job and nothing it started.
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True), log


class Stop(Exception):
    pass


def on_signal(signum, frame):
    raise Stop(signal.Signals(signum).name)


def calibration_command(grid, smezo, model, out, job, steps):
    """One training run of the grid, `steps` long, with no evaluation: for timing."""
    cmd = train_command(grid, smezo, model, os.path.dirname(out), job)
    cmd = drop_options(cmd, {"--steps", "--eval-every", "--dev-examples", "--test-examples", "--out"})
    return cmd + ["--steps", str(steps), "--eval-every", "0", "--dev-examples", "0", "--test-examples", "0",
                  "--out", out]


def cmd_calibrate(args):
    """Runs N copies of one S-MeZO run of the grid at once for N in --jobs-list, and records the
    steps per second of one run alone (ms/step) and of N together (the sum of the runs' training
    loop rates, summary.json steps_per_s: start-up, evaluation and checkpoint excluded)."""
    grid = select_grid(args.grid, args.tasks, args.tiny, args.device)
    jobs = list(search_runs(grid))
    job = next((j for j in jobs if j[2] == "smezo"), jobs[0])
    base = os.path.join(args.runs, "calibrate")
    results, running = [], []

    def stop(signum, frame):
        for proc, log in running:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        raise Stop(signal.Signals(signum).name)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    counts = [int(x) for x in args.jobs_list.split(",") if x]
    if not counts or counts[0] != 1 or counts != sorted(set(counts)):
        print("zo_grid: --jobs-list must start at 1 and increase (e.g. 1,2,4,8), not %s" % args.jobs_list,
              file=sys.stderr)
        return 2
    print("[zo_grid] calibrate: %s, %d steps, --jobs-list %s" % (job[0], args.steps, args.jobs_list), flush=True)
    for n in counts:
        outs = [os.path.join(base, "j%d-%d" % (n, k)) for k in range(n)]
        for out in outs:
            shutil.rmtree(out, ignore_errors=True)
        running[:] = [launch(calibration_command(grid, args.smezo, args.model, out, job, args.steps), out + ".log")
                      for out in outs]
        for proc, log in running:
            proc.wait()
            log.close()
        bad = [(out, proc.returncode) for out, (proc, _) in zip(outs, running) if proc.returncode != 0]
        running[:] = []
        if bad:
            out, rc = bad[0]
            with open(out + ".log", errors="replace") as f:
                tail = f.read()[-2000:]
            print("[zo_grid] calibrate: %d jobs: %s exited with %d:\n%s" % (n, out, rc, tail), flush=True)
            return 1
        rates = [read_json(os.path.join(out, "summary.json"))["steps_per_s"] for out in outs]
        for out in outs:
            shutil.rmtree(out, ignore_errors=True)  # the checkpoints: GBs for nothing
        results.append({"jobs": n, "ms_per_step": 1000.0 / statistics.mean(rates), "steps_per_s": sum(rates)})
        print("[zo_grid] calibrate: %d at once: %.1f ms/step each, %.2f steps/s together" %
              (n, results[-1]["ms_per_step"], results[-1]["steps_per_s"]), flush=True)
        best_so_far = max(r["steps_per_s"] for r in results[:-1]) if len(results) > 1 else 0.0
        if len(results) > 1 and results[-1]["steps_per_s"] < 1.05 * best_so_far:
            break  # more jobs stopped paying: do not try still more
    top = max(r["steps_per_s"] for r in results)
    best = min((r for r in results if r["steps_per_s"] >= 0.95 * top), key=lambda r: r["jobs"])
    alone = results[0]
    cal = {"grid": args.grid, "job": job[0], "steps": args.steps, "results": results, "best_jobs": best["jobs"],
           "ms_per_step_alone": alone["ms_per_step"], "speedup": best["steps_per_s"] / alone["steps_per_s"],
           "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    os.makedirs(args.runs, exist_ok=True)
    with open(os.path.join(args.runs, "calibration.json"), "w") as f:
        json.dump(cal, f, indent=1)
    print("| runs at once | ms/step of each | steps/s together | x one run |")
    print("|---|---|---|---|")
    for r in results:
        print("| %d | %.1f | %.2f | %.2f |" % (r["jobs"], r["ms_per_step"], r["steps_per_s"],
                                              r["steps_per_s"] / alone["steps_per_s"]))
    print("[zo_grid] calibrate: best --jobs %d (%.2f steps/s); written to %s" %
          (best["jobs"], best["steps_per_s"], os.path.join(args.runs, "calibration.json")), flush=True)
    return 0


def resolve_jobs(jobs, runs_dir, calibration=""):
    """--jobs N, or auto: the best count of calibration.json (--calibration, else the one in
    --runs; 4 without one)."""
    if jobs != "auto":
        return int(jobs)
    cal = read_json(calibration or os.path.join(runs_dir, "calibration.json"))
    if cal and isinstance(cal.get("best_jobs"), int):
        print("[zo_grid] --jobs auto: %d (calibration.json: %.1f ms/step alone, %.2f steps/s at %d)" %
              (cal["best_jobs"], cal.get("ms_per_step_alone") or 0.0,
               max(r["steps_per_s"] for r in cal["results"]), cal["best_jobs"]), flush=True)
        return cal["best_jobs"]
    print("[zo_grid] --jobs auto: no calibration.json in %s: 4" % runs_dir, flush=True)
    return 4


def cmd_run(args):
    grid = select_grid(args.grid, args.tasks, args.tiny, args.device)
    args.jobs = resolve_jobs(args.jobs, args.runs, args.calibration)
    deadline = time.time() + args.deadline_s if args.deadline_s else None
    running = {}  # name -> (kind, job, process, log)
    gave_up = set()  # jobs that exited with an error: not restarted by this invocation (the next retries them)
    started = failed = 0
    stopped_by = None

    def stop_all(why):
        for name, (kind, job, proc, log) in running.items():
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # safe: train resumes bit for bit
            except ProcessLookupError:
                pass
            proc.wait()
            log.close()
            print("[zo_grid] %s: stopped %s (resumes next time)" % (why, name), flush=True)
        running.clear()

    # Ctrl-C or a SIGTERM (the end of a device call, say) stops the jobs too, resumably.
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        while True:
            for name in list(running):  # reap
                kind, job, proc, log = running[name]
                if proc.poll() is not None:
                    log.close()
                    del running[name]
                    if proc.returncode != 0:
                        failed += 1
                        gave_up.add(name)
                        print("[zo_grid] %s exited with %d (see its log)" % (name, proc.returncode), flush=True)
                    else:
                        if kind == "train" and args.drop_checkpoints:  # the table reads summaries only
                            shutil.rmtree(os.path.join(args.runs, name, "checkpoint"), ignore_errors=True)
                        print("[zo_grid] %s finished" % name, flush=True)
            if deadline and time.time() >= deadline:
                stop_all("deadline")
                break
            todo = [(k, j) for k, j in all_jobs(grid, args.runs, not args.no_extra_seeds)
                    if j[0] not in running and j[0] not in gave_up and not job_finished(k, j, args.runs)]
            if not todo and not running:
                break
            while todo and len(running) < args.jobs:
                kind, job = todo.pop(0)
                if kind == "eval":
                    cmd = eval_command(grid, args.smezo, args.model, args.runs, job)
                    log_path = os.path.join(args.runs, job[0] + ".log")
                else:
                    run_dir = os.path.join(args.runs, job[0])
                    cmd = train_command(grid, args.smezo, args.model, args.runs, job)
                    if run_state(run_dir) == "partial":
                        cmd.append("--resume")
                    log_path = os.path.join(run_dir, "run.log")
                proc, log = launch(cmd, log_path)
                running[job[0]] = (kind, job, proc, log)
                started += 1
                print("[zo_grid] started %s%s" % (job[0], " (resume)" if cmd[-1] == "--resume" else ""),
                      flush=True)
            time.sleep(args.poll_s)
    except Stop as e:
        stopped_by = str(e)
        stop_all(stopped_by)
    left = [j[0] for k, j in all_jobs(grid, args.runs, not args.no_extra_seeds) if not job_finished(k, j, args.runs)]
    print("[zo_grid] started %d, failed %d, unfinished %d%s" %
          (started, failed, len(left), "" if left else " — grid complete"), flush=True)
    if stopped_by:
        return 128 + getattr(signal, stopped_by)
    return 1 if failed else 0


# ---- table and plots ----------------------------------------------------------------------

def mean_std(xs):
    if not xs:
        return None, None
    return statistics.mean(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0)


def collect(runs_dir):
    """{task: {method: [run dicts]}} from every finished train run found under runs_dir, and
    {task: {eval name: eval json}}."""
    runs, evals = {}, {}
    for task in sorted(os.listdir(runs_dir)):
        tdir = os.path.join(runs_dir, task)
        if not os.path.isdir(tdir):
            continue
        for entry in sorted(os.listdir(tdir)):
            path = os.path.join(tdir, entry)
            if entry.endswith(".json") and entry.startswith("eval-"):
                j = read_json(path)
                if j is not None:
                    evals.setdefault(task, {})[entry[:-5]] = j
                continue
            summary = read_json(os.path.join(path, "summary.json"))
            if summary is None or summary.get("status") != "completed":
                continue
            hp = summary.get("hyperparameters", {}).get("spsa", {})
            runs.setdefault(task, {}).setdefault(summary.get("method"), []).append({
                "name": entry, "summary": summary, "curve": dev_curve(path),
                "setting": (hp.get("sparsity"), hp.get("lr")), "seed": hp.get("seed")})
    return runs, evals


def pick_best(method_runs):
    """The setting whose first-seed run has the best final dev accuracy, and all its seeds."""
    by_setting = {}
    for r in method_runs:
        by_setting.setdefault(r["setting"], []).append(r)
    def score(rs):
        first = min(rs, key=lambda r: r["seed"])
        acc = first["summary"].get("final_dev_acc")
        return acc if isinstance(acc, (int, float)) else -1.0
    setting = max(by_setting, key=lambda s: (score(by_setting[s]), len(by_setting[s])))
    return setting, sorted(by_setting[setting], key=lambda r: r["seed"])


METHOD_ORDER = ["mezo", "rmezo", "smezo"]
METHOD_LABEL = {"mezo": "MeZO", "rmezo": "R-MeZO", "smezo": "S-MeZO"}
METHOD_COLOR = {"mezo": "#1f77b4", "rmezo": "#2ca02c", "smezo": "#d62728"}


def pct(x):
    return "–" if x is None else "%.1f" % (100.0 * x)


def build_table(runs, evals):
    lines = ["| task | method | setting (sparsity, lr) | seeds | test acc % (mean ± std) | best dev % "
             "| steps to MeZO's final dev (speed-up) | ms/step | peak device MB |",
             "|---|---|---|---|---|---|---|---|---|"]
    best = {}
    for task in sorted(set(runs) | set(evals)):
        for name, j in sorted(evals.get(task, {}).items()):
            lines.append("| %s | %s | – | – | %s | – | – | – | – |" %
                         (task, name.replace("eval-", ""), pct(j.get("accuracy"))))
        methods = runs.get(task, {})
        mezo_target = None
        chosen = {}
        for method in sorted(methods, key=lambda m: METHOD_ORDER.index(m) if m in METHOD_ORDER else 9):
            setting, rs = pick_best(methods[method])
            chosen[method] = (setting, rs)
            if method == "mezo":
                mezo_target = statistics.mean(r["summary"]["final_dev_acc"] for r in rs)
        best[task] = chosen
        for method, (setting, rs) in chosen.items():
            tests = [r["summary"]["test_acc"] for r in rs if isinstance(r["summary"].get("test_acc"), (int, float))]
            m, s = mean_std(tests)
            best_dev = max((r["summary"].get("best_dev_acc") or -1.0) for r in rs)
            # The paper's speed-up measure, on the mean dev curve over seeds: the first evaluation
            # at which it reaches MeZO's final dev accuracy (mean over seeds), against MeZO's own.
            reach = "–"
            if mezo_target is not None:
                target = mezo_target - 1e-9
                st = steps_to_reach(mean_curve([r["curve"] for r in rs]), target)
                ms = steps_to_reach(mean_curve([r["curve"] for r in chosen["mezo"][1]]), target)
                reach = "not reached" if st is None else "%d" % st + (" (%.1f×)" % (ms / st) if ms else "")
            rates = [r["summary"].get("steps_per_s") for r in rs if r["summary"].get("steps_per_s")]
            ms_step = "%.0f" % (1000.0 / statistics.mean(rates)) if rates else "–"
            mem = max(r["summary"].get("peak_backend_memory_MB") or 0 for r in rs)
            lines.append("| %s | %s | %s, %s | %d | %s ± %s | %s | %s | %s | %.0f |" % (
                task, METHOD_LABEL.get(method, method), fmt_num(setting[0] or 0.0), fmt_num(setting[1]),
                len(rs), pct(m), "–" if s is None else "%.1f" % (100.0 * s), pct(best_dev), reach,
                ms_step, mem))
    return "\n".join(lines) + "\n", best


def svg_plot(task, chosen, baselines, path):
    """Dev accuracy vs step, the mean over seeds of each method's chosen setting; baselines
    ({label: test accuracy}, e.g. zero-shot) as dashed lines."""
    W, H, L, R, T, B = 760, 400, 60, 230, 40, 50
    series = {m: mean_curve([r["curve"] for r in rs]) for m, (s, rs) in chosen.items()}
    pts = [p for c in series.values() for p in c] + [(0, a) for a in baselines.values()]
    if not pts:
        return False
    x_max = max(p[0] for p in pts) or 1
    y_lo = math.floor(min(p[1] for p in pts) * 20) / 20
    y_hi = math.ceil(max(p[1] for p in pts) * 20) / 20
    if y_hi <= y_lo:
        y_hi = y_lo + 0.05
    sx = lambda x: L + (W - L - R) * x / x_max
    sy = lambda y: H - B - (H - T - B) * (y - y_lo) / (y_hi - y_lo)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
           'font-size="12">' % (W, H), '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="15">%s: dev accuracy vs step (mean over seeds; band: their min–max)</text>' % (L, task)]
    for i in range(5):
        y = y_lo + (y_hi - y_lo) * i / 4
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (L, W - R, sy(y), sy(y)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%.2f</text>' % (L - 6, sy(y) + 4, y))
    for i in range(5):
        x = x_max * i / 4
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (sx(x), H - B + 18, x))
    out.append('<text x="%d" y="%d" text-anchor="middle">step</text>' % ((L + W - R) // 2, H - 12))
    for method, (s, rs) in sorted(chosen.items()):  # the seeds' spread under the means
        band = band_curve([r["curve"] for r in rs])
        if len(rs) > 1 and band:
            edge = ["%.1f,%.1f" % (sx(x), sy(hi)) for x, lo, hi in band] + \
                ["%.1f,%.1f" % (sx(x), sy(lo)) for x, lo, hi in reversed(band)]
            out.append('<polygon points="%s" fill="%s" fill-opacity="0.15" stroke="none"/>' %
                       (" ".join(edge), METHOD_COLOR.get(method, "#555")))
    for k, (method, curve) in enumerate(sorted(series.items())):
        color = METHOD_COLOR.get(method, "#555")
        d = " ".join("%s%.1f,%.1f" % ("M" if i == 0 else "L", sx(x), sy(y)) for i, (x, y) in enumerate(curve))
        out.append('<path d="%s" fill="none" stroke="%s" stroke-width="2"/>' % (d, color))
        setting = chosen[method][0]
        label = "%s (s %s, lr %s)" % (METHOD_LABEL.get(method, method), fmt_num(setting[0] or 0.0), fmt_num(setting[1]))
        out.append('<rect x="%d" y="%d" width="12" height="3" fill="%s"/>' % (W - R + 8, T + 10 + 18 * k, color))
        out.append('<text x="%d" y="%d">%s</text>' % (W - R + 24, T + 15 + 18 * k, label))
    for k, (label, acc) in enumerate(sorted(baselines.items())):
        y = sy(acc)
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#888" stroke-dasharray="5,4"/>'
                   % (L, W - R, y, y))
        out.append('<text x="%d" y="%.1f" fill="#555">%s (test)</text>' % (W - R + 8, y + 4, label))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    return True


def cmd_table(args):
    runs, evals = collect(args.runs)
    if not runs and not evals:
        print("zo_grid: no finished runs or evals under %s" % args.runs, file=sys.stderr)
        return 1
    table, best = build_table(runs, evals)
    report = args.report or args.runs
    os.makedirs(report, exist_ok=True)
    plots = []
    for task, chosen in sorted(best.items()):
        baselines = {name.replace("eval-", ""): j["accuracy"] for name, j in evals.get(task, {}).items()
                     if isinstance(j.get("accuracy"), (int, float))}
        if chosen and svg_plot(task, chosen, baselines, os.path.join(report, "dev_acc_%s.svg" % task)):
            plots.append("dev_acc_%s.svg" % task)
    with open(os.path.join(report, "table.md"), "w") as f:
        f.write(table)
    claim = claim_report(args.runs, runs, evals, best)
    with open(os.path.join(report, "claim.md"), "w") as f:
        f.write(claim)
    sys.stdout.write(table)
    print("plots: %s" % (", ".join(os.path.join(report, p) for p in plots) or "none"))
    sys.stdout.write("\n" + claim)
    return 0


def claim_report(runs_dir, runs, evals, best):
    """claim.md: per task, the paired S-MeZO - MeZO test accuracy and the verdict by
    tools/claim/zo_claim.py's rule, with each best setting's edges; a summary line per task first."""
    sections, verdicts = [], []
    for task, chosen in sorted(best.items()):
        extensions = {}
        for method in chosen:
            record = read_json(os.path.join(runs_dir, task, "extension-%s.json" % method))
            if record:
                extensions[method] = record
        lines, word = zo_claim.task_report(task, chosen, runs.get(task, {}), evals.get(task, {}), extensions)
        sections += lines
        verdicts.append("- %s: S-MeZO beats MeZO: %s" % (task, word))
    head = ["# Does S-MeZO beat MeZO? (tools/claim/zo_claim.py's rule)", ""] + verdicts + [""]
    return "\n".join(head + sections) + "\n"


def cmd_compare(args):
    """Our dev curves against the peer's (tools/claim/zo_peer.py), per method, at every common step."""
    ours, _ = collect(args.runs)
    theirs, _ = collect(args.peer)
    lines, misses_all = ["# Our runs against the independent peer (tools/claim/zo_peer.py), %s" % args.task, ""], []
    for method in ("mezo", "smezo"):
        mine, peer = ours.get(args.task, {}).get(method), theirs.get(args.task, {}).get(method)
        if not mine or not peer:
            lines += ["## %s: %s" % (METHOD_LABEL[method], "no runs of ours" if not mine else "no peer runs"), ""]
            misses_all.append("%s: nothing to compare" % METHOD_LABEL[method])
            continue
        setting, rs = pick_best(peer)  # the peer ran our best setting alone
        mine = [r for r in mine if r["setting"] == setting] or mine
        rows, misses = zo_claim.compare_curves([r["curve"] for r in mine], [r["curve"] for r in rs])
        lines += ["## %s (sparsity %s, lr %s): %d seeds of ours, %d of the peer" % (
            METHOD_LABEL[method], fmt_num(setting[0] or 0.0), fmt_num(setting[1]), len(mine), len(rs)), ""] + rows + [""]
        lines += ["Every step: each mean inside the other's seed range." if not misses else
                  "Outside: " + "; ".join(misses)] + [""]
        misses_all += ["%s %s" % (METHOD_LABEL[method], m) for m in misses]
    lines.append("%d step(s) outside the other's range" % len(misses_all) if misses_all else
                 "the distributions agree at every dev evaluation")
    text = "\n".join(lines) + "\n"
    if args.report:
        os.makedirs(os.path.dirname(os.path.abspath(args.report)), exist_ok=True)
        with open(args.report, "w") as f:
            f.write(text)
    sys.stdout.write(text)
    return 1 if misses_all else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    for name in ("plan", "calibrate", "run"):
        p = sub.add_parser(name)
        p.add_argument("--grid", required=True, choices=sorted(GRIDS))
        p.add_argument("--tasks", default="", help="comma-separated subset of the grid's tasks")
        p.add_argument("--tiny", action="store_true", help="the grid's commands on smoke-test settings")
        p.add_argument("--device", default="", help="replace the grid's --device (cpu, cuda)")
        p.add_argument("--model", default="", help="model path (default: smezo's bundled model)")
        p.add_argument("--runs", default="runs/grid", help="where the run directories go")
        if name == "plan":
            p.add_argument("--step-ms", type=float, default=0.0,
                           help="ms per training step of one run (default: the grid's planning estimate)")
            p.add_argument("--speedup", type=float, default=0.0,
                           help="steps/s of concurrent runs over one run's (default: the grid's estimate)")
            p.add_argument("--commands", action="store_true", help="also list the commands")
            continue
        p.add_argument("--smezo", default="build/smezo")
        if name == "calibrate":
            p.add_argument("--jobs-list", default="1,2,4,8", help="run counts to time, in increasing order")
            p.add_argument("--steps", type=int, default=100, help="steps of each timed run")
        else:
            p.add_argument("--jobs", default="4", help="runs at once on the device, or auto (calibration.json)")
            p.add_argument("--deadline-s", type=float, default=0.0, help="stop (resumably) after this long")
            p.add_argument("--poll-s", type=float, default=1.0)
            p.add_argument("--calibration", default="", help="--jobs auto reads this calibration.json "
                                                                 "(default: the one in --runs)")
            p.add_argument("--no-extra-seeds", action="store_true",
                           help="never run the grid's extra seeds (where the paired interval holds 0)")
            p.add_argument("--drop-checkpoints", action="store_true",
                           help="delete each finished run's checkpoint/ (the table needs none; the seed log "
                                "rebuilds it with smezo replay)")
    p = sub.add_parser("table")
    p.add_argument("--runs", default="runs/grid")
    p.add_argument("--report", default="", help="where table.md, claim.md and the SVGs go (default: --runs)")
    p = sub.add_parser("compare", help="our dev curves against the peer's (tools/claim/zo_peer.py)")
    p.add_argument("--runs", default="runs/grid", help="our grid's runs")
    p.add_argument("--peer", required=True, help="the peer's runs (tools/claim/zo_peer.py run --runs)")
    p.add_argument("--task", default="sst2")
    p.add_argument("--report", default="", help="also write the comparison to this file")
    args = ap.parse_args()
    return {"plan": cmd_plan, "calibrate": cmd_calibrate, "run": cmd_run, "table": cmd_table,
            "compare": cmd_compare}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())

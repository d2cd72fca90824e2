"""The backlog's item 9 (tools/gpu/gpu_backlog_jobs.py adds these jobs after item 8): the claim grid
(tools/claim/zo_grid.py smollm2-claim), SST-2 first, then the PyTorch peer (tools/claim/zo_peer.py) at our
best SST-2 settings, then RTE and BoolQ. The grid runs in slices: each device call continues it
until its budget is spent; a fresh machine takes the finished runs from the last one's logs
(gpu_backlog.py restore_finished_runs, the run trees "claim-grid" and "peer") and starts the runs
that were in flight again.

Only the Python standard library is used.
"""
import os
import re

import zo_grid
from gpu_backlog_jobs import FINISH_MARGIN_S, Job, grid_cmd, lines_matching, post_grid, q, tail

CLAIM = "smollm2-claim"
CLAIM_RUNS = "claim-grid"  # under the backlog's state folder, beside the lease grid's "grid"
PEER_RUNS = "peer"
PEER_MODEL = "peer-model"  # the Hugging Face folder and the exported examples (not in the logs)
PEER_JOBS = 6  # runs at once: MeZO and S-MeZO x 3 seeds
GRID_BASIS = ("zo_grid.py plan --grid smollm2-claim at the 2026-11-27 calibration (52.5 ms/step alone, 4.66x with 8 "
              "at once), + model loads; the extensions and extra seeds may add a third")


def claim_seconds(tasks):
    grid = zo_grid.select_grid(CLAIM, tasks)
    return zo_grid.grid_seconds(grid, grid["step_ms"], grid["speedup"]) + 60


def post_claim(ctx, job, rc, log):
    """post_grid's verdict on the runs, with claim.md's verdict lines beneath."""
    status, figures = post_grid(ctx, job, rc, log)
    claim = os.path.join(ctx.work(job.id), "report", "claim.md")
    if os.path.exists(claim):
        figures = figures[:1] + lines_matching(open(claim).read(), r"^- \w+: S-MeZO beats MeZO", 3) + figures[1:]
    figures += lines_matching(log, r"WARNING: ", 6)
    return status, figures


def peer_cmd(ctx):
    """The HF folder and the exported SST-2 examples (once per machine), the peer's runs at our best
    settings, and the comparison (compare.md; its exit status is not the job's)."""
    model, data = os.path.join(ctx.state, PEER_MODEL, "hf"), os.path.join(ctx.state, PEER_MODEL, "sst2")
    sizes = "--train-examples 16 --dev-examples 4 --test-examples 4" if ctx.dry else \
        "--train-examples 1000 --dev-examples 500 --test-examples 1000"
    steps = "--steps 2 --eval-every 1 --jobs 2" if ctx.dry else "--steps 3000 --eval-every 250 --jobs %d" % PEER_JOBS
    deadline = "" if not ctx.deadline else " --deadline-s %d" % max(1, ctx.remaining() - FINISH_MARGIN_S)
    if ctx.listing:
        deadline = " --deadline-s SECONDS_LEFT_MINUS_%d" % FINISH_MARGIN_S
    runs, peer = os.path.join(ctx.state, CLAIM_RUNS), os.path.join(ctx.state, PEER_RUNS)
    return ("{ test -e %s/config.json || %s convert --model %s --out %s --dtype f32; } && "
            "{ test -e %s/spec.json || %s train --task sst2 --export-data %s %s; } && "
            "python3 tools/claim/zo_peer.py run --ours %s --task sst2 --model %s --data %s --runs %s %s%s; rc=$?; "
            "python3 tools/claim/zo_grid.py compare --runs %s --peer %s --task sst2 --report %s; exit $rc" % (
                q(model), q(ctx.smezo), q(ctx.model), q(model), q(data), q(ctx.smezo), q(data), sizes,
                q(runs), q(model), q(data), q(peer), steps, deadline, q(runs), q(peer),
                q(os.path.join(ctx.work("9.peer-sst2"), "compare.md"))))


def post_peer(ctx, job, rc, log):
    """Done when every peer run finished and compare.md was written (its differences are the
    finding, not a failure); partial when the deadline stopped runs."""
    compare = os.path.join(ctx.work(job.id), "compare.md")
    text = open(compare).read() if os.path.exists(compare) else ""
    figures = (text.strip().splitlines()[-1:] if text else ["(no compare.md)"]) + \
        lines_matching(text, r"^(Outside|## )", 6) + lines_matching(log, r"^zo_peer: (settings|\d+ failed)", 2)
    if rc == 0 and text and "deadline: stopped" not in log:
        return "done", figures
    if "deadline: stopped" in log and re.search(r"zo_peer: 0 failed", log):
        return "partial", figures
    return "failed", figures + tail(log, 6)


def peer_fallback(ctx):
    """No torch here (the dry run, CI): the peer's torch-free parts, and compare on the fixtures."""
    return ("python3 tools/claim/zo_peer.py selftest && python3 tools/claim/zo_grid.py compare --runs tests/fixtures/zo_claim "
            "--peer tests/fixtures/zo_peer --task sst2 --report %s; test -s %s" % (
                q(os.path.join(ctx.work("9.peer-sst2"), "compare.md")), q(os.path.join(ctx.work("9.peer-sst2"),
                                                                                       "compare.md"))))


def claim_jobs():
    grid = zo_grid.select_grid(CLAIM, "sst2")
    wave_s = grid["steps"] * grid["step_ms"] / 1000.0 * 8 / grid["speedup"]  # one run's time with 8 at once
    report = lambda c, jid: os.path.join(c.work(jid), "report")
    return [
        Job("9.claim-sst2", "claim grid, SST-2: MeZO 3 lrs; R-MeZO and S-MeZO 4 lrs x 3 sparsities; 3,000 steps; edges "
            "extended once; 3-5 seeds; claim.md", round(claim_seconds("sst2")), GRID_BASIS,
            lambda c: grid_cmd(c, "sst2", report(c, "9.claim-sst2"), CLAIM, CLAIM_RUNS), post_claim,
            needs=("build", "gguf", "3.calibrate"), exclusive=True, resumable=True, lost_on_new_machine_s=wave_s),
        Job("9.peer-sst2", "the PyTorch peer (tools/claim/zo_peer.py): MeZO and S-MeZO at our best SST-2 settings, 3 seeds, "
            "3,000 steps, 6 at once; compare.md against our runs", 420,
            "18,000 steps of SmolLM2 in transformers (2 forwards of 16 short sequences and 4 passes over 135M "
            "parameters a step), 6 processes at once (estimate)", peer_cmd, post_peer,
            needs=("build", "gguf", "9.claim-sst2"), tools=("torch",), exclusive=True, resumable=True,
            fallback=peer_fallback, lost_on_new_machine_s=420),
        Job("9.claim-rest", "claim grid, RTE and BoolQ (as 9.claim-sst2)", round(claim_seconds("rte,boolq")),
            GRID_BASIS, lambda c: grid_cmd(c, "rte,boolq", report(c, "9.claim-rest"), CLAIM, CLAIM_RUNS),
            post_claim, needs=("build", "gguf", "9.claim-sst2"), exclusive=True, resumable=True,
            lost_on_new_machine_s=wave_s),
    ]


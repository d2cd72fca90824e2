#!/usr/bin/env python3
"""An independent peer: MeZO and Sparse-MeZO in PyTorch, written from the papers, not from smezo's
C++, to check smezo's training curves against (`zo_grid.py compare`).

  tools/claim/zo_peer.py train --model HF_DIR --data EXPORT_DIR --method smezo --lr 1e-4 --sparsity 0.75 \\
                         --seed 42 --steps 3000 --eval-every 250 --out DIR       one run
  tools/claim/zo_peer.py run --ours CLAIM_RUNS --task sst2 --model HF_DIR --data EXPORT_DIR --runs DIR \\
                       [--seeds 42,43,44] [--jobs 6] [--deadline-s N]        MeZO and S-MeZO at our best
                                                                           settings, resumably
  tools/claim/zo_peer.py selftest                                                 the torch-free parts

Inputs: a Hugging Face folder (`smezo convert --model weights/SmolLM2-135M-Instruct.Q4_1.gguf
--out DIR --dtype f32`) and the examples smezo trains on (`smezo train --task sst2 --export-data
DIR`: spec.json with the prompt template and candidates, train/dev/test.jsonl).

The algorithms, as the papers state them:
- MeZO (Malladi et al. 2023, Algorithm 1): per step a seed s; z ~ N(0, I) regenerated from s;
  theta += eps z, l+ = L(theta); theta -= 2 eps z, l- = L(theta); theta += eps z;
  g = (l+ - l-) / (2 eps); theta -= lr g z. Every parameter is perturbed and updated. The
  minibatch (16) is drawn from the training set reshuffled every epoch; the loss is MeZO's
  "train as classification": cross-entropy over the candidates' scores, a candidate's score
  being the mean log-probability of its option tokens after the prompt; accuracy takes the
  highest score.
- Sparse-MeZO (Liu et al., shared/paper/sparse-mezo.tex, Algorithms 2-4, section "The Setting of
  Threshold"): a threshold h_i per layer, fixed once before training from the target sparsity;
  at each step the mask m = [|theta| <= h] of the current weights ("dynamic mask"), and the
  step above with z replaced by m * z. The paper's GetMask writes theta <= h; its text selects
  "parameters of smaller magnitude", which is what this peer does (|theta|). Sparsity is the
  fraction NOT tuned: h is the ceil((1 - sparsity) n)-th smallest |theta| of the layer (so at
  least 1 - sparsity of its entries are tuned). Which layers: the paper says "each layer"; this
  peer masks the weight matrices of the linear layers and tunes the rest (embeddings, norms)
  densely, as MeZO does; SmolLM2's tied LM head is its embedding (dense).
Differences from smezo that are choices of this peer, not of the papers: noise from torch's
generator (z of a step kept for the step instead of regenerated: the same numbers, more memory);
the data order from Python's random; the in-place perturbation of the paper (smezo reads
perturbed weights without writing them), so theta picks up float rounding from +eps -2eps +eps.

Each run folder is written in smezo's format where zo_grid reads it (summary.json: status,
method, final_dev_acc, test_acc, steps_per_s, hyperparameters.spsa; metrics.jsonl: dev_acc per
evaluation), plus steps.jsonl (seed and g of each step): a killed run is continued by replaying
those steps (perturbation and update, no forward passes).
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import time

sys.dont_write_bytecode = True


# ---- torch-free parts ------------------------------------------------------------------------

def render_prompt(template, example):
    """A smezo task spec's prompt template: {field}, {field|strip} (other filters are refused)."""
    out, at = [], 0
    while True:
        lo = template.find("{", at)
        if lo < 0:
            return "".join(out) + template[at:]
        hi = template.index("}", lo)
        out.append(template[at:lo])
        field, _, filt = template[lo + 1:hi].partition("|")
        value = str(example[field])
        if filt == "strip":
            value = value.strip()
        elif filt:
            raise SystemExit("zo_peer: the template filter '%s' is not implemented here (only strip)" % filt)
        out.append(value)
        at = hi + 1


def option_tokens(context_ids, full_ids):
    """(prefix, option) token lists: the option's tokens are what encoding context + option adds
    after the longest common prefix with the context's encoding."""
    k = 0
    while k < min(len(context_ids), len(full_ids)) and context_ids[k] == full_ids[k]:
        k += 1
    if k == len(full_ids):
        raise SystemExit("zo_peer: an option adds no tokens")
    return full_ids[:k], full_ids[k:]


def threshold_rank(n, sparsity):
    """The 1-based rank k of the threshold among a layer's n sorted |theta|: k = ceil((1 - s) n),
    so that [|theta| <= h_k] keeps at least 1 - sparsity of the entries (at least one)."""
    return max(1, min(n, int(math.ceil((1.0 - sparsity) * n - 1e-9))))


def zo_step(perturb, loss, eps, lr):
    """One MeZO/Sparse-MeZO step (Algorithm 1): perturb(c) adds c * m * z in place (the same m
    and z each call); loss() evaluates the minibatch. Returns (g, l+, l-)."""
    perturb(eps)
    plus = loss()
    perturb(-2.0 * eps)
    minus = loss()
    perturb(eps)
    g = (plus - minus) / (2.0 * eps)
    perturb(-lr * g)
    return g, plus, minus


def step_seed(run_seed, step):
    return (run_seed * 1000003 + step * 7919) % (2 ** 31 - 1)


def selftest():
    """The torch-free parts on a stand-in: a quadratic loss over a list of floats, where SPSA's
    difference quotient is exactly the directional derivative."""
    assert render_prompt("{sentence|strip} It was", {"sentence": " fine film  "}) == "fine film It was"
    assert option_tokens([5, 6, 7], [5, 6, 7, 9]) == ([5, 6, 7], [9])
    assert option_tokens([5, 6, 7], [5, 6, 8, 9]) == ([5, 6], [8, 9])
    assert [threshold_rank(100, s) for s in (0.5, 0.75, 0.9)] == [50, 25, 10]
    assert threshold_rank(7, 0.75) == 2 and threshold_rank(3, 0.99) == 1
    rng = random.Random(1)
    theta = [rng.uniform(-1, 1) for _ in range(8)]
    a = [rng.uniform(0.5, 2.0) for _ in range(8)]
    h = sorted(abs(t) for t in theta)[threshold_rank(8, 0.5) - 1]
    z = [rng.gauss(0, 1) * (abs(t) <= h) for t in theta]
    grad_z = sum(2 * ai * ti * zi for ai, ti, zi in zip(a, theta, z))
    start = list(theta)

    def perturb(c):
        for i in range(len(theta)):
            theta[i] += c * z[i]

    g, _, _ = zo_step(perturb, lambda: sum(ai * ti * ti for ai, ti in zip(a, theta)), 1e-3, 0.1)
    assert abs(g - grad_z) < 1e-9 * max(1.0, abs(grad_z)), (g, grad_z)
    assert all(abs(t - (s - 0.1 * g * zi)) < 1e-12 for t, s, zi in zip(theta, start, z))
    assert sum(zi != 0 for zi in z) == 4  # sparsity 0.5: the 4 smallest |theta| move
    print("zo_peer selftest: 5 checks passed")
    return 0


# ---- the runs ----------------------------------------------------------------------------------

def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def load_examples(data_dir, max_len, tok):
    """[(token sequences, option spans, gold)] per split, from smezo's exported task."""
    spec = json.load(open(os.path.join(data_dir, "spec.json")))
    if spec.get("kind") != "classification":
        raise SystemExit("zo_peer: %s is a %s task; the peer scores classification tasks" % (data_dir, spec.get("kind")))
    values = [str(v).lower() for v in spec["label"]["values"]]
    out = {}
    for split in ("train", "dev", "test"):
        rows = []
        for ex in read_jsonl(os.path.join(data_dir, split + ".jsonl")):
            context = render_prompt(spec["prompt"], ex).lstrip()
            c_ids = tok.encode(context, add_special_tokens=False)
            cands = []
            for option in spec["candidates"]:
                prefix, opt = option_tokens(c_ids, tok.encode(context + option, add_special_tokens=False))
                prefix = prefix[-(max_len - len(opt)):]  # left truncation, the option kept whole
                cands.append((prefix, opt))
            rows.append((cands, values.index(str(ex[spec["label"]["field"]]).lower())))
        out[split] = rows
    return out


def candidate_scores(model, torch, rows, device):
    """[[mean log p of each candidate's option tokens]] for a batch of examples; one sequence per
    example when its candidates share the prompt and are one token each, else one per candidate."""
    seqs, targets = [], []  # targets: (example, candidate, sequence, position, token)
    for e, (cands, _) in enumerate(rows):
        shared = all(len(o) == 1 and p == cands[0][0] for p, o in cands)
        for c, (prefix, opt) in enumerate(cands):
            if not shared or c == 0:
                seqs.append(prefix if shared else prefix + opt)
            for j, t in enumerate(opt):
                targets.append((e, c, len(seqs) - 1, len(prefix) - 1 + j, t))
    width = max(len(s) for s in seqs)
    ids = torch.zeros((len(seqs), width), dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s)
        mask[i, :len(s)] = 1
    logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
    seq_idx = torch.tensor([t[2] for t in targets], device=device)
    pos_idx = torch.tensor([t[3] for t in targets], device=device)
    tok_idx = torch.tensor([t[4] for t in targets], device=device)
    logp = torch.log_softmax(logits[seq_idx, pos_idx].double(), dim=-1).gather(1, tok_idx[:, None])[:, 0].tolist()
    sums = [[[0.0, 0] for _ in cands] for cands, _ in rows]
    for (e, c, _, _, _), lp in zip(targets, logp):
        sums[e][c][0] += lp
        sums[e][c][1] += 1
    return [[s / n for s, n in cs] for cs in sums]


def batch_loss(model, torch, rows, device):
    """MeZO's classification loss: mean over examples of -log softmax(scores)[gold]."""
    total = 0.0
    for scores, (_, gold) in zip(candidate_scores(model, torch, rows, device), rows):
        top = max(scores)
        total += -(scores[gold] - top - math.log(sum(math.exp(s - top) for s in scores)))
    return total / len(rows)


def accuracy(model, torch, rows, device, batch=32):
    right = 0
    with torch.no_grad():
        for i in range(0, len(rows), batch):
            chunk = rows[i:i + batch]
            for scores, (_, gold) in zip(candidate_scores(model, torch, chunk, device), chunk):
                right += max(range(len(scores)), key=lambda k: (scores[k], -k)) == gold
    return right / len(rows)


def flat_parameters(model, torch, device, sparsity):
    """One flat buffer holding every parameter (the parameters become views of it) and the
    per-entry threshold (+inf where dense): each linear weight's h, fixed now."""
    params = list(model.named_parameters())  # a tied weight once
    linear = {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.Linear)}
    embedding = {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.Embedding)}
    total = sum(p.numel() for _, p in params)
    flat = torch.empty(total, dtype=torch.float32, device=device)
    limit = torch.full((total,), math.inf, dtype=torch.float32, device=device) if sparsity > 0 else None
    at, masked = 0, {}
    for name, p in params:
        n = p.numel()
        flat[at:at + n].copy_(p.data.reshape(-1))
        p.data = flat[at:at + n].view_as(p)
        if limit is not None and id(p) in linear and id(p) not in embedding and p.dim() == 2:
            h = torch.kthvalue(p.data.abs().reshape(-1).cpu(), threshold_rank(n, sparsity)).values.item()
            limit[at:at + n] = h
            masked[name] = {"threshold": h, "fraction_perturbed": (p.data.abs() <= h).double().mean().item()}
        at += n
    return flat, limit, masked


def open_run(args, torch):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    device = args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).to(device)
    model.eval()
    data = load_examples(args.data, args.max_len, tok)
    return device, model, data


def write_json(path, obj):
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(path + ".tmp", path)


def replay(done, perturb_of, eps, lr):
    """A killed run's logged steps again: each step's perturbations and update, no forward."""
    for rec in done:
        perturb = perturb_of(rec["step"])
        zo_step(perturb, lambda: 0.0, eps, 0.0)
        perturb(-lr * rec["g"])


def cmd_train(args):
    import torch
    torch.manual_seed(args.seed)
    device, model, data = open_run(args, torch)
    flat, limit, masked = flat_parameters(model, torch, device, args.sparsity if args.method == "smezo" else 0.0)
    os.makedirs(args.out, exist_ok=True)
    if masked and not os.path.exists(os.path.join(args.out, "mask.json")):
        write_json(os.path.join(args.out, "mask.json"), {"sparsity": args.sparsity, "tensors": masked})
    gen = torch.Generator(device=device)

    def perturb_of(step):
        gen.manual_seed(step_seed(args.seed, step))
        z = torch.randn(flat.numel(), generator=gen, device=device)
        if limit is not None:
            z.mul_(flat.abs() <= limit)  # the dynamic mask of theta_t
        return lambda c: flat.add_(z, alpha=c)

    steps_path, metrics_path = os.path.join(args.out, "steps.jsonl"), os.path.join(args.out, "metrics.jsonl")
    done = read_jsonl(steps_path) if os.path.exists(steps_path) else []
    replay(done, perturb_of, args.eps, args.lr)
    first = len(done) + 1
    kept = [r for r in (read_jsonl(metrics_path) if os.path.exists(metrics_path) else []) if r["step"] < first]
    with open(metrics_path, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in kept)
    order = random.Random(args.seed)
    batches = []
    while len(batches) < args.steps:  # epochs of reshuffled training examples
        idx = list(range(len(data["train"])))
        order.shuffle(idx)
        batches += [idx[i:i + args.batch] for i in range(0, len(idx) - args.batch + 1, args.batch)]
    dev_accs = [r["dev_acc"] for r in kept if "dev_acc" in r]
    t0, steps_timed = time.time(), 0
    with open(steps_path, "a") as steps_log, open(metrics_path, "a") as metrics, torch.no_grad():
        for step in range(first, args.steps + 1):
            rows = [data["train"][i] for i in batches[step - 1]]
            g, plus, minus = zo_step(perturb_of(step), lambda: batch_loss(model, torch, rows, device), args.eps, args.lr)
            steps_log.write(json.dumps({"step": step, "g": g}) + "\n")
            metrics.write(json.dumps({"step": step, "loss": (plus + minus) / 2, "g": g}) + "\n")
            steps_timed += 1
            if step % args.eval_every == 0 or step == args.steps:
                train_s = time.time() - t0
                dev_accs.append(accuracy(model, torch, data["dev"], device))
                metrics.write(json.dumps({"step": step, "dev_acc": dev_accs[-1], "dev_examples": len(data["dev"])}) + "\n")
                steps_log.flush()
                metrics.flush()
                t0 = time.time() - train_s
    rate = steps_timed / max(1e-9, time.time() - t0) if steps_timed else None
    test = accuracy(model, torch, data["test"], device)
    write_json(os.path.join(args.out, "summary.json"), {
        "status": "completed", "written_by": "tools/claim/zo_peer.py", "method": args.method, "task": args.task,
        "final_dev_acc": dev_accs[-1] if dev_accs else None, "best_dev_acc": max(dev_accs) if dev_accs else None,
        "test_acc": test, "steps_per_s": rate, "device": device, "resumed_at_step": first if done else None,
        "sizes": {k: len(v) for k, v in data.items()},
        "hyperparameters": {"spsa": {"method": args.method, "lr": args.lr, "eps": args.eps, "seed": args.seed,
                                     "sparsity": args.sparsity if args.method == "smezo" else 0.0},
                            "batch": args.batch, "steps": args.steps, "model": args.model, "data": args.data}})
    print("zo_peer: %s done: final dev %.3f, test %.3f, %.1f steps/s" % (args.out, dev_accs[-1] if dev_accs else -1,
                                                                       test, rate or 0))
    return 0


def best_settings(ours, task):
    """{method: (sparsity, lr)} of our grid's best MeZO and S-MeZO settings on the task."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import zo_grid
    runs, _ = zo_grid.collect(ours)
    out = {}
    for method in ("mezo", "smezo"):
        if runs.get(task, {}).get(method):
            setting, _ = zo_grid.pick_best(runs[task][method])
            out[method] = (setting[0] or 0.0, setting[1])
    return out


def run_name(method, sparsity, lr, seed):
    fmt = lambda x: ("%g" % x).replace("e-0", "e-")
    return "%s%s-lr%s-seed%d" % (method, "" if method == "mezo" else "-s%s" % fmt(sparsity), fmt(lr), seed)


def cmd_run(args):
    """MeZO and S-MeZO at our best settings, every seed, --jobs at once; a finished run is
    skipped, a killed one continued; at --deadline-s the running ones are killed (resumably)."""
    settings = best_settings(args.ours, args.task)
    if set(settings) != {"mezo", "smezo"}:
        print("zo_peer: %s has no finished MeZO and S-MeZO runs of %s to take the settings from" % (args.ours, args.task),
              file=sys.stderr)
        return 1
    todo = []
    for method, (sp, lr) in sorted(settings.items()):
        for seed in [int(s) for s in args.seeds.split(",")]:
            out = os.path.join(args.runs, args.task, run_name(method, sp, lr, seed))
            summary = os.path.join(out, "summary.json")
            if not (os.path.exists(summary) and json.load(open(summary)).get("status") == "completed"):
                todo.append((out, [sys.executable, os.path.abspath(__file__), "train", "--model", args.model, "--data",
                                   args.data, "--task", args.task, "--method", method, "--lr", repr(lr), "--sparsity",
                                   repr(sp), "--seed", str(seed), "--steps", str(args.steps), "--eval-every",
                                   str(args.eval_every), "--device", args.device, "--out", out]))
    print("zo_peer: settings %s; %d run(s) to do" % (settings, len(todo)), flush=True)
    return run_all(todo, args.jobs, time.time() + args.deadline_s if args.deadline_s else None)


def run_all(todo, jobs, deadline):
    running, failed = [], 0
    while todo or running:
        while todo and len(running) < jobs:
            out, cmd = todo.pop(0)
            os.makedirs(out, exist_ok=True)
            log = open(os.path.join(out, "run.log"), "ab")
            running.append((out, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True), log))
            print("zo_peer: started %s" % out, flush=True)
        time.sleep(0.5)
        for item in list(running):
            out, proc, log = item
            if deadline and time.time() >= deadline and proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait()
                print("zo_peer: deadline: stopped %s (continues next time)" % out, flush=True)
            if proc.poll() is not None:
                log.close()
                running.remove(item)
                failed += proc.returncode not in (0, -9)
                print("zo_peer: %s %s" % (out, "finished" if proc.returncode == 0 else "exit %d" % proc.returncode),
                      flush=True)
        if deadline and time.time() >= deadline:
            todo = []
    print("zo_peer: %d failed" % failed, flush=True)
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("train")
    p.add_argument("--method", choices=("mezo", "smezo"), required=True)
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--sparsity", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--out", required=True)
    p.add_argument("--task", default="sst2")
    p.add_argument("--eps", type=float, default=1e-3)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--max-len", type=int, default=256)
    for q in (p, sub.add_parser("run")):
        q.add_argument("--model", required=True, help="a Hugging Face folder (smezo convert --dtype f32)")
        q.add_argument("--data", required=True, help="smezo train --export-data's folder")
        q.add_argument("--steps", type=int, default=3000)
        q.add_argument("--eval-every", type=int, default=250)
        q.add_argument("--device", default="auto")
    q.add_argument("--ours", required=True, help="our grid's runs (the best settings come from them)")
    q.add_argument("--task", default="sst2")
    q.add_argument("--runs", required=True)
    q.add_argument("--seeds", default="42,43,44")
    q.add_argument("--jobs", type=int, default=6)
    q.add_argument("--deadline-s", type=float, default=0.0)
    sub.add_parser("selftest")
    args = ap.parse_args()
    return {"train": cmd_train, "run": cmd_run, "selftest": lambda a: selftest()}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())

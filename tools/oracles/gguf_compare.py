"""gguf_compare.py: what the GGUF oracles share (tools/oracles/gguf_oracle.py, the loader on
SmolLM2; tools/oracles/gguf_export_oracle.py, the scale-patched export): the prompts, transformers'
fp32 reference logits of a GGUF, `smezo logits` of the same tokens, and the comparison rule.

Tolerance (tools/oracles/hf_oracle.py's fp32 rule): per prompt, max abs err <= 1e-4 * (1 + max|ref|).
Argmax: a differing position fails only when decisive, i.e. the reference's top-1 beats the
logit of our pick by more than 2 * tolerance.

A module, not a program: import it from a script in this folder. Needs numpy and safetensors;
torch and transformers only for load_transformers and reference_logits.
"""

import json
import os
import subprocess
import sys

import numpy as np
from safetensors.numpy import load_file

FP32_REL_TOL = 1e-4
MAX_TOKENS = 32


def read_jsonl(path, n=1):
    with open(path) as f:
        return [json.loads(line) for _, line in zip(range(n), f)]


def prompt_texts(assets):
    """(name, text): real text from the task data in ASSETS/data (SST-2, RTE, BoolQ, COPA)."""
    sst2 = open(os.path.join(assets, "data/glue/SST-2/dev.tsv")).read().splitlines()[1].split("\t")[0]
    rte = read_jsonl(os.path.join(assets, "data/superglue/RTE/val.jsonl"))[0]
    boolq = read_jsonl(os.path.join(assets, "data/superglue/BoolQ/val.jsonl"))[0]
    copa = read_jsonl(os.path.join(assets, "data/superglue/COPA/val.jsonl"))[0]
    return [
        ("sst2", sst2.strip() + " It was"),
        ("rte", f"{rte['premise']}\nQuestion: {rte['hypothesis']} True or False?\nAnswer:"),
        ("boolq", f"{boolq['question'].capitalize()}?"),
        ("copa", f"{copa['premise'][:-1]} so {copa['choice2'][0].lower()}{copa['choice2'][1:]}"),
    ]


def prompts(assets, tokenizer):
    """(name, text, token ids) for each prompt, at most MAX_TOKENS tokens each: the task texts and
    one chat-template prompt, tokenized by `tokenizer` (transformers')."""
    out = []
    for name, text in prompt_texts(assets):
        ids = tokenizer(text, add_special_tokens=False)["input_ids"][:MAX_TOKENS]
        out.append((name, text, ids))
    chat = [{"role": "user", "content": "What is the capital of France?"}]
    ids = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=True)
    if isinstance(ids, dict) or hasattr(ids, "keys"):  # transformers 5 may return a BatchEncoding
        ids = ids["input_ids"]
    ids = list(ids)[-MAX_TOKENS:]
    out.append(("chat", tokenizer.decode(ids), ids))
    return out


def load_transformers(gguf_path):
    """transformers' tokenizer and fp32 model of a GGUF (from_pretrained(dir, gguf_file=...), which
    dequantises every tensor to fp32 with the `gguf` package and undoes llama.cpp's Q/K row
    permutation); eager attention, TF32 off."""
    import torch
    import transformers
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    model_dir, gguf_file = os.path.split(os.path.abspath(gguf_path))
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir, gguf_file=gguf_file)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        model_dir, gguf_file=gguf_file, dtype=torch.float32, attn_implementation="eager").eval()
    if next(model.parameters()).dtype != torch.float32:
        sys.exit(f"transformers did not load {gguf_path} as float32")
    return tokenizer, model


def reference_logits(model, tokens):
    """transformers' fp32 logits, (len(tokens), vocab), as float64."""
    import torch
    with torch.no_grad():
        ids = torch.tensor([tokens], dtype=torch.long)
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False)
    return out.logits[0].float().numpy().astype(np.float64)


def smezo_logits(smezo, model_path, tokens, out_file, device="cpu"):
    """`smezo logits` of the tokens, (len(tokens), vocab), as float64; exits on a failed run."""
    cmd = [smezo, "logits", "--model", model_path, "--tokens", ",".join(map(str, tokens)),
           "--out", out_file, "--device", device]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"`{' '.join(cmd)}` exited {r.returncode}: {(r.stderr or r.stdout).strip()[-600:]}")
    return load_file(out_file)["logits"].astype(np.float64)


def compare(ours, ref):
    """The fp32 rule on one prompt: dict of max_ref, err, tol, agree (argmax), decisive (argmax
    differences beyond 2 * tol), good."""
    if ours.shape != ref.shape:
        sys.exit(f"smezo logits {ours.shape}, transformers {ref.shape}")
    max_ref = float(np.abs(ref).max())
    tol = FP32_REL_TOL * (1 + max_ref)
    err = float(np.abs(ours - ref).max())
    a_ours, a_ref = ours.argmax(-1), ref.argmax(-1)
    pos = np.arange(ref.shape[0])
    decisive = int(((a_ours != a_ref) & (ref[pos, a_ref] - ref[pos, a_ours] > 2 * tol)).sum())
    good = bool(err <= tol and decisive == 0 and np.isfinite(ours).all())
    return {"max_ref": max_ref, "err": err, "tol": tol, "agree": int((a_ours == a_ref).sum()),
            "decisive": decisive, "good": good}


def print_table(rows):
    """rows: (name, n_tokens, compare() dict) -> the table the oracles print."""
    print(f"{'prompt':8} {'tokens':>6} {'max|ref|':>9} {'max abs err':>12} {'tolerance':>10} "
          f"{'argmax':>8}  result")
    for name, n, c in rows:
        d = c["decisive"]
        print(f"{name:8} {n:6d} {c['max_ref']:9.3f} {c['err']:12.3e} {c['tol']:10.3e} {c['agree']:3d}/{n:<3d}  "
              f"{'PASS' if c['good'] else 'FAIL'}{f' ({d} decisive argmax differences)' if d else ''}")

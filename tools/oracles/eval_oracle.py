#!/usr/bin/env python3
"""eval_oracle.py: transformers' accuracy on exactly the examples `smezo eval` scored, so the two
can stand side by side (they must agree within 2 points).

What it does
  1. Reads the JSONL that `smezo eval ... --examples-out F` writes: a header (task, mode, shots,
     max_len, the in-context prefix smezo built from its demonstrations) and, per example, the
     candidates' context and option strings (smezo's templates), the gold index, smezo's
     length-normalised scores and prediction.
  2. transformers loads the GGUF (AutoModelForCausalLM/AutoTokenizer.from_pretrained(dir,
     gguf_file=...): tensors dequantised to fp32, tokenizer built from the metadata, with
     SmolLM2's digit-splitting pre-tokeniser put back, see bpe_oracle.py) and scores
     every candidate its own way, as MeZO's encode_prompt does: ids = tokenizer(prompt + option)
     with the tokenizer's own special tokens (SmolLM2: none), prompt = (icl_prefix +
     context).lstrip(), option tokens = the last len(tok(context + option)) - len(tok(context))
     ids, the prompt cut from the left to max_len; score = the mean log-prob of the option
     tokens (fp32, eager attention); prediction = argmax (first on ties).
  3. Prints both accuracies, how many predictions differ, and the largest score difference;
     exits 1 when the accuracies differ by more than --max-diff points (default 2).
The text is smezo's, the tokenization, truncation, forward pass and scoring are transformers'.

Usage (repo root, after weights/fetch_smollm2.sh and make):
  build/smezo eval --model weights/SmolLM2-135M-Instruct.Q4_1.gguf --task sst2 --mode zero-shot \\
      --test-examples 200 --examples-out /tmp/sst2.jsonl
  /tmp/oracle-venv/bin/python tools/oracles/eval_oracle.py --examples /tmp/sst2.jsonl
Needs torch, transformers (GGUF support), gguf, numpy; no network.
"""

import argparse
import json
import os
import sys
import time

import torch
import transformers
from tokenizers import pre_tokenizers


def default_gguf():
    return os.environ.get("SMEZO_SMOLLM2") or "weights/SmolLM2-135M-Instruct.Q4_1.gguf"


def encode(tokenizer, text):
    return tokenizer(text, add_special_tokens=True)["input_ids"]


@torch.no_grad()
def log_probs(model, ids):
    t = torch.tensor([ids], dtype=torch.long)
    logits = model(input_ids=t, attention_mask=torch.ones_like(t), use_cache=False).logits[0].float()
    return torch.log_softmax(logits, dim=-1)


@torch.no_grad()
def score_example(model, tokenizer, header, ex):
    """Mean option log-prob of each candidate, MeZO's way. Candidates whose ids differ only in
    one last option token share one forward (the same logits, computed once)."""
    encoded = []
    for context, option in zip(ex["contexts"], ex["options"]):
        prompt = (header["icl_prefix"] + context).lstrip()
        n_ctx = len(tokenizer(context, add_special_tokens=False)["input_ids"])
        n_opt = len(tokenizer(context + option, add_special_tokens=False)["input_ids"]) - n_ctx
        ids = encode(tokenizer, prompt + option)
        if len(ids) > header["max_len"]:
            n_special = len(encode(tokenizer, "")) if tokenizer.bos_token_id is not None else 0
            keep = ids[:n_special]
            ids = keep + ids[len(ids) - (header["max_len"] - len(keep)):]
        encoded.append((ids, n_opt))
    scores, cand_tokens, cache = [], [], {}
    for ids, n_opt in encoded:
        key = tuple(ids[:-1]) if n_opt == 1 else tuple(ids)
        if key not in cache:
            cache[key] = log_probs(model, list(key) + ([ids[-1]] if n_opt == 1 else []))
        logp = cache[key]
        n = len(ids)
        total = sum(logp[i - 1, ids[i]].item() for i in range(n - n_opt, n))
        scores.append(total / n_opt)
        cand_tokens.append(ids)
    return scores, cand_tokens


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", required=True, help="the JSONL of smezo eval --examples-out")
    ap.add_argument("--gguf", default=default_gguf())
    ap.add_argument("--max-diff", type=float, default=2.0, help="allowed accuracy difference, in points")
    ap.add_argument("--out", help="write the comparison as JSON here")
    args = ap.parse_args()

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    model_dir, gguf_file = os.path.split(os.path.abspath(args.gguf))
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir, gguf_file=gguf_file)
    # transformers does not know tokenizer.ggml.pre = "smollm" and builds plain GPT-2
    # pre-tokenisation; install SmolLM2's own (its tokenizer.json's), as tools/oracles/bpe_oracle.py does
    tokenizer.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
    model = transformers.AutoModelForCausalLM.from_pretrained(
        model_dir, gguf_file=gguf_file, dtype=torch.float32, attn_implementation="eager").eval()

    with open(args.examples) as f:
        lines = [json.loads(line) for line in f]
    header, examples = lines[0], lines[1:]
    t0 = time.time()
    ours_correct = ref_correct = differ = same_tokens = 0
    max_score_diff = 0.0
    for ex in examples:
        scores, cand_tokens = score_example(model, tokenizer, header, ex)
        pred = max(range(len(scores)), key=lambda i: (scores[i], -i))
        ref_correct += pred == ex["gold"]
        ours_correct += ex["pred"] == ex["gold"]
        differ += pred != ex["pred"]
        same_tokens += cand_tokens == ex["tokens"]
        max_score_diff = max(max_score_diff, max(abs(a - b) for a, b in zip(scores, ex["scores"])))
    secs = time.time() - t0
    n = len(examples)
    ours, ref = 100.0 * ours_correct / n, 100.0 * ref_correct / n
    print(f"{header['task']} {header['mode']} (k={header['shots']}, max_len {header['max_len']}, {n} examples): "
          f"smezo {ours:.1f}%  transformers {ref:.1f}%  (predictions differ on {differ}, identical token ids for "
          f"{same_tokens}/{n} examples, max |score difference| {max_score_diff:.2e}; transformers took {secs:.0f} s, "
          f"{n / secs:.2f} examples/s)")
    result = {"task": header["task"], "mode": header["mode"], "shots": header["shots"], "max_len": header["max_len"],
              "examples": n, "smezo_accuracy": ours, "transformers_accuracy": ref, "predictions_differ": differ,
              "identical_tokens": same_tokens, "max_score_diff": max_score_diff, "transformers_seconds": secs,
              "transformers": transformers.__version__, "torch": torch.__version__}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
    if abs(ours - ref) > args.max_diff:
        print(f"FAIL: accuracies differ by {abs(ours - ref):.1f} points (> {args.max_diff})")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""gguf_oracle.py: check smezo's GGUF loader and forward pass on the real SmolLM2-135M-Instruct
GGUF against Hugging Face transformers.

What it does
  1. transformers loads the same GGUF file (AutoModelForCausalLM.from_pretrained(dir,
     gguf_file=...), which dequantises every tensor to fp32 with the `gguf` package and undoes
     llama.cpp's Q/K row permutation) and its tokenizer (built from the GGUF metadata).
  2. Prompts: real text from the task data in ASSETS/data (SST-2, RTE, BoolQ, COPA) and one
     chat-template prompt, tokenized by transformers, at most MAX_TOKENS tokens each.
  3. Reference: transformers' fp32 logits (eager attention, TF32 off) for every position.
  4. Runs `smezo logits --model X.gguf --tokens ... --out F --device DEV` and compares:
     max abs error and argmax agreement per position.
  5. With --write-fixture FILE: writes a compact slice of the reference (tokens, per position
     the argmax, top-1/top-2 gap, max, logsumexp and the logits of a fixed vocabulary subset)
     for tests/test_gguf_smollm2.cpp, which checks it without Python.

Tolerance (tools/oracles/hf_oracle.py's fp32 rule, in tools/oracles/gguf_compare.py, which this
shares with gguf_export_oracle.py): per prompt, max abs err <= 1e-4 * (1 + max|ref|).
Argmax: a differing position fails only when decisive, i.e. the reference's top-1 beats the
logit of our pick by more than 2 * tolerance.

Usage (from the repo root, after weights/fetch_smollm2.sh and make):
  /tmp/oracle-venv/bin/python tools/oracles/gguf_oracle.py
  /tmp/oracle-venv/bin/python tools/oracles/gguf_oracle.py --write-fixture tests/fixtures/smollm2_logits.json
Needs torch, transformers (>= 4.45, GGUF support), gguf, safetensors, numpy; no network.
"""

import argparse
import hashlib
import json
import os
import sys

import numpy as np
import torch
import transformers

from gguf_compare import compare, load_transformers, print_table, prompts, reference_logits, smezo_logits

# Logits stored in the fixture at every position, besides argmax/max/logsumexp: a spread of
# ids over the whole vocabulary (special tokens, common and rare pieces).
VOCAB_SUBSET = [0, 1, 2, 17, 198, 253, 314, 504, 1000, 2000, 4096, 8191, 12345, 20000, 30000,
                40000, 45678, 49151]
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def default_gguf():
    return os.environ.get("SMEZO_SMOLLM2") or "weights/SmolLM2-135M-Instruct.Q4_1.gguf"


def logsumexp(x):
    m = x.max(-1, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(-1, keepdims=True)))[:, 0]


def fixture_entry(name, text, tokens, ref):
    top2 = np.sort(ref, axis=-1)[:, -2:]
    r6 = lambda a: [round(float(v), 6) for v in a]
    return {
        "name": name, "text": text, "tokens": [int(t) for t in tokens],
        "max_abs_logit": round(float(np.abs(ref).max()), 6),
        "argmax": [int(a) for a in ref.argmax(-1)],
        "top2_gap": r6(top2[:, 1] - top2[:, 0]),
        "max": r6(ref.max(-1)),
        "logsumexp": r6(logsumexp(ref)),
        "subset": [r6(row[VOCAB_SUBSET]) for row in ref],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gguf", default=default_gguf())
    ap.add_argument("--smezo", default="build/smezo")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--assets", default=os.environ.get("SMEZO_ASSETS", "../shared/assets"))
    ap.add_argument("--workdir", default="build/gguf_oracle")
    ap.add_argument("--write-fixture", default="")
    args = ap.parse_args()
    if not os.path.isfile(args.gguf):
        sys.exit(f"{args.gguf}: not found; run weights/fetch_smollm2.sh (or pass --gguf)")
    digest = hashlib.sha256(open(args.gguf, "rb").read()).hexdigest()
    if digest != SHA256:
        sys.exit(f"{args.gguf}: sha256 {digest}, expected {SHA256}")
    os.makedirs(args.workdir, exist_ok=True)
    tokenizer, model = load_transformers(args.gguf)

    rows, entries, ok = [], [], True
    for name, text, tokens in prompts(args.assets, tokenizer):
        ref = reference_logits(model, tokens)
        ours = smezo_logits(args.smezo, args.gguf, tokens, os.path.join(args.workdir, f"{name}.safetensors"),
                            args.device)
        c = compare(ours, ref)
        ok &= c["good"]
        rows.append((name, len(tokens), c))
        entries.append(fixture_entry(name, text, tokens, ref))

    print(f"smezo {args.smezo} --device {args.device} vs transformers {transformers.__version__} "
          f"(torch {torch.__version__}, fp32) on {args.gguf}")
    print_table(rows)
    if args.write_fixture:
        fixture = {
            "what": "SmolLM2-135M-Instruct Q4_1 GGUF: transformers' fp32 logits (a compact slice) "
                    "for tests/test_gguf_smollm2.cpp; written by tools/oracles/gguf_oracle.py",
            "model": os.path.basename(args.gguf), "sha256": SHA256,
            "reference": f"transformers {transformers.__version__}, torch {torch.__version__}, "
                         "GGUF dequantised to fp32, eager attention",
            "tolerance": "per prompt: |ours - ref| <= 1e-4 * (1 + max_abs_logit); argmax must "
                         "match where top2_gap > 2 * tolerance",
            "vocab_subset": VOCAB_SUBSET,
            "prompts": entries,
        }
        # one line per field of each prompt: compact, and a diff shows which prompt changed
        prompts_json = fixture.pop("prompts")
        head = json.dumps(fixture, indent=1)[:-2]
        body = ",\n".join(" {\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in e.items())
                          + "\n }" for e in prompts_json)
        with open(args.write_fixture, "w") as f:
            f.write(head + ',\n "prompts": [\n' + body + "\n ]\n}\n")
        json.load(open(args.write_fixture))  # still valid JSON
        print(f"wrote {args.write_fixture} ({os.path.getsize(args.write_fixture)} bytes)")
    print("ALL PASS" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

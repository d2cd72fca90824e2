#!/usr/bin/env python3
"""greedy_oracle.py: transformers' greedy continuation of a few prompts on the SmolLM2 GGUF, as
the fixture tests/fixtures/smollm2_greedy.json that tests/test_model_tokenizer.cpp compares
`smezo generate --temperature 0 --new-tokens N` with (no Python in the test).

transformers loads the GGUF (dequantised to fp32, eager attention, tokenizer from the
metadata), encodes each prompt with its own special tokens (SmolLM2: none) and takes N argmax
steps by hand (no generation config, no stopping tokens), recording each step's top-1/top-2
logit gap: a test comparing another fp32 implementation is only meaningful where the gaps are
well above the fp32 noise (the fixture says the smallest).

Usage: /tmp/oracle-venv/bin/python tools/oracles/greedy_oracle.py --write-fixture tests/fixtures/smollm2_greedy.json
"""

import argparse
import json
import os
import sys

import torch
import transformers

PROMPTS = ["The capital of France is", "Once upon a time, there was a little robot who"]
NEW_TOKENS = 24


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gguf", default=os.environ.get("SMEZO_SMOLLM2") or "weights/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--write-fixture", default="")
    args = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    model_dir, gguf_file = os.path.split(os.path.abspath(args.gguf))
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir, gguf_file=gguf_file)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        model_dir, gguf_file=gguf_file, dtype=torch.float32, attn_implementation="eager").eval()
    cases = []
    with torch.no_grad():
        for prompt in PROMPTS:
            ids = tokenizer(prompt)["input_ids"]
            out, gaps = list(ids), []
            for _ in range(NEW_TOKENS):
                t = torch.tensor([out], dtype=torch.long)
                logits = model(input_ids=t, use_cache=False).logits[0, -1].float()
                top = torch.topk(logits, 2)
                gaps.append(float(top.values[0] - top.values[1]))
                out.append(int(top.indices[0]))
            new = out[len(ids):]
            text = tokenizer.decode(new)
            print(f"{prompt!r} -> {text!r} (smallest top-2 gap {min(gaps):.4f})")
            cases.append({"prompt": prompt, "prompt_ids": ids, "new_ids": new, "text": text,
                          "min_top2_gap": min(gaps)})
    if args.write_fixture:
        fixture = {"what": "SmolLM2-135M-Instruct Q4_1 GGUF: transformers' greedy continuations (fp32, eager), "
                           "written by tools/oracles/greedy_oracle.py",
                   "reference": f"transformers {transformers.__version__}, torch {torch.__version__}",
                   "new_tokens": NEW_TOKENS, "cases": cases}
        with open(args.write_fixture, "w") as f:
            json.dump(fixture, f, indent=1, ensure_ascii=False)
            f.write("\n")
        print(f"wrote {args.write_fixture}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

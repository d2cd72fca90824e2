#!/usr/bin/env python3
"""convert_oracle.py: transformers loads what `smezo convert` wrote, and it is the same model.

  build/smezo convert --model weights/SmolLM2-135M-Instruct.Q4_1.gguf --dtype f32 --out /tmp/smollm2-hf
  /tmp/oracle-venv/bin/python tools/oracles/convert_oracle.py --hf /tmp/smollm2-hf

Loads the directory with AutoModelForCausalLM / AutoTokenizer (offline, fp32, eager) and the
GGUF the same way (gguf_file=...), then compares on a few prompts: the token ids of both
tokenizers (and of the two smezo fixtures' texts, tests/fixtures/bpe/smollm2_ids.jsonl), and
the logits (max abs difference; fp32 rule 1e-4 * (1 + max|ref|) for an f32 conversion; for
bf16 it reports the difference and the argmax agreement), and apply_chat_template of the folder
against the GGUF's (the tokenizer.chat_template convert keeps). Exits 1 on a mismatch.
"""

import argparse
import json
import os
import sys

import torch
import transformers
from tokenizers import pre_tokenizers

PROMPTS = ["The capital of France is", "it 's a charming and often affecting journey . It was",
           "Question: Is the sky blue?\nAnswer:", "<|im_start|>user\nHi there<|im_end|>\n"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hf", required=True)
    ap.add_argument("--gguf", default=os.environ.get("SMEZO_SMOLLM2") or "weights/SmolLM2-135M-Instruct.Q4_1.gguf")
    args = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    model_dir, gguf_file = os.path.split(os.path.abspath(args.gguf))
    tok_g = transformers.AutoTokenizer.from_pretrained(model_dir, gguf_file=gguf_file)
    # transformers builds plain GPT-2 pre-tokenisation for the GGUF (it does not know "smollm");
    # SmolLM2's own splits digits first (tools/oracles/bpe_oracle.py says more): put it back
    tok_g.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
    ref = transformers.AutoModelForCausalLM.from_pretrained(model_dir, gguf_file=gguf_file, dtype=torch.float32,
                                                            attn_implementation="eager").eval()
    tok_h = transformers.AutoTokenizer.from_pretrained(args.hf, local_files_only=True)
    hf = transformers.AutoModelForCausalLM.from_pretrained(args.hf, local_files_only=True, dtype=torch.float32,
                                                           attn_implementation="eager").eval()
    f32 = json.load(open(os.path.join(args.hf, "config.json"))).get("torch_dtype") == "float32"
    ok = True
    fixture = [json.loads(l) for l in open("tests/fixtures/bpe/smollm2_ids.jsonl")]
    fixture = [f for f in fixture if "text" in f]  # (the raw-byte cases cannot be given to HF as str)
    texts = PROMPTS + [f["text"] for f in fixture]
    same = sum(tok_g(t)["input_ids"] == tok_h(t)["input_ids"] for t in texts)
    as_fixture = sum(tok_h(f["text"])["input_ids"] == f["ids"] for f in fixture)
    print(f"tokenizer: {type(tok_h).__name__}, ids identical to the GGUF's (SmolLM2 pre-tokeniser) on "
          f"{same}/{len(texts)} texts, to tests/fixtures/bpe/smollm2_ids.jsonl on {as_fixture}/{len(fixture)}")
    ok &= same == len(texts) and as_fixture == len(fixture)
    with torch.no_grad():
        for p in PROMPTS:
            ids = torch.tensor([tok_g(p)["input_ids"]])
            a = ref(input_ids=ids).logits[0]
            b = hf(input_ids=ids).logits[0]
            err = float((a - b).abs().max())
            tol = 1e-4 * (1 + float(a.abs().max()))
            agree = int((a.argmax(-1) == b.argmax(-1)).sum())
            good = err <= tol if f32 else True
            ok &= good
            print(f"{p!r:60.60} tokens {ids.shape[1]:3d}  max|diff| {err:.2e} (fp32 tolerance {tol:.2e})  "
                  f"argmax {agree}/{ids.shape[1]}  {'PASS' if good else 'FAIL'}")
    # The GGUF's tokenizer.chat_template rides along (tokenizer_config.json): apply_chat_template works and
    # renders what transformers' own GGUF load renders.
    chat = [{"role": "user", "content": "Hi there"}]
    try:
        mine = tok_h.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
        theirs = tok_g.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
        good, note = mine == theirs, f"renders {mine!r}" + ("" if mine == theirs else f", the GGUF load {theirs!r}")
    except Exception as e:  # noqa: BLE001 (a missing template is the finding)
        good, note = False, f"{type(e).__name__}: {str(e)[:200]}"
    ok &= good
    print(f"chat template: {note}  {'PASS' if good else 'FAIL'}")
    print("ALL PASS" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

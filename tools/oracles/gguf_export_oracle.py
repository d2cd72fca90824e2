#!/usr/bin/env python3
"""gguf_export_oracle.py: check a scale-patched GGUF (the export of `smezo train --tune scales`,
formats/gguf_patch.h; until that lands, build/patch_scales makes one) against three readers that
are not smezo's: the `gguf` package, Hugging Face transformers and llama.cpp.

What it does, given the base GGUF, the patched GGUF and the smezo binary:
  (a) gguf: the `gguf` package (llama.cpp's Python reader) reads both files: the patched one has
      the same size, metadata (keys, order, types and values, byte for byte), tensors (names,
      order, types, shapes, offsets, byte sizes) and data as the base, but for the f16 scale
      fields of its block-quantised tensors (d at byte 0 of each block, m/dmin at byte 2, Q6_K's
      d at byte 208), of which some must differ (else the check would prove nothing).
  (b) transformers: AutoModelForCausalLM.from_pretrained(dir, gguf_file=PATCHED) (dequantised to
      fp32 by the gguf package); its fp32 logits on the prompts of tools/oracles/gguf_compare.py
      against `smezo logits --model PATCHED`. It also prints how far the patch moved smezo's
      logits from the base's, to show the comparison is not blind to the patch.
  (c) llama.cpp (the llama-cpp-python package): loads the patched file, evaluates the same token
      ids (smezo's tokenizer, `smezo tokenize`) with every position's logits, and greedily
      generates from a chat prompt. llama.cpp's CPU dot products quantise the activations to 8
      bits (Q8_0/Q8_1/Q8_K) and it accumulates in another order, so only the argmax is compared.

Tolerances
  (b) gguf_compare.py's fp32 rule (tools/oracles/hf_oracle.py's): per prompt, max abs err <=
      1e-4 * (1 + max|ref|); a differing argmax fails only where the reference's top-1 beats our
      pick by more than 2 * tolerance.
  (c) next-token argmax agreement with `smezo logits` over all positions >= 90%, and 100% at the
      positions where smezo's top-1 leads its top-2 by more than 1% of (1 + max|logit|) (a lead
      8-bit activations cannot overturn); generation must produce tokens (its agreement with
      `smezo generate` is printed, not judged: one flipped argmax changes the rest).

Usage (from the repo root; the venvs as tools/oracles/gguf_export_ci.sh makes them):
  build/patch_scales weights/SmolLM2-135M-Instruct.Q4_1.gguf build/export/patched.gguf
  VENV/bin/python tools/oracles/gguf_export_oracle.py --base weights/SmolLM2-135M-Instruct.Q4_1.gguf \\
      --patched build/export/patched.gguf --checks a,b
  LLAMA_VENV/bin/python tools/oracles/gguf_export_oracle.py --base ... --patched ... --checks c
(a) needs numpy and gguf; (b) also torch, transformers, safetensors; (c) llama-cpp-python, numpy,
safetensors. No network.
"""

import argparse
import os
import subprocess
import sys

import numpy as np

from gguf_compare import compare, prompt_texts, smezo_logits

# Byte offsets of the f16 scale fields in one block (formats/gguf_patch.h).
SCALE_FIELDS = {"Q8_0": [0], "Q4_0": [0], "Q5_0": [0], "Q4_1": [0, 2], "Q5_1": [0, 2],
                "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208]}
CHAT = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
CLEAR_LEAD = 0.01


def field_bytes(field):
    return b"".join(np.asarray(p).tobytes() for p in field.parts)


def check_gguf(base_path, patched_path):
    """(a): returns True when the patched file is the base but for scale fields, some changed."""
    import gguf
    base, patched = gguf.GGUFReader(base_path), gguf.GGUFReader(patched_path)
    problems = []
    if os.path.getsize(base_path) != os.path.getsize(patched_path):
        problems.append(f"size {os.path.getsize(patched_path)} != base {os.path.getsize(base_path)}")
    if list(base.fields) != list(patched.fields):
        problems.append("metadata keys or their order differ")
    for key, f in base.fields.items():
        g = patched.fields.get(key)
        if g is None or f.types != g.types or field_bytes(f) != field_bytes(g):
            problems.append(f"metadata {key} differs")
    if [t.name for t in base.tensors] != [t.name for t in patched.tensors]:
        problems.append("tensor names or order differ")
    changed_blocks = total_blocks = 0
    for t, u in zip(base.tensors, patched.tensors):
        same = (t.tensor_type == u.tensor_type and list(t.shape) == list(u.shape)
                and t.data_offset == u.data_offset and t.n_bytes == u.n_bytes)
        if not same:
            problems.append(f"tensor {t.name}: type/shape/offset/size differ")
            continue
        a = np.frombuffer(t.data.tobytes(), dtype=np.uint8)
        b = np.frombuffer(u.data.tobytes(), dtype=np.uint8)
        fields = SCALE_FIELDS.get(t.tensor_type.name)
        if fields is None:
            if not np.array_equal(a, b):
                problems.append(f"tensor {t.name} ({t.tensor_type.name}, no scales) differs")
            continue
        block_bytes = gguf.GGML_QUANT_SIZES[t.tensor_type][1]
        a, b = a.reshape(-1, block_bytes), b.reshape(-1, block_bytes)
        mask = np.ones(block_bytes, dtype=bool)
        for off in fields:
            mask[off:off + 2] = False
        if not np.array_equal(a[:, mask], b[:, mask]):
            problems.append(f"tensor {t.name}: bytes outside the scale fields differ")
        changed_blocks += int((a[:, ~mask] != b[:, ~mask]).any(axis=1).sum())
        total_blocks += a.shape[0]
    if changed_blocks == 0:
        problems.append("no scale differs from the base's: the patched file is the base")
    from importlib.metadata import version
    print(f"(a) gguf {version('gguf')}: {len(base.fields)} metadata keys, "
          f"{len(base.tensors)} tensors; scales changed in {changed_blocks} of {total_blocks} blocks")
    for p in problems[:20]:
        print(f"    FAIL {p}")
    print(f"(a) {'PASS' if not problems else 'FAIL'}")
    return not problems


def check_transformers(args):
    """(b): transformers' fp32 logits of the patched file against smezo's."""
    import torch
    import transformers
    from gguf_compare import load_transformers, print_table, prompts, reference_logits
    tokenizer, model = load_transformers(args.patched)
    rows, ok, moved = [], True, 0.0
    for name, _, tokens in prompts(args.assets, tokenizer):
        ref = reference_logits(model, tokens)
        ours = smezo_logits(args.smezo, args.patched, tokens, os.path.join(args.workdir, f"b-{name}.safetensors"))
        base = smezo_logits(args.smezo, args.base, tokens, os.path.join(args.workdir, f"b-{name}-base.safetensors"))
        c = compare(ours, ref)
        ok &= c["good"]
        moved = max(moved, float(np.abs(ours - base).max()) / c["tol"])
        rows.append((name, len(tokens), c))
    print(f"(b) smezo {args.smezo} vs transformers {transformers.__version__} (torch {torch.__version__}, fp32) "
          f"on {args.patched}")
    print_table(rows)
    print(f"    the patch moved smezo's logits from the base's by up to {moved:.1f} x the tolerance")
    print(f"(b) {'PASS' if ok else 'FAIL'}")
    return ok


def smezo_tokens(args, text):
    r = subprocess.run([args.smezo, "tokenize", "--model", args.patched, text], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"smezo tokenize exited {r.returncode}: {r.stderr.strip()[-400:]}")
    return [int(x) for x in r.stdout.strip().split(",") if x]


def smezo_generate(args, prompt, n):
    r = subprocess.run([args.smezo, "generate", "--model", args.patched, "--prompt", prompt, "--new-tokens",
                        str(n), "--temperature", "0"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"smezo generate exited {r.returncode}: {r.stderr.strip()[-400:]}")
    return r.stdout


def check_llama_cpp(args):
    """(c): llama.cpp loads the patched file; argmax agreement with smezo; greedy generation."""
    import llama_cpp
    llm = llama_cpp.Llama(model_path=args.patched, n_ctx=128, n_batch=128, logits_all=True,
                          n_threads=os.cpu_count() or 1, seed=1, verbose=False)
    texts = prompt_texts(args.assets) + [("chat", CHAT)]
    agree = total = clear = clear_agree = 0
    print(f"(c) llama.cpp (llama-cpp-python {llama_cpp.__version__}) on {args.patched}")
    for name, text in texts:
        tokens = smezo_tokens(args, text)[:32]
        llm.reset()
        llm.eval(tokens)
        theirs = np.array(llm.scores[:len(tokens)], dtype=np.float64)
        ours = smezo_logits(args.smezo, args.patched, tokens, os.path.join(args.workdir, f"c-{name}.safetensors"))
        top2 = np.sort(ours, axis=-1)[:, -2:]
        lead = (top2[:, 1] - top2[:, 0]) > CLEAR_LEAD * (1 + np.abs(ours).max())
        same = theirs.argmax(-1) == ours.argmax(-1)
        agree, total = agree + int(same.sum()), total + len(tokens)
        clear, clear_agree = clear + int(lead.sum()), clear_agree + int((same & lead).sum())
        print(f"    {name:8} {len(tokens):3d} tokens: argmax {int(same.sum())}/{len(tokens)}, clear positions "
              f"{int((same & lead).sum())}/{int(lead.sum())}, max |logit diff| {np.abs(theirs - ours).max():.3f}")
    n_new = 16
    llm.reset()
    out = llm(CHAT, max_tokens=n_new, temperature=0.0, top_k=1)
    theirs_text = out["choices"][0]["text"]
    # smezo prints the prompt too, its special tokens dropped: its continuation follows "assistant\n"
    ours_text = smezo_generate(args, CHAT, n_new)
    ours_text = ours_text[ours_text.rfind("assistant\n") + len("assistant\n"):]
    common = os.path.commonprefix([theirs_text, ours_text])
    rate = agree / max(total, 1)
    ok = rate >= 0.9 and clear_agree == clear and len(theirs_text) > 0
    print(f"    next-token argmax: {agree}/{total} = {rate:.3f} (>= 0.9), clear positions {clear_agree}/{clear} "
          f"(all); greedy {n_new} tokens: llama.cpp {theirs_text!r}, smezo {ours_text!r}, "
          f"{len(common)} characters in common")
    print(f"(c) {'PASS' if ok else 'FAIL'}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True, help="the GGUF the run started from")
    ap.add_argument("--patched", required=True, help="the scale-patched GGUF")
    ap.add_argument("--smezo", default="build/smezo")
    ap.add_argument("--checks", default="a,b", help="which of a (gguf), b (transformers), c (llama.cpp)")
    ap.add_argument("--assets", default=os.environ.get("SMEZO_ASSETS", "../shared/assets"))
    ap.add_argument("--workdir", default="build/gguf_export_oracle")
    args = ap.parse_args()
    for p in (args.base, args.patched, args.smezo):
        if not os.path.isfile(p):
            sys.exit(f"{p}: not found")
    os.makedirs(args.workdir, exist_ok=True)
    checks = set(args.checks.split(","))
    if not checks <= {"a", "b", "c"}:
        sys.exit(f"--checks {args.checks}: give a, b and/or c")
    ok = True
    if "a" in checks:
        ok &= check_gguf(args.base, args.patched)
    if "b" in checks:
        ok &= check_transformers(args)
    if "c" in checks:
        ok &= check_llama_cpp(args)
    print("ALL PASS" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

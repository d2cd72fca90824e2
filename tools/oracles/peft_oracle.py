#!/usr/bin/env python3
"""peft_oracle.py: Hugging Face PEFT loads smezo's adapters, and smezo loads PEFT's.

What it does (stories260K: 8 heads, 4 key/value heads, so a GQA model; no download, no network)
  1. `smezo convert --dtype f32` writes the base as a Hugging Face folder, BASE_HF. transformers'
     AutoTokenizer must load it (its tokenizer_config.json) and give `smezo tokenize`'s ids.
  2. smezo's adapters: `smezo train --tune lora` (r 4 on every projection) and `--tune prefix`,
     a few steps, on BASE_HF and on the llama2.c .bin (interleaved RoPE: the files hold keys and
     B rows in Hugging Face's order). PEFT loads each: AutoPeftModelForCausalLM.from_pretrained(
     ADAPTER) when its base_model_name_or_path names BASE_HF, PeftModel.from_pretrained(the
     BASE_HF model, ADAPTER) when it is null (the .bin). Its logits of one token sequence
     against `smezo logits --adapter ADAPTER` on the base the adapter was trained on.
  3. PEFT's adapters: get_peft_model(BASE_HF model, LoraConfig / PrefixTuningConfig), every
     adapter value redrawn from a fixed seed, save_pretrained. `smezo logits --adapter DIR`
     (the base from base_model_name_or_path) and `--model stories260K.bin --adapter DIR` against
     PEFT's logits.
  4. smezo's PREFIX_TUNING adapter_config.json holds the fields PEFT writes for the same model,
     with PEFT's values (peft_version and base_model_name_or_path aside).
  5. The offline base: an adapter trained on the .bin records base_model_name_or_path null;
     `smezo convert --adapter ADAPTER --out BASE` writes its base and names it there, and
     AutoPeftModelForCausalLM.from_pretrained(ADAPTER) then loads both with HF_HUB_OFFLINE=1.
  6. One more family, Qwen2 (q/k/v biases, GQA, tied head): a tiny random Qwen2ForCausalLM with
     stories260K's vocabulary and tokenizer.model; steps 2 and 3 (LoRA and prefix, both ways) on it.
  Each adapter must move the logits by more than 100 x the tolerance (so a comparison that
  ignored the adapter would fail). Prints one PASS/FAIL line per check and exits 1 if any
  failed (2 on a setup error).

Tolerance: max |ours - PEFT's| <= 1e-4 * max |PEFT's logits| (fp32 on both sides).

Usage (from the repo root)
  python3 tools/oracles/peft_oracle.py                        # CPU backend, work files in build/peft_oracle
  python3 tools/oracles/peft_oracle.py --device cuda --workdir $OUT/peft
Needs python3 with torch, transformers 5.x, safetensors, numpy and peft (tools/gpu_backlog.sh
carries peft, accelerate and psutil as wheels for the GPU machine); HF_HUB_OFFLINE is set.
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before transformers and peft are imported

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.numpy import load_file  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

import peft  # noqa: E402

REL_TOL = 1e-4
SEED = 4321
SEQ_LEN = 20
LORA_TARGETS = "q,k,v,o,gate,up,down"
HF_MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
TRAIN = ("train --task sst2 --batch 2 --max-len 40 --eval-every 0 --dev-examples 8 --skip-test "
         "--progress-every 1000 --steps 6 --eps 1e-2 --device cpu").split()
PREFIX_TOKENS = 3
# Runs of spaces and leading/trailing ones too: this sentencepiece model's normalizer folds them, and
# the tokenizer.json smezo convert writes beside tokenizer.model carries that rule to transformers.
TEXTS = ["Once upon a time, there was a little girl named Lily.", "The cat sat on the mat. It was happy!",
         "Tom said: \"Let's go!\" 42 times.\nThen he ran.", "  Two  spaces,   three   and a tail  "]
PEFT_VERSION_KEYS = {"peft_version", "base_model_name_or_path"}  # differ by design


class Checks:
    def __init__(self):
        self.rows = []

    def add(self, name, ok, note):
        self.rows.append((name, ok, note))
        print(f"{'PASS' if ok else 'FAIL'}  {name:<34} {note}", flush=True)


def module_found(name):
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # its parent package is missing
        return False


def smezo(args, *argv):
    cmd = [args.smezo, *argv]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` exited {r.returncode}: {(r.stderr or r.stdout).strip()[-600:]}")
    return r.stdout


def smezo_logits(args, model, adapter, tokens, out):
    argv = ["logits", "--tokens", ",".join(map(str, tokens)), "--out", out, "--device", args.device]
    argv += ["--model", model] if model else []
    argv += ["--adapter", adapter] if adapter else []
    if args.device != "cpu":
        argv += ["--dtype", "f32"]
    smezo(args, *argv)
    return load_file(out)["logits"].astype(np.float64)


@torch.no_grad()
def peft_logits(model, tokens, device):
    ids = torch.tensor([tokens], dtype=torch.long, device=device)
    out = model(input_ids=ids, attention_mask=torch.ones_like(ids))
    return out.logits[0].float().cpu().numpy().astype(np.float64)


def load_base(path, device):
    m = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="eager")
    return m.to(device).eval()


def compare(checks, name, ours, ref, base_logits):
    err = float(np.abs(ours - ref).max())
    scale = float(np.abs(ref).max())
    moved = float(np.abs(ref - base_logits).max())
    tol = REL_TOL * scale
    ok = ours.shape == ref.shape and err <= tol and moved > 100 * tol
    checks.add(name, ok, f"max abs err {err:.2e} (rel {err / scale:.2e}, tolerance {tol:.2e}); "
                         f"the adapter moves the logits by {moved:.2f}")


# --- the steps

def check_tokenizer(args, checks, base_hf):
    missing = [m for m in ("sentencepiece", "google.protobuf") if not module_found(m)]
    if missing:  # transformers reads a tokenizer.model with them only
        print(f"SKIP  {'tokenizer: AutoTokenizer = smezo':<34} python3 has no {' and no '.join(missing)}, which "
              f"transformers needs to read tokenizer.model", flush=True)
        return
    try:
        tok = transformers.AutoTokenizer.from_pretrained(base_hf)
    except Exception as e:  # noqa: BLE001 (any refusal is the finding)
        checks.add("tokenizer: AutoTokenizer loads", False, f"{type(e).__name__}: {str(e)[:300]}")
        return
    same = 0
    for text in TEXTS:
        ours = [int(t) for t in smezo(args, "tokenize", "--model", base_hf, "--bos", text).strip().split(",")]
        same += tok(text)["input_ids"] == ours
    checks.add("tokenizer: AutoTokenizer = smezo", same == len(TEXTS),
               f"{type(tok).__name__}: the same ids for {same}/{len(TEXTS)} texts")


def train_adapter(args, base, tune, out, lr=None):
    extra = (["--tune", "lora", "--lora-r", "4", "--lora-alpha", "8", "--lora-targets", LORA_TARGETS, "--lr",
              lr or "5e-3"]
             if tune == "lora" else ["--tune", "prefix", "--prefix-tokens", str(PREFIX_TOKENS), "--lr", lr or "5e-2"])
    smezo(args, *TRAIN, "--model", base, *extra, "--out", out)
    return os.path.join(out, "checkpoint")


def load_ours_in_peft(adapter_dir, base_hf, device):
    """AutoPeftModelForCausalLM when the folder names a base it can load; else the base by hand."""
    named = json.load(open(os.path.join(adapter_dir, "adapter_config.json")))["base_model_name_or_path"]
    if named:
        m = peft.AutoPeftModelForCausalLM.from_pretrained(adapter_dir, dtype=torch.float32,
                                                          attn_implementation="eager")
        return m.to(device).eval(), "AutoPeftModelForCausalLM"
    return peft.PeftModel.from_pretrained(load_base(base_hf, device), adapter_dir).eval(), "PeftModel + BASE_HF"


def check_ours_in_peft(args, checks, base_hf, base_bin, tokens, base_logits):
    for tune in ("lora", "prefix"):
        for base, kind in ((base_hf, "hf"), (base_bin, "bin")):
            adapter = train_adapter(args, base, tune, os.path.join(args.workdir, f"ours_{tune}_{kind}"))
            model, how = load_ours_in_peft(adapter, base_hf, args.torch_device)
            ref = peft_logits(model, tokens, args.torch_device)
            ours = smezo_logits(args, None, adapter, tokens, adapter + ".logits.safetensors")
            compare(checks, f"smezo {tune} ({kind} base) -> PEFT", ours, ref, base_logits)
            print(f"      loaded by {how}", flush=True)


def randomize(model, gen, std):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.requires_grad:  # the adapter's values (a PEFT model's base is frozen)
                p.copy_(torch.randn(p.shape, generator=gen) * std)


def peft_adapter(args, base_hf, tune, prefix=""):
    base = load_base(base_hf, "cpu")
    base.name_or_path = base_hf  # what PEFT records as base_model_name_or_path
    if tune == "lora":
        config = peft.LoraConfig(task_type="CAUSAL_LM", r=4, lora_alpha=8, target_modules=HF_MODULES,
                                 lora_dropout=0.0)
    else:
        config = peft.PrefixTuningConfig(task_type="CAUSAL_LM", num_virtual_tokens=PREFIX_TOKENS)
    model = peft.get_peft_model(base, config)
    randomize(model, torch.Generator().manual_seed(SEED), 0.1 if tune == "lora" else 0.5)
    out = os.path.join(args.workdir, f"{prefix}peft_{tune}")
    model.save_pretrained(out)
    return model.to(args.torch_device).eval(), out


def check_peft_in_ours(args, checks, base_hf, base_bin, tokens, base_logits):
    configs = {}
    for tune in ("lora", "prefix"):
        model, adapter = peft_adapter(args, base_hf, tune)
        configs[tune] = json.load(open(os.path.join(adapter, "adapter_config.json")))
        ref = peft_logits(model, tokens, args.torch_device)
        for base, kind in ((None, "base_model_name_or_path"), (base_bin, "the .bin")):
            out = os.path.join(args.workdir, f"peft_{tune}_{'named' if base is None else 'bin'}.logits.safetensors")
            compare(checks, f"PEFT {tune} -> smezo ({kind})", smezo_logits(args, base, adapter, tokens, out), ref,
                    base_logits)
    return configs


def check_offline_base(args, checks, tokens):
    """Step 5: an adapter of the .bin gets a base PEFT loads offline from one smezo command."""
    adapter = os.path.join(args.workdir, "ours_lora_bin", "checkpoint")
    base = os.path.join(args.workdir, "ours_lora_bin_base")
    if os.path.isdir(base):
        import shutil
        shutil.rmtree(base)
    smezo(args, "convert", "--adapter", adapter, "--dtype", "f32", "--out", base)
    named = json.load(open(os.path.join(adapter, "adapter_config.json")))["base_model_name_or_path"]
    model, how = load_ours_in_peft(adapter, None, args.torch_device)
    ref = peft_logits(model, tokens, args.torch_device)
    ours = smezo_logits(args, None, adapter, tokens, adapter + ".offline.logits.safetensors")
    base_logits = peft_logits(load_base(base, args.torch_device), tokens, args.torch_device)
    compare(checks, "offline base: convert --adapter", ours, ref, base_logits)
    print(f"      base_model_name_or_path {named}; loaded by {how}", flush=True)


def qwen2_base(args):
    """A tiny random Qwen2 (GQA 4/2, q/k/v biases, tied) with stories260K's vocabulary and tokenizer."""
    import shutil
    d = os.path.join(args.workdir, "qwen2-hf")
    if os.path.isdir(d):
        return d
    cfg = transformers.Qwen2Config(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, vocab_size=512, max_position_embeddings=256,
                                   rope_theta=5000.0, tie_word_embeddings=True, bos_token_id=1, eos_token_id=2,
                                   use_sliding_window=False)
    torch.manual_seed(SEED)
    model = transformers.Qwen2ForCausalLM(cfg).eval()
    gen = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():  # as hf_oracle.py: gains U(0.5, 1.5), biases and matrices N(0, 0.1^2) (not flat logits)
        for name, p in model.named_parameters():
            p.copy_(0.5 + torch.rand(p.shape, generator=gen) if p.ndim == 1 and not name.endswith(".bias")
                    else torch.randn(p.shape, generator=gen) * 0.1)
    model.save_pretrained(d)
    shutil.copy(os.path.join(args.assets, "tokenizers", "tinystories-512.model"), os.path.join(d, "tokenizer.model"))
    return d


def check_qwen2(args, checks, tokens):
    """Step 6: LoRA and prefix adapters on a Qwen2 base, smezo -> PEFT and PEFT -> smezo."""
    base = qwen2_base(args)
    base_logits = peft_logits(load_base(base, args.torch_device), tokens, args.torch_device)
    for tune in ("lora", "prefix"):
        # a larger lr than stories260K's: six steps must move this untrained model's logits measurably
        adapter = train_adapter(args, base, tune, os.path.join(args.workdir, f"qwen2_ours_{tune}"),
                                lr="5e-2" if tune == "lora" else "2e-1")
        model, how = load_ours_in_peft(adapter, base, args.torch_device)
        ours = smezo_logits(args, None, adapter, tokens, adapter + ".logits.safetensors")
        compare(checks, f"qwen2: smezo {tune} -> PEFT", ours, peft_logits(model, tokens, args.torch_device),
                base_logits)
        model, adapter = peft_adapter(args, base, tune, prefix="qwen2_")
        out = os.path.join(args.workdir, f"qwen2_peft_{tune}.logits.safetensors")
        compare(checks, f"qwen2: PEFT {tune} -> smezo", smezo_logits(args, None, adapter, tokens, out),
                peft_logits(model, tokens, args.torch_device), base_logits)


def check_prefix_config(args, checks, peft_prefix_config):
    ours = json.load(open(os.path.join(args.workdir, "ours_prefix_hf", "checkpoint", "adapter_config.json")))
    theirs = {k: v for k, v in peft_prefix_config.items() if k not in PEFT_VERSION_KEYS}
    mine = {k: v for k, v in ours.items() if k not in PEFT_VERSION_KEYS}
    differ = sorted(k for k in set(theirs) | set(mine) if theirs.get(k, "<absent>") != mine.get(k, "<absent>"))
    checks.add("prefix adapter_config = PEFT's", not differ,
               "every field equal" if not differ else
               "; ".join(f"{k}: ours {mine.get(k, '<absent>')!r}, PEFT {theirs.get(k, '<absent>')!r}" for k in differ))


# --- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smezo", default="build/smezo", help="the smezo binary")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="smezo logits' --device")
    ap.add_argument("--workdir", default="build/peft_oracle")
    ap.add_argument("--assets", default=os.environ.get("SMEZO_ASSETS", "../shared/assets"))
    args = ap.parse_args()
    args.torch_device = "cuda" if args.device == "cuda" and torch.cuda.is_available() else "cpu"
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    os.environ["SMEZO_ASSETS"] = args.assets
    base_bin = os.path.abspath(os.path.join(args.assets, "models", "stories260K.bin"))
    if not os.access(args.smezo, os.X_OK) or not os.path.isfile(base_bin):
        print(f"error: need an executable {args.smezo} and {base_bin}", file=sys.stderr)
        return 2
    args.workdir = os.path.abspath(args.workdir)
    os.makedirs(args.workdir, exist_ok=True)
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, peft {peft.__version__}, "
          f"smezo --device {args.device}, PEFT on {args.torch_device}")
    base_hf = os.path.join(args.workdir, "stories260K-hf")
    if not os.path.isdir(base_hf):
        smezo(args, "convert", "--model", base_bin, "--dtype", "f32", "--out", base_hf)
    tokens = [1] + [int(t) for t in np.random.default_rng(SEED).integers(3, 512, size=SEQ_LEN - 1)]
    base_logits = peft_logits(load_base(base_hf, args.torch_device), tokens, args.torch_device)

    checks = Checks()
    check_tokenizer(args, checks, base_hf)
    check_ours_in_peft(args, checks, base_hf, base_bin, tokens, base_logits)
    configs = check_peft_in_ours(args, checks, base_hf, base_bin, tokens, base_logits)
    check_prefix_config(args, checks, configs["prefix"])
    check_offline_base(args, checks, tokens)
    check_qwen2(args, checks, tokens)
    failed = sum(1 for _, ok, _ in checks.rows if not ok)
    print(f"\n{len(checks.rows) - failed}/{len(checks.rows)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

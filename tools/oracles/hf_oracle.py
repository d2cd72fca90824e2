#!/usr/bin/env python3
"""hf_oracle.py: check smezo's forward pass against Hugging Face transformers.

What it does
  1. Builds small random-initialised models from configs written below (no download):
       llama_gqa    LlamaForCausalLM, 8 heads / 2 kv heads (GQA), untied lm_head
       llama_tied   LlamaForCausalLM, 4 heads (MHA), tie_word_embeddings=True
       llama_bias   LlamaForCausalLM, attention_bias=mlp_bias=True, 4 heads / 2 kv heads
       mistral_swa  MistralForCausalLM, sliding_window 8 < sequence length 24, GQA
       opt          OPTForCausalLM, pre-LN, word_embed_proj_dim == hidden_size, tied head,
                    learned positions (offset 2), biases, ReLU
     hidden 64, 2-3 layers, vocab 300, intermediate 160, rope_theta 5000 (not the default,
     so the config's rope_parameters are really read).
     The newer families, tiny (hidden 16, vocab 64) so that their fixtures can be committed:
       qwen2_gqa    Qwen2ForCausalLM, q/k/v biases, 4 heads / 2 kv heads, untied        (fp32)
       qwen2_tied   Qwen2ForCausalLM, 4 heads / 1 kv head, tie_word_embeddings=True     (bf16)
       qwen3_gqa    Qwen3ForCausalLM, q/k norms, head_dim 8 != hidden / heads, untied  (fp32)
       qwen3_tied   Qwen3ForCausalLM, 2 heads / 1 kv head of 8, tied                    (bf16)
       llama3_gqa   LlamaForCausalLM with rope_scaling llama3 (factor 8, low 1, high 4,
                    original 64, theta 100: one pair kept, two blended, one divided), untied (fp32)
       llama3_tied  the same, tied                                                      (bf16)
     Each of these is also written as a GGUF by the `gguf` package (below).
  2. Saves each with save_pretrained(dir, safe_serialization=True) in fp32, fp16 and bf16
     (config dtype set accordingly).
  3. Reference: loads the saved checkpoint back with attn_implementation="eager" in float32
     (an fp16/bf16 checkpoint is upcast exactly), TF32 off, and takes the logits of one
     24-token sequence. For fp16/bf16 it also runs transformers in the storage dtype
     ("native" run) to measure what same-precision arithmetic costs.
  4. Runs `smezo logits --model DIR --tokens ... --out F --device DEV` and compares:
     max abs error, max relative error (max abs error / max |reference logit|), argmax
     agreement per position.
  5. Checks stories260K's golden greedy text: `smezo generate --device DEV --temperature 0
     --steps 200` must print ASSETS/models/stories260K.greedy200.txt byte for byte.
  Prints a summary table and exits 1 if anything failed (2 on a setup error).

Weight initialisation (why not transformers' default)
  transformers initialises norms to ones, biases to zeros and matrices with std 0.02, which
  gives almost flat logits and hides mistakes in norm gains, biases and attention. Here every
  parameter is redrawn from a fixed torch seed: matrices (embeddings, positions, projections,
  head) ~ N(0, 0.1^2); biases ~ N(0, 0.1^2); norm gains ~ U(0.5, 1.5). With hidden 64 this
  gives logits of std ~0.85 (max |logit| ~3-4) whose argmax changes along the sequence.

Tolerance policy
  T32 = 1e-4 * (1 + max|ref|)   (ref = transformers' fp32 logits on the checkpoint's weights)
  fp32 checkpoint: max abs err <= T32.
  fp16/bf16 checkpoint, two fair references, picked by --low-precision:
    upcast  smezo's backend upcasts the stored fp16/bf16 weights to fp32 and computes in fp32
            (the CPU backend does this; so does `smezo logits` today, which asks for F32
            storage). The fair reference is transformers in fp32 on the same upcast weights:
            max abs err <= T32, the fp32 rule.
    native  the backend computes in the storage precision. flash-attention's rule
            (docs/ARCHITECTURE.md, tolerances): our error against the fp32 reference must be at most twice the error
            of transformers' own same-precision run against that reference, plus a floor:
            max abs err <= 2 * err(transformers native vs ref) + T32.
    auto    (default) upcast for --device cpu, native otherwise.
  Both numbers are printed whatever the mode; only the chosen one decides PASS/FAIL.
  mistral_swa also checks that removing the window moves transformers' logits by more than
  100 * T32 (so the case really exercises the window).
  Argmax: a position whose argmax differs counts as a failure only when it is decisive, i.e.
  the reference's top-1 logit beats the logit of our pick by more than 2 * tolerance (near
  ties may flip legitimately).

Fixtures (CI has no torch: the C++ suite compares against these, tests/test_family_oracle.cpp)
  --write-fixtures DIR writes, per new-family case, DIR/<case>/: config.json and
  model.safetensors as save_pretrained wrote them (in the case's dtype), logits.safetensors
  (transformers' fp32 logits of the tokens, the reference above), oracle.json (tokens, dtype,
  tolerance rule, versions) and model.gguf: the same weights written with the `gguf` package's
  GGUFWriter, tensor names from its TensorNameMap (llama.cpp's convert_hf_to_gguf layout: llama
  q/k rows permuted to the interleaved order, Llama 3's rope_freqs tensor of per-pair divisors,
  1-D tensors in F32, matrices in the checkpoint's dtype). Where transformers can read that GGUF
  back (its gguf loader), its logits are compared to the reference as a check of the layout.
  --check-fixtures DIR rebuilds the cases and demands the committed logits within T32.
  Regenerate with: python3 tools/oracles/hf_oracle.py --write-fixtures tests/fixtures/families

Usage (from the repo root)
  python3 tools/oracles/hf_oracle.py                      # CPU backend, work files in build/oracle
  python3 tools/oracles/hf_oracle.py --device cuda --smezo build/smezo --workdir $OUT/oracle
  python3 tools/oracles/hf_oracle.py --cases mistral_swa --dtypes fp32
Needs python3 with torch, transformers (4.4x or 5.x), safetensors, numpy; no network.
"""

import argparse
import importlib.metadata
import copy
import os
import subprocess
import sys
from dataclasses import dataclass, field

import numpy as np
import torch
import transformers
from transformers.utils import logging as hf_logging
from safetensors.numpy import load_file

SEED = 1234
SEQ_LEN = 24
MATRIX_STD = 0.1
BIAS_STD = 0.1
NORM_GAIN_RANGE = (0.5, 1.5)
FP32_REL_TOL = 1e-4
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
GOLDEN_STEPS = 200


@dataclass
class Case:
    name: str
    arch: str    # llama | mistral | opt | qwen2 | qwen3
    config: dict = field(default_factory=dict)
    fixture_dtype: str = ""  # a committed fixture (tests/fixtures/families) in this dtype


SMALL_LLAMA = dict(hidden_size=64, intermediate_size=160, num_hidden_layers=3, vocab_size=300,
                   max_position_embeddings=128, rms_norm_eps=1e-5, rope_theta=5000.0,
                   hidden_act="silu", bos_token_id=1, eos_token_id=2)

CASES = [
    Case("llama_gqa", "llama", dict(SMALL_LLAMA, num_attention_heads=8, num_key_value_heads=2,
                                    tie_word_embeddings=False)),
    Case("llama_tied", "llama", dict(SMALL_LLAMA, num_hidden_layers=2, num_attention_heads=4,
                                     num_key_value_heads=4, tie_word_embeddings=True)),
    Case("llama_bias", "llama", dict(SMALL_LLAMA, num_hidden_layers=2, num_attention_heads=4,
                                     num_key_value_heads=2, attention_bias=True, mlp_bias=True,
                                     tie_word_embeddings=False)),
    Case("mistral_swa", "mistral", dict(SMALL_LLAMA, num_attention_heads=8, num_key_value_heads=2,
                                        sliding_window=8, tie_word_embeddings=False)),
    Case("opt", "opt", dict(hidden_size=64, ffn_dim=160, num_hidden_layers=2,
                            num_attention_heads=4, vocab_size=300, max_position_embeddings=64,
                            do_layer_norm_before=True, word_embed_proj_dim=64,
                            tie_word_embeddings=True, enable_bias=True,
                            layer_norm_elementwise_affine=True, activation_function="relu",
                            dropout=0.0, attention_dropout=0.0, pad_token_id=1, bos_token_id=2,
                            eos_token_id=2)),
]

# The newer families, tiny enough to commit (--write-fixtures): a few tens of KB each.
TINY = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, vocab_size=64,
            max_position_embeddings=128, rms_norm_eps=1e-5, hidden_act="silu", bos_token_id=1,
            eos_token_id=2)
LLAMA3_SCALING = dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                      original_max_position_embeddings=64)
CASES += [
    Case("qwen2_gqa", "qwen2", dict(TINY, num_attention_heads=4, num_key_value_heads=2, rope_theta=500.0,
                                    tie_word_embeddings=False, use_sliding_window=False), "fp32"),
    Case("qwen2_tied", "qwen2", dict(TINY, num_attention_heads=4, num_key_value_heads=1, rope_theta=300.0,
                                     tie_word_embeddings=True, use_sliding_window=False), "bf16"),
    Case("qwen3_gqa", "qwen3", dict(TINY, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                                    rope_theta=500.0, tie_word_embeddings=False), "fp32"),
    Case("qwen3_tied", "qwen3", dict(TINY, num_attention_heads=2, num_key_value_heads=1, head_dim=8,
                                     rope_theta=300.0, tie_word_embeddings=True), "bf16"),
    Case("llama3_gqa", "llama", dict(TINY, num_attention_heads=2, num_key_value_heads=1, head_dim=8,
                                     rope_theta=100.0, rope_scaling=LLAMA3_SCALING,
                                     tie_word_embeddings=False), "fp32"),
    Case("llama3_tied", "llama", dict(TINY, num_attention_heads=2, num_key_value_heads=1, head_dim=8,
                                      rope_theta=100.0, rope_scaling=LLAMA3_SCALING,
                                      tie_word_embeddings=True), "bf16"),
]
FIXTURE_SEQ_LEN = 16


# --- building and saving models

def build_model(case):
    cfg_cls, model_cls = {
        "llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
        "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM),
        "opt": (transformers.OPTConfig, transformers.OPTForCausalLM),
        "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM),
        "qwen3": (transformers.Qwen3Config, transformers.Qwen3ForCausalLM),
    }[case.arch]
    config = cfg_cls(**case.config)
    config._attn_implementation = "eager"
    torch.manual_seed(SEED)
    model = model_cls(config).to(torch.float32).eval()
    gen = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in model.named_parameters():  # a tied head is listed once
            if name.endswith(".bias"):
                p.copy_(torch.randn(p.shape, generator=gen) * BIAS_STD)
            elif p.ndim == 1:  # RMSNorm / LayerNorm gains
                lo, hi = NORM_GAIN_RANGE
                p.copy_(lo + (hi - lo) * torch.rand(p.shape, generator=gen))
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * MATRIX_STD)
    if case.config.get("tie_word_embeddings"):
        emb = model.get_input_embeddings().weight
        head = model.get_output_embeddings().weight
        if emb.data_ptr() != head.data_ptr():
            raise RuntimeError(f"{case.name}: tie_word_embeddings=True but the head is not tied")
    return model


def save_model(model, out_dir, dtype):
    m = copy.deepcopy(model).to(dtype)
    for attr in ("dtype", "torch_dtype"):
        try:
            setattr(m.config, attr, dtype)
        except Exception:
            pass
    try:
        m.save_pretrained(out_dir, safe_serialization=True)
    except TypeError:  # transformers versions that dropped the argument always write safetensors
        m.save_pretrained(out_dir)
    if not os.path.isfile(os.path.join(out_dir, "model.safetensors")):
        raise RuntimeError(f"save_pretrained wrote no model.safetensors in {out_dir}")


def load_model(model_dir, dtype, device):
    kwargs = dict(attn_implementation="eager")
    try:
        m = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype, **kwargs)
    except TypeError:  # transformers 4.x
        m = transformers.AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=dtype, **kwargs)
    m = m.to(device).eval()
    got = next(m.parameters()).dtype
    if got != dtype:
        raise RuntimeError(f"{model_dir}: loaded as {got}, asked for {dtype}")
    return m


@torch.no_grad()
def hf_forward(model, tokens, device):
    ids = torch.tensor([tokens], dtype=torch.long, device=device)
    out = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False)
    return out.logits[0].float().cpu().numpy().astype(np.float64)


def window_guard(model_dir, tokens, ref, device):
    """Max change of transformers' logits when the sliding window is removed: proves the
    sequence is long enough for the window to matter (else the case tests nothing)."""
    kwargs = dict(attn_implementation="eager", sliding_window=None)
    try:
        m = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, **kwargs)
    except TypeError:
        m = transformers.AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32, **kwargs)
    return float(np.abs(hf_forward(m.to(device).eval(), tokens, device) - ref).max())


# --- GGUF of the same weights, written by the gguf package as llama.cpp's converter lays it out

GGUF_ARCH = {"llama": "LLAMA", "qwen2": "QWEN2", "qwen3": "QWEN3"}


def llama_permute(w, n_head):
    """convert_hf_to_gguf's LlamaModel.permute: rotate-half rows -> interleaved, per head."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def llama3_rope_factors(cfg):
    """convert_hf_to_gguf's rope_freqs for rope_type llama3: per pair, the divisor of its frequency."""
    import math
    rs = cfg.rope_parameters if getattr(cfg, "rope_parameters", None) else cfg.rope_scaling
    base, dim = rs.get("rope_theta", getattr(cfg, "rope_theta", 10000.0)), cfg.head_dim
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old = rs["original_max_position_embeddings"]
    out = []
    for f in freqs.tolist():
        wavelen = 2 * math.pi / f
        if wavelen < old / hi:
            out.append(1.0)
        elif wavelen > old / lo:
            out.append(factor)
        else:
            smooth = (old / wavelen - lo) / (hi - lo)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def write_gguf(case, model_dir, path):
    """The checkpoint in model_dir as a GGUF: metadata keys and tensor names from the gguf package."""
    import gguf
    cfg = transformers.AutoConfig.from_pretrained(model_dir)
    arch = getattr(gguf.MODEL_ARCH, GGUF_ARCH[case.arch])
    from safetensors import safe_open
    with safe_open(os.path.join(model_dir, "model.safetensors"), framework="pt") as f:
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    w = gguf.GGUFWriter(path, gguf.MODEL_ARCH_NAMES[arch])
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    rope = getattr(cfg, "rope_parameters", None) or {}
    w.add_rope_freq_base(float(rope.get("rope_theta", getattr(cfg, "rope_theta", 10000.0))))
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    if case.arch == "llama":
        w.add_vocab_size(cfg.vocab_size)
        w.add_rope_dimension_count(head_dim)
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"t{i}" for i in range(cfg.vocab_size)])
    w.add_bos_token_id(cfg.bos_token_id)
    w.add_eos_token_id(cfg.eos_token_id)
    names = gguf.get_tensor_name_map(arch, cfg.num_hidden_layers)
    if case.arch == "llama" and (rope.get("rope_type") == "llama3"):
        w.add_tensor(gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.ROPE_FREQS] + ".weight", llama3_rope_factors(cfg))
    for name, t in tensors.items():
        gname = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if gname is None:
            raise RuntimeError(f"{case.name}: the gguf package has no name for {name}")
        if case.arch == "llama" and name.endswith(("q_proj.weight", "k_proj.weight")):
            heads = cfg.num_attention_heads if "q_proj" in name else cfg.num_key_value_heads
            t = torch.from_numpy(llama_permute(t.float().numpy(), heads)).to(t.dtype)
        if t.ndim == 1 or t.dtype == torch.float32:  # llama.cpp keeps vectors (norms, biases) in F32
            w.add_tensor(gname, t.float().numpy())
        else:  # bf16 matrices stay bf16, raw
            w.add_tensor(gname, t.view(torch.int16).numpy().view(np.uint16),
                         raw_dtype=gguf.GGMLQuantizationType.BF16)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return "gguf " + importlib.metadata.version("gguf")


def hf_gguf_logits(model_dir, gguf_name, tokens):
    """transformers' own reading of our GGUF (its gguf loader), or None where it cannot."""
    try:
        m = transformers.AutoModelForCausalLM.from_pretrained(model_dir, gguf_file=gguf_name,
                                                              dtype=torch.float32)
    except Exception as e:  # an architecture transformers' GGUF loader lacks
        return None, f"transformers cannot read it ({type(e).__name__}: {str(e)[:80]})"
    return hf_forward(m.eval(), tokens, "cpu"), ""


# --- running smezo

def run_cmd(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return r.returncode, r.stdout, r.stderr


SMEZO_DTYPE = {"fp32": "f32", "fp16": "f16", "bf16": "bf16"}


def smezo_logits(args, model_dir, tokens, out_file, dname):
    cmd = [args.smezo, "logits", "--model", model_dir, "--tokens", ",".join(map(str, tokens)),
           "--out", out_file, "--device", args.device]
    if args.device != "cpu":  # CUDA stores weights as saved (the CPU backend stores f32 only)
        cmd += ["--dtype", SMEZO_DTYPE[dname]]
    rc, out, err = run_cmd(cmd)
    if rc != 0:
        return None, f"`{' '.join(cmd)}` exited {rc}: {(err or out).strip()[-600:]}"
    logits = load_file(out_file)["logits"]
    if logits.shape != (len(tokens), len(logits[0])):
        return None, f"{out_file}: logits have shape {logits.shape}"
    return logits.astype(np.float64), None


# --- comparing

def compare(ours, ref):
    err = np.abs(ours - ref)
    max_ref = float(np.abs(ref).max())
    return dict(max_abs=float(err.max()), max_rel=float(err.max()) / max(max_ref, 1e-30),
                max_ref=max_ref)


def argmax_check(ours, ref, tol):
    """(agreeing positions, decisive disagreements) of the per-position argmax."""
    a_ours, a_ref = ours.argmax(-1), ref.argmax(-1)
    rows = np.arange(len(ref))
    gap = ref[rows, a_ref] - ref[rows, a_ours]  # how much better the reference's pick is
    return int((a_ours == a_ref).sum()), int(((a_ours != a_ref) & (gap > 2 * tol)).sum())


# --- committed fixtures of the newer families (tests/fixtures/families)

def case_tokens(case, n):
    gen = np.random.default_rng([SEED, CASES.index(case)])  # same tokens for any --cases
    return [int(t) for t in gen.integers(3, case.config["vocab_size"], size=n)]


def unscaled_logits(case, model_dir, tokens):
    """transformers' logits with llama3's scaling removed: the case must move them, and
    transformers' GGUF loader (which drops the rope_freqs tensor) gives these."""
    if "rope_scaling" not in case.config:
        return None
    plain = {k: v for k, v in case.config.items() if k != "rope_scaling"}
    m = load_model(model_dir, torch.float32, "cpu")
    cfg = type(m.config)(**plain)
    cfg._attn_implementation = "eager"
    other = type(m)(cfg).eval()
    other.load_state_dict(m.state_dict())
    return hf_forward(other, tokens, "cpu")


def write_fixture(case, out_dir):
    """DIR/<case>/: the checkpoint, its GGUF, transformers' logits and oracle.json. A result row."""
    import json
    from safetensors.numpy import save_file
    d = os.path.join(out_dir, case.name)
    os.makedirs(d, exist_ok=True)
    save_model(build_model(case), d, DTYPES[case.fixture_dtype])
    for extra in ("generation_config.json",):
        if os.path.exists(os.path.join(d, extra)):
            os.remove(os.path.join(d, extra))
    tokens = case_tokens(case, FIXTURE_SEQ_LEN)
    ref = hf_forward(load_model(d, torch.float32, "cpu"), tokens, "cpu")
    t32 = FP32_REL_TOL * (1.0 + float(np.abs(ref).max()))
    notes = []
    unscaled = unscaled_logits(case, d, tokens)
    if unscaled is not None:
        moved = compare(unscaled, ref)["max_abs"]
        notes.append(f"llama3 scaling off moves logits by {moved:.2f}")
        if moved <= 100 * t32:
            return (case.name, case.fixture_dtype, float("nan"), float("nan"), t32, "-", False,
                    "the scaling does not matter here: the case is blind")
    save_file({"logits": ref.astype(np.float32)}, os.path.join(d, "logits.safetensors"))
    gguf_by = write_gguf(case, d, os.path.join(d, "model.gguf"))
    back, why = hf_gguf_logits(d, "model.gguf", tokens)
    err = float("nan")
    if back is not None:
        err = compare(back, ref if unscaled is None else unscaled)["max_abs"]
        notes.append(f"transformers reads the GGUF back within {err:.1e}" +
                     ("" if unscaled is None else " of the unscaled logits (its loader drops rope_freqs)"))
    else:
        notes.append(why)
    meta = dict(case=case.name, family=case.arch, dtype=case.fixture_dtype, tokens=tokens,
                tolerance="max abs err <= 1e-4 * (1 + max|ref|), argmax equal where decisive",
                transformers=transformers.__version__, torch=torch.__version__, gguf_writer=gguf_by,
                notes=notes)
    with open(os.path.join(d, "oracle.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    ok = back is None or err <= t32
    return (case.name, case.fixture_dtype, err, float("nan"), t32, "-", ok, "; ".join(notes))


def check_fixture(case, fixture_dir, args):
    """Rebuilds the case and compares with the committed logits; runs smezo on the fixture's files."""
    import json
    d = os.path.join(fixture_dir, case.name)
    with open(os.path.join(d, "oracle.json")) as f:
        meta = json.load(f)
    want = load_file(os.path.join(d, "logits.safetensors"))["logits"].astype(np.float64)
    tmp = os.path.join(args.workdir, "fixture_" + case.name)
    save_model(build_model(case), tmp, DTYPES[case.fixture_dtype])
    ref = hf_forward(load_model(tmp, torch.float32, "cpu"), meta["tokens"], "cpu")
    t32 = FP32_REL_TOL * (1.0 + float(np.abs(ref).max()))
    rows = [(case.name + " (rebuilt)", case.fixture_dtype, compare(ref, want)["max_abs"], float("nan"), t32,
             "-", compare(ref, want)["max_abs"] <= t32, "transformers today vs the committed logits")]
    for target in (d, os.path.join(d, "model.gguf")):
        ours, problem = smezo_logits(args, target, meta["tokens"], os.path.join(args.workdir, case.name + ".l.safetensors"),
                                     "fp32")
        label = case.name + (" (gguf)" if target.endswith(".gguf") else " (hf)")
        if problem:
            rows.append((label, case.fixture_dtype, float("nan"), float("nan"), t32, "-", False, problem))
            continue
        c = compare(ours, want)
        agree, decisive = argmax_check(ours, want, t32)
        rows.append((label, case.fixture_dtype, c["max_abs"], c["max_rel"], t32, f"{agree}/{len(want)}",
                     c["max_abs"] <= t32 and decisive == 0, "smezo on the committed fixture"))
    return rows


# --- the golden generation check

def golden_check(args):
    golden = os.path.join(args.assets, "models", f"stories260K.greedy{GOLDEN_STEPS}.txt")
    model = os.path.join(args.assets, "models", "stories260K.bin")
    tok = os.path.join(args.assets, "tokenizers", "tinystories-512.model")
    for p in (golden, model, tok):
        if not os.path.isfile(p):
            return False, f"missing {p} (pass --assets DIR, or --no-golden)"
    cmd = [args.smezo, "generate", "--model", model, "--tokenizer", tok, "--device", args.device,
           "--temperature", "0", "--steps", str(GOLDEN_STEPS)]
    if args.device != "cpu":  # the checkpoint is fp32; the golden text is an fp32 result
        cmd += ["--dtype", "f32"]
    env = dict(os.environ, SMEZO_ASSETS=args.assets)
    rc, out, err = run_cmd(cmd, env=env)
    if rc != 0:
        return False, f"`{' '.join(cmd)}` exited {rc}: {(err or out).strip()[-600:]}"
    with open(golden, encoding="utf-8") as f:
        want = f.read()
    if out == want:
        return True, "byte-identical"
    n = next((i for i, (a, b) in enumerate(zip(out, want)) if a != b), min(len(out), len(want)))
    return False, (f"differs from {golden} at char {n}: got {out[n:n + 40]!r}, "
                   f"want {want[n:n + 40]!r}")


# --- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smezo", default="build/smezo", help="the smezo binary")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="smezo's --device")
    ap.add_argument("--torch-device", default=None,
                    help="where transformers runs (default: cuda if --device cuda and available)")
    ap.add_argument("--workdir", default="build/oracle", help="model dirs and logits files go here")
    ap.add_argument("--assets", default=os.environ.get("SMEZO_ASSETS", "../shared/assets"))
    ap.add_argument("--cases", default=",".join(c.name for c in CASES),
                    help="comma-separated subset of: " + ", ".join(c.name for c in CASES))
    ap.add_argument("--dtypes", default="fp32,fp16,bf16", help="comma-separated subset of fp32,fp16,bf16")
    ap.add_argument("--low-precision", default="auto", choices=["auto", "upcast", "native"],
                    help="fp16/bf16 tolerance rule (see the docstring); auto: upcast on cpu")
    ap.add_argument("--no-golden", action="store_true", help="skip the stories260K golden text")
    ap.add_argument("--write-fixtures", metavar="DIR", help="write the new families' fixtures into DIR")
    ap.add_argument("--check-fixtures", metavar="DIR", help="rebuild and compare the fixtures in DIR")
    args = ap.parse_args()

    if args.torch_device is None:
        args.torch_device = "cuda" if args.device == "cuda" and torch.cuda.is_available() else "cpu"
    lp_mode = args.low_precision
    if lp_mode == "auto":
        lp_mode = "upcast" if args.device == "cpu" else "native"
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    torch.backends.cuda.matmul.allow_tf32 = False  # the fp32 reference must be real fp32
    torch.backends.cudnn.allow_tf32 = False
    if not args.write_fixtures and not os.access(args.smezo, os.X_OK):
        print(f"error: {args.smezo} is not an executable; build it first (make -j)", file=sys.stderr)
        return 2
    by_name = {c.name: c for c in CASES}
    try:
        cases = [by_name[n] for n in args.cases.split(",") if n]
        dtypes = [d for d in args.dtypes.split(",") if d]
        for d in dtypes:
            DTYPES[d]
    except KeyError as e:
        print(f"error: unknown case or dtype {e}", file=sys.stderr)
        return 2
    os.makedirs(args.workdir, exist_ok=True)
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, "
          f"smezo --device {args.device}, transformers on {args.torch_device}, "
          f"fp16/bf16 rule: {lp_mode}")

    rows = []  # (case, dtype, max_abs, max_rel, tol, argmax, ok, note)
    if args.write_fixtures or args.check_fixtures:
        for case in (c for c in cases if c.fixture_dtype):
            if args.write_fixtures:
                rows.append(write_fixture(case, args.write_fixtures))
            else:
                rows += check_fixture(case, args.check_fixtures, args)
        cases, args.no_golden = [], True
    for case in cases:
        vocab = case.config["vocab_size"]
        tok_gen = np.random.default_rng([SEED, CASES.index(case)])  # same tokens for any --cases
        tokens = [int(t) for t in tok_gen.integers(3, vocab, size=SEQ_LEN)]
        model = build_model(case)
        for dname in dtypes:
            dtype = DTYPES[dname]
            model_dir = os.path.join(args.workdir, f"{case.name}_{dname}")
            save_model(model, model_dir, dtype)
            ref_model = load_model(model_dir, torch.float32, args.torch_device)
            ref = hf_forward(ref_model, tokens, args.torch_device)
            t32 = FP32_REL_TOL * (1.0 + float(np.abs(ref).max()))
            note = ""
            tol = t32
            guard_ok = True
            if case.config.get("sliding_window") and dtype == torch.float32:
                if case.config["sliding_window"] >= len(tokens):
                    raise RuntimeError(f"{case.name}: the window must be shorter than the sequence")
                moved = window_guard(model_dir, tokens, ref, args.torch_device)
                guard_ok = moved > 100 * t32
                note = f"window off moves logits by {moved:.2f}" + ("" if guard_ok else " (too little: case is blind)")
            if dtype != torch.float32:
                native = hf_forward(load_model(model_dir, dtype, args.torch_device), tokens,
                                       args.torch_device)
                hf_err = compare(native, ref)["max_abs"]
                native_tol = 2.0 * hf_err + t32
                note = f"hf {dname} err {hf_err:.2e}, native bound {native_tol:.2e}"
                if lp_mode == "native":
                    tol = native_tol
            ours, problem = smezo_logits(args, model_dir, tokens,
                                         os.path.join(args.workdir, f"{case.name}_{dname}.logits.safetensors"),
                                         dname)
            if problem:
                rows.append((case.name, dname, float("nan"), float("nan"), tol, "-", False, problem))
                continue
            c = compare(ours, ref)
            agree, decisive = argmax_check(ours, ref, tol)
            ok = guard_ok and c["max_abs"] <= tol and decisive == 0 and np.isfinite(ours).all()
            rows.append((case.name, dname, c["max_abs"], c["max_rel"], tol,
                         f"{agree}/{len(tokens)}", ok,
                         f"max|ref| {c['max_ref']:.2f}" + (f"; {note}" if note else "")))

    if not args.no_golden:
        ok, note = golden_check(args)
        rows.append(("stories260K_greedy", "fp32", float("nan"), float("nan"), float("nan"),
                     "-", ok, note))

    print()
    hdr = f"{'case':<20} {'dtype':<5} {'max abs err':>11} {'rel err':>9} {'tolerance':>9} " \
          f"{'argmax':>6}  result  notes"
    print(hdr)
    print("-" * len(hdr))
    fmt = lambda x: "-" if x != x else f"{x:.2e}"
    for name, dname, err, rel, tol, am, ok, note in rows:
        print(f"{name:<20} {dname:<5} {fmt(err):>11} {fmt(rel):>9} {fmt(tol):>9} {am:>6}  "
              f"{'PASS' if ok else 'FAIL':<6}  {note}")
    failed = sum(1 for r in rows if not r[6])
    print(f"\n{len(rows) - failed}/{len(rows)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

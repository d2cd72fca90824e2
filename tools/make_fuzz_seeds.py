#!/usr/bin/env python3
"""Writes the fuzz seed corpora in tests/fuzz/corpus/<target>/ from the real assets, shrunk.

Run from the repository root with the oracle venv (numpy, safetensors, transformers,
sentencepiece):  /tmp/oracle-venv/bin/python tools/make_fuzz_seeds.py [ASSETS_DIR]
or, for the task_files or adapter_folder corpus alone, any python3:
python3 tools/make_fuzz_seeds.py --only task_files (or --only adapter_folder)
Deterministic: the same assets give the same bytes. Every seed is a valid input (the
fuzzers mutate from there), but for the task_files seeds of data that must be refused;
each corpus stays a few KB.

  llama2c      stories260K.bin cut down to dim 8, hidden 12, 1 layer, 2 heads / 1 kv head,
               vocab 16, seq_len 4 (slices of the real arrays), tied and untied
  hf_dir       the same model as a Hugging Face directory: config.json + model.safetensors
               (F32, BF16), and sharded (index + 2 shards); parts joined by "\\n--8<--\\n"
  safetensors  the model.safetensors files above, and one with F16 + __metadata__
  config       config.json of llama / mistral / opt / transformers-5 rope_parameters, written
               by transformers itself
  task_data    first byte = task index (task_data.cpp's order), then the first rows of the
               real data file
  task_files   a task spec and a data file joined by "\\n--8<--\\n", the file's first byte its
               format (0 JSON Lines, 1 CSV, 2 TSV): the shipped SST-2 spec over CSV and TSV rows,
               a hand-written generation spec, the BoolQ generation spec of tools/make_demo_data.py
               over two of its rows (passages cut); and data that must be refused or warned
               about: candidates that cannot be told apart (the same verbalizer, equal label
               values, one per-record option, a repeated option), a NUL byte after a record,
               an index label written "0" (JSON Lines and CSV), a verbalizer far longer than
               --max-len, a 100-label spec and a long record; needs no package beyond Python's
               own (--only task_files writes just these)
  adapter_folder  PEFT adapter folders as smezo writes them, parts joined by "\\n--8<--\\n":
               adapter_config.json, adapter_model.safetensors (fp32, written here by hand) and
               smezo_run.json: a LoRA (r 1 on q_proj and down_proj of one layer) and a prefix
               (2 virtual tokens, 1 layer, 2 key/value heads of 4); Python alone
               (--only adapter_folder)
  tokenizer    the TinyStories sentencepiece model with only the pieces it needs for a
               short text kept (a shrunk real model)
  gguf         the same shrunk stories260K as LLaMA GGUF files written by gguf-py's GGUFWriter
               with a 16-token byte-level BPE vocabulary in the metadata: F32, and a width-32
               cut with Q4_1 / Q8_0 / F16 tensors and a separate output.weight
"""
import json
import os
import struct
import sys

ONLY = sys.argv[2] if len(sys.argv) > 2 and sys.argv[1] == "--only" else None
if ONLY is None:  # the oracle venv's packages; --only task_files/adapter_folder need none
    import numpy as np
    from safetensors.numpy import save as st_save

ASSETS = sys.argv[1] if len(sys.argv) > 1 and ONLY is None else "../shared/assets"
OUT = "tests/fuzz/corpus"
SEP = b"\n--8<--\n"


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# --- stories260K, shrunk
def stories_arrays():
    raw = open(os.path.join(ASSETS, "models/stories260K.bin"), "rb").read()
    dim, hidden, layers, heads, kv, vocab, seq = struct.unpack("<7i", raw[:28])
    f = np.frombuffer(raw[28:], dtype="<f4")
    hd = dim // heads
    shapes = [("tok", (vocab, dim)), ("rms_att", (layers, dim)), ("wq", (layers, heads * hd, dim)),
              ("wk", (layers, kv * hd, dim)), ("wv", (layers, kv * hd, dim)),
              ("wo", (layers, dim, heads * hd)), ("rms_ffn", (layers, dim)),
              ("w1", (layers, hidden, dim)), ("w2", (layers, dim, hidden)),
              ("w3", (layers, hidden, dim)), ("rms_final", (dim,)), ("freq", (2, seq, hd // 2))]
    out, at = {}, 0
    for name, shape in shapes:
        n = int(np.prod(shape))
        out[name] = f[at:at + n].reshape(shape)
        at += n
    return out


D, H, L, NH, NKV, V, S = 8, 12, 1, 2, 1, 16, 4
HD = D // NH


def small(a):
    """The real arrays cut to the small sizes (layer 0 only)."""
    return {
        "tok": a["tok"][:V, :D], "rms_att": a["rms_att"][:L, :D], "wq": a["wq"][:L, :NH * HD, :D],
        "wk": a["wk"][:L, :NKV * HD, :D], "wv": a["wv"][:L, :NKV * HD, :D],
        "wo": a["wo"][:L, :D, :NH * HD], "rms_ffn": a["rms_ffn"][:L, :D],
        "w1": a["w1"][:L, :H, :D], "w2": a["w2"][:L, :D, :H], "w3": a["w3"][:L, :H, :D],
        "rms_final": a["rms_final"][:D], "freq": a["freq"][:, :S, :HD // 2],
    }


def llama2c_bytes(s, tied):
    head = struct.pack("<7i", D, H, L, NH, NKV, V if tied else -V, S)
    order = ["tok", "rms_att", "wq", "wk", "wv", "wo", "rms_ffn", "w1", "w2", "w3", "rms_final", "freq"]
    body = b"".join(np.ascontiguousarray(s[k], dtype="<f4").tobytes() for k in order)
    if not tied:
        body += np.ascontiguousarray(s["tok"][::-1], dtype="<f4").tobytes()  # a distinct head
    return head + body


def hf_tensors(s):
    t = {"model.embed_tokens.weight": s["tok"], "model.norm.weight": s["rms_final"],
         "lm_head.weight": s["tok"][::-1]}
    p = "model.layers.0."
    t.update({p + "input_layernorm.weight": s["rms_att"][0], p + "self_attn.q_proj.weight": s["wq"][0],
              p + "self_attn.k_proj.weight": s["wk"][0], p + "self_attn.v_proj.weight": s["wv"][0],
              p + "self_attn.o_proj.weight": s["wo"][0], p + "post_attention_layernorm.weight": s["rms_ffn"][0],
              p + "mlp.gate_proj.weight": s["w1"][0], p + "mlp.down_proj.weight": s["w2"][0],
              p + "mlp.up_proj.weight": s["w3"][0]})
    return {k: np.ascontiguousarray(v, dtype="<f4") for k, v in t.items()}


def st_bytes(tensors, bf16=False, metadata=None):
    if not bf16:
        return st_save(tensors, metadata=metadata)
    import torch  # numpy has no bfloat16
    from safetensors.torch import save as st_save_torch
    return st_save_torch({k: torch.from_numpy(v.copy()).to(torch.bfloat16) for k, v in tensors.items()},
                         metadata=metadata)


def llama_config_json(**extra):
    from transformers import LlamaConfig
    cfg = LlamaConfig(hidden_size=D, intermediate_size=H, num_hidden_layers=L, num_attention_heads=NH,
                      num_key_value_heads=NKV, vocab_size=V, max_position_embeddings=S,
                      rms_norm_eps=1e-5, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, **extra)
    return cfg.to_json_string(use_diff=False).encode()


def main():
    s = small(stories_arrays())
    put("llama2c", "stories_tied.bin", llama2c_bytes(s, True))
    put("llama2c", "stories_untied.bin", llama2c_bytes(s, False))

    config = llama_config_json()
    f32 = st_bytes(hf_tensors(s), metadata={"format": "pt"})
    bf16 = st_bytes(hf_tensors(s), bf16=True)
    put("hf_dir", "llama_f32", config + SEP + f32)
    put("hf_dir", "llama_bf16", config + SEP + bf16)
    t = hf_tensors(s)
    names = sorted(t)
    half = len(names) // 2
    shard1 = st_bytes({k: t[k] for k in names[:half]})
    shard2 = st_bytes({k: t[k] for k in names[half:]})
    index = json.dumps({"metadata": {"total_size": sum(v.nbytes for v in t.values())},
                        "weight_map": {k: ("shard1.safetensors" if i < half else "shard2.safetensors")
                                       for i, k in enumerate(names)}}, indent=2).encode()
    put("hf_dir", "llama_sharded", config + SEP + index + SEP + shard1 + SEP + shard2)

    put("safetensors", "llama_f32.safetensors", f32)
    put("safetensors", "llama_bf16.safetensors", bf16)
    mixed = {"a.f16": s["w1"][0].astype("<f2"), "b.f32": s["rms_final"].astype("<f4"),
             "c.scalar": np.array(3.25, dtype="<f4"), "d.empty": np.zeros((0, 3), dtype="<f2")}
    # one metadata key: the Rust writer orders several at random
    put("safetensors", "mixed_meta.safetensors", st_save(mixed, metadata={"step": "12"}))

    from transformers import MistralConfig, OPTConfig
    put("config", "llama.json", config)
    put("config", "llama_gqa_headdim.json", llama_config_json(head_dim=8, attention_bias=True, mlp_bias=True))
    put("config", "mistral.json", MistralConfig(hidden_size=D, intermediate_size=H, num_hidden_layers=L,
                                                num_attention_heads=NH, num_key_value_heads=NKV, vocab_size=V,
                                                max_position_embeddings=S, sliding_window=4
                                                ).to_json_string(use_diff=False).encode())
    put("config", "opt.json", OPTConfig(hidden_size=D, ffn_dim=H, num_hidden_layers=L, num_attention_heads=NH,
                                        vocab_size=V, max_position_embeddings=S, word_embed_proj_dim=D
                                        ).to_json_string(use_diff=False).encode())
    c = json.loads(config)
    c.pop("rope_theta", None)
    c["rope_parameters"] = {"rope_type": "default", "rope_theta": 500000.0}
    c["eos_token_id"] = [2, 3]
    put("config", "llama_rope_parameters.json", json.dumps(c).encode())

    tasks = [("sst2", "glue/SST-2/dev.tsv"), ("rte", "superglue/RTE/val.jsonl"),
             ("boolq", "superglue/BoolQ/val.jsonl"), ("wic", "superglue/WiC/val.jsonl"),
             ("multirc", "superglue/MultiRC/val.jsonl"), ("copa", "superglue/COPA/val.jsonl"),
             ("cb", "superglue/CB/val.jsonl")]
    for i, (name, rel) in enumerate(tasks):
        lines = open(os.path.join(ASSETS, "data", rel), "rb").read().split(b"\n")
        keep = lines[:3]
        if name == "multirc":  # one passage, its first question with two answers
            row = json.loads(lines[0])
            q = row["passage"]["questions"][0]
            q["answers"] = q["answers"][:2]
            row["passage"]["questions"] = [q]
            row["passage"]["text"] = row["passage"]["text"][:300]
            keep = [json.dumps(row).encode()]
        elif name in ("boolq",):
            keep = []
            for ln in lines[:2]:
                r = json.loads(ln)
                r["passage"] = r["passage"][:200]
                keep.append(json.dumps(r).encode())
        put("task_data", name, bytes([i]) + b"\n".join(keep) + b"\n")

    from sentencepiece import sentencepiece_model_pb2 as spm
    m = spm.ModelProto()
    m.ParseFromString(open(os.path.join(ASSETS, "tokenizers/tinystories-512.model"), "rb").read())
    # keep the special pieces, every byte piece, and the first normal pieces
    keep = [p for i, p in enumerate(m.pieces) if p.type != 1 or i < 300]
    del m.pieces[:]
    m.pieces.extend(keep)
    m.trainer_spec.vocab_size = len(keep)
    put("tokenizer", "tinystories_shrunk.model", m.SerializeToString())
    gguf_seeds()


# 16 byte-level BPE tokens (GPT-2's "\u0120" is the space) and the merges that build them
GGUF_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "\u0120", "a", "e", "h", "t", ",",
               "4", "2", "\u0120t", "he", "\u0120the", "ea", "\u0120tea"]
GGUF_MERGES = ["\u0120 t", "h e", "\u0120t he", "e a", "\u0120t ea"]


def gguf_bytes(arrays, dim, hidden, heads, kv, quant):
    import tempfile
    import gguf
    from gguf import GGMLQuantizationType as T
    from gguf.quants import quantize
    hd = dim // heads
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.gguf")
        w = gguf.GGUFWriter(path, arch="llama")
        w.add_uint32("llama.embedding_length", dim)
        w.add_uint32("llama.feed_forward_length", hidden)
        w.add_uint32("llama.block_count", 1)
        w.add_uint32("llama.attention.head_count", heads)
        w.add_uint32("llama.attention.head_count_kv", kv)
        w.add_uint32("llama.context_length", S)
        w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5)
        w.add_float32("llama.rope.freq_base", 10000.0)
        w.add_uint32("llama.rope.dimension_count", hd)
        w.add_string("tokenizer.ggml.model", "gpt2")
        w.add_string("tokenizer.ggml.pre", "smollm")
        w.add_array("tokenizer.ggml.tokens", GGUF_TOKENS)
        w.add_array("tokenizer.ggml.token_type", [3, 3, 3] + [1] * (len(GGUF_TOKENS) - 3))
        w.add_array("tokenizer.ggml.merges", GGUF_MERGES)
        w.add_uint32("tokenizer.ggml.bos_token_id", 1)
        w.add_uint32("tokenizer.ggml.eos_token_id", 2)

        def add(name, a, qtype=None):
            a = np.ascontiguousarray(a, dtype=np.float32)
            if qtype is None:
                w.add_tensor(name, a)
            elif qtype == T.F16:
                w.add_tensor(name, a.astype(np.float16))
            else:
                w.add_tensor(name, quantize(a, qtype), raw_dtype=qtype)

        q = T.Q4_1 if quant else None
        add("token_embd.weight", arrays["tok"][:V, :dim], T.F16 if quant else None)
        add("blk.0.attn_norm.weight", arrays["rms_att"][0, :dim])
        add("blk.0.attn_q.weight", arrays["wq"][0, :heads * hd, :dim], q)
        add("blk.0.attn_k.weight", arrays["wk"][0, :kv * hd, :dim], q)
        add("blk.0.attn_v.weight", arrays["wv"][0, :kv * hd, :dim], T.Q8_0 if quant else None)
        add("blk.0.attn_output.weight", arrays["wo"][0, :dim, :heads * hd], q)
        add("blk.0.ffn_norm.weight", arrays["rms_ffn"][0, :dim])
        add("blk.0.ffn_gate.weight", arrays["w1"][0, :hidden, :dim], q)
        add("blk.0.ffn_down.weight", arrays["w2"][0, :dim, :hidden], q)
        add("blk.0.ffn_up.weight", arrays["w3"][0, :hidden, :dim], q)
        add("output_norm.weight", arrays["rms_final"][:dim])
        if quant:
            add("output.weight", arrays["tok"][V:2 * V, :dim], T.Q8_0)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        return open(path, "rb").read()


def gguf_seeds():
    a = stories_arrays()
    put("gguf", "stories_f32.gguf", gguf_bytes(a, D, H, NH, NKV, False))
    put("gguf", "stories_q4_1_q8_0.gguf", gguf_bytes(a, 32, 32, 4, 2, True))


def task_files_seeds():
    sst2 = open("src/tasks/specs/sst2.json", "rb").read().rstrip(b"\n")
    put("task_files", "sst2_csv", sst2 + SEP + b"\x01sentence,label\n\"a fine, funny film\",1\nnot good,0\n")
    put("task_files", "sst2_tsv", sst2 + SEP + b"\x02sentence\tlabel\nhello there\t1\n")
    qa = {"name": "qa", "kind": "generation", "prompt": "Q: {question}\nA:", "completion_field": "answers",
          "completion_prefix": " ", "max_new_tokens": 8, "stop": ["\n"]}
    row = {"question": "What color is the sky?", "answers": ["blue", "Blue."]}
    put("task_files", "qa_jsonl", json.dumps(qa).encode() + SEP + b"\x00" + json.dumps(row).encode() + b"\n")
    # the demo's BoolQ generation spec (tools/make_demo_data.py) over two BoolQ rows, passages cut
    sys.path.insert(0, "tools")
    import make_demo_data
    spec = json.dumps(make_demo_data.SPEC).encode()
    rows = []
    for line in open(os.path.join(ASSETS, "data/superglue/BoolQ/val.jsonl"), "rb").read().splitlines()[:2]:
        r = json.loads(line)
        rows.append(json.dumps({"passage": r["passage"][:120], "question": r["question"],
                                "answer": "yes" if r["label"] else "no"}).encode())
    put("task_files", "boolq_generation_jsonl", spec + SEP + b"\x00" + b"\n".join(rows) + b"\n")
    refused_task_files_seeds()


def refused_task_files_seeds():
    """Data a user's files may hold that --check-data and training must refuse or warn about."""
    def spec(candidates, label=None, **extra):
        s = {"name": "s", "prompt": "{t}", "candidates": candidates, "label": label or {"field": "l"}}
        s.update(extra)
        return json.dumps(s).encode()

    def jsonl(*rows):
        return b"\x00" + b"".join(json.dumps(r).encode() + b"\n" for r in rows)
    mc = spec({"field": "o", "prefix": " "})
    put("task_files", "same_verbalizer_jsonl", spec([" great", " great"]) + SEP + jsonl({"t": "x", "l": 0}))
    put("task_files", "equal_label_values_jsonl",
        spec([" a", " b"], {"field": "l", "values": [1, "1"]}) + SEP + jsonl({"t": "x", "l": 1}))
    put("task_files", "one_option_jsonl", mc + SEP + jsonl({"t": "x", "o": ["only"], "l": 0}))
    put("task_files", "repeated_option_jsonl", mc + SEP + jsonl({"t": "x", "o": ["a", "b", "a "], "l": "b"}))
    put("task_files", "nul_after_record_jsonl",
        spec([" a", " b"]) + SEP + b"\x00" + b'{"t": "x", "l": 0}\x00{"t": "y", "l": 7}\n')
    put("task_files", "index_label_string_jsonl", spec([" a", " b"]) + SEP + jsonl({"t": "x", "l": "0"}, {"t": "y", "l": 1}))
    put("task_files", "index_label_csv", spec([" a", " b"]) + SEP + b"\x01t,l\nx,0\ny,\"1\"\nz,01\n")
    put("task_files", "long_verbalizer_jsonl", spec([" no", " " + "very long answer " * 30]) + SEP +
        jsonl({"t": "x", "l": 1}))
    put("task_files", "many_labels_jsonl",
        mc + SEP + jsonl({"t": "x", "o": ["label %d" % i for i in range(100)], "l": 42}))
    put("task_files", "long_record_jsonl", spec([" a", " b"]) + SEP + jsonl({"t": "word " * 400, "l": 1}))


def f32_safetensors(tensors):
    """safetensors bytes of fp32 tensors [(name, shape, values)], without numpy."""
    header, body = {}, b""
    for name, shape, values in tensors:
        data = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(body), len(body) + len(data)]}
        body += data
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + body


def adapter_folder_seeds():
    run = json.dumps({"written_by": "smezo train", "task": "sst2", "max_len": 40}).encode()
    lora = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "base_model_name_or_path": "base", "r": 1,
            "lora_alpha": 2, "target_modules": ["q_proj", "down_proj"], "bias": "none", "fan_in_fan_out": False}
    head = "base_model.model.model.layers.0."
    tensors = [(head + "mlp.down_proj.lora_A.weight", [1, 6], [i / 8 for i in range(6)]),
               (head + "mlp.down_proj.lora_B.weight", [4, 1], [-i / 8 for i in range(4)]),
               (head + "self_attn.q_proj.lora_A.weight", [1, 4], [i / 16 for i in range(4)]),
               (head + "self_attn.q_proj.lora_B.weight", [4, 1], [1 - i / 16 for i in range(4)])]
    put("adapter_folder", "lora", json.dumps(lora).encode() + SEP + f32_safetensors(tensors) + SEP + run)
    prefix = {"peft_type": "PREFIX_TUNING", "task_type": "CAUSAL_LM", "base_model_name_or_path": "base",
              "num_virtual_tokens": 2, "num_layers": 1, "token_dim": 8, "num_attention_heads": 2,
              "num_transformer_submodules": 1, "prefix_projection": False}
    table = [("prompt_embeddings", [2, 16], [(i % 7) / 4 - 0.5 for i in range(32)])]
    put("adapter_folder", "prefix", json.dumps(prefix).encode() + SEP + f32_safetensors(table))


if __name__ == "__main__":
    if ONLY == "task_files":
        task_files_seeds()
    elif ONLY == "adapter_folder":
        adapter_folder_seeds()
    elif ONLY is not None:
        raise SystemExit("make_fuzz_seeds: --only takes task_files or adapter_folder (the other corpora need the "
                         "oracle venv)")
    else:
        main()
        task_files_seeds()
        adapter_folder_seeds()

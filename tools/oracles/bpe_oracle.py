#!/usr/bin/env python3
"""bpe_oracle.py: expected token ids for smezo's byte-level BPE tokenizer, from Hugging Face.

Run with the oracle venv (tokenizers, transformers, gguf): /tmp/oracle-venv/bin/python.
The C++ tests (tests/test_bpe_tokenizer.cpp) compare smezo against the fixtures written here
and never need Python.

  tiny      Trains a small byte-level BPE (HF tokenizers' BpeTrainer, 700 tokens) on task
            text and writes two test vocabularies under tests/fixtures/bpe/:
              tiny_gpt2/tokenizer.json    GPT-2 scheme: ByteLevel(use_regex) only; merges as
                                          "a b" strings; post_processor [BOS, $A]
              tiny_smollm/tokenizer.json  SmolLM2 scheme: Digits(individual) + ByteLevel;
                                          merges as [a, b] pairs; no BOS; tokenizer_config.json
                                          names BOS/EOS
              tiny_gpt2_files/            tiny_gpt2 as GPT-2's vocab.json + merges.txt +
                                          tokenizer_config.json (OPT's form; add_bos_token)
            and tests/fixtures/bpe/tiny_ids.jsonl: the ids HF gives for the edge cases below
            (for tiny_gpt2_files: transformers' AutoTokenizer on that folder).
  families  Two more vocabularies in the newer families' tokenizer.json form, trained the same way
            on the edge cases alone (no build needed): tiny_llama3 (Llama 3.x: Split(its regex,
            Isolated) + ByteLevel(use_regex false), post_processor Sequence[ByteLevel,
            TemplateProcessing <|begin_of_text|> $A], ignore_merges) and tiny_qwen2 (Qwen2/2.5/3:
            normalizer NFC, Split(Qwen's regex) + ByteLevel(use_regex false), no BOS), and
            tests/fixtures/bpe/families_ids.jsonl: HF's ids of the edge cases, and 300 random
            texts of combining marks, Hangul and composition exceptions with Python's NFC of each
            and tiny_qwen2's ids (vocab "nfc": smezo's NFC, tokenizer/bpe_nfc.h).
  smollm2   Builds HF's tokenizer from the SmolLM2 GGUF (AutoTokenizer gguf_file=) and writes
            tests/fixtures/bpe/smollm2_ids.jsonl: ids of the edge cases and of task prompts
            rendered by smezo's own templates (build/render_prompts).

The SmolLM2 reference. transformers builds the tokenizer of a GGUF from its metadata, but it
does not know tokenizer.ggml.pre = "smollm" and falls back to plain GPT-2 ByteLevel
pre-tokenisation, without SmolLM2's digit splitting. SmolLM2's own tokenizer.json (and
llama.cpp's "smollm" pre-type) splits every digit first: pre_tokenizer =
Sequence[Digits(individual_digits=true), ByteLevel(add_prefix_space=false, use_regex=true)].
The two differ on whitespace before a digit ("a  1": [a, ĠĠ, 1] vs [a, Ġ, Ġ1]... ). So the
oracle installs SmolLM2's real pre_tokenizer on the GGUF-built tokenizer and reports how
many texts the unpatched one would tokenise differently.

Invalid UTF-8: a test text given as "hex" is raw bytes; HF only takes str, so its reference
is HF(bytes.decode("utf-8", "replace")), which is what smezo documents (bpe_bytes.h).

Fixture lines: {"vocab"?, "text" | "hex", "ids", "decoded"?} where decoded (HF's
decode(ids, skip_special_tokens=True)) is present only when it differs from the text.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "bpe")


def edge_cases():
    """(text or None, hex or None) pairs: the cases every vocabulary is checked on."""
    texts = [
        "", " ", "  ", "\t", "\n", "\n\n\n", "\r\n", "a  b", "a   b  ", "trailing   ", "   leading",
        "tabs\t\tand\t spaces", "mixed \t\n \r\n lines\n", "x \n\n y", "end with newline\n", " \n \n",
        "123", "3.14159", "1,000,000", "a1b2c3", "x 42", "x  42", "x\n\n42", "  7  ", "2024-11-23",
        "99999999999999999999999", "\u0663\u0664\u0665 arabic-indic", "roman \u216b", "\u00bd \u00be",
        "x\u00b2+y\u00b3",
        "\U0001F600", "\U0001F44D\U0001F3FD", "\U0001F1FA\U0001F1F8", "\u2764\ufe0f",
        "\U0001F468\u200d\U0001F469\u200d\U0001F467", "a\U0001F600b", " \U0001F600 \U0001F600", "\U00010348 gothic",
        "\u4f60\u597d\uff0c\u4e16\u754c\uff01", "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8",
        "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8",
        "caf\u00e9", "cafe\u0301", "na\u00efve r\u00e9sum\u00e9", "\u00c5ngstr\u00f6m", "e\u0301\u0301\u0301",
        "\u0420\u043e\u0441\u0441\u0438\u044f", "\u0645\u0631\u062d\u0628\u0627", "\u0939\u093f\u0928\u094d\u0926\u0940",
        "I'm", "don't", "they'll", "IT'S", "we've'd", "'s", " 's", "o'clock", "rock 'n' roll",
        "Hello, World!", "(parens) [brackets] {braces}", "a--b...c!!!", "email@example.com",
        "https://example.com/path?q=1&r=2", "def f(x):\n    return x ** 2\n",
        "a\u00a0b", "a \u00a0 b", "a\u3000 b", "a \u2028b", "x \u180ey", "a \x85b", "a\x0b\x0c b", "a\u200bb",
        "\ufeffbom", "a\x1c\x1d b", "nul\x00byte", "a\x04b", "x \x06\x13 y", "\x1d", "\x7f\x01",
        "<|im_start|>user\nHi there<|im_end|>\n", "a<|endoftext|>b", "<|im_start|><|im_end|>",
        "<|im_start", "<<|im_start|>>", "text <|endoftext|> more", " <|im_end|> ",
        "a" * 3000, "ab" * 1500, "supercalifragilistic" * 100, ("word " * 400).strip(),
        "x" * 5000 + " y", "9" * 500,
    ]
    hexes = [
        "ff", "61ff62", "c3", "e282", "e28241", "eda080", "c0af", "f4908080", "80", "f09f98",
        "48656c6c6fff20776f726c64", "20ff20ff", "e4bda0e5a5bd80",
    ]
    return [(t, None) for t in texts] + [(None, h) for h in hexes]


def text_of(case):
    text, hexed = case
    return text if text is not None else bytes.fromhex(hexed).decode("utf-8", "replace")


def fixture_line(case, ids, decoded, extra=None):
    text, hexed = case
    line = dict(extra or {})
    if text is not None:
        line["text"] = text
    else:
        line["hex"] = hexed
    line["ids"] = ids
    if decoded != text_of(case) or hexed is not None:
        line["decoded"] = decoded
    return line


def write_jsonl(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"wrote {path}: {len(lines)} lines, {os.path.getsize(path)} bytes")


def render_prompts(binary, rows):
    out = subprocess.run([binary, "--rows", str(rows)], check=True, capture_output=True, cwd=ROOT).stdout
    return [json.loads(line) for line in out.decode("utf-8").splitlines()]


# --- tiny vocabularies

def cmd_tiny(args):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    prompts = render_prompts(args.render_prompts, 12)
    corpus = [p["text"] for p in prompts] + [t for t, _ in edge_cases() if t]
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

    def train(pre):
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=specials, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train_from_iterator(corpus, trainer)
        return tok

    bytelevel = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    gpt2 = train(bytelevel)
    gpt2.post_processor = processors.TemplateProcessing(
        single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", gpt2.token_to_id("<|endoftext|>"))])
    smollm = train(pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), bytelevel]))

    lines = []
    for name, tok, merges_as_strings in (("tiny_gpt2", gpt2, True), ("tiny_smollm", smollm, False)):
        folder = os.path.join(FIXTURES, name)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "tokenizer.json")
        spec = json.loads(tok.to_str())
        merges = spec["model"]["merges"]
        if merges_as_strings:  # the older "a b" form; the newer [a, b] form is the other file's
            spec["model"]["merges"] = [m if isinstance(m, str) else " ".join(m) for m in merges]
        else:
            spec["model"]["merges"] = [m.split(" ") if isinstance(m, str) else m for m in merges]
        with open(path, "w", encoding="utf-8") as f:
            json.dump(spec, f, ensure_ascii=False, separators=(",", ":"))
        print(f"wrote {path}: {len(spec['model']['vocab'])} tokens, {len(merges)} merges")
        if name == "tiny_smollm":
            with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
                json.dump({"bos_token": "<|im_start|>", "eos_token": "<|im_end|>",
                           "unk_token": "<|endoftext|>", "pad_token": "<|im_end|>"}, f, indent=1)
        ref = Tokenizer.from_file(path)
        for case in edge_cases():
            enc = ref.encode(text_of(case), add_special_tokens=False)
            lines.append(fixture_line(case, enc.ids, ref.decode(enc.ids, skip_special_tokens=True), {"vocab": name}))
        bos = ref.encode("Hi", add_special_tokens=True).ids
        print(f"{name}: encode('Hi') with special tokens = {bos}")
    lines += tiny_gpt2_files(json.loads(gpt2.to_str()))
    write_jsonl(os.path.join(FIXTURES, "tiny_ids.jsonl"), lines)


def tiny_gpt2_files(spec):
    """tiny_gpt2's vocabulary as GPT-2's own files (vocab.json, merges.txt, tokenizer_config.json,
    the form OPT's repositories ship), with the ids transformers' AutoTokenizer gives for them."""
    from transformers import AutoTokenizer

    folder = os.path.join(FIXTURES, "tiny_gpt2_files")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(spec["model"]["vocab"], f, ensure_ascii=False, separators=(",", ":"))
    with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for m in spec["model"]["merges"]:
            f.write((m if isinstance(m, str) else " ".join(m)) + "\n")
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "GPT2Tokenizer", "add_bos_token": True, "add_prefix_space": False,
                   "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>",
                   "additional_special_tokens": ["<|im_start|>", "<|im_end|>"]}, f, indent=1)
    ref = AutoTokenizer.from_pretrained(folder)
    print(f"tiny_gpt2_files: {type(ref).__name__}, encode('Hi') = {ref.encode('Hi')}")
    lines = []
    for case in edge_cases():
        ids = ref.encode(text_of(case), add_special_tokens=False)
        lines.append(fixture_line(case, ids, ref.decode(ids, skip_special_tokens=True), {"vocab": "tiny_gpt2_files"}))
    return lines


# --- the newer families' tokenizer.json forms

LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = LLAMA3_REGEX.replace(r"\p{N}{1,3}", r"\p{N}")


def nfc_cases():
    """Texts whose NFC is not themselves, mostly: random mixes of letters, combining marks (in and out
    of canonical order), Hangul jamo and syllables, singletons and composition exclusions."""
    import random
    rng = random.Random(7)
    pool = [chr(c) for c in list(range(0x41, 0x5b)) + list(range(0xc0, 0x100)) + list(range(0x300, 0x370)) +
            [0x1100, 0x1101, 0x1161, 0x1162, 0x11a8, 0x11a9, 0xac00, 0xac01, 0x212b, 0x2126, 0x0b47, 0x0b3e,
             0x0b57, 0x0f73, 0x0f71, 0x0f72, 0x1e0a, 0x0323, 0x0307, 0x05b4, 0x05bc, 0x0958, 0x093c, 0x0915,
             0x3099, 0x304b, 0x309a, 0xfb2c, 0x1d15e, 0x1d165, 0x0344, 0x0340, 0x2adc, 0xf900, 0x2f800, 0x20]]
    return ["".join(rng.choice(pool) for _ in range(rng.randint(1, 10))) for _ in range(300)]


def cmd_families(args):
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    corpus = [t for t, _ in edge_cases() if t]
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|im_start|>", "<|im_end|>", "<|endoftext|>"]

    def train(regex, nfc, ignore_merges):
        tok = Tokenizer(models.BPE(ignore_merges=ignore_merges))
        if nfc:
            tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(regex), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=specials, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train_from_iterator(corpus, trainer)
        return tok

    llama3 = train(LLAMA3_REGEX, False, True)
    llama3.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                      special_tokens=[("<|begin_of_text|>", llama3.token_to_id("<|begin_of_text|>"))])])
    qwen2 = train(QWEN2_REGEX, True, False)
    qwen2.post_processor = processors.ByteLevel(trim_offsets=False)
    lines = []
    for name, tok in (("tiny_llama3", llama3), ("tiny_qwen2", qwen2)):
        folder = os.path.join(FIXTURES, name)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "tokenizer.json")
        tok.save(path, pretty=False)
        config = {"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"} if name == "tiny_llama3" else \
                 {"bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}
        with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
            json.dump(config, f, indent=1)
        print(f"wrote {path}: {tok.get_vocab_size()} tokens")
        ref = Tokenizer.from_file(path)
        for case in edge_cases():
            text = text_of(case)
            enc = ref.encode(text, add_special_tokens=False)
            lines.append(fixture_line(case, enc.ids, ref.decode(enc.ids, skip_special_tokens=True), {"vocab": name}))
        print(f"{name}: encode('Hi') with special tokens = {ref.encode('Hi', add_special_tokens=True).ids}")
    import unicodedata
    for text in nfc_cases():
        enc = qwen2.encode(text, add_special_tokens=False)
        lines.append({"vocab": "nfc", "text": text, "nfc": unicodedata.normalize("NFC", text),
                      "qwen2_ids": enc.ids})
    write_jsonl(os.path.join(FIXTURES, "families_ids.jsonl"), lines)


# --- SmolLM2 from its GGUF

def smollm2_reference(gguf):
    from tokenizers import pre_tokenizers
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(os.path.dirname(os.path.abspath(gguf)), gguf_file=os.path.basename(gguf))
    raw = hf.backend_tokenizer
    fixed = AutoTokenizer.from_pretrained(os.path.dirname(os.path.abspath(gguf)), gguf_file=os.path.basename(gguf))
    fixed.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
    return raw, fixed.backend_tokenizer


def sample_prompts(rendered, every_kind):
    """Distinct prompt texts. every_kind: all of them; else one per (task, row), the kinds
    taken in turn (context, full, icl, ...), no in-context prompt for the long-passage tasks
    (BoolQ, MultiRC), so the committed fixture stays small."""
    groups = {}
    for p in rendered:
        groups.setdefault((p["task"], p["row"]), []).append(p)
    seen, out = set(), []
    for k, ((task, _), lines) in enumerate(groups.items()):
        if not every_kind:
            lines = [p for p in lines if not (p["kind"] == "icl" and task in ("boolq", "multirc"))]
            lines = [lines[k % len(lines)]]
        for p in lines:
            if p["text"] not in seen:
                seen.add(p["text"])
                out.append(p)
    return out


def cmd_smollm2(args):
    raw, ref = smollm2_reference(args.gguf)
    if args.save_tokenizer_json:
        ref.save(args.save_tokenizer_json)
        print(f"wrote {args.save_tokenizer_json} (HF's tokenizer with SmolLM2's pre_tokenizer)")
    cases = edge_cases()
    prompts = sample_prompts(render_prompts(args.render_prompts, args.rows), args.every_kind)
    lines, n_raw_differs = [], 0
    for case in cases:
        text = text_of(case)
        ids = ref.encode(text, add_special_tokens=False).ids
        n_raw_differs += raw.encode(text, add_special_tokens=False).ids != ids
        lines.append(fixture_line(case, ids, ref.decode(ids, skip_special_tokens=True), {"kind": "edge"}))
    for p in prompts:
        ids = ref.encode(p["text"], add_special_tokens=False).ids
        n_raw_differs += raw.encode(p["text"], add_special_tokens=False).ids != ids
        extra = {"kind": p["kind"], "task": p["task"], "row": p["row"]}
        lines.append(fixture_line((p["text"], None), ids, ref.decode(ids, skip_special_tokens=True), extra))
    n_tokens = sum(len(line["ids"]) for line in lines)
    print(f"smollm2: {len(cases)} edge cases + {len(prompts)} task prompts, {n_tokens} tokens; "
          f"transformers' unpatched GGUF tokenizer differs on {n_raw_differs} of them")
    write_jsonl(args.out or os.path.join(FIXTURES, "smollm2_ids.jsonl"), lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--render-prompts", default=os.path.join(ROOT, "build-cpu", "render_prompts"),
                        help="smezo's prompt renderer (make builds it in the build folder)")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("tiny")
    sub.add_parser("families")
    s = sub.add_parser("smollm2")
    s.add_argument("--gguf", default=os.environ.get("SMEZO_SMOLLM2",
                                                    os.path.join(ROOT, "weights", "SmolLM2-135M-Instruct.Q4_1.gguf")))
    s.add_argument("--rows", type=int, default=75, help="rows per task handed to render_prompts")
    s.add_argument("--every-kind", action="store_true",
                   help="every prompt of each row (a bigger check) instead of one per row")
    s.add_argument("--out", help="fixture path (default tests/fixtures/bpe/smollm2_ids.jsonl); the C++ test "
                   "reads another one from $SMEZO_BPE_SMOLLM2_FIXTURE")
    s.add_argument("--save-tokenizer-json", help="also save the reference as a tokenizer.json here")
    args = parser.parse_args()
    {"tiny": cmd_tiny, "families": cmd_families, "smollm2": cmd_smollm2}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())

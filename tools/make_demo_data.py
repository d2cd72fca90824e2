#!/usr/bin/env python3
"""make_demo_data.py: a small generation dataset made from the shared assets, for the
"your own data" demo and the README's example.

BoolQ as a generation task: the passage and the question are the prompt, the answer "yes" or
"no" is the completion; evaluation decodes at most 3 tokens greedily, cut at the first newline, period or
comma (SmolLM2 answers "No, there is no sequel"), and scores exact match and token F1 against the
answer. The rows come from ../shared/assets/data/superglue/BoolQ/val.jsonl (the only
labelled BoolQ file here), shuffled with a fixed seed and cut into disjoint train, dev and test
files. Passages are cut to their first sentences (at most --passage-words words, at a sentence end
where one falls in the last half) so that a 135M model on 2 CPU cores can run the demo in
minutes; the cut is part of the dataset, not of smezo.

  tools/make_demo_data.py --out DIR [--train 1000 --dev 100 --test 200 --seed 7 --passage-words 40]

writes DIR/train.jsonl, DIR/dev.jsonl, DIR/test.jsonl (one JSON object per line: passage,
question, answer) and DIR/spec.json (the task spec that reads them). Only the standard library.
"""
import argparse
import json
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOOLQ = os.path.join(ROOT, "..", "shared", "assets", "data", "superglue", "BoolQ", "val.jsonl")

SPEC = {
    "name": "boolq-generation",
    "kind": "generation",
    "prompt": "{passage}\nQuestion: {question|ensure_question_mark|capitalize_first}\nAnswer:",
    "completion_field": "answer",
    "completion_prefix": " ",
    "max_new_tokens": 3,
    "stop": ["\n", ".", ","],
}


def cut_passage(text, max_words):
    """The passage's first words, ending at a sentence end in the second half when there is one."""
    words = text.split()
    if len(words) <= max_words:
        return " ".join(words)
    head = words[:max_words]
    for i in range(len(head) - 1, max_words // 2 - 1, -1):
        if head[i].endswith((".", "!", "?")):
            return " ".join(head[:i + 1])
    return " ".join(head)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--train", type=int, default=1000)
    ap.add_argument("--dev", type=int, default=100)
    ap.add_argument("--test", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--passage-words", type=int, default=40)
    ap.add_argument("--boolq", default=BOOLQ, help="BoolQ's val.jsonl (default: the shared assets')")
    args = ap.parse_args()
    rows = []
    with open(args.boolq, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                r = json.loads(line)
                rows.append({"passage": cut_passage(r["passage"], args.passage_words), "question": r["question"],
                             "answer": "yes" if r["label"] else "no"})
    need = args.train + args.dev + args.test
    if need > len(rows):
        print("make_demo_data: %d rows asked, %s holds %d" % (need, args.boolq, len(rows)), file=sys.stderr)
        return 1
    random.Random(args.seed).shuffle(rows)
    os.makedirs(args.out, exist_ok=True)
    parts = {"train": rows[:args.train], "dev": rows[args.train:args.train + args.dev],
             "test": rows[args.train + args.dev:need]}
    for name, part in parts.items():
        with open(os.path.join(args.out, name + ".jsonl"), "w", encoding="utf-8") as f:
            for r in part:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    with open(os.path.join(args.out, "spec.json"), "w") as f:
        json.dump(SPEC, f, indent=1)
        f.write("\n")
    yes = {k: sum(r["answer"] == "yes" for r in v) for k, v in parts.items()}
    print("make_demo_data: %s: train %d, dev %d, test %d rows (yes: %d, %d, %d); spec.json" % (
        args.out, len(parts["train"]), len(parts["dev"]), len(parts["test"]), yes["train"], yes["dev"], yes["test"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

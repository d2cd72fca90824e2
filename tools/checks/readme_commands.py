#!/usr/bin/env python3
"""Prints the shell commands README.md and the docs pages document, so CI runs what a reader copies.

  tools/checks/readme_commands.py 1|2 [--readme FILE]   README command 1 (the demo) or 2 (the tests):
                                                 the line after the "# 1." / "# 2." comment in
                                                 the first ```sh block
  tools/checks/readme_commands.py examples [--readme FILE] [--pages P1,P2]
                                                 the examples, in order, as one script: every
                                                 later ```sh block of the README, then every
                                                 ```sh block of each page of EXAMPLE_PAGES (or
                                                 --pages), paths relative to the README's folder

The README's opening block must hold exactly the comments "# 1. ..." and "# 2. ..." each
followed by one command line; anything else is an error (exit 1), so a README that lost or
reworded a command fails CI instead of silently running nothing. A page of the list that is
missing or holds no ```sh block is an error too.
"""
import argparse
import os
import re
import sys

# The docs pages whose ```sh blocks are examples, in the order they run: a later block may use
# an earlier one's output (adapters.md's last block evaluates README command 1's runs/demo).
EXAMPLE_PAGES = ["docs/adapters.md", "docs/own-data.md"]


def sh_blocks(text):
    """The bodies of the ```sh fenced blocks, in order."""
    return [m.group(1) for m in re.finditer(r"^```sh\n(.*?)^```$", text, re.M | re.S)]


def numbered_commands(block):
    """{1: command, 2: command} from '# N. ...' comment lines each followed by a command."""
    lines = block.splitlines()
    commands = {}
    for i, line in enumerate(lines):
        m = re.match(r"#\s*(\d+)\.\s", line)
        if not m:
            continue
        if i + 1 >= len(lines) or not lines[i + 1].strip() or lines[i + 1].lstrip().startswith("#"):
            raise ValueError(f"README command {m.group(1)}: no command line after '{line}'")
        commands[int(m.group(1))] = lines[i + 1].strip()
    return commands


def examples(readme, blocks, pages):
    """The README's later blocks, then every block of each page, as one script."""
    out = [b.rstrip("\n") for b in blocks[1:]]
    for page in pages:
        path = os.path.join(os.path.dirname(os.path.abspath(readme)), page)
        try:
            with open(path, encoding="utf-8") as f:
                page_blocks = sh_blocks(f.read())
        except OSError as e:
            sys.exit(f"readme_commands: example page {page}: {e.strerror}")
        if not page_blocks:
            sys.exit(f"readme_commands: example page {page} has no ```sh block")
        out += [b.rstrip("\n") for b in page_blocks]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("which", choices=["1", "2", "examples"])
    ap.add_argument("--readme", default="README.md")
    ap.add_argument("--pages", default=",".join(EXAMPLE_PAGES),
                    help="examples: the docs pages after the README, comma-separated")
    a = ap.parse_args()
    with open(a.readme, encoding="utf-8") as f:
        blocks = sh_blocks(f.read())
    if not blocks:
        sys.exit(f"readme_commands: {a.readme} has no ```sh block")
    if a.which == "examples":
        print(examples(a.readme, blocks, [p for p in a.pages.split(",") if p]))
        return
    try:
        commands = numbered_commands(blocks[0])
    except ValueError as e:
        sys.exit(f"readme_commands: {a.readme}: {e}")
    if sorted(commands) != [1, 2]:
        sys.exit(f"readme_commands: {a.readme}: the first ```sh block has commands {sorted(commands)}, "
                 "expected '# 1.' and '# 2.' each followed by one command line")
    print(commands[int(a.which)])


if __name__ == "__main__":
    main()

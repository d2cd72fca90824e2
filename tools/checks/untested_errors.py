"""List the error sites in src/ whose message no test checks.

Usage: python3 tools/checks/untested_errors.py [--src DIR] [--tests DIR] [--all]

Prints one row per untested site (file:line, the head of its format string), then the total
"N of M error sites have no test". --all prints every site, marked "tested" or "UNTESTED".

Method (rough on purpose, a grep and no compiler):
  * An error site is a call of one of the raising names that src/common/check.h defines:
    SMEZO_REQUIRE(cond, fmt, ...) and throw_error(fmt, ...), plus any `throw Error(...)` /
    `throw smezo::Error(...)` written directly, and throw_write_error(action, path, errno)
    (its message is the action: "write the seed log"). The definitions themselves are skipped.
  * The call is read to its closing parenthesis and split at top-level commas; the message is
    the string literals of the format argument (SMEZO_REQUIRE's second, throw_error's first,
    Error's first), adjacent literals joined as the compiler joins them.
  * The message is cut at each printf conversion (%s, %lld, %zu, ...) into literal pieces.
  * The site counts as tested when either
      (a) a piece of at least 14 characters holding a space (after trimming spaces and
          punctuation at its ends; a bare identifier such as write_safetensors is too common) appears verbatim anywhere in tests/ (HasSubstr expectations, expected CLI output), or
      (b) a string literal in tests/ of at least 14 characters, holding a space and no
          printf-like "%", appears inside one of the site's pieces (tests often check a
          shorter substring than any whole piece).
Roughness, both ways:
  * false "tested": a generic phrase ("cannot open %s") matched by a test of another site, or a
    phrase mentioned in a test comment, marks a site tested that no test triggers; sites with
    the same message (a write and a close that both say "cannot flush seed log %s") are
    counted together;
  * false "untested": a message built at run time (a format of "%s" with the text in a
    variable, or a message whose pieces are all shorter than 14 characters) cannot be matched;
    a test that checks only the exception type, or only text from a %s argument, is not seen;
    a site reached only through a helper that rethrows with its own text is counted by the
    helper's text.
  So the count is a guide to where tests are missing, not a coverage measurement.
"""
import argparse
import os
import re
import sys

MIN_PIECE = 14
RAISERS = [  # (regex for the call's opening, index of the format argument)
    (re.compile(r"\bSMEZO_REQUIRE\s*\("), 1),
    (re.compile(r"\bthrow_error\s*\("), 0),
    (re.compile(r"\bthrow\s+(?:::)?(?:smezo::)?Error\s*\("), 0),
    (re.compile(r"\bthrow_write_error\s*\("), 0),  # "cannot <action> <path>: <strerror>"
]
CONVERSION = re.compile(r"%[-+ #0]*(?:\*|\d+)?(?:\.(?:\*|\d+))?(?:hh|h|ll|l|z|j|t|L)?[diouxXeEfgGcsp%]")
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
TRIM = " \t.,:;!?'\"()[]-=>/"


def source_files(root, exts):
    for dirpath, _, names in os.walk(root):
        for name in sorted(names):
            if name.endswith(exts):
                yield os.path.join(dirpath, name)


def quoted_end(text, i):
    """The index of the quote closing the string or character literal that opens at text[i]."""
    j = i + 1
    while j < len(text) and text[j] != text[i]:
        j += 2 if text[j] == "\\" else 1
    return j


def call_text(text, start):
    """The text from start (just after the opening parenthesis) to the matching close."""
    depth, i, n = 1, start, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            i = quoted_end(text, i) + 1
            continue
        if c == "/" and text.startswith("//", i):
            i = text.find("\n", i)
            if i < 0:
                break
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return text[start:i]
        i += 1
    return text[start:]


def split_args(call):
    """Top-level comma-separated arguments of a call's text."""
    args, depth, cur, i, n = [], 0, [], 0, len(call)
    while i < n:
        c = call[i]
        if c == '"' or c == "'":
            j = quoted_end(call, i)
            cur.append(call[i:j + 1])
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            args.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    args.append("".join(cur))
    return args


def find_sites(src_root):
    sites = []  # (path, line, message)
    for path in source_files(src_root, (".cpp", ".h", ".cu", ".cuh")):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        code = re.sub(r"//[^\n]*", lambda m: " " * len(m.group(0)), text)  # keep offsets
        for pattern, fmt_index in RAISERS:
            for m in pattern.finditer(code):
                line_start = code.rfind("\n", 0, m.start()) + 1
                if code[line_start:m.start()].lstrip().startswith("#define"):
                    continue
                if re.search(r"void\s+throw_(?:write_)?error\s*\($", code[line_start:m.end()]):
                    continue  # the declaration / definition
                args = split_args(call_text(code, m.end()))
                if len(args) <= fmt_index:
                    continue  # a macro parameter list or similar
                message = "".join(LITERAL.findall(args[fmt_index]))
                sites.append((path, code.count("\n", 0, m.start()) + 1, message))
    return sites


def pieces(message):
    out = []
    for part in CONVERSION.split(message):
        part = part.strip(TRIM)
        if len(part) >= MIN_PIECE and " " in part:  # a phrase, not a bare identifier
            out.append(part)
    return out


def test_corpus(tests_root):
    texts = []
    for path in source_files(tests_root, (".cpp", ".h", ".cu", ".py", ".sh", ".txt", ".json")):
        with open(path, encoding="utf-8", errors="replace") as f:
            texts.append(f.read())
    corpus = "\n".join(texts)
    literals = set()
    for lit in LITERAL.findall(corpus):
        lit = lit.strip(TRIM)
        if len(lit) >= MIN_PIECE and " " in lit and "%" not in lit:
            literals.add(lit)
    return corpus, sorted(literals)


def is_tested(message, corpus, literals):
    ps = pieces(message)
    if any(p in corpus for p in ps):
        return True
    return any(lit in p for p in ps for lit in literals)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", default="src")
    ap.add_argument("--tests", default="tests")
    ap.add_argument("--all", action="store_true", help="list every site, tested or not")
    a = ap.parse_args()
    if not os.path.isdir(a.src) or not os.path.isdir(a.tests):
        sys.exit("untested_errors.py: --src %s or --tests %s is not a folder (run it from the "
                 "repository root)" % (a.src, a.tests))
    sites = sorted(find_sites(a.src))
    corpus, literals = test_corpus(a.tests)
    untested = 0
    for path, line, message in sites:
        tested = is_tested(message, corpus, literals)
        untested += not tested
        if a.all or not tested:
            where = "%s:%d" % (os.path.relpath(path, os.path.dirname(os.path.abspath(a.src)) or "."), line)
            head = message if len(message) <= 90 else message[:87] + "..."
            mark = ("tested    " if tested else "UNTESTED  ") if a.all else ""
            print("%s%-44s %s" % (mark, where, head or "(no literal message)"))
    print("%d of %d error sites have no test" % (untested, len(sites)))


if __name__ == "__main__":
    main()

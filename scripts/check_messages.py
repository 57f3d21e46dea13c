#!/usr/bin/env python3
"""Holds the library's messages to one rule: they name a user's setting as "{key}", never as a flag.

The spelling of a setting ("--disk-budget" on frugal's command line) is the front end's
(include/frugal/util/settings_text.h); library code writes "{disk_budget}" and message(), Error and
note() spell it. Scanned: the string literals (comments and character literals skipped, escapes
honoured) of src/** and include/frugal/**.

A literal fails, named by file:line, when
  (a) it holds a command-line flag ("--word") outside ALLOWED, or
  (b) it holds "{key}" for a key that src/util/settings_text.cpp does not know, so it would reach
      the user unspelled.

Usage: check_messages.py [--root DIR]   (exit 1 and one line per problem when a rule is broken)
       check_messages.py --self-test    (a small fake tree that breaks each rule must be caught)
Run by ctest as house.messages and house.messages_self_test (tests/CMakeLists.txt).
"""
import argparse
import os
import re
import sys
import tempfile

# Files whose literals are the front end's spelling by design, and literals that are no setting.
ALLOWED_FILES = {"src/training/train_options.cpp"}  # the one option table: CLI names beside keys
# pip's own option in doctor's install command; torchrun's own in the command --nproc runs
ALLOWED_FLAGS = {"--index-url", "--standalone", "--nproc-per-node", "--no-python"}
SOURCE_EXTS = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
FLAG_RE = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
KEY_RE = re.compile(r"\{([a-z][a-z0-9_]*)\}")


def literals(text):
    """Yields (line, content) for each string literal of C++ source `text`."""
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            i = j
        elif c == "R" and text.startswith('R"', i):
            k = text.find("(", i)
            delim = ")" + text[i + 2 : k] + '"'
            j = text.find(delim, k)
            j = n if j < 0 else j
            yield line, text[k + 1 : j]
            line += text.count("\n", i, j)
            i = j + len(delim)
        elif c in "\"'":
            j, out = i + 1, []
            while j < n and text[j] != c and text[j] != "\n":
                if text[j] == "\\" and j + 1 < n:
                    out.append(text[j : j + 2])
                    j += 2
                else:
                    out.append(text[j])
                    j += 1
            if c == '"':
                yield line, "".join(out)
            i = j + 1
        else:
            i += 1


def known_keys(root):
    path = os.path.join(root, "src/util/settings_text.cpp")
    text = open(path, encoding="utf-8").read()
    m = re.search(r"kKeys\[\]\s*=\s*\{(.*?)\};", text, re.S)
    if not m:
        sys.exit(f"{path}: found no kKeys list")
    return set(re.findall(r'"([a-z0-9_]+)"', m.group(1)))


def check(root):
    keys = known_keys(root)
    problems = []
    for top in ("src", "include/frugal"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith(SOURCE_EXTS):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                if rel in ALLOWED_FILES:
                    continue
                text = open(path, encoding="utf-8", errors="replace").read()
                for line, lit in literals(text):
                    for flag in FLAG_RE.findall(lit):
                        if flag not in ALLOWED_FLAGS:
                            problems.append(f"{rel}:{line}: names the flag {flag}; write the setting as {{key}}")
                    for key in KEY_RE.findall(lit):
                        if key not in keys:
                            problems.append(f"{rel}:{line}: {{{key}}} is no setting src/util/settings_text.cpp knows")
    return problems


def self_test():
    with tempfile.TemporaryDirectory() as root:
        def put(rel, text):
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            open(os.path.join(root, rel), "w").write(text)

        put("src/util/settings_text.cpp", 'constexpr std::string_view kKeys[] = {"amp", "disk_budget"};\n')
        put("src/a/good.cpp", '// "--flag" in a comment\nauto s = "raise {disk_budget}"; auto t = {x};\n'
                              'char c = \'"\'; auto u = "a \\" quote then {amp}";\n')
        put("src/training/train_options.cpp", 'auto s = "--epochs";\n')
        put("src/a/flag.cpp", 'int x;\nauto s = "raise --disk-budget";\n')
        put("include/frugal/key.h", 'auto s = "give {gpu_memory}";\n')
        got = check(root)
        want = ["src/a/flag.cpp:2: names the flag --disk-budget",
                "include/frugal/key.h:1: {gpu_memory} is no setting"]
        for w in want:
            if not any(p.startswith(w) for p in got):
                print(f"self-test: not caught: {w}\n  got: {got}")
                return 1
        if len(got) != len(want):
            print(f"self-test: expected {len(want)} problems, got {got}")
            return 1
    print("self-test: each rule caught")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    problems = check(a.root)
    for p in problems:
        print(p)
    if not problems:
        print("messages: every setting named as {key}, each known")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

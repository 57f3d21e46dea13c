#!/usr/bin/env python3
"""Functions of at most 60 lines where clang-tidy does not look (issue 46): scripts/tidy.sh runs
readability-function-size (.clang-tidy: LineThreshold 60) over the torch-free code only, as the
LibTorch code would need LibTorch's headers in a compile database. This check needs no compiler:
it strips the comments, string and character literals and preprocessor lines of each source, matches
its braces, and measures every function body at namespace or class scope (free functions, methods,
PYBIND11_MODULE, a lambda assigned at namespace scope; a lambda inside a function counts as part of
that function; a NOLINT(readability-function-size) on its line or a NOLINTNEXTLINE above it exempts
it, as it does from clang-tidy). A body's length is counted as clang-tidy counts it: the line of its closing brace
less the line of its opening brace. Files: the LibTorch libraries (src/{loader,models,checkpoint,
train,compress}), src/gpu (CUDA), frugal-torch's own files
(tools/frugal/torch_cmd_*.cpp, config_file.cpp, run_lock.cpp) and the Python binding
(python/src/core.cpp). Prints `file:line name (N lines)` for each function over 60 lines, and exits 1
then. An allowlist may name a function that is being split elsewhere: scripts/function_length_allow.txt
(absent today), one `path name` a line, `#` comments; a line that names no long function is an error.

  check_function_length.py [--root DIR]   the repository (default: this script's parent's parent)
  check_function_length.py --self-test    a generated file: a function of 61 lines is found, one of
                                          60 is not, braces in strings and comments are ignored
"""
import argparse, glob, os, re, sys, tempfile

LIMIT = 60
FILES = ["src/loader/*", "src/models/*", "src/checkpoint/*", "src/train/*", "src/compress/*", "src/gpu/*",
         "tools/frugal/torch_cmd_*.cpp", "tools/frugal/config_file.cpp", "tools/frugal/run_lock.cpp",
         "python/src/core.cpp"]
EXTS = (".cpp", ".h", ".cu", ".cuh")
ALLOW = "scripts/function_length_allow.txt"


def strip(text):
    """The text with comments, literals and preprocessor lines blanked (newlines kept, so offsets
    and line numbers stay those of the source)."""
    out = list(text)
    i, n = 0, len(text)
    line_start = True

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if line_start and c == "#" or (line_start and c in " \t" and text[i:].lstrip(" \t").startswith("#")):
            j = i
            while j < n:  # to the end of the line, following backslash continuations
                k = text.find("\n", j)
                k = n if k < 0 else k
                if k > 0 and text[k - 1] == "\\":
                    j = k + 1
                    continue
                j = k
                break
            blank(i, j)
            i = j
            continue
        if c == "\n":
            line_start = True
            i += 1
            continue
        if c in " \t":
            i += 1
            continue
        line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c == "R" and text.startswith('"', i + 1) and not (i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")) \
                or (c in "uUL8" and re.match(r'(?:u8|u|U|L)R"', text[i:i + 4]) and not (i > 0 and text[i - 1].isalnum())):
            q = text.index('"', i)
            p = text.find("(", q)
            delim = text[q + 1:p]
            j = text.find(")" + delim + '"', p)
            j = n if j < 0 else j + len(delim) + 2
            blank(i, j)
            i = j
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum() and text[i + 1:i + 2].isalnum())):
            j = i + 1  # a quote between two digits/letters is a digit separator (1'000), not a literal
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            blank(i, j)
            i = j
        else:
            i += 1
    return "".join(out)


QUALIFIERS = re.compile(r"^(?:\s*(?:const|volatile|noexcept(?:\s*\([^()]*\))?|override|final|mutable|constexpr|"
                        r"&&|&|try|->[^{;]*))*\s*$")
LAMBDA_AT_SCOPE = re.compile(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)?=\s*\[[^\]]*\]\s*(?:\([^()]*(?:\([^()]*\)[^()]*)*\))?[^=;]*$",
                             re.S)
NAME = re.compile(r"(operator\s*(?:\(\)|[^\s(\w]+|\w[\w\s:<>*&]*?)|~?[A-Za-z_][\w:~<>]*)\s*$")


def top_level(s):
    """Positions in s at paren depth 0 (braces already replaced by '{}')."""
    depth, keep = 0, []
    for i, c in enumerate(s):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                keep.append(("close", i))
            continue
        if depth == 0:
            keep.append((c, i))
    return keep


def classify(header):
    """'namespace', 'class', a function's name, or None (an initializer, an enum) for the text
    before a brace at namespace or class scope."""
    h = re.sub(r"\btemplate\s*<[^{};]*?>\s*(?=[A-Za-z_])", " ", header)
    h = re.sub(r"\[\[[^\]]*\]\]", " ", h)
    hs = h.strip()
    if re.match(r"^(?:inline\s+)?namespace\b", hs) or re.match(r'^extern\s*"?', hs) and "(" not in hs:
        return "namespace"
    if re.search(r"\benum\b", hs) and "(" not in hs:
        return None
    m = LAMBDA_AT_SCOPE.search(h)
    if m:
        return m.group(1)
    first_paren = h.find("(")
    cls = re.search(r"\b(?:class|struct|union)\b", h)
    if cls and (first_paren < 0 or cls.start() < first_paren) and not re.search(r"\)\s*$", hs):
        return "class"
    if first_paren < 0:
        return None
    marks = top_level(h)
    closes = [i for c, i in marks if c == "close"]
    if not closes:
        return None
    # A constructor's initializer list: a single ':' after a ')' (or a qualifier), at depth 0.
    ctor = None
    for c, i in marks:
        if c == ":" and h[i - 1:i] != ":" and h[i + 1:i + 2] != ":" and re.search(r"(?:\)|const|noexcept)\s*$", h[:i]):
            ctor = i
            break
    if ctor is not None and re.search(r"[\w>]\s*$", h):
        return None  # a member's brace initializer in that list: `: a_{x}, b_{y} {`
    decl = h if ctor is None else h[:ctor]
    if ctor is None:
        last = max(closes)
        if not QUALIFIERS.match(h[last + 1:]):
            return None
    arrow = [i for c, i in top_level(decl) if c == "-" and decl[i + 1:i + 2] == ">"]
    if arrow:
        decl = decl[:arrow[0]]
    closes = [i for c, i in top_level(decl) if c == "close"]
    if not closes:
        return None
    close = max(closes)
    depth, open_ = 0, None
    for k in range(close, -1, -1):
        depth += {")": 1, "(": -1}.get(decl[k], 0)
        if depth == 0:
            open_ = k
            break
    m = NAME.search(decl[:open_])
    return re.sub(r"\s+", "", m.group(1)) if m else "?"


def functions(text):
    """(line of the name, name, lines) of each function body at namespace or class scope."""
    s = strip(text)
    line_of = lambda pos: s.count("\n", 0, pos) + 1
    found = []

    def match_brace(i):
        depth = 0
        for j in range(i, len(s)):
            if s[j] == "{":
                depth += 1
            elif s[j] == "}":
                depth -= 1
                if depth == 0:
                    return j
        return len(s) - 1

    def scope(i, end):
        header, start, paren = [], i, 0
        while i < end:
            c = s[i]
            if c == "(":
                paren += 1
            elif c == ")":
                paren -= 1
            if c == "{" and paren == 0:
                close = match_brace(i)
                kind = classify("".join(header))
                if kind in ("namespace", "class"):
                    scope(i + 1, close)
                    header, start = [], close + 1
                elif kind is None:
                    header.append("{}")  # an initializer: the declaration goes on to its ';'
                else:
                    found.append((line_of(start + len("".join(header)) - len("".join(header).lstrip())),
                                  kind, line_of(close) - line_of(i)))
                    header, start = [], close + 1
                i = close + 1
                continue
            if c == "{":  # a brace inside parentheses (a default argument, a call's initializer)
                close = match_brace(i)
                header.append("{}")
                i = close + 1
                continue
            if c == ";" and paren == 0:
                header, start = [], i + 1
            elif c == "}":
                header, start = [], i + 1
            else:
                header.append(c)
            i += 1

    scope(0, len(s))
    # A NOLINT on the function's line or a NOLINTNEXTLINE above it, as clang-tidy honours them
    # (bare, or naming readability-function-size).
    lines = text.splitlines()
    nolint = re.compile(r"NOLINT(?:\((?:[^)]*readability-function-size[^)]*|\*)\))?(?![\w(])")
    nolint_next = re.compile(r"NOLINTNEXTLINE(?:\((?:[^)]*readability-function-size[^)]*|\*)\))?(?![\w(])")
    quiet = lambda n: (n <= len(lines) and nolint.search(lines[n - 1])) or (n >= 2 and nolint_next.search(lines[n - 2]))
    return [f for f in found if not quiet(f[0])]


def sources(root):
    out = set()
    for pattern in FILES:
        for p in glob.glob(os.path.join(root, pattern)):
            if p.endswith(EXTS) and os.path.isfile(p):
                out.add(os.path.relpath(p, root))
    return sorted(out)


def load_allow(root):
    allow, path = set(), os.path.join(root, ALLOW)
    if os.path.exists(path):
        for line in open(path, encoding="utf-8"):
            line = line.split("#", 1)[0].strip()
            if line:
                f, name = line.split(None, 1)
                allow.add((f, name.strip()))
    return allow


def check(root, files=None):
    """The findings `file:line name (N lines)`, and the allowlist entries that match nothing."""
    allow = load_allow(root)
    used, bad = set(), []
    for f in files or sources(root):
        text = open(os.path.join(root, f), encoding="utf-8", errors="replace").read()
        for line, name, lines in functions(text):
            if lines > LIMIT:
                if (f, name) in allow:
                    used.add((f, name))
                    continue
                bad.append(f"{f}:{line} {name} ({lines} lines)")
    stale = [f"{ALLOW}: '{f} {n}' names no function over {LIMIT} lines (remove the line)"
             for f, n in sorted(allow - used)] if files is None else []
    return bad, stale


def self_test():
    body = lambda n: "".join(f"  x += {k};\n" for k in range(n - 1))
    src = ('#include <string>\n#define BRACE {\n'
           'namespace a {\nstruct S {\n  int at(int x) const {\n' + body(61) + '  }\n};\n'
           'int sixty(int x) {\n  const char* s = "}}}{";  // }}\n  /* { */ char c = \'}\';\n' + body(58) + '}\n'
           'S::S(int v) : v_{v}, w_(1) {\n' + body(61) + '}\n'
           'const auto kF = [](int x) {\n' + body(62) + '};\n'
           '// NOLINTNEXTLINE(readability-function-size)\nint table() {\n' + body(61) + '}\n'
           '}  // namespace a\n'
           'PYBIND11_MODULE(core, m) {\n  auto r = R"({)";\n' + body(60) + '}\n')
    want = ["f.cpp:5 at (61 lines)", "f.cpp:129 S::S (61 lines)", "f.cpp:191 kF (62 lines)",
            "f.cpp:318 PYBIND11_MODULE (61 lines)"]
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "f.cpp"), "w") as out:
            out.write(src)
        got, _ = check(d, ["f.cpp"])
    if got != want:
        print("self-test failed:\n  got  " + "\n  got  ".join(got) + "\n  want " + "\n  want ".join(want))
        return 1
    print("check_function_length self-test: ok")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        sys.exit(self_test())
    bad, stale = check(a.root)
    for b in bad + stale:
        print(b)
    if bad or stale:
        print(f"check_function_length: {len(bad)} function(s) over {LIMIT} lines: split them into named steps "
              f"(CONTRIBUTING.md)", file=sys.stderr)
        sys.exit(1)
    print(f"check_function_length: no function over {LIMIT} lines in {len(sources(a.root))} files", file=sys.stderr)


if __name__ == "__main__":
    main()

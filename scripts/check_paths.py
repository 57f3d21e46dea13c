#!/usr/bin/env python3
"""Comments that name a repository path must name one that exists (issue 46: four comments
pointed at files that had moved). Scans the comments of the C++ sources (// and /* */), and of
shell, Python and CMake files (#), in src/, include/, tools/, python/, tests/, bench/, fuzz/,
scripts/ and the CMake files, for words that look like a path of this repository: a folder and a
file name with a known extension (`src/dataset/sampler.cpp`, `train/schedule.h`, `docs/data.md`, a
glob such as `sampler.*`). A word is found when it names a file (or, for a glob, any file) under
the repository's root or one of the roots code names paths from (src/, include/, include/frugal/,
tools/, tools/frugal/, tests/, python/). Prints each one that names nothing, and exits 1 then.

  check_paths.py [--root DIR]         the repository (default: this script's parent's parent)
  check_paths.py --self-test          shows that a stale name is found and a right one is not
"""
import argparse, glob, os, re, sys, tempfile

EXT = r"(?:h|hpp|cpp|cu|cuh|py|sh|md|cmake|txt|toml|json|in|options)"
# A path word: folders and a file name (or a glob of one), at least one slash.
PATH = re.compile(r"(?<![\w./*-])((?:\.\./)?(?:[A-Za-z_][\w.-]*/)+[\w.*-]*\." + EXT + r"|(?:[A-Za-z_][\w.-]*/)+[\w-]+\.\*)(?![\w/])")
ROOTS = ["", "src", "include", "include/frugal", "tools", "tools/frugal", "tests", "python", "python/src"]
SCAN = ["src", "include", "tools", "python", "tests", "bench", "fuzz", "scripts", "cmake"]
SKIP_DIRS = {"corpus", "data", "__pycache__", "lib"}
# Paths outside this repository that comments name on purpose (PyTorch's, Arrow's, system files).
FOREIGN = re.compile(r"^(?:torch|c10|aten|ATen|caffe2|arrow|parquet|pybind11|gloo|nccl|cuda|nvjpeg|google|gtest|"
                     r"nlohmann|CLI|toml\+\+|linux|sys|proc|usr|etc|dev|tmp|site-packages|torchvision|timm|"
                     r"onnx|onnxruntime|numpy|safetensors|libjpeg|turbojpeg|spng|png|webp|tiff|zstd|xxhash|openssl|"
                     r"\.\./shared|shared|run|runs|RUN|out|OUT|build|dist|\.venv|tensorboard|selenium)/")

def comments(path, text):
    """(line number, comment text) of each comment line."""
    out = []
    if path.endswith((".h", ".hpp", ".cpp", ".cu", ".cuh", ".cpp.in", ".h.in")):
        in_block = False
        for n, line in enumerate(text.splitlines(), 1):
            if in_block:
                out.append((n, line))
                in_block = "*/" not in line
                continue
            # A // outside a string literal: good enough for this code's comments.
            m = re.search(r'^(?:[^"\']|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\')*?(//.*|/\*.*)$', line)
            if m:
                out.append((n, m.group(1)))
                in_block = m.group(1).startswith("/*") and "*/" not in m.group(1)
    else:
        for n, line in enumerate(text.splitlines(), 1):
            m = re.search(r"(?:^|\s)(#.*)$", line)
            if m and not line.lstrip().startswith("#!"):
                out.append((n, m.group(1)))
    return out

def exists(root, here, word):
    for base in [os.path.relpath(here, root)] + ROOTS:
        p = os.path.join(root, base, word)
        if ("*" in word and glob.glob(p)) or os.path.exists(p):
            return True
    return False

def ours(root, word):
    """Whether `word` reads as a path of this repository: it starts with one of its top folders, or
    with a folder of src/ or include/frugal/ (a library: `train/schedule.h`). Words with a
    placeholder (an all-capitals folder: `src/NAME/*.cpp`) and data layouts (`val/x.txt`) are not."""
    parts = word.split("/")
    if any(p.isupper() and len(p) > 1 for p in parts[:-1]):
        return False
    first = parts[0]
    if first in ("src", "include", "frugal", "tools", "tests", "scripts", "docs", "bench", "fuzz", "python", "cmake"):
        return True
    return os.path.isdir(os.path.join(root, "src", first)) or os.path.isdir(os.path.join(root, "include/frugal", first))

def check(root):
    bad = []
    files = [os.path.join(root, "CMakeLists.txt")]
    for top in SCAN:
        for d, dirs, names in os.walk(os.path.join(root, top)):
            dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.startswith(".")]
            files += [os.path.join(d, n) for n in names
                      if n.endswith((".h", ".hpp", ".cpp", ".cu", ".cuh", ".py", ".sh", ".cmake", ".in"))
                      or n == "CMakeLists.txt"]
    for f in files:
        try:
            text = open(f, encoding="utf-8").read()
        except (OSError, UnicodeDecodeError):
            continue
        for n, c in comments(f, text):
            for word in PATH.findall(c):
                w = word.rstrip(".")
                if FOREIGN.match(w) or not ours(root, w) or exists(root, os.path.dirname(f), w):
                    continue
                bad.append(f"{os.path.relpath(f, root)}:{n}: names {w}, which is no file of this repository")
    return bad

def self_test():
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(f"{d}/src/train"); os.makedirs(f"{d}/include/frugal/dataset"); os.makedirs(f"{d}/src/moved")
        open(f"{d}/include/frugal/dataset/sampler.h", "w").write("")
        open(f"{d}/src/train/a.cpp", "w").write(
            '// see dataset/sampler.h and src/train/gone.h (and torch/csrc/x.h)\nint x = 1; // "a/b.h" src/moved/*.cpp\n'
            'const char* s = "src/not_a_comment.h";\n')
        got = check(d)
        want = ["src/train/a.cpp:1: names src/train/gone.h, which is no file of this repository",
                "src/train/a.cpp:2: names src/moved/*.cpp, which is no file of this repository"]
        if got != want:
            print("self-test failed:\n  got  " + "\n  got  ".join(got) + "\n  want " + "\n  want ".join(want))
            return 1
    print("check_paths self-test: ok")
    return 0

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        sys.exit(self_test())
    bad = check(a.root)
    for b in bad:
        print(b)
    if bad:
        print(f"check_paths: {len(bad)} comment(s) name a path that is not here; fix the name (the file moved?)")
    sys.exit(1 if bad else 0)

#!/usr/bin/env python3
"""Compares the #include lines of the libraries with their declared dependencies.

The dependency graph is what CMake is told: the frugal_library(NAME [TORCH] [DIR SUBDIR] DEPS ...)
lines of the top-level CMakeLists.txt and, for frugal_gpu, the target_link_libraries(frugal_gpu ...)
lines of cmake/gpu.cmake. A library without TORCH is torch-free. Scanned: src/<library>/** (a library
declared with DIR SUBDIR owns that folder, also one nested in another's), include/frugal/** and tools/**.

A file fails, named by file:line, when
  (a) a library includes a private header of another library (src/gpu/plan.h from src/loader);
  (b) a library includes a public header of a library it does not depend on, directly or through
      its dependencies (include/frugal/train/step.h from src/loader);
  (c) a torch-free library, or a tools/ file linked into the torch-free `frugal` (cmd_*, cli.*),
      includes LibTorch or a header of this repository that does, at any depth;
  (d) tools/ includes anything of this repository but include/frugal/ and its own headers;
  and a public header that belongs to no library is named too. A public header belongs to the
  library whose folder it is in, include/frugal/<lib>/: ownership is read from the path alone.

Usage: check_includes.py [--root DIR]   (exit 1 and one line per problem when a rule is broken)
       check_includes.py --self-test    (a small fake tree that breaks each rule must be caught)
Run by ctest as house.includes and house.includes_self_test (tests/CMakeLists.txt).
"""
import argparse
import os
import re
import sys
import tempfile

TORCH_PREFIXES = ("torch/", "ATen/", "c10/", "caffe2/")
SOURCE_EXTS = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
LIBRARY_RE = re.compile(r"^\s*frugal_library\(([^)]*)\)", re.M)
GPU_LINK_RE = re.compile(r"^\s*target_link_libraries\(\s*frugal_gpu\b([^)]*)\)", re.M)


class Library:
    def __init__(self, name, folder, torch, deps):
        self.name, self.folder, self.torch, self.deps = name, folder, torch, deps


def read_graph(root):
    """name -> Library, from CMakeLists.txt and cmake/gpu.cmake."""
    libs = {}
    with open(os.path.join(root, "CMakeLists.txt")) as f:
        text = re.sub(r"#.*", "", f.read())
    for m in LIBRARY_RE.finditer(text):
        words = m.group(1).split()
        name, folder, torch, deps, mode = words[0], words[0], False, [], None
        for w in words[1:]:
            if w == "TORCH":
                torch = True
            elif w in ("DIR", "DEPS"):
                mode = w
            elif mode == "DIR":
                folder, mode = w, None
            elif mode == "DEPS" and w.startswith("frugal_"):
                deps.append(w[len("frugal_"):])
        libs[name] = Library(name, folder, torch, deps)
    gpu_cmake = os.path.join(root, "cmake", "gpu.cmake")
    if os.path.exists(gpu_cmake):
        with open(gpu_cmake) as f:
            text = re.sub(r"#.*", "", f.read())
        deps = []
        for m in GPU_LINK_RE.finditer(text):
            deps += [w[len("frugal_"):] for w in m.group(1).split() if w.startswith("frugal_")]
        if deps or "add_library(frugal_gpu" in text:
            libs["gpu"] = Library("gpu", "gpu", False, [d for d in deps if d != "nvjpeg"])
    return libs


def closure(libs, name):
    seen, todo = set(), [name]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo += libs[n].deps if n in libs else []
    return seen


def source_files(root, top):
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
        dirnames.sort()
        for f in sorted(filenames):
            if f.endswith(SOURCE_EXTS):
                out.append(os.path.relpath(os.path.join(dirpath, f), root))
    return out


class Checker:
    def __init__(self, root):
        self.root = root
        self.libs = read_graph(root)
        self.problems = []
        self.includes = {}  # path -> [(line, kind, spec)]
        self.torch_memo = {}
        # Longest folder first: a nested library's folder before its parent's.
        self.folders = sorted(((lib.folder, lib.name) for lib in self.libs.values()),
                              key=lambda x: -len(x[0]))

    def rel(self, *parts):
        return os.path.normpath(os.path.join(*parts))

    def exists(self, rel):
        return os.path.isfile(os.path.join(self.root, rel))

    def parse(self, path):
        if path not in self.includes:
            found = []
            with open(os.path.join(self.root, path), errors="replace") as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE_RE.match(line)
                    if m:
                        found.append((n, m.group(1), m.group(2)))
            self.includes[path] = found
        return self.includes[path]

    def resolve(self, path, kind, spec):
        """The repository file an #include names, or None for a system/external header."""
        candidates = []
        if kind == '"':
            candidates.append(self.rel(os.path.dirname(path), spec))
        candidates += [self.rel("include", spec), self.rel("src", spec)]
        for c in candidates:
            if not c.startswith("..") and self.exists(c):
                return c
        return None

    def library_of_private(self, path):
        """The library whose src/ folder holds path (longest folder wins), or None."""
        for folder, name in self.folders:
            if path.startswith(self.rel("src", folder) + os.sep):
                return name
        return None

    def owner_of_public(self, path):
        """The library a header under include/frugal/<library>/ belongs to, or None."""
        parts = os.path.relpath(path, self.rel("include", "frugal")).split(os.sep)
        return parts[0] if len(parts) > 1 and parts[0] in self.libs else None

    def owner(self, path):
        if path.startswith(self.rel("include", "frugal") + os.sep):
            return self.owner_of_public(path)
        return self.library_of_private(path)

    def torch_chain(self, path, stack=()):
        """[spec, ...] leading from path to LibTorch, or None."""
        if path in self.torch_memo:
            return self.torch_memo[path]
        if path in stack:
            return None
        self.torch_memo[path] = None
        chain = None
        for _, kind, spec in self.parse(path):
            if spec.startswith(TORCH_PREFIXES):
                chain = [spec]
                break
            target = self.resolve(path, kind, spec)
            if target:
                sub = self.torch_chain(target, stack + (path,))
                if sub:
                    chain = [target] + sub
                    break
        self.torch_memo[path] = chain
        return chain

    def fail(self, path, line, message):
        self.problems.append(f"{path}:{line}: {message}")

    def check_torch(self, path, line, kind, spec, who):
        if spec.startswith(TORCH_PREFIXES):
            self.fail(path, line, f"(c) {who} is torch-free but includes <{spec}>")
            return
        target = self.resolve(path, kind, spec)
        chain = self.torch_chain(target) if target else None
        if chain:
            self.fail(path, line, f"(c) {who} is torch-free but includes {spec}, which reaches LibTorch: "
                      + " -> ".join([target] + chain))

    def check_library_file(self, path, lib):
        allowed = closure(self.libs, lib)
        for line, kind, spec in self.parse(path):
            target = self.resolve(path, kind, spec)
            if not self.libs[lib].torch:
                self.check_torch(path, line, kind, spec, f"library {lib}")
            if target is None:
                continue
            if target.startswith("src" + os.sep):
                other = self.library_of_private(target)
                if other != lib:
                    self.fail(path, line, f"(a) {lib} includes {target}, a private header of "
                              f"{other or 'no library'}: make it public (include/frugal/) or move the code")
            elif target.startswith(self.rel("include", "frugal") + os.sep):
                other = self.owner_of_public(target)
                if other is not None and other not in allowed:
                    self.fail(path, line, f"(b) {lib} includes {target} of library {other}, which {lib} "
                              f"does not depend on (DEPS in CMakeLists.txt: {' '.join(self.libs[lib].deps) or '-'})")

    def check_tools_file(self, path, own="tools"):
        torch_free = own == "tools" and os.path.basename(path).startswith(("cmd_", "cli."))
        for line, kind, spec in self.parse(path):
            if torch_free:
                self.check_torch(path, line, kind, spec, "this part of the torch-free `frugal`")
            target = self.resolve(path, kind, spec)
            if target is None:
                continue
            if not (target.startswith(self.rel("include", "frugal") + os.sep)
                    or target.startswith(own + os.sep)):
                self.fail(path, line, f"(d) {own} include only the public API (include/frugal/) and "
                          f"their own headers, not {target}")

    def run(self):
        if not self.libs:
            self.problems.append("CMakeLists.txt: no frugal_library(...) lines found")
        for lib in self.libs.values():
            for path in source_files(self.root, self.rel("src", lib.folder)):
                if self.library_of_private(path) == lib.name:
                    self.check_library_file(path, lib.name)
        for path in source_files(self.root, self.rel("include", "frugal")):
            lib = self.owner_of_public(path)
            if lib is None or lib not in self.libs:
                self.fail(path, 1, "a public header of no library: put it in include/frugal/<library>/")
                continue
            self.check_library_file(path, lib)
        for path in source_files(self.root, "tools"):
            self.check_tools_file(path)
        # The Python binding is a front end as tools/ is: the public API only.
        for path in source_files(self.root, "python"):
            self.check_tools_file(path, own="python")
        return self.problems


def check(root):
    problems = Checker(root).run()
    for p in problems:
        print(p)
    return problems


def self_test():
    """A fake tree that breaks each rule once, beside uses that are allowed: exactly the broken ones
    must be reported."""
    files = {
        "CMakeLists.txt": "frugal_library(util DEPS PkgConfig::X)\n"
                          "frugal_library(image DEPS frugal_util)\n"
                          "# frugal_library(ghost DEPS frugal_util)\n"
                          "frugal_library(loader TORCH DEPS frugal_image frugal_util frugal_gpu)\n"
                          "frugal_library(train TORCH DEPS frugal_loader)\n"
                          "frugal_library(files DIR train/files DEPS frugal_util)\n",
        "cmake/gpu.cmake": "add_library(frugal_gpu STATIC x)\n"
                           "target_link_libraries(frugal_gpu PUBLIC frugal_image frugal_util Threads::Threads)\n",
        "include/frugal/util/util.h": "#pragma once\n#include <string>\n",
        "include/frugal/util/hash.h": '#include "frugal/util/util.h"\n',
        "include/frugal/image/image.h": '#include "frugal/util/util.h"\n',
        "include/frugal/loader/loader.h": "#include <torch/torch.h>\n",
        "include/frugal/train/step.h": '#include "frugal/loader/loader.h"\n',
        "include/frugal/orphan.h": "",  # not in a library's folder
        "include/frugal/ghost/ghost.h": "",  # the folder of no library (ghost is commented out)
        "src/util/hash.cpp": '#include "frugal/util/hash.h"\n#include <ATen/ATen.h>\n',
        "src/image/resize.h": '#include "frugal/image/image.h"\n',
        "src/image/resize.cpp": '#include "image/resize.h"\n#include "resize.h"\n#include "frugal/loader/loader.h"\n',
        "src/gpu/plan.h": '#include "frugal/image/image.h"\n',
        "src/gpu/plan.cpp": '#include "gpu/plan.h"\n#include "../loader/oom.h"\n',
        "src/loader/oom.h": "#include <c10/core/Device.h>\n",
        "src/loader/loader.cpp": '#include "gpu/plan.h"\n#include "frugal/train/step.h"\n#include "frugal/image/image.h"\n',
        "src/train/run.cpp": '#include "frugal/image/image.h"\n#include "loader/oom.h"\n#include "files/names.h"\n',
        "src/train/files/names.h": '#include "frugal/util/hash.h"\n',
        "src/train/files/names.cpp": '#include "names.h"\n#include "frugal/train/step.h"\n',
        "tools/frugal/cmd_ls.cpp": '#include "frugal/image/image.h"\n#include "cli.h"\n#include "frugal/train/step.h"\n',
        "tools/frugal/cli.h": "#include <vector>\n",
        "tools/frugal/torch_cmd_train.cpp": '#include "frugal/train/step.h"\n#include "loader/oom.h"\n',
    }
    expected = {
        ("src/util/hash.cpp", 2, "(c)"),  # <ATen/ATen.h> in torch-free util
        ("src/image/resize.cpp", 3, "(b)"),  # image does not depend on loader
        ("src/image/resize.cpp", 3, "(c)"),  # ...and loader.h reaches torch
        ("src/gpu/plan.cpp", 2, "(a)"),  # loader's private header, by a relative path
        ("src/gpu/plan.cpp", 2, "(c)"),  # ...which reaches torch
        ("src/loader/loader.cpp", 1, "(a)"),  # gpu's private header
        ("src/loader/loader.cpp", 2, "(b)"),  # loader does not depend on train
        ("src/train/run.cpp", 2, "(a)"),  # loader's private header
        ("src/train/run.cpp", 3, "(a)"),  # a nested library's private header
        ("src/train/files/names.cpp", 2, "(b)"),  # files depends on util only
        ("src/train/files/names.cpp", 2, "(c)"),
        ("include/frugal/orphan.h", 1, "public header of no library"),
        ("include/frugal/ghost/ghost.h", 1, "public header of no library"),
        ("tools/frugal/cmd_ls.cpp", 3, "(c)"),  # cmd_* is linked into the torch-free frugal
        ("tools/frugal/torch_cmd_train.cpp", 2, "(d)"),
    }
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        problems = Checker(root).run()
    got = set()
    for p in problems:
        m = re.match(r"(.*?):(\d+): (\(\w\)|a public header of no library)", p)
        got.add((m.group(1), int(m.group(2)), "public header of no library" if m.group(3).startswith("a ")
                 else m.group(3)) if m else (p, 0, "?"))
    missed, extra = expected - got, got - expected
    for e in sorted(missed):
        print("self-test: not reported:", e)
    for e in sorted(extra):
        print("self-test: reported but allowed:", e)
    if missed or extra:
        print("self-test: FAILED; all reports:")
        for p in problems:
            print("  " + p)
        return 1
    print(f"self-test: the {len(expected)} broken rules in the fake tree are reported, nothing else")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    root = os.path.abspath(args.root)
    problems = check(root)
    if problems:
        print(f"check_includes: {len(problems)} include(s) break the layering (CONTRIBUTING.md, "
              "'Dependency rules')")
        return 1
    print("check_includes: every include follows the declared dependencies")
    return 0


if __name__ == "__main__":
    sys.exit(main())

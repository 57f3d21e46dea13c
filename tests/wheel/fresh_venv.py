"""fresh_venv.py DIR DIST...: a virtual environment at DIR holding only the distributions named
(and what they require, recursively, extras included), linked from the Python running this (no
download): what a notebook has before frugal is installed (torch and numpy). pip sees them as
installed."""
import importlib.metadata as md
import os
import re
import subprocess
import sys

from pip._vendor.packaging.requirements import Requirement

target, names = sys.argv[1], sys.argv[2:] + ["pip"]  # pip is linked like the rest
subprocess.run([sys.executable, "-m", "venv", "--without-pip", target], check=True)
site = os.path.join(target, "lib", f"python{sys.version_info.major}.{sys.version_info.minor}", "site-packages")
seen, todo, linked = set(), [(n, frozenset()) for n in names], set()
while todo:
    name, extras = todo.pop()
    key = (re.sub(r"[-_.]+", "-", name).lower(), extras)
    if key in seen:
        continue
    seen.add(key)
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        continue  # a requirement of another platform or Python, not installed here
    for text in dist.requires or []:
        req = Requirement(text)
        if req.marker and not any(req.marker.evaluate({"extra": e}) for e in (extras or {""})):
            continue
        todo.append((req.name, frozenset(req.extras)))
    for f in dist.files or []:
        top = str(f).split("/")[0]
        src = os.path.join(str(dist.locate_file("")), top)
        if top in ("..", "") or top in linked or top.endswith(".pth") or not os.path.exists(src):
            continue
        os.symlink(src, os.path.join(site, top))
        linked.add(top)
print(" ".join(sorted({k for k, _ in seen})))

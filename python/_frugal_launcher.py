"""`frugal` and `frugal-torch` on PATH after `pip install` of a frugal wheel (`make wheel`).

The programs are inside the package, in frugal/bin/; this runs them in place of the Python
process. It imports nothing of frugal or torch (the package's __init__ imports torch, seconds).
"""
import importlib.util
import os
import sys


def _program(name):
    """frugal/bin/NAME of a wheel, else the build's own (an install from source: `make python`)."""
    spec = importlib.util.find_spec("frugal")
    here = os.path.dirname(spec.origin) if spec and spec.origin else ""
    exe = os.path.join(here, "bin", name)
    if os.access(exe, os.X_OK):
        return exe
    info = {}
    try:  # read as a file: importing frugal._build_info would import the package, and torch
        with open(os.path.join(here, "_build_info.py")) as f:
            exec(f.read(), info)
    except OSError:
        pass
    built = os.path.join(info.get("bin_dir", ""), name)
    if info.get("bin_dir") and os.access(built, os.X_OK):
        return built
    sys.stderr.write("frugal: this installation of the frugal package has no %s program (not in %s%s): it "
                     "was installed from source, which builds the Python module only; install a wheel made "
                     "by `make wheel`, or build the programs with `make tools`\n"
                     % (name, exe, " nor " + built if info.get("bin_dir") else ""))
    sys.exit(1)


def _run(name):
    exe = _program(name)
    os.execv(exe, [exe] + sys.argv[1:])


def frugal():
    _run("frugal")


def frugal_torch():
    _run("frugal-torch")

# import frugal holds the running torch to the one the package was built against.
import subprocess
import sys


def test_another_torch_is_a_clear_error_naming_both_versions_and_the_rebuild():
    code = "import torch; torch.__version__ = '0.0.1'; import frugal"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={"PYTHONPATH": ":".join(p for p in sys.path if p), "PATH": "/usr/bin:/bin"})
    assert r.returncode != 0
    err = r.stderr.strip().splitlines()[-1]
    import frugal
    assert "ImportError" in err and "0.0.1" in err and frugal._build_info.torch_version in err, err
    assert "--no-build-isolation" in err and "make python" in err, err


def test_the_module_is_this_torchs():
    import torch
    import frugal
    assert frugal._build_info.torch_version == torch.__version__

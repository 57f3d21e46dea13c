# The README's "In your own training loop" block, run as written: only its edit-me lines are
# replaced (tiny data, a tiny image size, a deadline of a second, then a long one). Session 1
# must stop saved with exit 75; session 2 must resume and finish with exit 0.
import os
import re
import subprocess
import sys

from conftest import make_index_zip

README = os.path.join(os.environ.get("FRUGAL_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                      "README.md")
MARKER = "# (edit the lines above; the rest stays as it is)"


def block():
    text = open(README).read()
    m = re.search(r"<!-- python-guide: loop -->\n```python\n(.*?)```\n<!-- python-guide: end -->", text, re.S)
    assert m, "README lacks the python-guide block"
    return m.group(1)


def test_the_readme_loop_stops_saved_then_resumes_and_finishes(tmp_path):
    code = block()
    head, rest = code.split(MARKER + "\n")
    names = re.findall(r"^([A-Z][A-Z, ]*?) = ", head, re.M)
    assert names == ["DATA", "RUN", "EPOCHS, SIZE, DEADLINE"], names
    lines = [l for l in head.splitlines() if not re.match(r"^[A-Z][A-Z, ]* = ", l)]
    data = make_index_zip(tmp_path / "d.zip", 150)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    logs = []
    for session, deadline in enumerate(["1s", "1h"], 1):
        edits = [f"DATA = {data!r}", f"RUN = {str(tmp_path / 'runs' / 'mine')!r}",
                 f"EPOCHS, SIZE, DEADLINE = 2, 32, {deadline!r}"]
        script = "\n".join(lines + edits) + "\n" + MARKER + "\n" + rest
        path = tmp_path / f"session{session}.py"
        path.write_text(script)
        r = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=600)
        logs.append(r)
        if session == 1:
            assert r.returncode == 75, r.stderr[-2000:]
            assert "stopping at the deadline" in r.stderr
        else:
            assert r.returncode == 0, r.stderr[-2000:]
            assert "resumed" in r.stderr, r.stderr[-2000:]
    ckpts = sorted(os.listdir(tmp_path / "runs" / "mine"))
    assert any(f.startswith("ckpt-e0002") for f in ckpts), ckpts

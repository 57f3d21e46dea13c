# frugal.report(run): the run's page written as `frugal report` writes it, returned as a Report that
# a notebook shows inline (_repr_html_: the page in a sandboxed iframe); errors as frugal.Error.
import html
import os
import subprocess

import pytest

from conftest import make_index_zip


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    import frugal
    d = tmp_path_factory.mktemp("report")
    data = make_index_zip(d / "data.zip", 90)
    run = d / "run"
    subprocess.run([frugal._program("frugal-torch"), "train", "--data", data, "--run", str(run), "--model", "cnn",
                    "--epochs", "2", "--batch-size", "16", "--workers", "1", "--val-split", "0.3"],
                   check=True, capture_output=True)
    return run


def test_report_writes_the_page_and_shows_it_inline(run):
    import frugal
    r = frugal.report(run, worst=8)
    assert isinstance(r, frugal.Report)
    assert r.path == os.path.join(str(run), "report.html") and os.path.getsize(r.path) == len(r.html.encode())
    assert "confusion-normalised" in r.html and r.html.count('class="thumb"') == 8
    inline = r._repr_html_()
    assert inline.startswith("<iframe sandbox ") and 'srcdoc="' in inline
    assert "<script" not in inline and html.unescape(inline.split('srcdoc="', 1)[1].rsplit('"', 1)[0]) == r.html


def test_report_to_a_file_of_ones_choice(run, tmp_path):
    import frugal
    r = frugal.report(run, out=tmp_path / "page.html")
    assert r.path == str(tmp_path / "page.html") and os.path.exists(r.path)


def test_a_folder_that_is_no_run_is_a_frugal_error(tmp_path):
    import frugal
    with pytest.raises(frugal.Error) as e:
        frugal.report(tmp_path)
    assert e.value.exit_code == 3 and "config.json" in str(e.value)

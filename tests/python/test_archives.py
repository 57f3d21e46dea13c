# frugal.split / join / verify: the CLI's archive commands as functions.
import hashlib
import os

import pytest

import frugal
from conftest import make_index_zip


def sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_split_join_verify_round_trip(tmp_path):
    z = make_index_zip(tmp_path / "d.zip", 200)
    original = sha(z)
    parts = tmp_path / "parts"
    r = frugal.split(z, size="20K", out=parts)
    assert len(r["parts"]) >= 2 and r["sha256"] == original
    assert frugal.verify(r["manifest"])["ok"]
    os.remove(z)
    j = frugal.join(r["manifest"], out=tmp_path / "back.zip", delete_parts=True)
    assert sha(j["output"]) == original and j["sha256"] == original
    assert not any(p.name.startswith("d.zip.") and p.name.endswith(tuple("0123456789")) for p in parts.iterdir())
    v = frugal.verify(tmp_path / "back.zip")
    assert v["ok"] and v["entries_checked"] == 200 and v["bad"] == []


def test_verify_reports_a_damaged_entry(tmp_path):
    z = make_index_zip(tmp_path / "d.zip", 20)
    data = bytearray(open(z, "rb").read())
    data[200] ^= 0xFF  # inside the first entry's bytes
    open(z, "wb").write(bytes(data))
    v = frugal.verify(z)
    assert not v["ok"] and v["bad"]


def test_a_missing_file_is_a_frugal_error(tmp_path):
    with pytest.raises(frugal.Error):
        frugal.split(tmp_path / "nope.zip")

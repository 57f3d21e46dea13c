# What the core notes when a frugal.Loader opens its data (its size and classes, "validating on a
# stable 5%") is said once per data and line in a process, so a notebook that makes loaders in a
# loop is not flooded; other data still gets its own notes.
import os

import pytest

import frugal
from conftest import make_index_zip


def test_a_loader_made_again_on_the_same_data_notes_nothing_new(tmp_path, capfd):
    first = make_index_zip(tmp_path / "first.zip", 30)
    second = make_index_zip(tmp_path / "second.zip", 24)
    for _ in range(3):
        frugal.Loader(first, batch_size=4, image_size=16, workers=1)
    frugal.Loader(second, batch_size=4, image_size=16, workers=1)
    frugal.Loader(second, batch_size=4, image_size=16, workers=1)
    err = capfd.readouterr().err
    assert err.count("first.zip: 30 images in 3 classes") == 1, err
    assert err.count("second.zip: 24 images in 3 classes") == 1, err
    assert err.count("validating on a stable 5%") == 2, err  # once for each data


def test_a_loader_that_fails_still_says_its_notes_and_gives_stderr_back(tmp_path, capfd):
    data = make_index_zip(tmp_path / "d.zip", 12)
    val = make_index_zip(tmp_path / "v.zip", 6, classes=2)
    with pytest.raises(frugal.Error, match="same classes") as e:
        frugal.Loader(data, val=val, batch_size=4, image_size=16)
    assert e.value.kind == "invalid"
    os.write(2, b"stderr is stderr again\n")
    err = capfd.readouterr().err
    assert "d.zip: 12 images in 3 classes" in err and "stderr is stderr again" in err, err

# frugal.Loader reads the data `frugal train` reads with the same options (issue 42, items 2-4):
# exclude= (files never read, counted as "excluded" in Loader.skipped), val_labels= with
# val_label_columns= and val_images_dir= (Tiny-ImageNet's val/val_annotations.txt labels the
# validation folder alone; the training data keeps its class folders), and label_kind= (CIFAR-100's
# fine or coarse labels). Bad values are frugal.Error with the CLI's exit code and words.
import io
import os
import pickle
import tarfile
import zipfile

import numpy as np
import pytest

import frugal
from conftest import sample_ids


def png(i, size=16):
    """An image of one colour spelling i (conftest.sample_ids reads it back)."""
    from PIL import Image
    buf = io.BytesIO()
    Image.new("RGB", (size, size), (i % 256, i // 256, 0)).save(buf, "PNG")
    return buf.getvalue()


def put(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def ids_and_labels(loader):
    out = {}
    for x, y in loader:
        for i, label in zip(sample_ids(x), y.tolist()):
            out[i] = loader.classes[label]
    return out


# ---- exclude= -------------------------------------------------------------------------------------

def test_exclude_leaves_the_files_out_and_counts_them(index_zip):
    whole = frugal.Loader(index_zip, batch_size=16, image_size=16, train=False, val_split=0)
    assert whole.num_samples == 120 and "excluded" not in whole.skipped
    # A path, a name in any folder (no '/'), a glob within one folder.
    gone = {0, 1, 11, 14, 17}
    loader = frugal.Loader(index_zip, batch_size=16, image_size=16, train=False, val_split=0,
                           exclude=["class0/img00000.png", "img00001.png", "class2/img0001*.png"])
    assert loader.num_samples == 115
    assert loader.skipped["excluded"] == len(gone)
    assert sorted(ids_and_labels(loader)) == sorted(set(range(120)) - gone)
    # One pattern as a plain string, as one --exclude.
    one = frugal.Loader(index_zip, batch_size=16, image_size=16, val_split=0, exclude="**/img0000*.png")
    assert one.num_samples == 110 and one.skipped["excluded"] == 10


def test_exclude_refuses_what_the_cli_refuses(index_zip):
    with pytest.raises(frugal.Error) as e:
        frugal.Loader(index_zip, exclude=["class0/img00000.png", ""])
    assert e.value.exit_code == 2 and e.value.kind == "usage"
    assert 'exclude=: expected a path inside the data or a glob, found ""' in str(e.value)
    with pytest.raises(frugal.Error) as e:
        frugal.Loader(index_zip, exclude=[3])
    assert e.value.exit_code == 2 and "exclude=" in str(e.value)


# ---- val_labels= ----------------------------------------------------------------------------------

WNIDS = ["n01443537", "n01629819"]


@pytest.fixture
def tiny(tmp_path):
    """Tiny-ImageNet as downloaded: train/<wnid>/images/ (ids 0-15, image i of class i % 2) beside
    <wnid>_boxes.txt; val/images/ (ids 100-107) labelled by the header-less, tab-separated
    val/val_annotations.txt (val_i of WNIDS[(i // 2) % 2], unlike the training images' rule)."""
    root = tmp_path / "tiny"
    for i in range(16):
        wnid = WNIDS[i % 2]
        put(f"{root}/train/{wnid}/images/{wnid}_{i}.png", png(i))
    for wnid in WNIDS:
        put(f"{root}/train/{wnid}/{wnid}_boxes.txt", f"{wnid}_0.png\t0\t0\t15\t15\n")
    rows = []
    for i in range(8):
        put(f"{root}/val/images/val_{i}.png", png(100 + i))
        rows.append(f"val_{i}.png\t{WNIDS[(i // 2) % 2]}\t0\t10\t12\t15")
    put(f"{root}/val/val_annotations.txt", "\n".join(rows) + "\n")
    put(f"{tmp_path}/stray_annotations.txt", "\n".join(rows[:-1] + ["val_7.png\tn09999999\t0\t0\t1\t1"]) + "\n")
    return str(root)


VAL = dict(val_labels="val/val_annotations.txt", val_images_dir="val/images", labels_header="no",
           batch_size=4, image_size=16, train=False)


def test_val_labels_label_the_validation_data_alone(tiny):
    val = frugal.Loader(tiny, subset="val", val_label_columns="0,1", **VAL)
    assert val.classes == WNIDS and val.num_samples == 8
    assert ids_and_labels(val) == {100 + i: WNIDS[(i // 2) % 2] for i in range(8)}
    # The training data keeps its class folders: the file does not label it.
    train = frugal.Loader(tiny, subset="train", **VAL)
    assert train.classes == WNIDS and train.num_samples == 16
    assert ids_and_labels(train) == {i: WNIDS[i % 2] for i in range(16)}


def test_val_labels_refusals_are_the_clis(tiny, tmp_path):
    with pytest.raises(frugal.Error) as e:  # a header-less file under labels_header "auto"
        frugal.Loader(tiny, subset="val", val_labels="val/val_annotations.txt", val_images_dir="val/images")
    assert e.value.exit_code == 2 and "labels_header=" in str(e.value)
    with pytest.raises(frugal.Error) as e:  # a label that is no training class
        frugal.Loader(tiny, **{**VAL, "val_labels": str(tmp_path / "stray_annotations.txt")})
    assert e.value.exit_code == 3 and '"n09999999"' in str(e.value) and "stray_annotations.txt" in str(e.value)
    with pytest.raises(frugal.Error) as e:  # no validation data of its own: a split of DATA
        frugal.Loader(os.path.join(tiny, "train"), **VAL)
    assert e.value.exit_code == 2 and "val_labels=: expected validation data of its own" in str(e.value)
    assert "val=" in str(e.value)
    with pytest.raises(frugal.Error) as e:  # the folder without the file
        frugal.Loader(tiny, val_images_dir="val/images")
    assert e.value.exit_code == 2 and "val_images_dir=: expected val_labels= FILE beside it" in str(e.value)


# ---- label_kind= ----------------------------------------------------------------------------------

FINE, COARSE = [0, 1, 2, 3, 4, 5] * 3, [0, 0, 1, 1, 2, 2] * 3


@pytest.fixture
def cifar100(tmp_path):
    """A CIFAR-100 python tarball of 18 training images (image i: every byte i, fine label FINE[i],
    coarse COARSE[i]) and 6 test ones."""
    a = np.repeat(np.arange(18, dtype=np.uint8)[:, None], 3072, axis=1)
    files = {
        "train": {b"data": a, b"fine_labels": FINE, b"coarse_labels": COARSE, b"filenames": [b"f"] * 18,
                  b"batch_label": b"training batch 1 of 1"},
        "test": {b"data": a[:6], b"fine_labels": FINE[:6], b"coarse_labels": COARSE[:6], b"filenames": [b"f"] * 6,
                 b"batch_label": b"testing batch 1 of 1"},
        "meta": {b"fine_label_names": [b"fine%d" % k for k in range(100)],
                 b"coarse_label_names": [b"coarse%d" % k for k in range(20)]}}
    path = tmp_path / "cifar-100-python.tar.gz"
    with tarfile.open(path, "w:gz") as t:
        for name, obj in files.items():
            data = pickle.dumps(obj, protocol=2)
            info = tarfile.TarInfo("cifar-100-python/" + name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return str(path)


def labels_by_byte(loader):
    out = {}
    for x, y in loader:
        for v, label in zip(x[:, 0, 16, 16].tolist(), y.tolist()):
            out[v] = loader.classes[label]
    return out


def test_label_kind_reads_fine_or_coarse_labels(cifar100):
    kw = dict(batch_size=6, image_size=32, train=False, val=cifar100 + ":test")
    fine = frugal.Loader(cifar100, **kw)
    assert len(fine.classes) == 6 and fine.num_samples == 18
    assert labels_by_byte(fine) == {i: f"fine{FINE[i]}" for i in range(18)}
    assert frugal.Loader(cifar100, label_kind="fine", **kw).classes == fine.classes
    coarse = frugal.Loader(cifar100, label_kind="coarse", **kw)
    assert coarse.classes == ["coarse0", "coarse1", "coarse2"] and coarse.num_samples == 18
    assert labels_by_byte(coarse) == {i: f"coarse{COARSE[i]}" for i in range(18)}
    val = frugal.Loader(cifar100, label_kind="coarse", subset="val", **kw)
    assert val.num_samples == 6 and labels_by_byte(val) == {i: f"coarse{COARSE[i]}" for i in range(6)}


def test_label_kind_refuses_what_the_cli_refuses(cifar100, index_zip):
    for data in (cifar100, index_zip):  # refused before any data is read, as the CLI's parser does
        with pytest.raises(frugal.Error) as e:
            frugal.Loader(data, label_kind="medium")
        assert e.value.exit_code == 2 and e.value.kind == "usage"
        assert 'label_kind=: expected one of fine, coarse, found "medium"' in str(e.value)


# ---- name_encoding=, cache_decompressed= (the options of every command that reads DATA) -----------

class _Latin1Name(zipfile.ZipInfo):
    """A zip entry whose name is written in Latin-1, without the UTF-8 flag (as old zip tools do)."""

    def _encodeFilenameFlags(self):
        return self.filename.encode("latin-1"), self.flag_bits & ~0x800


def test_name_encoding_decodes_class_folders_that_are_not_utf8(tmp_path):
    path = str(tmp_path / "latin.zip")
    with zipfile.ZipFile(path, "w") as z:
        for i in range(12):
            z.writestr(_Latin1Name(f"{['café', 'crème'][i % 2]}/x{i}.png"), png(i))
    assert frugal.Loader(path, val_split=0).classes == ["caf\\xe9", "cr\\xe8me"]  # the bytes, escaped
    loader = frugal.Loader(path, val_split=0, name_encoding="latin1", batch_size=4, image_size=16, train=False)
    assert loader.classes == ["café", "crème"]
    assert ids_and_labels(loader) == {i: ["café", "crème"][i % 2] for i in range(12)}
    with pytest.raises(frugal.Error) as e:
        frugal.Loader(path, name_encoding="nope")
    assert e.value.exit_code == 2 and "name_encoding= nope: expected an encoding iconv knows" in str(e.value)


def test_cache_decompressed_reads_a_compressed_tar_from_the_cache(tmp_path, monkeypatch):
    path = str(tmp_path / "d.tar.gz")
    with tarfile.open(path, "w:gz") as t:
        for i in range(12):
            data = png(i)
            info = tarfile.TarInfo(f"c{i % 2}/x{i}.png")
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    cache = tmp_path / "cache"
    monkeypatch.setenv("FRUGAL_CACHE_DIR", str(cache))
    kw = dict(val_split=0, batch_size=4, image_size=16, train=False)
    with pytest.raises(frugal.Error) as e:  # refused, saying which keyword reads it
        frugal.Loader(path, **kw)
    assert "run the same command with cache_decompressed=" in str(e.value) and not cache.exists()
    loader = frugal.Loader(path, cache_decompressed=True, **kw)
    assert [p.name for p in (cache / "decompressed").glob("d-*.tar")]
    assert ids_and_labels(loader) == {i: f"c{i % 2}" for i in range(12)}

# frugal.Loader takes the label options of `frugal train` (issue 42): label_separator= for a column
# of tag lists (multi-hot float targets, the tags named as classes), and labels_header= for a label
# file without a header (Tiny-ImageNet's val_annotations.txt), refused under "auto"; labels_are_classes=
# takes each whole label as one class.
import io
import zipfile

import pytest
import torch

import frugal
from conftest import sample_ids

TAGS = ["clear", "haze", "primary", "road"]


def tags_of(i):
    return [t for k, t in enumerate(TAGS) if (i >> k) & 1]


def png(i, size=16):
    from PIL import Image
    buf = io.BytesIO()
    Image.new("RGB", (size, size), (i % 256, i // 256, 0)).save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture
def planet_zip(tmp_path):
    """48 images, image i tagged by the bits of i % 16 (space-separated; none for 0 and 16 ...)."""
    path = tmp_path / "planet.zip"
    with zipfile.ZipFile(path, "w") as z:
        rows = ["image_name,tags"]
        for i in range(48):
            z.writestr(f"train-jpg/train_{i}.png", png(i))
            rows.append(f"train_{i},{' '.join(tags_of(i % 16))}")
        z.writestr("train_v2.csv", "\n".join(rows) + "\n")
    return str(path)


def test_tag_lists_need_label_separator(planet_zip):
    with pytest.raises(frugal.Error) as e:
        frugal.Loader(planet_zip, labels="train_v2.csv", images_dir="train-jpg")
    assert e.value.exit_code == 2 and "label_separator=" in str(e.value)


def test_label_separator_gives_multi_hot_targets_of_each_images_tags(planet_zip):
    loader = frugal.Loader(planet_zip, labels="train_v2.csv", images_dir="train-jpg", label_separator=" ",
                           batch_size=8, image_size=16, val_split=0, train=False)
    assert loader.multi_label and loader.classes == TAGS
    seen = 0
    for x, y in loader:
        assert y.dtype == torch.float32 and y.shape == (x.shape[0], len(TAGS))
        for i, row in zip(sample_ids(x), y.tolist()):
            assert [t for t, v in zip(TAGS, row) if v == 1.0] == tags_of(i % 16), i
            seen += 1
    assert seen == 48


def test_labels_header_no_reads_a_headerless_file_whole(tmp_path):
    path = tmp_path / "tiny.zip"
    with zipfile.ZipFile(path, "w") as z:
        rows = []
        for i in range(8):
            z.writestr(f"val/images/val_{i}.JPEG", png(i))
            rows.append(f"val_{i}.JPEG\t{['n01443537', 'n03444034'][i % 2]}\t0\t32\t44\t62")
        z.writestr("val/val_annotations.txt", "\n".join(rows) + "\n")
    with pytest.raises(frugal.Error) as e:
        frugal.Loader(str(path), labels="val/val_annotations.txt", images_dir="val/images")
    assert e.value.exit_code == 2 and "labels_header=" in str(e.value)
    loader = frugal.Loader(str(path), labels="val/val_annotations.txt", images_dir="val/images",
                           labels_header="no", label_columns="0,1", batch_size=4, image_size=16, val_split=0)
    assert loader.num_samples == 8 and loader.classes == ["n01443537", "n03444034"]
    assert sorted(i for x, _ in loader for i in sample_ids(x)) == list(range(8))


def test_labels_are_classes_takes_each_whole_label_as_one_class(planet_zip):
    loader = frugal.Loader(planet_zip, labels="train_v2.csv", images_dir="train-jpg", labels_are_classes=True,
                           batch_size=8, image_size=16, val_split=0)
    assert not loader.multi_label and "clear haze" in loader.classes

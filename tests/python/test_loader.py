# frugal.Loader: batches, determinism, resume mid-epoch, validation split, ranks, fork refusal, GIL.
import os
import threading
import time

import pytest
import torch

import frugal
from conftest import make_index_zip, sample_ids


def batches(loader):
    return [(x.clone(), y.clone()) for x, y in loader]


def test_batches_have_the_documented_shape_and_type(index_zip):
    loader = frugal.Loader(index_zip, batch_size=16, image_size=24, val_split=0.1, workers=2)
    assert loader.classes == ["class0", "class1", "class2"]
    n = 0
    for x, y in loader:
        assert x.dtype == torch.uint8 and x.dim() == 4 and x.shape[1:] == (3, 24, 24)
        assert y.dtype == torch.int64 and y.shape == (x.shape[0],)
        n += 1
    assert n == len(loader) > 0
    x, _ = next(iter(frugal.Loader(index_zip, batch_size=4, image_size=24, normalize=True)))
    assert x.dtype == torch.float32


def test_labels_are_the_samples_classes_and_batches_do_not_depend_on_workers(index_zip):
    one = batches(frugal.Loader(index_zip, batch_size=8, image_size=24, workers=1, seed=3))
    two = batches(frugal.Loader(index_zip, batch_size=8, image_size=24, workers=2, seed=3))
    assert len(one) == len(two)
    for (x1, y1), (x2, y2) in zip(one, two):
        assert torch.equal(x1, x2) and torch.equal(y1, y2)
        assert [i % 3 for i in sample_ids(x1)] == y1.tolist()
    other = batches(frugal.Loader(index_zip, batch_size=8, image_size=24, seed=4))
    assert any(not torch.equal(a[0], b[0]) for a, b in zip(one, other))


def test_a_new_loader_resumes_mid_epoch_from_state_dict(index_zip):
    a = frugal.Loader(index_zip, batch_size=8, image_size=24, seed=1)
    a.set_epoch(1)  # a later epoch: the order is the epoch's
    it = iter(a)
    for _ in range(3):
        next(it)
    state = a.state_dict()
    rest = [(x.clone(), y.clone()) for x, y in it]
    assert a.epoch == 2 and a.state_dict()["position"] == 0
    b = frugal.Loader(index_zip, batch_size=8, image_size=24, seed=1)
    b.load_state_dict(state)
    resumed = batches(b)
    assert len(resumed) == len(rest) > 0
    for (x1, y1), (x2, y2) in zip(rest, resumed):
        assert torch.equal(x1, x2) and torch.equal(y1, y2)


def test_train_and_val_subsets_are_disjoint_and_stable(index_zip):
    def ids(subset):
        loader = frugal.Loader(index_zip, batch_size=10, image_size=24, val_split=0.25, subset=subset,
                               train=False)
        return [i for x, _ in loader for i in sample_ids(x)]
    train, val = ids("train"), ids("val")
    assert set(train).isdisjoint(val)
    assert sorted(train + val) == list(range(120))
    assert ids("val") == val and 10 <= len(val) <= 50


def test_val_split_0_holds_out_nothing(index_zip):
    # Issue 42: val_split=0.0 was taken for "unset" and held out 5% all the same.
    def size(subset, **kw):
        loader = frugal.Loader(index_zip, batch_size=10, image_size=24, subset=subset, train=False, **kw)
        return sum(len(sample_ids(x)) for x, _ in loader)
    assert size("train", val_split=0.0) == 120 and size("val", val_split=0.0) == 0
    assert 0 < size("val") < 20 and size("train") + size("val") == 120  # unset: a stable 5%


def test_ranks_each_read_their_share_once_per_epoch(index_zip):
    seen = []
    for rank in range(2):
        loader = frugal.Loader(index_zip, batch_size=8, image_size=24, rank=rank, world_size=2, seed=5)
        assert loader.rank == rank and loader.world_size == 2
        seen.append([i for x, _ in loader for i in sample_ids(x)])
        assert len(loader) == len(frugal.Loader(index_zip, batch_size=16, image_size=24, seed=5))
    assert set(seen[0]).isdisjoint(seen[1])
    assert len(seen[0]) + len(seen[1]) == frugal.Loader(index_zip, image_size=24).num_samples


def test_a_forked_child_is_refused_clearly(index_zip):
    loader = frugal.Loader(index_zip, batch_size=8, image_size=24)
    next(iter(loader))
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: any use must raise, never hang on the parent's threads
        os.close(r)
        try:
            next(iter(loader))
            os.write(w, b"no error")
        except frugal.Error as e:
            os.write(w, str(e).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        said = f.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status), "the child hung or crashed"
    assert "forked process" in said and "DataLoader" in said, said


def test_inside_a_dataloader_worker_it_is_refused(index_zip):
    class Wrapper(torch.utils.data.Dataset):
        def __len__(self):
            return 1

        def __getitem__(self, i):
            frugal.Loader(index_zip, batch_size=8, image_size=24)
            return 0

    dl = torch.utils.data.DataLoader(Wrapper(), num_workers=1)
    with pytest.raises(Exception, match="DataLoader worker"):
        next(iter(dl))


def test_errors_are_frugal_errors_with_the_cli_exit_code(tmp_path):
    with pytest.raises(frugal.Error) as e:
        frugal.Loader(tmp_path / "missing.zip")
    assert e.value.exit_code in (1, 2, 3) and "missing.zip" in str(e.value)
    one_class = make_index_zip(tmp_path / "one.zip", 10, classes=1)
    with pytest.raises(frugal.Error, match="at least 2 classes") as e:
        frugal.Loader(one_class)
    assert e.value.kind == "invalid" and e.value.exit_code == 3
    with pytest.raises(frugal.Error, match="subset="):
        frugal.Loader(one_class, subset="test")


def test_the_gil_is_released_while_a_batch_is_waited_for(tmp_path):
    from PIL import Image
    import io
    import zipfile
    import numpy as np
    rng = np.random.default_rng(0)
    path = tmp_path / "noise.zip"
    with zipfile.ZipFile(path, "w") as z:  # noise PNGs: slow to decode
        for i in range(48):
            buf = io.BytesIO()
            Image.fromarray(rng.integers(0, 255, (700, 700, 3), dtype=np.uint8)).save(buf, "PNG")
            z.writestr(f"c{i % 2}/{i}.png", buf.getvalue())
    loader = frugal.Loader(path, batch_size=32, image_size=224, workers=1, prefetch=1)
    count = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        time.sleep(0.05)
        it = iter(loader)
        before, t0 = count[0], time.perf_counter()
        next(it)
        waited, progress = time.perf_counter() - t0, count[0] - before
    finally:
        stop.set()
        t.join()
    assert waited > 0.05, f"the batch came in {waited:.3f} s: nothing was waited for"
    assert progress > 1000, f"the Python thread made {progress} steps in {waited:.2f} s: the GIL was held"


def test_max_file_bytes_skips_a_larger_file_and_a_raised_cap_reads_it(tmp_path, capfd):
    from PIL import Image
    for c in ("a", "b"):
        (tmp_path / "d" / c).mkdir(parents=True)
        for i in range(4):
            Image.new("RGB", (16, 16), (60 * i, 40, 90)).save(tmp_path / "d" / c / f"{i}.png")
    big = tmp_path / "d" / "a" / "big.jpg"
    Image.new("RGB", (16, 16), (200, 10, 10)).save(big)
    os.truncate(big, 2 << 20)  # a photo followed by zeros (sparse): 2 MiB
    small = frugal.Loader(tmp_path / "d", batch_size=4, image_size=16, val_split=0, max_file_bytes="1M")
    err = capfd.readouterr().err
    assert small.num_samples == 8
    assert "1 larger than max_file_bytes= (1.00 MiB)" in err and "big.jpg" in err, err
    for raised in (2 << 20, "4M"):
        loader = frugal.Loader(tmp_path / "d", batch_size=3, image_size=16, val_split=0, max_file_bytes=raised)
        assert loader.num_samples == 9
        assert sum(len(y) for _, y in loader) == 9 and loader._core.samples_bad == 0
    with pytest.raises(frugal.Error, match="max_file_bytes=") as e:
        frugal.Loader(tmp_path / "d", batch_size=4, max_file_bytes=-1)
    assert e.value.kind == "usage"

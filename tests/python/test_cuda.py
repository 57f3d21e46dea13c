# frugal.Loader(device="cuda") and the CUDA generator's state in a Checkpointer: skipped without a
# GPU (CI); scripts/gpu-check.sh runs this file on the lent GPU machine, as a plain script when
# pytest is not there (`python test_cuda.py`: each test in turn, exit 1 on a failure).
import os
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from conftest import make_index_zip  # noqa: E402

import frugal  # noqa: E402

try:
    import pytest
    needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
except ImportError:  # the GPU machine may have no pytest
    def needs_gpu(f):
        return f


def _data(d):
    return make_index_zip(os.path.join(d, "d.zip"), 96)


@needs_gpu
def test_cuda_batches_are_the_cpu_batches_on_the_device():
    with tempfile.TemporaryDirectory() as d:
        z = _data(d)
        cpu = [(x.clone(), y.clone()) for x, y in frugal.Loader(z, batch_size=16, image_size=32, seed=1)]
        cuda = frugal.Loader(z, batch_size=16, image_size=32, seed=1, device="cuda")
        got = [(x.cpu(), y.cpu(), x.device.type) for x, y in cuda]
        assert len(got) == len(cpu) > 2
        for (x, y, dev), (cx, cy) in zip(got, cpu):
            assert dev == "cuda" and torch.equal(x, cx) and torch.equal(y, cy)
        norm = frugal.Loader(z, batch_size=16, image_size=32, seed=1, device="cuda", normalize=True)
        x, _ = next(iter(norm))
        ref = frugal.Loader(z, batch_size=16, image_size=32, seed=1, normalize=True)
        rx, _ = next(iter(ref))
        assert x.is_cuda and x.dtype == torch.float32 and torch.allclose(x.cpu(), rx, atol=1e-5)


@needs_gpu
def test_dropout_on_the_gpu_resumes_exactly():
    with tempfile.TemporaryDirectory() as d:
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5)).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with frugal.Checkpointer(os.path.join(d, "run"), signals=False) as ckpt:
            ckpt.restore(model, opt)
            model(torch.ones(4, 8, device="cuda")).sum().backward()
            opt.step()
            ckpt.save(1, model, opt)
            ckpt.wait()
        expected = model(torch.ones(4, 8, device="cuda"))  # the draws after the save
        torch.cuda.manual_seed_all(123)  # another state, which restore must replace
        with frugal.Checkpointer(os.path.join(d, "run"), signals=False) as ckpt:
            assert ckpt.restore(model, opt) == 1
        assert torch.equal(model(torch.ones(4, 8, device="cuda")), expected)


def _cuda_loop(z, run, steps, stop_at=None):
    """A user's fp16 loop on the GPU: frugal.Loader(device="cuda"), autocast, a GradScaler whose
    first scale overflows fp16 (skipped steps), dropout on the CUDA generator, a Checkpointer that
    saves every 2 steps. Stops after `stop_at` steps (a kill), else returns what a run ends with."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 16 * 16, 64), torch.nn.ReLU(),
                                torch.nn.Dropout(0.3), torch.nn.Linear(64, 3)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0**24)
    loader = frugal.Loader(z, batch_size=16, image_size=16, seed=3, device="cuda", normalize=True)
    torch.cuda.manual_seed_all(99)  # what restore must replace
    with frugal.Checkpointer(run, signals=False) as ckpt:
        step = ckpt.restore(model, opt, scaler=scaler, loader=loader) or 0
        resumed = step
        while step < steps:
            for x, y in loader:
                with torch.autocast("cuda", dtype=torch.float16):
                    loss = torch.nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
                step += 1
                if step % 2 == 0:
                    ckpt.save(step, model, opt, scaler=scaler, loader=loader)
                if step == stop_at or step == steps:
                    break
            if step == stop_at:
                ckpt.wait()
                return None
        ckpt.wait()
    x, y = next(iter(loader))
    return resumed, model.state_dict(), opt.state_dict(), scaler.state_dict(), x, y


@needs_gpu
def test_fp16_loop_on_the_gpu_resumes_bitwise():
    with tempfile.TemporaryDirectory() as d:
        z = _data(d)  # 96 images: 6 batches an epoch, so the stop at step 4 is mid-epoch
        whole = _cuda_loop(z, os.path.join(d, "a"), 10)
        assert _cuda_loop(z, os.path.join(d, "b"), 10, stop_at=5) is None
        cut = _cuda_loop(z, os.path.join(d, "b"), 10)
        assert whole[0] == 0 and cut[0] == 4, (whole[0], cut[0])
        _, wa, oa, sa, xa, ya = whole
        _, wb, ob, sb, xb, yb = cut
        assert sa["scale"] < 2.0**24, sa  # the scaler really skipped steps (found inf)
        assert sa == sb, (sa, sb)
        assert all(torch.equal(wa[k], wb[k]) for k in wa)
        for i, s in oa["state"].items():
            assert all(torch.equal(s[k], ob["state"][i][k]) for k in s)
        assert torch.equal(xa, xb) and torch.equal(ya, yb) and xa.is_cuda


if __name__ == "__main__":
    if not torch.cuda.is_available():
        print("test_cuda: no CUDA device")
        sys.exit(77)
    failed = 0
    for name, f in list(globals().items()):
        if name.startswith("test_") and callable(f):
            try:
                f()
                print(f"PASS {name}")
            except Exception as e:  # report every test
                failed += 1
                print(f"FAIL {name}: {type(e).__name__}: {e}")
    sys.exit(1 if failed else 0)

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

#!/usr/bin/env python3
"""One side of bench/python_loader.sh: a Python loop over a loader of ARCHIVE, in images/s.

  frugal  frugal.Loader (import frugal from PYTHONPATH: build/python), iterated as its users do:
          `for images, labels in loader`, uint8 (N, C, H, W) batches;
  torch   what a PyTorch user writes today without frugal: a Dataset over the zip with zipfile
          (one ZipFile per worker), torchvision.io.decode_jpeg, transforms.v2 RandomResizedCrop +
          RandomHorizontalFlip, in a DataLoader. Its output is the same uint8 (C, H, W) images as
          frugal's, so neither side pays for a float conversion the other skips.

Usage: python_loader.py frugal|torch ARCHIVE [--workers 2] [--seconds 10] [--image-size 224]
                        [--batch-size 64]
Prints one JSON line, as recipe_loader.py does: {"images_per_s": ..., "images": ...}. As there
(and in `frugal bench loader`), the clock starts after the first batch, so worker start-up and the
first fill of the queues are not counted, and runs whole epochs (a new one each time round) until
--seconds have passed.
"""
import argparse, json, time


def timed(make_epoch, seconds):
    n, t0 = 0, None
    while True:
        for images, _labels in make_epoch():
            if t0 is None:  # skip start-up and the first batch
                t0 = time.time()
                continue
            n += images.shape[0]
            if time.time() - t0 > seconds:
                return n, time.time() - t0
        if t0 is None:
            raise SystemExit("python_loader: the loader gave no batches")


def frugal_side(a):
    import frugal
    # The training subset, as a training loop reads it: 95% of the archive (the default split);
    # an image costs the same whichever subset it is in.
    loader = frugal.Loader(a.archive, batch_size=a.batch_size, image_size=a.image_size, train=True, seed=0,
                           workers=a.workers, val_split=0.05, subset="train", device="cpu")
    return timed(lambda: loader, a.seconds)


def torch_side(a):
    import zipfile
    import torch
    from torch.utils.data import Dataset, DataLoader
    from torchvision.io import decode_jpeg, ImageReadMode
    from torchvision.transforms import v2

    class ZipJpegs(Dataset):
        def __init__(self, path, tf):
            self.path, self.tf, self.zf = path, tf, None
            with zipfile.ZipFile(path) as z:
                self.files = [f for f in z.namelist() if f.lower().endswith((".jpg", ".jpeg"))]
            self.classes = sorted({f.split("/")[-2] for f in self.files})
            self.idx = {c: i for i, c in enumerate(self.classes)}

        def __len__(self):
            return len(self.files)

        def __getitem__(self, i):
            if self.zf is None:  # one handle per worker, opened in the worker
                self.zf = zipfile.ZipFile(self.path)
            data = torch.frombuffer(bytearray(self.zf.read(self.files[i])), dtype=torch.uint8)
            img = decode_jpeg(data, mode=ImageReadMode.RGB)  # (3, H, W) uint8
            return self.tf(img), self.idx[self.files[i].split("/")[-2]]

    tf = v2.Compose([v2.RandomResizedCrop(a.image_size, antialias=True), v2.RandomHorizontalFlip()])
    torch.set_num_threads(1)
    dl = DataLoader(ZipJpegs(a.archive, tf), batch_size=a.batch_size, shuffle=True, num_workers=a.workers,
                    persistent_workers=a.workers > 0, drop_last=False)
    return timed(lambda: dl, a.seconds)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("side", choices=["frugal", "torch"])
    ap.add_argument("archive")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--image-size", type=int, default=224)
    ap.add_argument("--batch-size", type=int, default=64)
    a = ap.parse_args()
    n, secs = (frugal_side if a.side == "frugal" else torch_side)(a)
    print(json.dumps({"images_per_s": n / secs, "images": n, "seconds": secs}))


if __name__ == "__main__":
    main()

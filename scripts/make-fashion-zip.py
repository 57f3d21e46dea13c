#!/usr/bin/env python3
"""Fashion-MNIST as a zip of PNGs in class folders (class/NNNNN.png), from the IDX files.

Usage: make-fashion-zip.py OUT.zip [--idx-dir /usr/share/datasets/fashion-mnist] [--split train|t10k] [--count N]
"""
import argparse, gzip, io, zipfile
from pathlib import Path

import numpy as np
from PIL import Image

ap = argparse.ArgumentParser()
ap.add_argument("out"); ap.add_argument("--idx-dir", default="/usr/share/datasets/fashion-mnist")
ap.add_argument("--split", default="train"); ap.add_argument("--count", type=int, default=0)
a = ap.parse_args()
d = Path(a.idx_dir)
with gzip.open(d / f"{a.split}-images-idx3-ubyte.gz") as f:
    images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
with gzip.open(d / f"{a.split}-labels-idx1-ubyte.gz") as f:
    labels = np.frombuffer(f.read(), np.uint8, offset=8)
n = a.count or len(images)
with zipfile.ZipFile(a.out, "w", zipfile.ZIP_STORED) as z:
    for i in range(n):
        buf = io.BytesIO()
        Image.fromarray(images[i], "L").save(buf, "PNG")
        z.writestr(f"fashion/{labels[i]}/{i:05d}.png", buf.getvalue())
print(f"make-fashion-zip: {n} PNGs in {a.out}")

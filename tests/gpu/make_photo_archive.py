#!/usr/bin/env python3
"""A small class-folder archive of JPEG photos larger than 64 px for the GPU loader tests: mostly
baseline JPEGs, plus what nvJPEG's batched path does not take (a progressive JPEG, a CMYK JPEG,
a PNG), which must come out as the CPU makes them.

Usage: make_photo_archive.py OUT.zip"""
import io, sys, zipfile

import numpy as np
from PIL import Image

rng = np.random.default_rng(5)
files = []
for c in ("cats", "dogs"):
    for i in range(10):
        w, h = int(rng.integers(120, 200)), int(rng.integers(90, 160))
        yy, xx = np.mgrid[0:h, 0:w]
        a = np.stack([128 + 100 * np.sin(xx / (7 + k) + yy / (11 + i)) for k in range(3)], -1)
        a = np.clip(a + rng.normal(0, 12, a.shape), 0, 255).astype(np.uint8)
        img = Image.fromarray(a)
        b = io.BytesIO()
        if i == 7:
            img.convert("CMYK").save(b, "JPEG", quality=90)
        elif i == 8:
            img.save(b, "JPEG", quality=90, progressive=True)
        elif i == 9:
            img.save(b, "PNG")
        else:
            img.save(b, "JPEG", quality=90)
        files.append((f"{c}/{i}.{'png' if i == 9 else 'jpg'}", b.getvalue()))
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_STORED) as z:
    for name, data in files:
        z.writestr(name, data)

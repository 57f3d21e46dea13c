#!/usr/bin/env python3
"""A class-folder set of ImageNet-like JPEG photos for tests and benchmarks.

Cuts random crops (random scale, flip, size around 500x375) from the photographs scikit-image
ships (install it into the .venv: pip install scikit-image) and re-encodes them at quality ~90;
about 10% progressive, 2% grayscale and 1% CMYK, as real collections mix them. One class per source
photograph.

Usage: make-photos.py OUT_DIR [--count 2400] [--seed 0] [--zip OUT.zip]
"""
import argparse, io, random, zipfile
from pathlib import Path

from PIL import Image

SOURCES = ["astronaut.png", "chelsea.png", "coffee.png", "motorcycle_left.png", "rocket.jpg",
           "hubble_deep_field.jpg", "retina.jpg", "ihc.png", "grass.png", "gravel.png"]

def source_images():
    import skimage
    data = Path(skimage.__file__).parent / "data"
    out = {}
    for name in SOURCES:
        p = data / name
        if p.exists():
            out[p.stem] = Image.open(p).convert("RGB")
    if len(out) < 4:
        raise SystemExit(f"make-photos: too few source photos in {data}")
    return out

def make_one(src: Image.Image, rng: random.Random) -> Image.Image:
    w, h = src.size
    scale = rng.uniform(0.45, 1.0)
    cw, ch = int(w * scale ** 0.5), int(h * scale ** 0.5)
    x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
    img = src.crop((x, y, x + cw, y + ch))
    if rng.random() < 0.5:
        img = img.transpose(Image.FLIP_LEFT_RIGHT)
    long_side = rng.randint(400, 640)
    portrait = rng.random() < 0.25
    short_side = int(long_side * rng.uniform(0.66, 0.8))
    size = (short_side, long_side) if portrait else (long_side, short_side)
    return img.resize(size, Image.BICUBIC)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out"); ap.add_argument("--count", type=int, default=2400)
    ap.add_argument("--seed", type=int, default=0); ap.add_argument("--zip")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    sources = source_images()
    names = sorted(sources)
    out = Path(a.out)
    files = []
    for i in range(a.count):
        cls = names[i % len(names)]
        img = make_one(sources[cls], rng)
        kind = rng.random()
        kw = {"quality": rng.randint(88, 92)}
        if kind < 0.01:
            img = img.convert("CMYK")
        elif kind < 0.03:
            img = img.convert("L")
        elif kind < 0.13:
            kw["progressive"] = True
        buf = io.BytesIO()
        img.save(buf, "JPEG", **kw)
        rel = f"{cls}/{i:05d}.jpg"
        (out / cls).mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(buf.getvalue())
        files.append(rel)
    if a.zip:
        # Stored, as `frugal pack` stores already-compressed images.
        with zipfile.ZipFile(a.zip, "w", zipfile.ZIP_STORED) as z:
            for rel in files:
                z.write(out / rel, "photos/" + rel)
    print(f"make-photos: {len(files)} JPEGs in {len(names)} classes under {out}")

if __name__ == "__main__":
    main()

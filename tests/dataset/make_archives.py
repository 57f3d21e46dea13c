#!/usr/bin/env python3
"""Small dataset archives for the data tests, written into DIR with Python's zipfile."""
import io, sys, zipfile
from pathlib import Path
import numpy as np
from PIL import Image

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(3)

def img_bytes(fmt, w=40, h=30, mode="RGB", **kw):
    a = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    im = Image.fromarray(a).convert(mode)
    b = io.BytesIO(); im.save(b, fmt, **kw); return b.getvalue()

def npy_bytes(a):
    b = io.BytesIO(); np.save(b, a); return b.getvalue()

def write(name, files, compression=zipfile.ZIP_STORED):
    with zipfile.ZipFile(out / name, "w", compression) as z:
        for n, data in files:
            z.writestr(n, data)

# Class folders under a common root, with the junk real archives carry.
files = []
for c in ("cat", "dog", "eel"):
    for i in range(12):
        files.append((f"set/train/{c}/{i:03d}.jpg", img_bytes("JPEG", quality=90)))
files += [("set/train/cat/upper.JPG", img_bytes("JPEG")),
          ("set/train/dog/really_a_png.jpg", img_bytes("PNG")),
          ("__MACOSX/set/train/cat/._000.jpg", b"\x00\x05\x16\x07junk"),
          ("set/train/cat/._001.jpg", b"\x00\x05\x16\x07junk"),
          ("set/.DS_Store", b"\x00\x00\x00\x01Bud1"),
          ("set/train/dog/Thumbs.db", b"\xd0\xcf\x11\xe0"),
          ("set/train/eel/.hidden.jpg", img_bytes("JPEG")),
          ("set/README.txt", b"hello\n")]
write("folders.zip", files)
write("folders_deflated.zip", files, zipfile.ZIP_DEFLATED)
# The same plus new files, to check that the validation split does not move.
more = files + [(f"set/train/cat/new{i}.jpg", img_bytes("JPEG")) for i in range(10)]
write("folders_more.zip", more)

# labels.csv next to flat files.
files = [(f"data/img{i}.png", img_bytes("PNG")) for i in range(10)]
csv = "path,label\n" + "".join(f"img{i}.png,{'a' if i % 2 else 'b'}\n" for i in range(9))
write("csv.zip", files + [("data/labels.csv", csv.encode())])

# Labels from names.
files = [(f"pets/{c}.{i}.jpg", img_bytes("JPEG")) for c in ("cat", "dog") for i in range(5)]
write("pattern.zip", files + [("pets/notes.jpg", img_bytes("JPEG"))])

# Arrays: (N, H, W) uint8 with (N,) labels; stored so they are mapped from the archive.
x = rng.integers(0, 256, (30, 28, 28), dtype=np.uint8)
y = (np.arange(30) % 11).astype(np.int64)
write("npy_arrays.zip", [("x_train.npy", npy_bytes(x)), ("y_train.npy", npy_bytes(y))])
np.save(out / "npy_x.npy", x)
write("npy_files.zip", [(f"{c}/{i}.npy", npy_bytes(rng.integers(0, 256, (20, 24, 3), dtype=np.uint8)))
                        for c in ("a", "b") for i in range(4)])

# Images as they come: a class of WebP files only, one of GIF, BMP, TIFF, PNG and JPEG (a phone
# photo turned by EXIF among them), a class of HEIC photos only (recognised, not read), empty
# files, an AVIF, a text file: each skipped file counted by its reason.
def heic_bytes(brand=b"heic"):
    return b"\0\0\0\x18ftyp" + brand + b"\0\0\0\0mif1" + brand + bytes(rng.integers(0, 256, 200, dtype=np.uint8))

def exif_jpeg(orientation):
    ex = Image.Exif(); ex[0x0112] = orientation
    return img_bytes("JPEG", w=48, h=30, quality=90, exif=ex.tobytes())

files = [(f"shapes/webp_only/{i}.webp", img_bytes("WEBP", quality=80)) for i in range(6)]
files += [("shapes/mixed/a.gif", img_bytes("GIF")), ("shapes/mixed/b.bmp", img_bytes("BMP")),
          ("shapes/mixed/c.tif", img_bytes("TIFF")), ("shapes/mixed/d.png", img_bytes("PNG")),
          ("shapes/mixed/e.jpg", img_bytes("JPEG")), ("shapes/mixed/turned.jpg", exif_jpeg(6)),
          ("shapes/mixed/empty.jpg", b""), ("shapes/webp_only/empty.webp", b""),
          ("shapes/webp_only/x.avif", heic_bytes(b"avif")), ("shapes/notes.txt", b"shapes, drawn by hand\n")]
files += [(f"shapes/phone/IMG_{i:04d}.HEIC", heic_bytes()) for i in range(4)]
write("formats.zip", files)
write("formats_deflated.zip", files, zipfile.ZIP_DEFLATED)
# One class of JPEGs beside one of HEIC photos: training would find only one class.
files = [(f"set/a/{i}.jpg", img_bytes("JPEG")) for i in range(3)] + [(f"set/b/{i}.heic", heic_bytes()) for i in range(3)]
write("one_readable_class.zip", files)

# Grayscale PNGs of 28 px (Fashion-MNIST-like): one channel, small-image transforms.
write("gray28.zip", [(f"{c}/{i}.png", img_bytes("PNG", 28, 28, "L")) for c in ("0", "1", "2") for i in range(20)])

# Bad images: truncated JPEGs among good ones.
def bad_set(n_good, n_bad):
    files = [(f"k{i % 2}/{i}.jpg", img_bytes("JPEG")) for i in range(n_good)]
    files += [(f"k0/bad{i}.jpg", img_bytes("JPEG")[:200]) for i in range(n_bad)]
    return files
write("bad_many.zip", bad_set(97, 3))   # 3% > 1%
write("bad_few.zip", bad_set(299, 1))   # 0.33% <= 1%

# Larger than 64 px: random-resized-crop with DCT-scaled decoding, a progressive and a gray one.
files = [(f"big/{c}/{i}.jpg", img_bytes("JPEG", 150, 100, quality=90, progressive=(i == 1)))
         for c in ("p", "q") for i in range(6)]
files.append(("big/p/gray.jpg", img_bytes("JPEG", 150, 100, "L")))
write("big.zip", files)

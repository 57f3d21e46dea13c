#!/usr/bin/env python3
"""Writes test images of every supported kind into DIR, with PIL's decoding of each beside it.

For NAME.(jpg|png) it writes NAME.rgb and NAME.l: PIL's convert("RGB") / convert("L") pixels,
raw, after a "W H\n" line. 16-bit gray PNGs get numpy's high byte instead (PIL clips I;16 to L).
Resize references: resize_*.rgb are PIL crop+resize / torchvision Resize+CenterCrop outputs.
"""
import io, struct, sys, zlib
from pathlib import Path
import numpy as np
from PIL import Image

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(7)

def photo(w, h):
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    r = 128 + 100 * np.sin(x / 9.0) * np.cos(y / 13.0)
    g = 128 + 90 * np.cos((x + y) / 17.0)
    b = 255 * (x / w) * (y / h)
    img = np.stack([r, g, b], -1) + rng.normal(0, 12, (h, w, 3))
    return np.clip(img, 0, 255).astype(np.uint8)

def write_ref(name, img, modes=("RGB", "L")):
    for mode, ext in (("RGB", "rgb"), ("L", "l")):
        if mode not in modes: continue
        a = np.asarray(img.convert(mode))
        (out / f"{name}.{ext}").write_bytes(f"{a.shape[1]} {a.shape[0]}\n".encode() + a.tobytes())

def write_raw(name, ext, a):
    (out / f"{name}.{ext}").write_bytes(f"{a.shape[1]} {a.shape[0]}\n".encode() + np.ascontiguousarray(a).tobytes())

def save(name, img, fmt, **kw):
    path = out / name
    img.save(path, fmt, **kw)
    write_ref(Path(name).stem, Image.open(path))

# Sizes that are not multiples of the 16 px iMCU, so the last iMCU row and column are partial.
large = Image.fromarray(photo(333, 251))
large.save(out / "large420.jpg", "JPEG", quality=90)
large.save(out / "large444.jpg", "JPEG", quality=90, subsampling=0)
large.save(out / "large422.jpg", "JPEG", quality=90, subsampling=1)
large.save(out / "large_progressive.jpg", "JPEG", quality=90, progressive=True)
large.convert("L").save(out / "large_gray.jpg", "JPEG", quality=90)
large.convert("CMYK").save(out / "large_cmyk.jpg", "JPEG", quality=90)
large.save(out / "large_restart.jpg", "JPEG", quality=90, restart_marker_blocks=5)
large.save(out / "large_restart_rows.jpg", "JPEG", quality=90, restart_marker_rows=1)
large.save(out / "large_progressive_restart.jpg", "JPEG", quality=90, progressive=True, restart_marker_blocks=5)
large.save(out / "large_optimized.jpg", "JPEG", quality=90, optimize=True)  # its own Huffman tables
large.save(out / "large444_optimized.jpg", "JPEG", quality=90, subsampling=0, optimize=True)
large.convert("L").save(out / "large_gray_optimized.jpg", "JPEG", quality=90, optimize=True)

rgb = Image.fromarray(photo(131, 97))
save("baseline.jpg", rgb, "JPEG", quality=90)
save("baseline444.jpg", rgb, "JPEG", quality=90, subsampling=0)
save("progressive.jpg", rgb, "JPEG", quality=90, progressive=True)
save("gray_jpeg.jpg", rgb.convert("L"), "JPEG", quality=90)
save("cmyk.jpg", rgb.convert("CMYK"), "JPEG", quality=90)
save("rgb.png", rgb, "PNG")
save("gray.png", rgb.convert("L"), "PNG")
save("palette.png", rgb.quantize(64), "PNG")
rgba = rgb.copy(); rgba.putalpha(Image.fromarray((photo(131, 97)[:, :, 0])))
save("rgba.png", rgba, "PNG")
save("la.png", rgba.convert("LA"), "PNG")

# Written by hand: PIL writes neither 16-bit RGB nor Adam7-interlaced PNGs.
ADAM7 = [(0, 0, 8, 8), (0, 4, 8, 8), (4, 0, 8, 4), (0, 2, 4, 4), (2, 0, 4, 2), (0, 1, 2, 2), (1, 0, 2, 1)]

def png_raw(name, a, depth, color_type, interlace=0):
    h, w = a.shape[:2]
    def rows(img): return b"".join(b"\x00" + img[y].astype(">u2" if depth == 16 else "u1").tobytes() for y in range(img.shape[0]))
    raw = b"".join(rows(a[y0::ys, x0::xs]) for y0, x0, ys, xs in ADAM7 if y0 < h and x0 < w) if interlace else rows(a)
    def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0, interlace))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))
    (out / f"{name}.png").write_bytes(data)

def png16(name, a, color_type): png_raw(name, a, 16, color_type)

a16 = (photo(131, 97).astype(np.uint16) * 257 + rng.integers(0, 257, (97, 131, 3))).astype(np.uint16)
png16("rgb16", a16, 2)
write_ref("rgb16", Image.open(out / "rgb16.png"), modes=("RGB",))
png16("gray16", a16[:, :, 0], 0)
write_raw("gray16", "l", (a16[:, :, 0] >> 8).astype(np.uint8))
write_raw("gray16", "rgb", np.repeat((a16[:, :, 0] >> 8).astype(np.uint8)[:, :, None], 3, 2))

# Large PNGs for the reduced decode (png_decode_reduced): 16-bit RGB, 8-bit Adam7, 8-bit gray. The
# references are frugal's own full decodes (the test compares the two paths).
big = photo(1003, 755)
png_raw("big_rgb16", big.astype(np.uint16) * 257 + rng.integers(0, 257, big.shape).astype(np.uint16), 16, 2)
png_raw("big_adam7", big, 8, 2, interlace=1)
png_raw("big_gray", big[:, :, 1], 8, 0)
# 4000 x 3000, 16-bit RGB (72 MB of samples, a few on disk): what a full decode holds is 36 MB.
y, x = np.mgrid[0:3000, 0:4000].astype(np.float32)
huge = np.stack([32768 + 30000 * np.sin(x / 40.0), 65535 * x / 4000, 32768 + 30000 * np.cos(y / 55.0)], -1)
png_raw("huge_rgb16", huge.astype(np.uint16), 16, 2)
del x, y, huge

# Resize references on the decoded PNG (lossless, so the input is exact).
src = Image.open(out / "rgb.png").convert("RGB")
boxes = [(10, 7, 90, 80, 224, 224), (0, 0, 131, 97, 48, 40), (33, 5, 97, 60, 20, 17), (3, 2, 120, 96, 131, 97)]
for k, (x0, y0, x1, y1, w, h) in enumerate(boxes):
    r = src.crop((x0, y0, x1, y1)).resize((w, h), Image.BILINEAR)
    write_raw(f"resize_{k}_{x0}_{y0}_{x1}_{y1}_{w}_{h}", "rgb", np.asarray(r))
import torchvision.transforms as T
for shorter, size in ((64, 56), (97, 97), (40, 32)):
    r = T.CenterCrop(size)(T.Resize(shorter)(src))
    write_raw(f"centercrop_{shorter}_{size}", "rgb", np.asarray(r))

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

def png16(name, a, color_type):
    h, w = a.shape[:2]
    raw = b"".join(b"\x00" + a[y].astype(">u2").tobytes() for y in range(h))
    def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, color_type, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    (out / f"{name}.png").write_bytes(data)

a16 = (photo(131, 97).astype(np.uint16) * 257 + rng.integers(0, 257, (97, 131, 3))).astype(np.uint16)
png16("rgb16", a16, 2)
write_ref("rgb16", Image.open(out / "rgb16.png"), modes=("RGB",))
png16("gray16", a16[:, :, 0], 0)
write_raw("gray16", "l", (a16[:, :, 0] >> 8).astype(np.uint8))
write_raw("gray16", "rgb", np.repeat((a16[:, :, 0] >> 8).astype(np.uint8)[:, :, None], 3, 2))

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

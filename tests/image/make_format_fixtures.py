#!/usr/bin/env python3
"""Writes WebP, GIF, BMP and TIFF test images, and photos with each EXIF orientation, into DIR.

Beside each NAME.ext it writes what PIL makes of it, the reference frugal's decoders are held to:
  NAME.rgb / NAME.l   ImageOps.exif_transpose(Image.open(f)).convert("RGB" / "L") pixels, raw,
                      after a "W H\\n" line (16-bit images: numpy's high byte instead, since PIL
                      clips I;16 to L);
  NAME.mode           PIL's mode of the file as opened ("P", "L", "RGBA", ...);
  NAME.stored.rgb     Image.open(f).convert("RGB") without the transpose (orientation fixtures).
Files PIL cannot write (BMP of 4 and 16 bits, RLE, bit fields, OS/2 headers; TIFFs in tiles,
planes, 16-bit RGB; EXIF blocks laid out as phones write them) are written here byte by byte.
"""
import io, struct, sys
from pathlib import Path
import numpy as np
from PIL import Image, ImageOps

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(11)

def photo(w, h):
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    r = 128 + 100 * np.sin(x / 7.0) * np.cos(y / 11.0)
    g = 128 + 90 * np.cos((x + 2 * y) / 15.0)
    b = 255 * (x / w) * (1 - y / h)
    img = np.stack([r, g, b], -1) + rng.normal(0, 10, (h, w, 3))
    return np.clip(img, 0, 255).astype(np.uint8)

def write_raw(name, ext, a):
    a = np.ascontiguousarray(a)
    (out / f"{name}.{ext}").write_bytes(f"{a.shape[1]} {a.shape[0]}\n".encode() + a.tobytes())

def refs(path, gray16=None):
    """The references for the file at `path` (written already)."""
    name = path.stem
    im = Image.open(path)
    (out / f"{name}.mode").write_text(im.mode)
    if gray16 is not None:  # PIL clips I;16 to L; frugal keeps the high byte, as for 16-bit PNGs
        hi = (gray16 >> 8).astype(np.uint8)
        write_raw(name, "l", hi)
        write_raw(name, "rgb", np.repeat(hi[:, :, None], 3, 2))
        return
    t = ImageOps.exif_transpose(im)
    write_raw(name, "rgb", np.asarray(t.convert("RGB")))
    write_raw(name, "l", np.asarray(t.convert("L")))
    write_raw(name, "stored.rgb", np.asarray(Image.open(path).convert("RGB")))

def save(name, img, fmt, **kw):
    path = out / name
    img.save(path, fmt, **kw)
    refs(path)

base = Image.fromarray(photo(61, 43))
rgba = base.copy(); rgba.putalpha(Image.fromarray(photo(61, 43)[:, :, 1]))

# --- WebP ----------------------------------------------------------------------------------
save("webp_lossy.webp", base, "WEBP", quality=85)
save("webp_lossless.webp", base, "WEBP", lossless=True)
save("webp_alpha_lossy.webp", rgba, "WEBP", quality=85)
save("webp_alpha_lossless.webp", rgba, "WEBP", lossless=True, exact=True)
frames = [Image.fromarray(photo(61, 43)[:, ::-1]) for _ in range(2)]
save("webp_animated.webp", base, "WEBP", save_all=True, append_images=frames, duration=100, lossless=True)

# --- GIF -----------------------------------------------------------------------------------
pal = base.quantize(64)
save("gif_palette.gif", pal, "GIF", interlace=False)
save("gif_interlaced.gif", pal, "GIF", interlace=True)
save("gif_gray.gif", base.convert("L"), "GIF")
save("gif_transparent.gif", pal, "GIF", transparency=5)
save("gif_animated.gif", pal, "GIF", save_all=True, append_images=[f.quantize(64) for f in frames], duration=100)

def gif_blocks(b):
    """(offset of the first image descriptor, offset after the global colour table)."""
    flags = b[10]
    p = 13 + (3 << ((flags & 7) + 1) if flags & 0x80 else 0)
    gct_end = p
    while b[p] == 0x21:  # extensions: label, then sub-blocks
        p += 2
        while b[p]:
            p += b[p] + 1
        p += 1
    assert b[p] == 0x2C
    return p, gct_end

# The first frame smaller than the screen, placed at (5, 3), with a transparent index: PIL fills the
# rest of the canvas with that index.
b = bytearray((out / "gif_transparent.gif").read_bytes())
desc, _ = gif_blocks(b)
struct.pack_into("<HH", b, 6, 61 + 9, 43 + 7)
struct.pack_into("<HH", b, desc + 1, 5, 3)
(out / "gif_offset.gif").write_bytes(bytes(b)); refs(out / "gif_offset.gif")
# A frame reaching past the screen: PIL grows the canvas to hold it.
b2 = bytearray((out / "gif_palette.gif").read_bytes())
desc, _ = gif_blocks(b2)
struct.pack_into("<HH", b2, 6, 40, 30)
struct.pack_into("<HH", b2, desc + 1, 4, 2)
(out / "gif_past_screen.gif").write_bytes(bytes(b2)); refs(out / "gif_past_screen.gif")
# No colour table at all: PIL reads the indices as grey levels ("L").
b3 = bytearray((out / "gif_palette.gif").read_bytes())
desc, gct_end = gif_blocks(b3)
b3 = b3[:13] + b3[gct_end:]
b3[10] &= 0x7F
(out / "gif_no_palette.gif").write_bytes(bytes(b3)); refs(out / "gif_no_palette.gif")

# --- BMP -----------------------------------------------------------------------------------
def bmp(name, w, h, bits, rows, palette=(), header=40, compression=0, masks=None, top_down=False, colors=0):
    """rows: the pixel data in file order, already packed and padded (or an RLE stream)."""
    data = b"".join(rows) if isinstance(rows, list) else rows
    entry = 3 if header == 12 else 4
    pal = b"".join(bytes([bl, g, r]) + (b"" if entry == 3 else b"\0") for r, g, bl in palette)
    if header == 12:
        dib = struct.pack("<IHHHH", 12, w, h, 1, bits)
    else:
        dib = struct.pack("<IiiHHIIiiII", header, w, -h if top_down else h, 1, bits, compression, len(data),
                          2835, 2835, colors, 0)
        extra = b""
        if header >= 52:
            m = list(masks or (0, 0, 0, 0)) + [0]
            extra = struct.pack("<III", *m[:3]) + (struct.pack("<I", m[3]) if header >= 56 else b"")
        dib = dib + extra + b"\0" * (header - len(dib) - len(extra))
        if header == 40 and compression == 3:
            dib += struct.pack("<III", *masks[:3])
    offset = 14 + len(dib) + len(pal)
    blob = b"BM" + struct.pack("<IHHI", offset + len(data), 0, 0, offset) + dib + pal + data
    (out / name).write_bytes(blob)
    refs(out / name)

def pad(row):
    return row + b"\0" * (-len(row) % 4)

def pack_bits(idx, bits):
    out_ = bytearray()
    per = 8 // bits
    for i in range(0, len(idx), per):
        v = 0
        for k in range(per):
            v = v << bits | (int(idx[i + k]) if i + k < len(idx) else 0)
        out_.append(v)
    return bytes(out_)

a = photo(61, 43)
W, H = 61, 43
save("bmp_24.bmp", base, "BMP")
save("bmp_32.bmp", rgba, "BMP")
save("bmp_8_palette.bmp", base.quantize(200), "BMP")
save("bmp_8_gray.bmp", base.convert("L"), "BMP")
save("bmp_1.bmp", base.convert("1"), "BMP")
idx4 = (a[:, :, 0] // 16).astype(np.uint8)
pal16 = [tuple(int(v) for v in rng.integers(0, 256, 3)) for _ in range(16)]
bmp("bmp_4.bmp", W, H, 4, [pad(pack_bits(idx4[y], 4)) for y in range(H - 1, -1, -1)], palette=pal16)
bmp("bmp_2_colour_palette.bmp", W, H, 1, [pad(pack_bits(idx4[y] & 1, 1)) for y in range(H - 1, -1, -1)],
    palette=[(200, 30, 40), (10, 220, 90)])
r5, g5, b5 = (a[:, :, 0] >> 3).astype(np.uint16), (a[:, :, 1] >> 3).astype(np.uint16), (a[:, :, 2] >> 3).astype(np.uint16)
px555 = (r5 << 10) | (g5 << 5) | b5
bmp("bmp_16_555.bmp", W, H, 16, [pad(px555[y].astype("<u2").tobytes()) for y in range(H - 1, -1, -1)])
g6 = (a[:, :, 1] >> 2).astype(np.uint16)
px565 = (r5 << 11) | (g6 << 5) | b5
bmp("bmp_16_565_v3.bmp", W, H, 16, [pad(px565[y].astype("<u2").tobytes()) for y in range(H - 1, -1, -1)],
    header=56, compression=3, masks=(0xF800, 0x7E0, 0x1F, 0))
bmp("bmp_16_565_info.bmp", W, H, 16, [pad(px565[y].astype("<u2").tobytes()) for y in range(H - 1, -1, -1)],
    header=40, compression=3, masks=(0xF800, 0x7E0, 0x1F))
px32 = (a[:, :, 0].astype(np.uint32) << 24 | a[:, :, 1].astype(np.uint32) << 16 | a[:, :, 2].astype(np.uint32) << 8 | 0x7F)
bmp("bmp_32_abgr_v5.bmp", W, H, 32, [px32[y].astype("<u4").tobytes() for y in range(H - 1, -1, -1)],
    header=124, compression=3, masks=(0xFF000000, 0xFF0000, 0xFF00, 0xFF))
bmp("bmp_24_top_down.bmp", W, H, 24, [pad(a[y, :, ::-1].tobytes()) for y in range(H)], top_down=True)
bmp("bmp_24_os2.bmp", W, H, 24, [pad(a[y, :, ::-1].tobytes()) for y in range(H - 1, -1, -1)], header=12)
idx8 = (a[:, :, 1] // 4).astype(np.uint8)
pal64 = [tuple(int(v) for v in rng.integers(0, 256, 3)) for _ in range(64)]
bmp("bmp_8_os2.bmp", W, H, 8, [pad(idx8[y].tobytes()) for y in range(H - 1, -1, -1)], palette=pal64, header=12)
bmp("bmp_8_short_palette.bmp", W, H, 8, [pad(idx8[y].tobytes()) for y in range(H - 1, -1, -1)],
    palette=pal64[:40], colors=40)  # indices 40-63 have no entry: black, as in PIL

def rle(idx, rle4):
    """Rows bottom first: a run, a literal stretch (odd length: padded to 16 bits), runs to the
    row's end, end of line; the middle row starts with a delta (3 right: those pixels stay index
    0); the end-of-bitmap code last."""
    s = bytearray()
    h, w = idx.shape
    for yy, y in enumerate(range(h - 1, -1, -1)):
        row = [int(v) for v in idx[y]]
        x = 0
        if yy == h // 2:
            s += bytes([0, 2, 3, 0])
            x = 3
        def pair(i):
            return (row[i] << 4 | row[min(i + 1, w - 1)]) if rle4 else row[i]
        run = min(7, w - x)
        s += bytes([run, pair(x)]); x += run
        lit = min(9, w - x)
        if lit >= 3:
            s += bytes([0, lit])
            lb = pack_bits(row[x:x + lit], 4) if rle4 else bytes(row[x:x + lit])
            s += lb + (b"\0" if len(lb) % 2 else b"")
            x += lit
        while x < w:
            n = min(5, w - x)
            s += bytes([n, pair(x)]); x += n
        s += bytes([0, 0])
    s += bytes([0, 1])
    return bytes(s)

bmp("bmp_rle8.bmp", W, H, 8, rle(idx8, False), palette=pal64, compression=1)
bmp("bmp_rle4.bmp", W, H, 4, rle(idx4, True), palette=pal16, compression=2)

# --- TIFF ----------------------------------------------------------------------------------
save("tiff_rgb.tif", base, "TIFF")
save("tiff_rgb_lzw.tif", base, "TIFF", compression="tiff_lzw")
save("tiff_rgb_deflate.tif", base, "TIFF", compression="tiff_adobe_deflate")
save("tiff_gray.tif", base.convert("L"), "TIFF")
save("tiff_palette.tif", base.quantize(100), "TIFF")
save("tiff_rgba.tif", rgba, "TIFF")
save("tiff_jpeg.tif", base, "TIFF", compression="jpeg")  # YCbCr JPEG: libtiff's RGBA interface
save("tiff_bilevel.tif", base.convert("1"), "TIFF", compression="group4")
save("tiff_two_pages.tif", base, "TIFF", save_all=True, append_images=[frames[0]])
gray16 = (a[:, :, 0].astype(np.uint16) * 257 + rng.integers(0, 257, (H, W))).astype(np.uint16)
Image.fromarray(gray16).save(out / "tiff_gray16.tif", "TIFF")
refs(out / "tiff_gray16.tif", gray16=gray16)

def tiff(name, w, h, spp, bps, photometric, chunks, tile=None, planar=1, big_endian=False, extra=None):
    """An uncompressed TIFF: `chunks` are the strips (one per plane when planar) or the tiles."""
    e = ">" if big_endian else "<"
    entries = {256: (4, [w]), 257: (4, [h]), 258: (3, [bps] * spp), 259: (3, [1]), 262: (3, [photometric]),
               277: (3, [spp]), 284: (3, [planar])}
    if extra is not None: entries[338] = (3, [extra])
    if tile:
        entries[322] = (4, [tile[0]]); entries[323] = (4, [tile[1]])
    else:
        entries[278] = (4, [h if planar == 1 else h])
    head = 8
    n = len(entries) + 2
    ifd_size = 2 + 12 * n + 4
    blob = bytearray()
    data_at = head + ifd_size
    # Out-of-line values and the pixel data follow the IFD.
    payload = bytearray()
    def place(b):
        nonlocal payload
        at = data_at + len(payload)
        payload += b + (b"\0" if len(b) % 2 else b"")
        return at
    offsets = [place(c) for c in chunks]
    counts = [len(c) for c in chunks]
    entries[324 if tile else 273] = (4, offsets)
    entries[325 if tile else 279] = (4, counts)
    fields = []
    for tag in sorted(entries):
        typ, vals = entries[tag]
        fmt = e + ("H" if typ == 3 else "I") * len(vals)
        raw = struct.pack(fmt, *vals)
        if len(raw) <= 4:
            fields.append(struct.pack(e + "HHI", tag, typ, len(vals)) + raw + b"\0" * (4 - len(raw)))
        else:
            fields.append(struct.pack(e + "HHII", tag, typ, len(vals), place(raw)))
    blob += (b"MM" if big_endian else b"II") + struct.pack(e + "HI", 42, head)
    blob += struct.pack(e + "H", len(fields)) + b"".join(fields) + struct.pack(e + "I", 0)
    assert len(blob) == data_at, (len(blob), data_at)
    blob += payload
    (out / name).write_bytes(bytes(blob))

rgb16 = (a.astype(np.uint16) * 257 + rng.integers(0, 257, a.shape)).astype(np.uint16)
tiff("tiff_rgb16_be.tif", W, H, 3, 16, 2, [rgb16.astype(">u2").tobytes()], big_endian=True)
refs(out / "tiff_rgb16_be.tif")
# PIL unpacks RGB;16 by the high byte: checked here, so the test's reference is PIL's own.
assert np.array_equal(np.asarray(Image.open(out / "tiff_rgb16_be.tif").convert("RGB")), (rgb16 >> 8).astype(np.uint8))
tiles = []
for y0 in range(0, H, 16):
    for x0 in range(0, W, 16):
        t = np.zeros((16, 16, 3), np.uint8)
        part = a[y0:y0 + 16, x0:x0 + 16]
        t[:part.shape[0], :part.shape[1]] = part
        tiles.append(t.tobytes())
tiff("tiff_tiled.tif", W, H, 3, 8, 2, tiles, tile=(16, 16))
refs(out / "tiff_tiled.tif")
tiff("tiff_planar.tif", W, H, 3, 8, 2, [a[:, :, c].tobytes() for c in range(3)], planar=2)
refs(out / "tiff_planar.tif")
tiff("tiff_miniswhite.tif", W, H, 1, 8, 0, [a[:, :, 1].tobytes()])
refs(out / "tiff_miniswhite.tif")
ga = np.stack([a[:, :, 0], a[:, :, 2]], -1)
tiff("tiff_gray_alpha.tif", W, H, 2, 8, 1, [ga.tobytes()], extra=2)
refs(out / "tiff_gray_alpha.tif")

# --- EXIF orientation ----------------------------------------------------------------------
# One JPEG's bytes with each orientation: the pixels stored are identical, only the tag differs.
photo_big = Image.fromarray(photo(333, 251))
plain = io.BytesIO(); photo_big.save(plain, "JPEG", quality=90); plain = plain.getvalue()
def with_app1(jpeg, payload):
    return jpeg[:2] + b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload + jpeg[2:]

def exif_block(orientation, big_endian=True, typ=3, ifd1_orientation=1, extra_tags=True):
    """An EXIF block as a phone writes one: Exif\\0\\0, big-endian TIFF, IFD0 with Make, Model,
    Orientation, resolutions and an Exif IFD pointer, then IFD1 (a thumbnail's) with its own
    Orientation, which must not count."""
    e = ">" if big_endian else "<"
    tags = []
    strings = bytearray()
    def at(b):  # offsets are from the TIFF header
        return 8 + 2 + 12 * 7 + 4 + len(strings)
    make = b"Phone\0"; mk = at(make); strings += make
    model = b"Model X 12\0"; md = at(model); strings += model
    xres = struct.pack(e + "II", 72, 1); xr = at(xres); strings += xres
    exif_ifd = at(b""); strings += struct.pack(e + "H", 0) + struct.pack(e + "I", 0)
    ifd1 = at(b"")
    strings += struct.pack(e + "H", 1) + struct.pack(e + "HHI", 0x0112, 3, 1) + struct.pack(e + "H", ifd1_orientation) + b"\0\0" + struct.pack(e + "I", 0)
    val = struct.pack(e + ("H" if typ == 3 else "I"), orientation)
    val += b"\0" * (4 - len(val))
    fields = [struct.pack(e + "HHII", 0x010F, 2, len(make), mk), struct.pack(e + "HHII", 0x0110, 2, len(model), md),
              struct.pack(e + "HHI", 0x0112, typ, 1) + val, struct.pack(e + "HHII", 0x011A, 5, 1, xr),
              struct.pack(e + "HHII", 0x011B, 5, 1, xr), struct.pack(e + "HHI", 0x0128, 3, 1) + struct.pack(e + "H", 2) + b"\0\0",
              struct.pack(e + "HHII", 0x8769, 4, 1, exif_ifd)]
    tiff_ = (b"MM" if big_endian else b"II") + struct.pack(e + "HI", 42, 8) + struct.pack(e + "H", 7) + b"".join(fields)
    tiff_ += struct.pack(e + "I", ifd1) + bytes(strings)
    return b"Exif\0\0" + tiff_

for k in range(1, 9):
    p = out / f"exif_{k}.jpg"
    p.write_bytes(with_app1(plain, exif_block(k)))
    refs(p)
(out / "exif_6_long_le.jpg").write_bytes(with_app1(plain, exif_block(6, big_endian=False, typ=4))); refs(out / "exif_6_long_le.jpg")
(out / "exif_9.jpg").write_bytes(with_app1(plain, exif_block(9))); refs(out / "exif_9.jpg")
# The first Exif segment counts; a second one's IFD0 is not read.
(out / "exif_two_segments.jpg").write_bytes(with_app1(with_app1(plain, exif_block(3)), exif_block(6))); refs(out / "exif_two_segments.jpg")
xmp = b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF><rdf:Description tiff:Orientation="8"/></rdf:RDF></x:xmpmeta>'
(out / "xmp_8.jpg").write_bytes(with_app1(plain, b"http://ns.adobe.com/xap/1.0/\0" + xmp)); refs(out / "xmp_8.jpg")
gray_big = photo_big.convert("L")
g = io.BytesIO(); gray_big.save(g, "JPEG", quality=90)
(out / "exif_gray_5.jpg").write_bytes(with_app1(g.getvalue(), exif_block(5))); refs(out / "exif_gray_5.jpg")
def exif_of(k):
    ex = Image.Exif(); ex[0x0112] = k
    return ex.tobytes()
save("png_exif_6.png", base, "PNG", exif=exif_of(6))
save("png_exif_3_gray.png", base.convert("L"), "PNG", exif=exif_of(3))
save("webp_exif_8.webp", base, "WEBP", lossless=True, exif=exif_of(8))
save("tiff_exif_5.tif", base, "TIFF", tiffinfo={274: 5})
save("gif_no_exif.gif", pal, "GIF")  # GIF has no EXIF: nothing to turn
# A large PNG turned by eXIf: the reduced (row by row) decode of a crop of it.
big = Image.fromarray(photo(1003, 755))
save("png_exif_6_big.png", big, "PNG", exif=exif_of(6))
# Large WebPs for the reduced decode (webp_decode_reduced): lossy, lossless, turned by EXIF; and
# a 4000 x 3000 lossy one whose full decode holds 36 MB.
save("webp_big_lossy.webp", big, "WEBP", quality=90)
save("webp_big_lossless.webp", big, "WEBP", lossless=True)
save("webp_exif_6_big.webp", big, "WEBP", quality=90, exif=exif_of(6))
yy, xx = np.mgrid[0:3000, 0:4000].astype(np.float32)
huge = np.stack([128 + 100 * np.sin(xx / 40.0), 255 * xx / 4000, 128 + 100 * np.cos(yy / 55.0)], -1).astype(np.uint8)
Image.fromarray(huge).save(out / "webp_huge_lossy.webp", "WEBP", quality=80)
del xx, yy, huge

#!/usr/bin/env bash
# frugal pack against independent readers (Info-ZIP unzip -t / -l, Python's zipfile.testzip):
# a folder of class sub-folders, --split (parts + manifest only),
# and Fashion-MNIST's t10k IDX set (10 class folders of 1,000 PNGs).
source "$(dirname "$0")/lib/common.sh"
keep_going
needs_commands unzip
# Pillow decodes the PNGs independently; FRUGAL_PYTHON may lack it, the project's .venv has it.
PIL_PY=""
for p in "$py" "$src/.venv/bin/python"; do
  "$p" -c "import PIL" 2>/dev/null && { PIL_PY=$p; break; }
done
testzip() { "$py" -c 'import sys, zipfile; sys.exit(0 if zipfile.ZipFile(sys.argv[1]).testzip() is None else 1)' "$1"; }
count() { unzip -l "$1" | tail -1 | awk '{print $2}'; }

# A folder of class sub-folders: images (PNG written here with zlib, JPEG by its magic bytes)
# stored, other files deflated.
"$py" - "$t/src" <<'PY'
import os, struct, sys, zlib
def png(value):  # 8x8 grayscale
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\0" + bytes([value]) * 8 for _ in range(8))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 8, 8, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
root = sys.argv[1]
for c in ("cat", "dog"):
    os.makedirs(os.path.join(root, c))
    for i in range(3):
        open(os.path.join(root, c, f"{i}.png"), "wb").write(png(40 * i))
        open(os.path.join(root, c, f"{i}.jpg"), "wb").write(b"\xff\xd8\xff\xe0" + os.urandom(300))
    open(os.path.join(root, c, "notes.txt"), "w").write("text " * 200)
PY
frugal pack "$t/src" -o "$t/f.zip" 2>"$t/err"
check "pack folder exits 0" '[ $? -eq 0 ]'
check "unzip -t accepts the folder pack" 'unzip -tq "$t/f.zip" >/dev/null'
check "zipfile.testzip accepts the folder pack" 'testzip "$t/f.zip"'
check "unzip -l lists 14 entries" '[ "$(count "$t/f.zip")" == 14 ]'
check "images stored, text deflated" \
  '[ "$(unzip -v "$t/f.zip" | awk "/cat\/0.png|cat\/0.jpg|cat\/notes.txt/ {print \$2}" | tr "\n" " ")" == "Stored Stored Defl:N " ]'
frugal pack "$t/src" -o "$t/f2.zip" 2>/dev/null
check "packing twice gives identical bytes" 'cmp -s "$t/f.zip" "$t/f2.zip"'

# Zip64 with more than 65,535 entries is checked against unzip -t and zipfile.testzip in
# tests/archive/zip_writer_test.cpp (ZipWriter.MoreThan65535EntriesUseZip64): creating 66,000 files
# here made this script take minutes on a busy machine.

# Fashion-MNIST t10k from IDX (gzipped), whole and split.
FM=/usr/share/datasets/fashion-mnist
if [ -f "$FM/t10k-images-idx3-ubyte.gz" ]; then
  frugal pack "$FM" --idx-set t10k -o "$t/fm.zip" --json > "$t/fm.json" 2>"$t/err"
  check "pack IDX exits 0" '[ $? -eq 0 ]'
  check "unzip -t accepts the IDX pack" 'unzip -tq "$t/fm.zip" >/dev/null'
  check "zipfile.testzip accepts the IDX pack" 'testzip "$t/fm.zip"'
  check "10 class folders of 1,000 PNGs, in label order" \
    '[ "$(unzip -Z1 "$t/fm.zip" | cut -d/ -f1 | uniq -c | awk "{print \$2\":\"\$1}" | tr "\n" " ")" == "0_T-shirt_top:1000 1_Trouser:1000 2_Pullover:1000 3_Dress:1000 4_Coat:1000 5_Sandal:1000 6_Shirt:1000 7_Sneaker:1000 8_Bag:1000 9_Ankle_boot:1000 " ]'
  check "entry names are zero-padded IDX indices" 'unzip -Z1 "$t/fm.zip" | grep -qx "9_Ankle_boot/t10k_00000.png"'
  if [ -z "$PIL_PY" ]; then echo "skip: PNG pixel check (no Python with Pillow)"; else
  check "PNGs decode to the IDX pixels" '"$PIL_PY" - "$t/fm.zip" "$FM/t10k-images-idx3-ubyte.gz" <<'"'"'PY'"'"'
import gzip, io, sys, zipfile
from PIL import Image
raw = gzip.open(sys.argv[2]).read()[16:]
z = zipfile.ZipFile(sys.argv[1])
im = Image.open(io.BytesIO(z.read("9_Ankle_boot/t10k_00000.png")))
sys.exit(0 if im.mode == "L" and im.size == (28, 28) and im.tobytes() == raw[:784] else 1)
PY'
  fi
  mkdir "$t/set"
  frugal pack "$FM/t10k-images-idx3-ubyte.gz" -o "$t/set/fm.zip" --split 2M 2>/dev/null
  check "pack --split writes parts and a manifest, no whole zip" \
    '[ ! -e "$t/set/fm.zip" ] && [ -f "$t/set/fm.zip.manifest.json" ] && [ -f "$t/set/fm.zip.part0001" ]'
  check "no part is over 2M" '[ -z "$(find "$t/set" -name "fm.zip.part*" -size +2048k)" ]'
  frugal join "$t/set/fm.zip.manifest.json" -o "$t/joined.zip" 2>/dev/null
  check "the split pack joins to the same zip as the whole pack" 'cmp -s "$t/joined.zip" "$t/fm.zip"'
else
  echo "skip: $FM not installed (Debian's fashion-mnist data)"
fi

frugal pack "$t/nothing-here" -o "$t/x.zip" 2>/dev/null
check "missing SRC is a usage error (2)" '[ $? -eq 2 ]'

finish

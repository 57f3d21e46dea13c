#!/usr/bin/env bash
# frugal's zip reader against independent implementations: archives written by Info-ZIP zip
# (deflate, -0 stored, -s split, streamed from a pipe with data descriptors, self-extractor junk)
# and Python's zipfile (Zip64, data descriptors, >65535 entries) must list like Python's zipfile
# reads them and extract to the same bytes; split sets are read in place.
set -u
command -v zip >/dev/null && command -v unzip >/dev/null || { echo "skip: zip/unzip missing"; exit 77; }
PY=${FRUGAL_PYTHON:-python3}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails+1)); }

# Reference listing by Python's zipfile, in frugal ls --json's shape.
ref_ls() {
  "$PY" - "$1" <<'PY'
import json, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
print(json.dumps([[i.filename, i.file_size, i.compress_size, "%08x" % i.CRC] for i in z.infolist()]))
PY
}
frugal_ls() {
  frugal ls --json "$@" | "$PY" -c 'import json,sys; print(json.dumps([[e["name"],e["size"],e["compressed_size"],e["crc32"]] for e in json.load(sys.stdin)["entries"]]))'
}
same_listing() {  # NAME ZIP_FOR_PYTHON ARCHIVE_FOR_FRUGAL
  if [ "$(ref_ls "$2")" == "$(frugal_ls "$3")" ]; then ok "$1 lists like zipfile"; else bad "$1 lists like zipfile"; fi
}
same_content() {  # NAME ARCHIVE REFERENCE_DIR
  rm -rf "$T/x"
  if frugal extract "$2" -C "$T/x" 2>"$T/err" && diff -r "$3" "$T/x" >/dev/null; then ok "$1 extracts the same bytes"
  else bad "$1 extracts the same bytes"; cat "$T/err"; fi
  if frugal verify "$2" 2>"$T/err"; then ok "$1 verifies"; else bad "$1 verifies"; cat "$T/err"; fi
}

# A small tree: compressible text, random bytes, an empty file, a nested folder.
mkdir -p "$T/src/data/cats" "$T/src/data/dogs/small"
"$PY" - "$T/src/data" <<'PY'
import os, random, sys
r = random.Random(7)
d = sys.argv[1]
for i in range(40):
    sub = ("cats", "dogs", "dogs/small")[i % 3]
    with open(os.path.join(d, sub, "f%02d.bin" % i), "wb") as f:
        f.write(bytes(r.getrandbits(8) for _ in range(r.randint(1, 9000))) if i % 2 else
                (("line %d " % i) * r.randint(1, 2000)).encode())
open(os.path.join(d, "empty.txt"), "wb").close()
PY
cd "$T/src"

zip -qr "$T/deflate.zip" data
same_listing "zip (deflate)" "$T/deflate.zip" "$T/deflate.zip"
same_content "zip (deflate)" "$T/deflate.zip" "$T/src"

zip -qr0 "$T/stored.zip" data
same_listing "zip -0 (stored)" "$T/stored.zip" "$T/stored.zip"
same_content "zip -0 (stored)" "$T/stored.zip" "$T/src"

# zip -s: offsets per part; name the .zip or the .z01.
mkdir "$T/span" && zip -qr -s 64k "$T/span/s.zip" data
ls "$T/span/s.z01" >/dev/null 2>&1 || bad "zip -s wrote parts"
zip -q -s 0 "$T/span/s.zip" --out "$T/joined.zip"
same_listing "zip -s set (.zip)" "$T/joined.zip" "$T/span/s.zip"
same_listing "zip -s set (.z01)" "$T/joined.zip" "$T/span/s.z01"
same_content "zip -s set" "$T/span/s.zip" "$T/src"

# Written to a pipe (zip cannot seek back): the sizes live in data descriptors after the data.
zip -qr - data | cat > "$T/pipe.zip"
"$PY" -c 'import sys, zipfile; sys.exit(not any(i.flag_bits & 8 for i in zipfile.ZipFile(sys.argv[1]).infolist()))' \
  "$T/pipe.zip" && ok "zip to a pipe wrote data descriptors" || bad "zip to a pipe wrote data descriptors"
same_listing "zip to a pipe (data descriptors)" "$T/pipe.zip" "$T/pipe.zip"
same_content "zip to a pipe (data descriptors)" "$T/pipe.zip" "$T/src"

# Self-extractor junk before the archive, offsets not adjusted (unzip warns and copes; so do we).
{ head -c 5000 /dev/urandom; cat "$T/deflate.zip"; } > "$T/sfx.zip"
unzip -tq "$T/sfx.zip" >/dev/null 2>&1; urc=$?
same_content "self-extractor junk (unzip rc $urc)" "$T/sfx.zip" "$T/src"

# Python's zipfile: Zip64 forced, and data descriptors (written to an unseekable stream).
"$PY" - "$T" <<'PY'
import io, os, sys, zipfile
t = sys.argv[1]
files = sorted(os.path.join(dp, f) for dp, _, fs in os.walk("data") for f in fs)
with zipfile.ZipFile(os.path.join(t, "z64.zip"), "w", zipfile.ZIP_DEFLATED) as z:
    for f in files:
        with open(f, "rb") as src, z.open(zipfile.ZipInfo(f), "w", force_zip64=True) as dst:
            dst.write(src.read())
class Unseekable(io.RawIOBase):
    def __init__(self, f): self.f = f
    def writable(self): return True
    def write(self, b): return self.f.write(b)
    def seekable(self): return False
with open(os.path.join(t, "dd.zip"), "wb") as raw:
    with zipfile.ZipFile(Unseekable(raw), "w", zipfile.ZIP_DEFLATED) as z:
        for f in files:
            z.write(f)
PY
same_listing "zipfile force_zip64" "$T/z64.zip" "$T/z64.zip"
same_content "zipfile force_zip64" "$T/z64.zip" "$T/src"
same_listing "zipfile data descriptors" "$T/dd.zip" "$T/dd.zip"
same_content "zipfile data descriptors" "$T/dd.zip" "$T/src"

# More than 65535 entries: Zip64 end records.
"$PY" - "$T/many.zip" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for i in range(70000):
        z.writestr("e/%05d" % i, str(i))
PY
same_listing "zipfile 70000 entries (Zip64 end)" "$T/many.zip" "$T/many.zip"
frugal verify "$T/many.zip" 2>/dev/null && ok "70000 entries verify" || bad "70000 entries verify"

# Split sets read in place: plain split (letters, digits), frugal parts with a manifest.
mkdir "$T/sp1" "$T/sp2" "$T/sp3"
split -b 20000 "$T/deflate.zip" "$T/sp1/d.zip_"
split -d -a 3 -b 15000 "$T/deflate.zip" "$T/sp2/d.zip."
same_listing "split _aa set" "$T/deflate.zip" "$T/sp1/d.zip_aa"
same_content "split _aa set" "$T/sp1/d.zip_aa" "$T/src"
same_listing "split .000 set" "$T/deflate.zip" "$T/sp2/d.zip.000"
same_content "split .000 set" "$T/sp2/d.zip.000" "$T/src"
"$PY" - "$T/deflate.zip" "$T/sp3" <<'PY'
import hashlib, json, os, sys
src, out = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
parts = []
for i in range(0, len(data), 25000):
    p = data[i:i + 25000]
    name = "d.zip.part%04d" % (i // 25000)
    open(os.path.join(out, name), "wb").write(p)
    parts.append({"file": name, "size": len(p), "sha256": hashlib.sha256(p).hexdigest()})
json.dump({"format": "frugal-split", "version": 1, "name": "d.zip", "size": len(data),
           "sha256": hashlib.sha256(data).hexdigest(), "parts": parts},
          open(os.path.join(out, "d.zip.manifest.json"), "w"))
PY
same_listing "manifest set" "$T/deflate.zip" "$T/sp3/d.zip.manifest.json"
same_listing "manifest set (first part)" "$T/deflate.zip" "$T/sp3/d.zip.part0000"
same_content "manifest set" "$T/sp3/d.zip.manifest.json" "$T/src"
rm "$T/sp3/d.zip.manifest.json"
same_listing "frugal parts without manifest" "$T/deflate.zip" "$T/sp3/d.zip.part0000"

echo "$fails failure(s)"
[ "$fails" = 0 ]

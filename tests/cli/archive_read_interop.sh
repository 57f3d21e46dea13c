#!/usr/bin/env bash
# frugal's zip reader against independent implementations: archives written by Info-ZIP zip
# (deflate, -0 stored, -s split, streamed from a pipe with data descriptors, self-extractor junk)
# and Python's zipfile (Zip64, data descriptors, >65535 entries) must list like Python's zipfile
# reads them and extract to the same bytes; split sets are read in place.
source "$(dirname "$0")/lib/common.sh"
keep_going
needs_commands zip unzip

# Reference listing by Python's zipfile, in frugal ls --json's shape.
ref_ls() {
  "$py" - "$1" <<'PY'
import json, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
print(json.dumps([[i.filename, i.file_size, i.compress_size, "%08x" % i.CRC] for i in z.infolist()]))
PY
}
frugal_ls() {
  frugal ls --json "$@" | "$py" -c 'import json,sys; print(json.dumps([[e["name"],e["size"],e["compressed_size"],e["crc32"]] for e in json.load(sys.stdin)["entries"]]))'
}
same_listing() {  # NAME ZIP_FOR_PYTHON ARCHIVE_FOR_FRUGAL
  if [ "$(ref_ls "$2")" == "$(frugal_ls "$3")" ]; then ok "$1 lists like zipfile"; else bad "$1 lists like zipfile"; fi
}
same_content() {  # NAME ARCHIVE REFERENCE_DIR
  rm -rf "$t/x"
  if frugal extract "$2" -C "$t/x" 2>"$t/err" && diff -r "$3" "$t/x" >/dev/null; then ok "$1 extracts the same bytes"
  else bad "$1 extracts the same bytes"; cat "$t/err"; fi
  if frugal verify "$2" 2>"$t/err"; then ok "$1 verifies"; else bad "$1 verifies"; cat "$t/err"; fi
}

# A small tree: compressible text, random bytes, an empty file, a nested folder.
mkdir -p "$t/src/data/cats" "$t/src/data/dogs/small"
"$py" - "$t/src/data" <<'PY'
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
cd "$t/src"

zip -qr "$t/deflate.zip" data
same_listing "zip (deflate)" "$t/deflate.zip" "$t/deflate.zip"
same_content "zip (deflate)" "$t/deflate.zip" "$t/src"

zip -qr0 "$t/stored.zip" data
same_listing "zip -0 (stored)" "$t/stored.zip" "$t/stored.zip"
same_content "zip -0 (stored)" "$t/stored.zip" "$t/src"

# zip -s: offsets per part; name the .zip or the .z01.
mkdir "$t/span" && zip -qr -s 64k "$t/span/s.zip" data
ls "$t/span/s.z01" >/dev/null 2>&1 || bad "zip -s wrote parts"
zip -q -s 0 "$t/span/s.zip" --out "$t/joined.zip"
same_listing "zip -s set (.zip)" "$t/joined.zip" "$t/span/s.zip"
same_listing "zip -s set (.z01)" "$t/joined.zip" "$t/span/s.z01"
same_content "zip -s set" "$t/span/s.zip" "$t/src"

# Written to a pipe (zip cannot seek back): the sizes live in data descriptors after the data.
zip -qr - data | cat > "$t/pipe.zip"
"$py" -c 'import sys, zipfile; sys.exit(not any(i.flag_bits & 8 for i in zipfile.ZipFile(sys.argv[1]).infolist()))' \
  "$t/pipe.zip" && ok "zip to a pipe wrote data descriptors" || bad "zip to a pipe wrote data descriptors"
same_listing "zip to a pipe (data descriptors)" "$t/pipe.zip" "$t/pipe.zip"
same_content "zip to a pipe (data descriptors)" "$t/pipe.zip" "$t/src"

# Self-extractor junk before the archive, offsets not adjusted (unzip warns and copes; so do we).
{ head -c 5000 /dev/urandom; cat "$t/deflate.zip"; } > "$t/sfx.zip"
unzip -tq "$t/sfx.zip" >/dev/null 2>&1; urc=$?
same_content "self-extractor junk (unzip rc $urc)" "$t/sfx.zip" "$t/src"

# Python's zipfile: Zip64 forced, and data descriptors (written to an unseekable stream).
"$py" - "$t" <<'PY'
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
same_listing "zipfile force_zip64" "$t/z64.zip" "$t/z64.zip"
same_content "zipfile force_zip64" "$t/z64.zip" "$t/src"
same_listing "zipfile data descriptors" "$t/dd.zip" "$t/dd.zip"
same_content "zipfile data descriptors" "$t/dd.zip" "$t/src"

# More than 65535 entries: Zip64 end records.
"$py" - "$t/many.zip" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for i in range(70000):
        z.writestr("e/%05d" % i, str(i))
PY
same_listing "zipfile 70000 entries (Zip64 end)" "$t/many.zip" "$t/many.zip"
frugal verify "$t/many.zip" 2>/dev/null && ok "70000 entries verify" || bad "70000 entries verify"

# Split sets read in place: plain split (letters, digits), frugal parts with a manifest.
mkdir "$t/sp1" "$t/sp2" "$t/sp3"
split -b 20000 "$t/deflate.zip" "$t/sp1/d.zip_"
split -d -a 3 -b 15000 "$t/deflate.zip" "$t/sp2/d.zip."
same_listing "split _aa set" "$t/deflate.zip" "$t/sp1/d.zip_aa"
same_content "split _aa set" "$t/sp1/d.zip_aa" "$t/src"
same_listing "split .000 set" "$t/deflate.zip" "$t/sp2/d.zip.000"
same_content "split .000 set" "$t/sp2/d.zip.000" "$t/src"
"$py" - "$t/deflate.zip" "$t/sp3" <<'PY'
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
same_listing "manifest set" "$t/deflate.zip" "$t/sp3/d.zip.manifest.json"
same_listing "manifest set (first part)" "$t/deflate.zip" "$t/sp3/d.zip.part0000"
same_content "manifest set" "$t/sp3/d.zip.manifest.json" "$t/src"
rm "$t/sp3/d.zip.manifest.json"
same_listing "frugal parts without manifest" "$t/deflate.zip" "$t/sp3/d.zip.part0000"

finish

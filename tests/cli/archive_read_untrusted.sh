#!/usr/bin/env bash
# Untrusted archives through the CLI: clear messages, exit 3 (4 for budgets), nothing written
# outside the target folder (and nothing at all when refused up front). ls still lists hostile
# archives; verify lists every bad item.
source "$(dirname "$0")/lib/common.sh"
keep_going
nothing_written() {  # nothing_written NAME: no files under $t/x, nothing beside the archives
  if [ -z "$(find "$t/x" -type f 2>/dev/null)" ] && [ ! -e "$t/evil" ] && [ ! -e /tmp/frugal-evil-$$ ]; then
    ok "$1 wrote nothing"; else find "$t/x"; bad "$1 wrote something"; fi
}

"$py" - "$t" "$$" <<'PY'
import os, struct, sys, zipfile, zlib
t, pid = sys.argv[1], sys.argv[2]
def z(name, entries, method=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(os.path.join(t, name), "w", method) as f:
        for n, data in entries:
            info = zipfile.ZipInfo(n)
            info.compress_type = method
            f.writestr(info, data)
z("traversal.zip", [("ok.txt", b"fine"), ("../evil", b"x"), ("/tmp/frugal-evil-" + pid, b"x"),
                    ("a\\b", b"x"), ("C:/win", b"x")])
import warnings; warnings.simplefilter("ignore")
z("dup.zip", [("same", b"one"), ("same", b"two")])
z("bomb.zip", [("zeros", b"\0" * 50_000_000)])
z("bz2.zip", [("b.txt", b"hello" * 100)], zipfile.ZIP_BZIP2)
# Two entries with a damaged CRC each (patched in the central and local headers).
path = os.path.join(t, "crc.zip")
z("crc.zip", [("a", b"A" * 1000), ("b", b"B" * 1000), ("c", b"C" * 1000)])
data = bytearray(open(path, "rb").read())
zf = zipfile.ZipFile(path)
for name in ("a", "c"):
    info = zf.getinfo(name)
    bad = struct.pack("<I", info.CRC ^ 0xdeadbeef)
    data[info.header_offset + 14:info.header_offset + 18] = bad
    i = data.find(b"PK\x01\x02")
    while i >= 0:
        nlen = struct.unpack_from("<H", data, i + 28)[0]
        if data[i + 46:i + 46 + nlen] == name.encode():
            data[i + 16:i + 20] = bad
        i = data.find(b"PK\x01\x02", i + 1)
open(path, "wb").write(bytes(data))
PY
(cd "$t" && ln -s /etc/passwd link && zip -qy symlink.zip link && rm link)
(cd "$t" && echo secret > s.txt && zip -q -P pw enc.zip s.txt && rm s.txt)
head -c -30 "$t/crc.zip" > "$t/truncated.zip"
head -c 3000 /dev/urandom > "$t/random.zip"

expect_exit "ls lists a traversal archive" 0 frugal ls --json "$t/traversal.zip"
expect_json "ls marks the unsafe names" 'sum(1 for e in d["entries"] if "problem" in e) == 4'
expect_exit "verify traversal archive" 3 frugal verify --json "$t/traversal.zip"
expect_json "verify lists all four unsafe names" 'not d["ok"] and len(d["bad"]) == 4'
expect_exit "extract traversal archive" 3 frugal extract "$t/traversal.zip" -C "$t/x"
expect_msg "extract names the entry" "../evil"
nothing_written "extract traversal archive"
expect_exit "extract the safe entry by pattern" 0 frugal extract "$t/traversal.zip" ok.txt -C "$t/x"
[ "$(cat "$t/x/ok.txt")" = fine ] && ok "safe entry content" || bad "safe entry content"
rm -rf "$t/x"

expect_exit "extract duplicate names" 3 frugal extract "$t/dup.zip" -C "$t/x"
expect_msg "duplicate named" "duplicate name"
nothing_written "extract duplicate names"

expect_exit "ls symlink entry" 0 frugal ls --json "$t/symlink.zip"
expect_exit "extract symlink entry" 3 frugal extract "$t/symlink.zip" -C "$t/x"
[ ! -L "$t/x/link" ] && ok "no symlink created" || bad "symlink created"

expect_exit "extract bomb over --max-bytes" 4 frugal extract "$t/bomb.zip" -C "$t/x" --max-bytes 1M
expect_msg "max-bytes named" "max-bytes"
nothing_written "bomb over --max-bytes"
expect_exit "extract bomb over --disk-budget" 4 frugal extract "$t/bomb.zip" -C "$t/x" --disk-budget 10M
nothing_written "bomb over --disk-budget"
expect_exit "extract within budget" 0 frugal extract "$t/bomb.zip" -C "$t/x" --max-bytes 100M --disk-budget 100M
rm -rf "$t/x"

expect_exit "verify two bad CRCs" 3 frugal verify --json "$t/crc.zip"
expect_json "verify lists both bad entries" '[b["name"] for b in d["bad"]] == ["a", "c"] and all("CRC" in b["problem"] for b in d["bad"])'
expect_exit "verify human output" 3 frugal verify "$t/crc.zip"
expect_msg "human output lists bad entries, on stdout" "BAD  c:" "$t/out"
expect_exit "unzip -t agrees the CRCs are bad" 2 unzip -tq "$t/crc.zip"

expect_exit "ls truncated archive" 3 frugal ls "$t/truncated.zip"
expect_msg "truncated archive message" "end-of-central-directory"
expect_exit "verify truncated archive" 3 frugal verify --json "$t/truncated.zip"
expect_json "verify truncated reports it" 'not d["ok"] and len(d["bad"]) == 1'
expect_exit "ls random bytes" 3 frugal ls "$t/random.zip"
expect_exit "ls missing file" 2 frugal ls "$t/none.zip"  # a path naming nothing is a usage error (issue 17, input_path.h)

expect_exit "ls encrypted" 0 frugal ls --json "$t/enc.zip"
expect_exit "extract encrypted" 3 frugal extract "$t/enc.zip" -C "$t/x"
expect_msg "encrypted named" "encrypted"
expect_exit "verify encrypted" 3 frugal verify "$t/enc.zip"

expect_exit "ls bzip2" 0 frugal ls --json "$t/bz2.zip"
expect_json "ls shows the method" 'd["entries"][0]["method"] == "bzip2"'
expect_exit "extract bzip2" 3 frugal extract "$t/bz2.zip" -C "$t/x"
expect_msg "method named" "bzip2"

# A name that is not UTF-8 (Latin-1 é), as zip stores it from a C-locale file system.
(cd "$t" && touch "$(printf 'caf\351.txt')" && LANG=C LC_ALL=C zip -q latin.zip "$(printf 'caf\351.txt')")
expect_exit "ls latin-1 name" 0 frugal ls --json "$t/latin.zip"
expect_json "U+FFFD and raw bytes" 'd["entries"][0]["name"] == "caf\ufffd.txt" and d["entries"][0]["raw_name_hex"] == "636166e92e747874"'
expect_exit "ls --name-encoding latin1" 0 frugal ls --json --name-encoding latin1 "$t/latin.zip"
expect_json "decoded name" 'd["entries"][0]["name"] == "caf\u00e9.txt"'
expect_exit "extract --name-encoding latin1" 0 frugal extract --name-encoding latin1 "$t/latin.zip" -C "$t/x"
[ -f "$t/x/café.txt" ] && ok "decoded name on disk" || bad "decoded name on disk"
expect_exit "unknown encoding" 2 frugal ls --name-encoding nope "$t/latin.zip"

# A split set whose part was damaged: verify names the part and then the entries it breaks.
mkdir "$t/set"
"$py" - "$t/crc.zip" "$t/set" <<'PY'
import hashlib, json, os, sys, zipfile
with zipfile.ZipFile(os.path.join(sys.argv[2], "..", "good.zip"), "w", zipfile.ZIP_STORED) as z:
    for i in range(6):
        z.writestr("e%d" % i, bytes([65 + i]) * 700)
data = open(os.path.join(sys.argv[2], "..", "good.zip"), "rb").read()
parts = []
for k, i in enumerate(range(0, len(data), 1000)):
    p = data[i:i + 1000]
    name = "good.zip.part%04d" % k
    open(os.path.join(sys.argv[2], name), "wb").write(p)
    parts.append({"file": name, "size": len(p), "sha256": hashlib.sha256(p).hexdigest()})
json.dump({"format": "frugal-split", "version": 1, "name": "good.zip", "size": len(data),
           "sha256": hashlib.sha256(data).hexdigest(), "parts": parts},
          open(os.path.join(sys.argv[2], "good.zip.manifest.json"), "w"))
p1 = bytearray(open(os.path.join(sys.argv[2], "good.zip.part0001"), "rb").read())
p1[500] ^= 0xff
open(os.path.join(sys.argv[2], "good.zip.part0001"), "wb").write(bytes(p1))
PY
expect_exit "verify good set before" 0 frugal verify "$t/set/../good.zip"
expect_exit "verify damaged set" 3 frugal verify --json "$t/set/good.zip.manifest.json"
expect_json "verify names the part then the entry" 'd["bad"][0]["name"] == "good.zip.part0001" and "SHA-256" in d["bad"][0]["problem"] and len(d["bad"]) == 2 and d["bad"][1]["name"].startswith("e")'
rm "$t/set/good.zip.part0002"
expect_exit "verify set with a missing part" 3 frugal verify --json "$t/set/good.zip.manifest.json"
expect_json "verify names the missing part" '{"name": "good.zip.part0002", "problem": "missing"} in d["bad"]'
expect_exit "ls set with a missing part" 3 frugal ls "$t/set/good.zip.manifest.json"

# Issue 14: hostile manifests, normalised duplicate names, block-counted budgets, IDX bombs.
rm -rf "$t/x"
mkdir -p "$t/j" && printf 'abc' > "$t/j/orig" && frugal split "$t/j/orig" --size 2 >/dev/null 2>&1
"$py" - "$t/j/orig.manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); m["name"] = "../evil"; json.dump(m, open(sys.argv[1], "w"))
PY
expect_exit "join a manifest naming ../evil" 3 frugal join "$t/j/orig.manifest.json"
expect_msg "join names the bad name" "../evil"
[ ! -e "$t/evil" ] && [ ! -e "$t/evil.frugal-join" ] && ok "join wrote nothing outside" || bad "join wrote outside"
"$py" - "$t/j/orig.manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); m["name"] = "orig"; m["size"] = 1; m["parts"][0]["size"] = -1
json.dump(m, open(sys.argv[1], "w"))
PY
expect_exit "verify a manifest with a negative size" 3 frugal verify "$t/j/orig.manifest.json"
expect_exit "join a manifest with a negative size" 3 frugal join "$t/j/orig.manifest.json"

"$py" - "$t" <<'PY'
import os, sys, zipfile, warnings
warnings.simplefilter("ignore")
with zipfile.ZipFile(os.path.join(sys.argv[1], "dotdup.zip"), "w") as f:
    for n, data in (("d/f", b"one"), ("d/./f", b"two"), ("d//f", b"three")):
        f.writestr(zipfile.ZipInfo(n), data)
with zipfile.ZipFile(os.path.join(sys.argv[1], "small.zip"), "w") as f:
    for i in range(2000):
        f.writestr("s/%d" % i, b"x")
PY
expect_exit "ls names normalising to one path" 0 frugal ls --json "$t/dotdup.zip"
expect_json "ls marks both later names as duplicates of d/f" '[e.get("problem", "") for e in d["entries"]] == ["", "duplicate name (the same path as '"'"'d/f'"'"')", "duplicate name (the same path as '"'"'d/f'"'"')"]'
expect_exit "verify names normalising to one path" 3 frugal verify --json "$t/dotdup.zip"
expect_json "verify lists both" 'len(d["bad"]) == 2'
expect_exit "extract names normalising to one path" 3 frugal extract "$t/dotdup.zip" -C "$t/x"
expect_msg "extract names both entries" "'d/./f' (duplicate name (the same path as 'd/f'))"
nothing_written "extract normalised duplicates"
expect_exit "extract 2000 one-byte files under --disk-budget 1M" 4 frugal extract "$t/small.zip" -C "$t/x" --disk-budget 1M
expect_msg "budget counts blocks" "on disk"
nothing_written "extract over a block-counted budget"

"$py" - "$t" <<'PY'
import gzip, os, struct, sys
t = sys.argv[1]
os.makedirs(os.path.join(t, "bomb")); os.makedirs(os.path.join(t, "wrap"))
head = gzip.compress(struct.pack(">IIII", 0x803, 1, 28, 28) + b"\7" * 784)
zeros = gzip.compress(b"\0" * (1 << 20))
open(os.path.join(t, "bomb", "x-images-idx3-ubyte.gz"), "wb").write(head + zeros * 512)
open(os.path.join(t, "bomb", "x-labels-idx1-ubyte"), "wb").write(struct.pack(">II", 0x801, 1) + b"\0")
open(os.path.join(t, "wrap", "x-images-idx3-ubyte"), "wb").write(struct.pack(">IIII", 0x803, 1 << 22, 1 << 22, 1 << 20))
open(os.path.join(t, "wrap", "x-labels-idx1-ubyte"), "wb").write(struct.pack(">II", 0x801, 0))
PY
expect_exit "pack an IDX gzip bomb" 3 frugal pack "$t/bomb" -o "$t/bomb-out.zip"
expect_msg "bomb message" "more data when decompressed"
expect_exit "pack IDX dimensions whose product wraps" 3 frugal pack "$t/wrap" -o "$t/wrap-out.zip"
expect_msg "wrap message" "overflow"

finish

#!/usr/bin/env bash
# Untrusted archives through the CLI: clear messages, exit 3 (4 for budgets), nothing written
# outside the target folder (and nothing at all when refused up front). ls still lists hostile
# archives; verify lists every bad item.
set -u
PY=${FRUGAL_PYTHON:-python3}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fails=0
check() {  # check NAME EXPECTED_RC CMD...  (stdout in $T/out, stderr in $T/err)
  local name=$1 want=$2; shift 2
  "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  if [ "$rc" != "$want" ]; then echo "FAIL $name: exit $rc, expected $want"; cat "$T/err"; fails=$((fails+1))
  else echo "ok   $name"; fi
}
expect() {  # expect NAME PYTHON_CONDITION_ON_d  (d = the JSON in $T/out)
  if "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$T/out"; then
    echo "ok   $1"; else echo "FAIL $1"; cat "$T/out"; fails=$((fails+1)); fi
}
grep_err() {  # grep_err NAME TEXT
  if grep -q -- "$2" "$T/err"; then echo "ok   $1"; else echo "FAIL $1: '$2' not in stderr"; cat "$T/err"; fails=$((fails+1)); fi
}
nothing_written() {  # nothing_written NAME: no files under $T/x, nothing beside the archives
  if [ -z "$(find "$T/x" -type f 2>/dev/null)" ] && [ ! -e "$T/evil" ] && [ ! -e /tmp/frugal-evil-$$ ]; then
    echo "ok   $1 wrote nothing"; else echo "FAIL $1 wrote something"; find "$T/x"; fails=$((fails+1)); fi
}

"$PY" - "$T" "$$" <<'PY'
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
(cd "$T" && ln -s /etc/passwd link && zip -qy symlink.zip link && rm link)
(cd "$T" && echo secret > s.txt && zip -q -P pw enc.zip s.txt && rm s.txt)
head -c -30 "$T/crc.zip" > "$T/truncated.zip"
head -c 3000 /dev/urandom > "$T/random.zip"

check "ls lists a traversal archive" 0 frugal ls --json "$T/traversal.zip"
expect "ls marks the unsafe names" 'sum(1 for e in d["entries"] if "problem" in e) == 4'
check "verify traversal archive" 3 frugal verify --json "$T/traversal.zip"
expect "verify lists all four unsafe names" 'not d["ok"] and len(d["bad"]) == 4'
check "extract traversal archive" 3 frugal extract "$T/traversal.zip" -C "$T/x"
grep_err "extract names the entry" "../evil"
nothing_written "extract traversal archive"
check "extract the safe entry by pattern" 0 frugal extract "$T/traversal.zip" ok.txt -C "$T/x"
[ "$(cat "$T/x/ok.txt")" = fine ] && echo "ok   safe entry content" || { echo "FAIL safe entry content"; fails=$((fails+1)); }
rm -rf "$T/x"

check "extract duplicate names" 3 frugal extract "$T/dup.zip" -C "$T/x"
grep_err "duplicate named" "duplicate name"
nothing_written "extract duplicate names"

check "ls symlink entry" 0 frugal ls --json "$T/symlink.zip"
check "extract symlink entry" 3 frugal extract "$T/symlink.zip" -C "$T/x"
[ ! -L "$T/x/link" ] && echo "ok   no symlink created" || { echo "FAIL symlink created"; fails=$((fails+1)); }

check "extract bomb over --max-bytes" 4 frugal extract "$T/bomb.zip" -C "$T/x" --max-bytes 1M
grep_err "max-bytes named" "max-bytes"
nothing_written "bomb over --max-bytes"
check "extract bomb over --disk-budget" 4 frugal extract "$T/bomb.zip" -C "$T/x" --disk-budget 10M
nothing_written "bomb over --disk-budget"
check "extract within budget" 0 frugal extract "$T/bomb.zip" -C "$T/x" --max-bytes 100M --disk-budget 100M
rm -rf "$T/x"

check "verify two bad CRCs" 3 frugal verify --json "$T/crc.zip"
expect "verify lists both bad entries" '[b["name"] for b in d["bad"]] == ["a", "c"] and all("CRC" in b["problem"] for b in d["bad"])'
check "verify human output" 3 frugal verify "$T/crc.zip"
grep_err "human output lists bad entries" "BAD  c:"
check "unzip -t agrees the CRCs are bad" 2 unzip -tq "$T/crc.zip"

check "ls truncated archive" 3 frugal ls "$T/truncated.zip"
grep_err "truncated archive message" "end-of-central-directory"
check "verify truncated archive" 3 frugal verify --json "$T/truncated.zip"
expect "verify truncated reports it" 'not d["ok"] and len(d["bad"]) == 1'
check "ls random bytes" 3 frugal ls "$T/random.zip"
check "ls missing file" 3 frugal ls "$T/none.zip"

check "ls encrypted" 0 frugal ls --json "$T/enc.zip"
check "extract encrypted" 3 frugal extract "$T/enc.zip" -C "$T/x"
grep_err "encrypted named" "encrypted"
check "verify encrypted" 3 frugal verify "$T/enc.zip"

check "ls bzip2" 0 frugal ls --json "$T/bz2.zip"
expect "ls shows the method" 'd["entries"][0]["method"] == "bzip2"'
check "extract bzip2" 3 frugal extract "$T/bz2.zip" -C "$T/x"
grep_err "method named" "bzip2"

# A name that is not UTF-8 (Latin-1 é), as zip stores it from a C-locale file system.
(cd "$T" && touch "$(printf 'caf\351.txt')" && LANG=C LC_ALL=C zip -q latin.zip "$(printf 'caf\351.txt')")
check "ls latin-1 name" 0 frugal ls --json "$T/latin.zip"
expect "U+FFFD and raw bytes" 'd["entries"][0]["name"] == "caf\ufffd.txt" and d["entries"][0]["raw_name_hex"] == "636166e92e747874"'
check "ls --name-encoding latin1" 0 frugal ls --json --name-encoding latin1 "$T/latin.zip"
expect "decoded name" 'd["entries"][0]["name"] == "caf\u00e9.txt"'
check "extract --name-encoding latin1" 0 frugal extract --name-encoding latin1 "$T/latin.zip" -C "$T/x"
[ -f "$T/x/café.txt" ] && echo "ok   decoded name on disk" || { echo "FAIL decoded name on disk"; fails=$((fails+1)); }
check "unknown encoding" 2 frugal ls --name-encoding nope "$T/latin.zip"

# A split set whose part was damaged: verify names the part and then the entries it breaks.
mkdir "$T/set"
"$PY" - "$T/crc.zip" "$T/set" <<'PY'
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
check "verify good set before" 0 frugal verify "$T/set/../good.zip"
check "verify damaged set" 3 frugal verify --json "$T/set/good.zip.manifest.json"
expect "verify names the part then the entry" 'd["bad"][0]["name"] == "good.zip.part0001" and "SHA-256" in d["bad"][0]["problem"] and len(d["bad"]) == 2 and d["bad"][1]["name"].startswith("e")'
rm "$T/set/good.zip.part0002"
check "verify set with a missing part" 3 frugal verify --json "$T/set/good.zip.manifest.json"
expect "verify names the missing part" '{"name": "good.zip.part0002", "problem": "missing"} in d["bad"]'
check "ls set with a missing part" 3 frugal ls "$T/set/good.zip.manifest.json"

# Issue 14: hostile manifests, normalised duplicate names, block-counted budgets, IDX bombs.
rm -rf "$T/x"
mkdir -p "$T/j" && printf 'abc' > "$T/j/orig" && frugal split "$T/j/orig" --size 2 >/dev/null 2>&1
"$PY" - "$T/j/orig.manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); m["name"] = "../evil"; json.dump(m, open(sys.argv[1], "w"))
PY
check "join a manifest naming ../evil" 3 frugal join "$T/j/orig.manifest.json"
grep_err "join names the bad name" "../evil"
[ ! -e "$T/evil" ] && [ ! -e "$T/evil.frugal-join" ] && echo "ok   join wrote nothing outside" || { echo "FAIL join wrote outside"; fails=$((fails+1)); }
"$PY" - "$T/j/orig.manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); m["name"] = "orig"; m["size"] = 1; m["parts"][0]["size"] = -1
json.dump(m, open(sys.argv[1], "w"))
PY
check "verify a manifest with a negative size" 3 frugal verify "$T/j/orig.manifest.json"
check "join a manifest with a negative size" 3 frugal join "$T/j/orig.manifest.json"

"$PY" - "$T" <<'PY'
import os, sys, zipfile, warnings
warnings.simplefilter("ignore")
with zipfile.ZipFile(os.path.join(sys.argv[1], "dotdup.zip"), "w") as f:
    for n, data in (("d/f", b"one"), ("d/./f", b"two"), ("d//f", b"three")):
        f.writestr(zipfile.ZipInfo(n), data)
with zipfile.ZipFile(os.path.join(sys.argv[1], "small.zip"), "w") as f:
    for i in range(2000):
        f.writestr("s/%d" % i, b"x")
PY
check "ls names normalising to one path" 0 frugal ls --json "$T/dotdup.zip"
expect "ls marks both later names as duplicates of d/f" '[e.get("problem", "") for e in d["entries"]] == ["", "duplicate name (the same path as '"'"'d/f'"'"')", "duplicate name (the same path as '"'"'d/f'"'"')"]'
check "verify names normalising to one path" 3 frugal verify --json "$T/dotdup.zip"
expect "verify lists both" 'len(d["bad"]) == 2'
check "extract names normalising to one path" 3 frugal extract "$T/dotdup.zip" -C "$T/x"
grep_err "extract names both entries" "'d/./f' (duplicate name (the same path as 'd/f'))"
nothing_written "extract normalised duplicates"
check "extract 2000 one-byte files under --disk-budget 1M" 4 frugal extract "$T/small.zip" -C "$T/x" --disk-budget 1M
grep_err "budget counts blocks" "on disk"
nothing_written "extract over a block-counted budget"

"$PY" - "$T" <<'PY'
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
check "pack an IDX gzip bomb" 3 frugal pack "$T/bomb" -o "$T/bomb-out.zip"
grep_err "bomb message" "more data when decompressed"
check "pack IDX dimensions whose product wraps" 3 frugal pack "$T/wrap" -o "$T/wrap-out.zip"
grep_err "wrap message" "overflow"

echo "$fails failure(s)"
[ "$fails" = 0 ]

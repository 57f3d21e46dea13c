#!/usr/bin/env bash
# What frugal trusts of what it reads (issue 47), through ls, extract and verify:
# - the tar index cache is keyed by a key of the user's own, made 0600 in ~/.config/frugal (here
#   $XDG_CONFIG_HOME); a key others can read is refused with a note and nothing is cached; a cache
#   file another user owns is not read (a note) and replaced;
# - a PAX path holding a NUL is shown escaped and whole ("cls/a\x00b.png"), in ls and in extract's
#   refusal, which stopped at the NUL ("'cls/a");
# - a decompressed tar (--cache-decompressed) is reused only when the user owns it, others cannot
#   write it and its record's HMAC is right: a planted tar with an old-style record, or a file
#   another user owns, is decompressed again;
# - "a.tar::b.tar" is two shards also when a.tar exists (it looked for an entry ":b.tar" in a.tar).
source "$(dirname "$0")/lib/common.sh"
keep_going
needs_commands frugal
export FRUGAL_CACHE_DIR=$t/cache XDG_CONFIG_HOME=$t/config
cd "$t"
"$py" - <<'PY'
import io, tarfile
def add(t, name, data):
    info = tarfile.TarInfo(name); info.size = len(data); t.addfile(info, io.BytesIO(data))
with tarfile.open("big.tar", "w", format=tarfile.GNU_FORMAT) as t:
    for i in range(1200):
        add(t, f"{'cat' if i % 2 else 'dog'}/{i:04d}.png", b"x")
with tarfile.open("nul.tar", "w", format=tarfile.PAX_FORMAT) as t:
    info = tarfile.TarInfo("placeholder"); info.size = 4; info.pax_headers = {"path": "cls/a\x00b.png"}
    t.addfile(info, io.BytesIO(b"data"))
    add(t, "cls/ok.png", b"ok")
with tarfile.open("a.tar", "w") as t:
    add(t, "x.jpg", b"a"); add(t, "x.cls", b"0")
with tarfile.open("b.tar", "w") as t:
    add(t, "y.jpg", b"b"); add(t, "y.cls", b"1")
PY

# ---- the cache key
key=$t/config/frugal/cache-key
expect_exit "ls of a tar of 1,200 members" 0 frugal ls --json big.tar
check "the key is made: 32 bytes, mode 0600, the user's" \
  '[ "$(stat -c "%s %a %u" "$key")" == "32 600 $(id -u)" ] && [ "$(stat -c %a "$(dirname "$key")")" == 700 ]'
cache=$(ls "$t"/cache/tar-index/*big.tar.tarindex 2>/dev/null | head -1)
check "the index is cached" '[ -f "$cache" ]'
check "...as version 2, with a 32-byte MAC" \
  '[ "$(od -An -tu4 -j16 -N4 "$cache" | tr -d " ")" == 2 ]'
first_key=$(od -An -tx1 "$key" | tr -d ' \n')
expect_exit "ls again: from the cache" 0 frugal ls --json big.tar
check "the same key" '[ "$(od -An -tx1 "$key" | tr -d " \n")" == "$first_key" ]'
expect_no_msg "...without a note" "cache"

if [ "$(id -u)" == 0 ]; then
  chown 65534:65534 "$cache"
  expect_exit "a cache another user owns" 0 frugal ls big.tar
  expect_msg "...is not trusted, said" "a cache written by another user (uid 65534) is never trusted"
  check "...and replaced by the user's" '[ "$(stat -c %u "$cache")" == 0 ]'
  expect_msg "...the entries as the tar says" "dog/0000.png" "$t/out"
fi

chmod 644 "$key"
rm -rf "$t/cache"
expect_exit "a key others can read: ls --json still works" 0 frugal ls --json big.tar
expect_msg "...the key refused, said even with --json" "frugal: warning: $key: not used as the key of the index caches: it can be read or written by others (mode 0644)"
expect_msg "...with what to do" "Delete it"
check "...and nothing cached" '[ ! -e "$t/cache/tar-index" ]'
rm "$key"
expect_exit "the key deleted: made again" 0 frugal ls --json big.tar
check "...0600 again" '[ "$(stat -c %a "$key")" == 600 ] && [ -n "$(ls "$t"/cache/tar-index/)" ]'
expect_exit "verify of the cached tar" 0 frugal verify big.tar

# ---- the decompressed-tar cache (--cache-decompressed): owned, not writable by others, keyed
"$py" - <<'PY'
import gzip, io, tarfile
b = io.BytesIO()
with tarfile.open(fileobj=b, mode="w") as t:
    for name in ("cat/1.png", "dog/2.png"):
        info = tarfile.TarInfo(name); info.size = 1; t.addfile(info, io.BytesIO(b"x"))
open("small.tar.gz", "wb").write(gzip.compress(b.getvalue()))
PY
expect_exit "ls --cache-decompressed of a .tar.gz" 0 frugal ls --cache-decompressed small.tar.gz
dtar=$(ls "$t"/cache/decompressed/small-*.tar 2>/dev/null | head -1)
check "...decompressed, 0644, with a version 2 record and its MAC" \
  '[ -f "$dtar" ] && [ "$(stat -c %a "$dtar")" == 644 ] && "$py" -c "import json,sys; d=json.load(open(sys.argv[1])); assert d[\"version\"] == 2 and len(d[\"mac\"]) == 64" "$dtar.source"'
# Someone who can write the folder plants a tar of other names, with a record as version 1 wrote it.
"$py" - "$dtar" <<'PY'
import io, json, os, sys, tarfile
out = sys.argv[1]
with tarfile.open(out, "w") as t:
    info = tarfile.TarInfo("planted/x.png"); info.size = 1; t.addfile(info, io.BytesIO(b"x"))
st = os.stat("small.tar.gz")
json.dump({"format": "frugal-decompressed", "version": 1, "source": os.path.abspath("small.tar.gz"),
           "source_size": st.st_size, "source_mtime_ns": st.st_mtime_ns, "bytes": os.path.getsize(out)},
          open(out + ".source", "w"))
PY
expect_exit "a planted tar with an old-style record" 0 frugal ls --cache-decompressed small.tar.gz
expect_msg "...the names come from the .tar.gz" "dog/2.png" "$t/out"
expect_no_msg "...not from the planted tar" "planted" "$t/out"
if [ "$(id -u)" == 0 ]; then
  chown 65534:65534 "$dtar"
  expect_exit "a decompressed tar another user owns" 0 frugal ls --cache-decompressed small.tar.gz
  expect_msg "...is not trusted, said" "a decompressed tar cache that was written by another user (uid 65534) is never trusted"
  check "...and made again, the user's" '[ "$(stat -c %u "$dtar")" == 0 ]'
fi

# ---- a NUL in a PAX path
expect_exit "ls of a PAX path with a NUL" 0 frugal ls --json nul.tar
expect_json "...shown escaped, whole, its bytes in raw_name_hex" \
  'd["entries"][0]["name"] == "cls/a\\x00b.png" and d["entries"][0]["raw_name_hex"] == "636c732f610062" + "2e706e67"'
expect_exit "extract refuses it" 3 frugal extract nul.tar -C "$t/x"
expect_msg "...naming it whole" "'cls/a\\x00b.png' (NUL byte in name)"
check "...nothing written" '[ ! -e "$t/x/cls" ]'
expect_exit "verify names it" 3 frugal verify nul.tar
expect_msg "...whole" 'cls/a\x00b.png' "$t/out"

# ---- shard lists
expect_exit "a.tar::b.tar where a.tar exists" 0 frugal ls --json "a.tar::b.tar"
expect_json "...both shards" '[e["name"] for e in d["entries"]] == ["a.tar/x.jpg", "a.tar/x.cls", "b.tar/y.jpg", "b.tar/y.cls"]'
finish

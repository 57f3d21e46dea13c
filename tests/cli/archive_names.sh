#!/usr/bin/env bash
# File names at the file system's limits and names that are not UTF-8, through extract, split,
# pack and join:
# - 250-byte names (frugal's temporaries add 24 bytes) extract, pack -o and join -o end to end;
#   split refuses a name its parts' names could not hold (exit 3) before writing anything;
# - entry names the file system cannot take (a part over NAME_MAX, a path over PATH_MAX) are
#   refused up front: exit 3 naming them, not one folder created;
# - a Latin-1 file name (not UTF-8) is split, verified and joined back under its exact name, and
#   split --json stays valid JSON.
source "$(dirname "$0")/lib/common.sh"
keep_going
needs_commands frugal cmp
long=$(printf 'n%.0s' $(seq 250))

# ---- 250-byte names
"$py" - "$t/long.zip" "$long" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("cls/" + sys.argv[2], b"x" * 5000)
    z.writestr(sys.argv[2] + "/a.png", b"y" * 5000)
PY
expect_exit "extract of 250-byte names" 0 frugal extract "$t/long.zip" -C "$t/x"
check "both files are there" '[ "$(cat "$t/x/cls/$long" | wc -c)" == 5000 ] && [ -f "$t/x/$long/a.png" ]'
expect_exit "pack -o a 250-byte name" 0 frugal pack "$t/x" -o "$t/p/$long"
check "the zip is there, no temporary beside it" '[ -f "$t/p/$long" ] && [ "$(ls "$t/p" | wc -l)" == 1 ]'
cp "$t/long.zip" "$t/p/data.zip"
expect_exit "split data.zip" 0 frugal split "$t/p/data.zip" --size 2K -o "$t/parts"
mkdir "$t/j"
expect_exit "join -o a 250-byte name" 0 frugal join "$t/parts/data.zip.manifest.json" -o "$t/j/$long" --delete-parts
check "the join equals the original" 'cmp -s "$t/long.zip" "$t/j/$long"'
expect_exit "split of a 250-byte name is refused (3)" 3 frugal split "$t/p/$long" --size 2K -o "$t/s"
expect_msg "saying how long a name may be" "at most 241"
check "nothing was written" '[ ! -e "$t/s" ]'
expect_exit "pack --split to a 250-byte name is refused (3)" 3 frugal pack "$t/x" -o "$t/ps/$long" --split 2K
check "nothing was written" '[ ! -e "$t/ps" ]'

# ---- names the file system cannot take: refused before anything is created
"$py" - "$t/deep.zip" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for i in range(2041):
        z.writestr("f%04d/ok.txt" % i, b"ok")
    z.writestr("f9999/" + "n" * 300, b"too long a name")
    z.writestr(("p" * 200 + "/") * 25 + "f", b"too long a path")
PY
expect_exit "extract of names over NAME_MAX and PATH_MAX is refused (3)" 3 frugal extract "$t/deep.zip" -C "$t/d"
expect_msg "naming them" "2 too long"
expect_msg "with their length" "a name of 300 bytes"
check "not one folder was created" '[ ! -e "$t/d" ]'
mkdir "$t/d2"
expect_exit "the same into a folder that exists" 3 frugal extract "$t/deep.zip" -C "$t/d2"
check "nothing was created in it" '[ -z "$(ls -A "$t/d2")" ]'
expect_exit "the entries that fit, by pattern" 0 frugal extract "$t/deep.zip" 'f0*' -C "$t/d2"

# ---- a Latin-1 name
lat=$(printf 'd\xe9.zip')
mkdir "$t/l"
cp "$t/long.zip" "$t/l/$lat"
frugal split "$t/l/$lat" --size 2K --json > "$t/split.json" 2>"$t/err"
check "split of a Latin-1 name exits 0" '[ $? == 0 ]'
expect_json "split --json is valid JSON, the name shown with U+FFFD" 'd["name"] == "d\ufffd.zip" and len(d["parts"]) > 1' \
  "$t/split.json"
expect_json "the manifest keeps the exact bytes" \
  'd["name"] == "d\ufffd.zip" and d["raw_name_hex"] == "64e92e7a6970"' "$t/l/$lat.manifest.json"
check "the parts carry the exact name" '[ -f "$t/l/$lat.part0000" ]'
expect_exit "verify of its manifest" 0 frugal verify "$t/l/$lat.manifest.json"
mv "$t/l/$lat" "$t/orig.zip"
expect_exit "join back under its own name" 0 frugal join "$t/l/$lat.manifest.json" --delete-parts
check "the joined file has the exact name and bytes" 'cmp -s "$t/orig.zip" "$t/l/$lat"'
expect_exit "ls of it" 0 frugal ls "$t/l/$lat"

finish

#!/usr/bin/env bash
# extract, split and pack killed (SIGKILL, as a notebook's kernel restart or the OOM killer) at
# random points, then run again: the result equals an uninterrupted run, no *.frugal-tmp-* file is
# left anywhere, and a pack of the extracted folder holds only the archive's files. Each kill is
# checked to have landed: the process was alive and had written data (its /proc/PID/io wchar past
# a random threshold) when the signal was sent, and it died of it.
source "$(dirname "$0")/lib/common.sh"
keep_going
needs_commands frugal
[[ -r /proc/self/io ]] || skip "no /proc/PID/io here"

# kill_at TAG CMD...: runs CMD, SIGKILLs it once it has written a random share (10-90%) of
# $KILL_BYTES bytes; appends "rc wchar_at_kill" to $t/TAG.kills.
kill_at() {
  local tag=$1
  shift
  "$py" - "$KILL_BYTES" "$RANDOM" "$@" >> "$t/$tag.kills" 2>>"$t/$tag.err" <<'PY'
import os, random, signal, subprocess, sys
total, seed, cmd = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
at = int(total * random.Random(seed).uniform(0.1, 0.9))
p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
written = -1
while p.poll() is None:
    try:
        io = dict(l.split(": ") for l in open("/proc/%d/io" % p.pid).read().splitlines())
    except (OSError, ValueError):
        continue
    if int(io["wchar"]) >= at:
        written = int(io["wchar"])
        os.kill(p.pid, signal.SIGKILL)
        break
print(p.wait(), written)
PY
}
kills_landed() {  # kills_landed TAG: every kill ended its process (-9) after it had written data
  awk '$1 != -9 || $2 <= 0 { bad = 1 } END { exit bad || NR == 0 }' "$t/$1.kills"
}
no_temporaries() { [ -z "$(find "$@" -name '*.frugal-tmp-*' 2>/dev/null)" ]; }

# The data: 1,500 files of 16 KB in 5 class folders, stored (as images are).
"$py" - "$t/data.zip" <<'PY'
import random, sys, zipfile
r = random.Random(5)
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_STORED) as z:
    for i in range(1500):
        z.writestr("class%d/%04d.png" % (i % 5, i), r.randbytes(16000))
PY
frugal extract "$t/data.zip" -C "$t/ref" 2>/dev/null || die "reference extract failed"

# ---- extract
for i in 1 2 3; do
  # A rerun writes only what is not there yet: the kill comes within what is left.
  KILL_BYTES=$((24000000 - $(find "$t/x" -type f -printf '%s\n' 2>/dev/null | awk '{s += $1} END {print s + 0}')))
  kill_at extract frugal extract "$t/data.zip" -C "$t/x"
done
check "3 extracts were killed while writing ($(tr '\n' ' ' < "$t/extract.kills"))" 'kills_landed extract'
frugal extract "$t/data.zip" -C "$t/x" 2>"$t/err"
check "the rerun exits 0" '[ $? == 0 ]'
check "the extracted folder equals an uninterrupted extract" 'diff -r "$t/ref" "$t/x" >/dev/null'
check "no temporary left in the class folders" 'no_temporaries "$t/x"'
frugal pack "$t/x" -o "$t/repacked.zip" 2>/dev/null
check "a pack of the extracted folder holds exactly the archive's files" \
  '"$py" -c "import sys, zipfile; a = sorted(zipfile.ZipFile(sys.argv[1]).namelist()); b = sorted(zipfile.ZipFile(sys.argv[2]).namelist()); sys.exit(a != b)" "$t/data.zip" "$t/repacked.zip"'

# ---- split
head -c 40000000 /dev/urandom > "$t/big.bin"
mkdir "$t/sref" "$t/s"
frugal split "$t/big.bin" --size 2M -o "$t/sref" 2>/dev/null || die "reference split failed"
KILL_BYTES=40000000
for i in 1 2 3; do kill_at split frugal split "$t/big.bin" --size 2M -o "$t/s"; done
check "3 splits were killed while writing ($(tr '\n' ' ' < "$t/split.kills"))" 'kills_landed split'
frugal split "$t/big.bin" --size 2M -o "$t/s" 2>"$t/err"
check "the rerun exits 0" '[ $? == 0 ]'
check "the parts and manifest equal an uninterrupted split" 'diff -r "$t/sref" "$t/s" >/dev/null'
check "no part-sized temporary left" 'no_temporaries "$t/s"'

# ---- pack (the whole zip, and as parts)
frugal pack "$t/ref" -o "$t/pref/out.zip" 2>/dev/null || die "reference pack failed"
frugal pack "$t/ref" -o "$t/pref/set.zip" --split 4M 2>/dev/null || die "reference pack --split failed"
KILL_BYTES=24000000
for i in 1 2; do kill_at pack frugal pack "$t/ref" -o "$t/p/out.zip"; done
for i in 1 2; do kill_at pack frugal pack "$t/ref" -o "$t/p/set.zip" --split 4M; done
check "4 packs were killed while writing ($(tr '\n' ' ' < "$t/pack.kills"))" 'kills_landed pack'
frugal pack "$t/ref" -o "$t/p/out.zip" 2>"$t/err" && frugal pack "$t/ref" -o "$t/p/set.zip" --split 4M 2>>"$t/err"
check "the reruns exit 0" '[ $? == 0 ]'
check "the zip and the parts equal an uninterrupted pack" 'diff -r "$t/pref" "$t/p" >/dev/null'
check "no temporary left beside the output" 'no_temporaries "$t/p"'

finish

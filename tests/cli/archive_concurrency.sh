#!/usr/bin/env bash
# Two archive commands on one set or folder at once (a notebook cell run twice), and reruns:
# - two `join --delete-parts` of one 30-part set: the second stops at once (exit 1) naming the
#   first's pid, deletes nothing; the first's output is the original byte for byte;
# - a rerun of a finished `join --delete-parts` checks the output and exits 0;
# - two extracts into one folder: the second stops at once (exit 1) naming the first;
# - extract into a folder holding the user's files (and the archive itself): refused with
#   nothing written, --skip-existing keeps theirs, --overwrite replaces them but never the archive.
# "At once" is made deterministic: the first process is stopped (SIGSTOP) while it holds its lock,
# seen in /proc/locks, the second runs against it, then the first is continued.
source "$(dirname "$0")/lib/common.sh"
keep_going
needs_commands frugal sha256sum
sum() { sha256sum "$1" | cut -d' ' -f1; }

# race FIRST_DIR LOCKED_PATH OUT -- FIRST... -- SECOND...: runs FIRST, waits until it holds a lock
# on LOCKED_PATH (and, for a join, its partial output holds a part), stops it, runs SECOND (10 s at
# most), continues FIRST. OUT gets "first_pid first_rc second_rc second_seconds first_alive".
race() {
  "$py" - "$@" <<'PY'
import os, signal, subprocess, sys, time
locked, out = sys.argv[1], sys.argv[2]
rest = sys.argv[3:]
first = rest[1:rest.index("--", 1)]
second = rest[rest.index("--", 1) + 1:]
st = os.stat(locked)
want = "%02x:%02x:%d" % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
p = subprocess.Popen(first, stdout=subprocess.DEVNULL, stderr=open(out + ".first.err", "w"))
def holds():
    for line in open("/proc/locks"):
        f = line.split()
        if "->" in f: continue
        if len(f) > 5 and f[4] == str(p.pid) and f[5] == want: return True
    return False
deadline = time.time() + 30
while p.poll() is None and not holds() and time.time() < deadline:
    time.sleep(0.002)
wait_for = os.environ.get("WAIT_FOR")  # a file that must exist before the stop (a join's partial)
while wait_for and p.poll() is None and not (os.path.exists(wait_for) and os.path.getsize(wait_for) > 0):
    time.sleep(0.002)
alive = p.poll() is None
if alive: os.kill(p.pid, signal.SIGSTOP)
before = sorted(os.listdir(os.environ["WATCH"])) if os.environ.get("WATCH") else []
t0 = time.time()
try:
    q = subprocess.run(second, stdout=subprocess.DEVNULL, stderr=open(out + ".second.err", "w"), timeout=10)
    rc2 = q.returncode
except subprocess.TimeoutExpired:
    rc2 = 124
t2 = time.time() - t0
after = sorted(os.listdir(os.environ["WATCH"])) if os.environ.get("WATCH") else []
if alive: os.kill(p.pid, signal.SIGCONT)
rc1 = p.wait()
open(out + ".watch", "w").write("same" if before == after else "changed: %s -> %s" % (before, after))
print(p.pid, rc1, rc2, "%.2f" % t2, int(alive), file=open(out, "w"))
PY
}

# ---- two joins --delete-parts of one 30-part set
mkdir -p "$t/set"
head -c 60000000 /dev/urandom > "$t/orig.bin"
ORIG=$(sum "$t/orig.bin")
cp "$t/orig.bin" "$t/set/data.bin"
frugal split "$t/set/data.bin" --size 2000000 2>/dev/null || die "split failed"
rm "$t/set/data.bin"
check "the set has 30 parts" '[ "$(ls "$t/set" | grep -c part)" == 30 ]'
m="$t/set/data.bin.manifest.json"
WATCH="$t/set" WAIT_FOR="$t/set/data.bin.frugal-join" race "$m" "$t/joins" -- \
  frugal join "$m" --delete-parts -- frugal join "$m" --delete-parts
read -r PID RC1 RC2 T2 ALIVE < "$t/joins"
check "the first join was running (stopped holding its lock) when the second started" '[ "$ALIVE" == 1 ]'
check "the second join exits 1 at once (${T2}s)" '[ "$RC2" == 1 ] && awk "BEGIN{exit !($T2 < 5)}"'
expect_msg "the second join names the first's pid" "pid $PID" "$t/joins.second.err"
expect_msg "the second join says how to go on" "run the same command again" "$t/joins.second.err"
check "the second join deleted or wrote nothing ($(cat "$t/joins.watch"))" '[ "$(cat "$t/joins.watch")" == same ]'
check "the first join exits 0" '[ "$RC1" == 0 ]'
check "the first join's output is the original byte for byte" '[ "$(sum "$t/set/data.bin")" == "$ORIG" ]'
check "every part is gone, no partial output left" \
  '[ -z "$(ls "$t/set" | grep -e part -e frugal-join)" ]'

# The same race on the clock, as a cell run twice happens: the second join 0.3 s after the first.
# Whichever way the timing falls, the output is the original and the second never reports success
# over a join it did not do (exit 1 while the first runs, or exit 0 "already joined" after it).
rm -rf "$t/set2" && mkdir "$t/set2" && cp "$t/orig.bin" "$t/set2/data.bin"
frugal split "$t/set2/data.bin" --size 2000000 2>/dev/null && rm "$t/set2/data.bin"
frugal join "$t/set2/data.bin.manifest.json" --delete-parts 2>/dev/null & first=$!
sleep 0.3
frugal join "$t/set2/data.bin.manifest.json" --delete-parts 2>"$t/err"; RC2=$?
wait $first; RC1=$?
check "joins 0.3 s apart: the first exits 0, the second 1 (or 0 once the first was done): $RC1 $RC2" \
  '[ "$RC1" == 0 ] && { [ "$RC2" == 1 ] || { [ "$RC2" == 0 ] && grep -q "already joined" "$t/err"; }; }'
check "joins 0.3 s apart: the output is the original" '[ "$(sum "$t/set2/data.bin")" == "$ORIG" ]'

# ---- rerun of the finished join --delete-parts ("run the same command again")
frugal join "$m" --delete-parts 2>"$t/err"
check "a rerun of the finished join exits 0" '[ $? == 0 ]'
expect_msg "it says the output was already joined and verified" "already joined: $t/set/data.bin"
frugal join "$m" --delete-parts --json > "$t/rerun.json" 2>/dev/null
expect_json "its --json says already_joined" 'd["already_joined"] is True and d["sha256"] == "'"$ORIG"'"' "$t/rerun.json"
check "the output is unchanged" '[ "$(sum "$t/set/data.bin")" == "$ORIG" ]'
printf 'x' | dd of="$t/set/data.bin" bs=1 seek=1000 conv=notrunc status=none
frugal join "$m" --delete-parts 2>"$t/err"
check "a rerun finding another file at the output exits 3" '[ $? == 3 ]'
expect_msg "naming it" "$t/set/data.bin"
check "and leaves it as it is" '[ -f "$t/set/data.bin" ] && [ "$(stat -c %s "$t/set/data.bin")" == 60000000 ]'

# ---- two extracts into one folder
"$py" - "$t/many.zip" <<'PY'
import os, random, sys, zipfile
r = random.Random(3)
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_STORED) as z:
    for i in range(1200):
        z.writestr("c%d/%04d.bin" % (i % 4, i), r.randbytes(20000))
PY
mkdir "$t/x"
WATCH="$t/x" race "$t/x" "$t/extracts" -- frugal extract "$t/many.zip" -C "$t/x" -- frugal extract "$t/many.zip" -C "$t/x"
read -r PID RC1 RC2 T2 ALIVE < "$t/extracts"
check "the first extract was running when the second started" '[ "$ALIVE" == 1 ]'
check "the second extract exits 1 at once (${T2}s)" '[ "$RC2" == 1 ] && awk "BEGIN{exit !($T2 < 5)}"'
expect_msg "the second extract names the first's pid" "pid $PID" "$t/extracts.second.err"
check "the first extract exits 0" '[ "$RC1" == 0 ]'
"$py" - "$t/many.zip" "$t/x" > "$t/cmp" 2>&1 <<'PY'
import os, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = {n for n in z.namelist()}
on_disk = {os.path.relpath(os.path.join(r, f), sys.argv[2]) for r, _, fs in os.walk(sys.argv[2]) for f in fs}
assert on_disk == names, sorted(on_disk ^ names)[:5]
for n in names:
    assert open(os.path.join(sys.argv[2], n), "rb").read() == z.read(n), n
PY
check "the folder holds exactly the archive's files ($(tail -1 "$t/cmp"))" '[ ! -s "$t/cmp" ]'

# ---- extract into a folder holding the user's files, and the archive itself
mkdir "$t/home"
echo "my notes" > "$t/home/notes.txt"
echo "alias ll='ls -l'" > "$t/home/.bashrc"
"$py" - "$t/home/data.zip" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("notes.txt", "from the archive\n")
    z.writestr(".bashrc", "rm -rf ~\n")
    z.writestr("data.zip", "not a zip\n")
    z.writestr("images/1.png", "png\n")
PY
cd "$t/home"
ZIPSUM=$(sum data.zip)
same_home() { [ "$(cat notes.txt)" == "my notes" ] && grep -q alias .bashrc && [ "$(sum data.zip)" == "$ZIPSUM" ]; }
expect_exit "extract over the user's files is refused (2)" 2 frugal extract data.zip
expect_msg "naming them" "'notes.txt' (a different file)"
expect_msg "naming the archive itself" "'data.zip' (the archive being read)"
expect_msg "saying what to do" "--skip-existing"
check "nothing was written or replaced" 'same_home && [ ! -e images ]'
expect_exit "--skip-existing extracts the rest" 0 frugal extract data.zip --skip-existing
check "and keeps the user's files" 'same_home && [ "$(cat images/1.png)" == png ]'
expect_exit "--overwrite never replaces the archive being read (2)" 2 frugal extract data.zip --overwrite
expect_msg "naming it" "'data.zip' (the archive being read)"
check "nothing replaced" 'same_home'
expect_exit "--overwrite of the other entries replaces them" 0 frugal extract data.zip notes.txt --overwrite
check "notes.txt replaced, the archive intact (ls data.zip works)" \
  '[ "$(cat notes.txt)" == "from the archive" ] && frugal ls data.zip >/dev/null 2>&1'
expect_exit "a rerun finds everything already there" 0 frugal extract data.zip notes.txt images/1.png
expect_msg "and says so" "2 already there"
cd - >/dev/null

finish

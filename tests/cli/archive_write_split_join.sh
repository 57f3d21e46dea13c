#!/usr/bin/env bash
# frugal split / join: parts and manifest as CLI.md says, sha256sum of a join equals the original,
# damaged parts exit 3 naming the part, interrupted joins continue, --delete-parts consumes parts.
source "$(dirname "$0")/lib/common.sh"
keep_going
needs_commands sha256sum
sum() { sha256sum "$1" | cut -d' ' -f1; }

head -c 3500000 /dev/urandom > "$t/data.bin"
ORIG=$(sum "$t/data.bin")

frugal split "$t/data.bin" --size 1M -o "$t/p" --json > "$t/split.json" 2>"$t/err"
check "split exits 0" '[ $? -eq 0 ]'
check "split writes 4 parts and a manifest" \
  '[ "$(ls "$t/p" | tr "\n" " ")" == "data.bin.manifest.json data.bin.part0000 data.bin.part0001 data.bin.part0002 data.bin.part0003 " ]'
check "parts are at most 1M" '[ "$(stat -c %s "$t/p/data.bin.part0000")" -eq 1048576 ] && [ "$(stat -c %s "$t/p/data.bin.part0003")" -eq $((3500000 - 3*1048576)) ]'
check "manifest holds the whole SHA-256" \
  '[ "$("$py" -c "import json,sys; m=json.load(open(sys.argv[1])); print(m[\"format\"], m[\"version\"], m[\"sha256\"])" "$t/p/data.bin.manifest.json")" == "frugal-split 1 $ORIG" ]'
check "manifest part sums match sha256sum" \
  '[ "$("$py" -c "import json,sys; m=json.load(open(sys.argv[1])); print(m[\"parts\"][2][\"sha256\"])" "$t/p/data.bin.manifest.json")" == "$(sum "$t/p/data.bin.part0002")" ]'
check "split --json reports the parts" \
  '[ "$("$py" -c "import json,sys; print(len(json.load(sys.stdin)[\"parts\"]))" < "$t/split.json")" == 4 ]'
frugal split "$t/data.bin" --size 1X >/dev/null 2>&1
check "bad --size is a usage error (2)" '[ $? -eq 2 ]'

frugal join "$t/p/data.bin.manifest.json" -o "$t/joined" 2>"$t/err"
check "join exits 0" '[ $? -eq 0 ]'
check "sha256sum of the join equals the original" '[ "$(sum "$t/joined")" == "$ORIG" ]'
check "join keeps the parts" '[ -f "$t/p/data.bin.part0000" ]'
frugal join "$t/p/data.bin.manifest.json" -o "$t/joined" >/dev/null 2>"$t/err"
check "a rerun of a finished join checks the output and exits 0" '[ $? -eq 0 ] && grep -q "already joined" "$t/err"'
printf 'x' >> "$t/joined"
frugal join "$t/p/data.bin.manifest.json" -o "$t/joined" >/dev/null 2>&1
check "a different file at the output is refused (3) and kept" '[ $? -eq 3 ] && [ "$(sum "$t/joined")" != "$ORIG" ]'

# A crash in the middle of part 2: the partial output holds part 0, 1 and half of 2.
head -c 2500000 "$t/data.bin" > "$t/resumed.frugal-join"
frugal join "$t/p/data.bin.manifest.json" -o "$t/resumed" --json > "$t/join.json" 2>/dev/null
check "interrupted join continues after the 2 whole parts" \
  '[ "$("$py" -c "import json,sys; print(json.load(sys.stdin)[\"parts_resumed\"])" < "$t/join.json")" == 2 ]'
check "continued join equals the original" '[ "$(sum "$t/resumed")" == "$ORIG" ] && [ ! -e "$t/resumed.frugal-join" ]'

# Damaged part: exit 3 naming the part, expected and found sums.
cp -r "$t/p" "$t/bad"
# Flip every bit of one byte, so the part differs whatever the random byte was.
"$py" -c "import sys; f=open(sys.argv[1],'r+b'); f.seek(100); b=f.read(1)[0]; f.seek(100); f.write(bytes([b^0xFF]))" "$t/bad/data.bin.part0002"
frugal join "$t/bad/data.bin.manifest.json" -o "$t/badjoin" 2>"$t/err"
check "damaged part exits 3" '[ $? -eq 3 ]'
check "message names the part and both sums" \
  'grep -q "data.bin.part0002" "$t/err" && grep -q "$(sum "$t/p/data.bin.part0002")" "$t/err" && grep -q "$(sum "$t/bad/data.bin.part0002")" "$t/err"'
check "no output after a bad part" '[ ! -e "$t/badjoin" ]'
cp "$t/p/data.bin.part0002" "$t/bad/"
frugal join "$t/bad/data.bin.manifest.json" -o "$t/badjoin" 2>/dev/null
check "after restoring the part the join continues to the original" '[ "$(sum "$t/badjoin")" == "$ORIG" ]'

# Tampered manifest (a part sum changed): exit 3.
sed -i "s/$(sum "$t/p/data.bin.part0001")/$(printf '0%.0s' $(seq 64))/" "$t/bad/data.bin.manifest.json"
frugal join "$t/bad/data.bin.manifest.json" -o "$t/tampered" 2>/dev/null
check "tampered manifest exits 3" '[ $? -eq 3 ]'

# --delete-parts consumes the parts.
cp -r "$t/p" "$t/d"
frugal join "$t/d/data.bin.manifest.json" --delete-parts 2>/dev/null
check "join --delete-parts writes the original beside the manifest" '[ "$(sum "$t/d/data.bin")" == "$ORIG" ]'
check "join --delete-parts removed every part" '[ -z "$(ls "$t/d" | grep part)" ]'

# A real join killed midway (SIGKILL, as a crash) and run again. The kill is sent when the partial
# output is seen holding at least one whole part but not all of them (watched by a busy loop, not
# a timer), and must reach the running join: it dies of the signal and leaves the partial file.
head -c 60000000 /dev/urandom > "$t/big.bin"
BIG=$(sum "$t/big.bin")
frugal split "$t/big.bin" --size 5M -o "$t/bp" --no-sync 2>/dev/null
rm "$t/big.bin"
"$py" - "$t/bp/big.bin.manifest.json" "$t/bp/big.bin.frugal-join" 60000000 $((5 * 1048576)) > "$t/kill.txt" 2>&1 <<'PY'
import os, signal, subprocess, sys
manifest, partial, total, part = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
p = subprocess.Popen(["frugal", "join", manifest, "--delete-parts", "--no-sync"], stderr=subprocess.DEVNULL)
seen = -1
while p.poll() is None:
    try:
        size = os.stat(partial).st_size
    except FileNotFoundError:
        continue
    if part <= size < total:
        seen = size
        os.kill(p.pid, signal.SIGKILL)
        break
rc = p.wait()
after = os.stat(partial).st_size if os.path.exists(partial) else -1
print(rc, seen, after)
PY
read -r KILL_RC KILL_SEEN KILL_AFTER < "$t/kill.txt"
check "the SIGKILL landed while join was writing (killed by it, partial of $KILL_SEEN bytes seen)" \
  '[ "$KILL_RC" == -9 ] && [ "$KILL_SEEN" -ge $((5 * 1048576)) ]'
check "the partial output survives the kill, holding some but not all bytes ($KILL_AFTER)" \
  '[ "$KILL_AFTER" -ge "$KILL_SEEN" ] && [ "$KILL_AFTER" -lt 60000000 ] && [ ! -e "$t/bp/big.bin" ]'
frugal join "$t/bp/big.bin.manifest.json" --delete-parts --json 2>/dev/null > "$t/kill.json"
check "join rerun after SIGKILL exits 0" '[ $? -eq 0 ]'
RESUMED=$("$py" -c "import json,sys; print(json.load(sys.stdin)['parts_resumed'])" < "$t/kill.json" 2>/dev/null)
check "the rerun continues after the whole parts the killed join wrote ($RESUMED >= 1)" \
  '[ "${RESUMED:-0}" -ge 1 ] && [ "$RESUMED" -lt 12 ]'
check "join rerun after SIGKILL equals the original" '[ "$(sum "$t/bp/big.bin")" == "$BIG" ] && [ ! -e "$t/bp/big.bin.frugal-join" ]'

finish

#!/usr/bin/env bash
# frugal bench loader: JSON shape, and exit 3 with counts when too many images are undecodable.
set -euo pipefail
[[ -n ${FRUGAL_PYTHON:-} ]] || { echo "no FRUGAL_PYTHON" >&2; exit 77; }
"$FRUGAL_PYTHON" -c "import PIL, numpy" 2>/dev/null || { echo "no PIL" >&2; exit 77; }
command -v frugal-torch >/dev/null || { echo "frugal-torch not built" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$FRUGAL_PYTHON" "$FRUGAL_SOURCE_DIR/tests/data/make_archives.py" "$tmp"

frugal bench loader "$tmp/folders.zip" --seconds 1 --image-size 32 --batch-size 4 --json >"$tmp/out.json"
"$FRUGAL_PYTHON" - "$tmp/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("images_per_s", "images", "seconds"):
    assert k in d, (k, d)
assert d["images"] > 0 and d["images_per_s"] > 0, d
assert d["skipped"] == 6, d   # the junk in folders.zip
PY

set +e
frugal bench loader "$tmp/bad_many.zip" --seconds 1 --image-size 16 --batch-size 10 >"$tmp/out.txt" 2>"$tmp/err.txt"
rc=$?
set -e
[[ $rc -eq 3 ]] || { echo "expected exit 3 for 3% bad images, got $rc"; cat "$tmp/err.txt"; exit 1; }
grep -q "max-bad-fraction" "$tmp/err.txt" || { echo "message lacks the option"; cat "$tmp/err.txt"; exit 1; }
grep -q "bad[0-9].jpg" "$tmp/err.txt" || { echo "message lacks an example entry"; cat "$tmp/err.txt"; exit 1; }

set +e
frugal bench loader "$tmp/folders.zip" --workers 0 >/dev/null 2>&1
rc=$?
set -e
[[ $rc -eq 2 ]] || { echo "expected exit 2 for --workers 0, got $rc"; exit 1; }
echo ok

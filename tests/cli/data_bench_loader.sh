#!/usr/bin/env bash
# frugal bench loader: JSON shape, and exit 3 with counts when too many images are undecodable.
source "$(dirname "$0")/lib/common.sh"
[[ -n ${FRUGAL_PYTHON:-} ]] || skip "no FRUGAL_PYTHON"
needs_python PIL numpy
needs_commands frugal-torch
"$py" "$src/tests/dataset/make_archives.py" "$t"

frugal bench loader "$t/folders.zip" --seconds 1 --image-size 32 --batch-size 4 --json >"$t/out.json"
"$py" - "$t/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("images_per_s", "images", "seconds"):
    assert k in d, (k, d)
assert d["images"] > 0 and d["images_per_s"] > 0, d
assert d["skipped"] == 6, d   # the junk in folders.zip
PY

expect_exit "3% bad images are refused" 3 frugal bench loader "$t/bad_many.zip" --seconds 1 --image-size 16 --batch-size 10
expect_msg "...naming the option" "max-bad-fraction"
grep -q "bad[0-9].jpg" "$t/err" || die "the message lacks an example entry" "$t/err"

expect_exit "--workers 0 is a usage error" 2 frugal bench loader "$t/folders.zip" --workers 0
finish

#!/usr/bin/env bash
# A user meets an error whose advice names an option: it is one the command takes (listed in its
# --help), never another command's (eval or bench on data with broken images, once told "raise
# --max-bad-fraction", an option only train had).
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
needs_commands frugal frugal-torch
keep_going
cd "$t"
make_two_class_zip data.zip 8
"$py" - data.zip <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "a") as z:  # 2 broken of 18: over the default 1%
    z.writestr("bright/broken1.png", b"\x89PNG\r\n\x1a\n not really")
    z.writestr("dark/broken2.png", b"\x89PNG\r\n\x1a\n not really")
PY
frugal train --data data.zip --run run --epochs 1 --batch-size 4 --workers 1 --max-bad-fraction 0.5 >/dev/null 2>train.log ||
  die "training failed" "$t/train.log"
# only_own_options NAME COMMAND: every --option in $t/err is in `frugal COMMAND --help`.
only_own_options() {
  local o foreign=""
  frugal "$2" --help >"$t/help" 2>&1 || [[ $2 == bench ]]
  [[ $2 == bench ]] && frugal bench loader --help >"$t/help" 2>&1
  # The error itself (progress notes before it are the loaders' own; see the report of issue 17).
  for o in $(grep "^frugal " "$t/err" | grep -oE -- '--[a-z][a-z0-9-]+' | sort -u); do
    grep -qF -- "$o" "$t/help" || foreign="$foreign $o"
  done
  check "$1: advice names only options of $2 (foreign:${foreign:- none})" '[ -z "$foreign" ]'
}
expect_exit "eval on too many broken images: exit 3" 3 frugal eval run --data data.zip --workers 1
only_own_options "eval" eval
expect_no_msg "eval: the option once, not doubled" "frugal eval frugal eval"
expect_exit "bench on too many broken images: exit 3" 3 frugal bench loader data.zip --seconds 1 --workers 1 --batch-size 4
only_own_options "bench" bench
expect_msg "bench: advice to raise its own limit" "raise --max-bad-fraction"
expect_exit "bench with the limit raised: done" 0 frugal bench loader data.zip --seconds 1 --workers 1 --batch-size 4 --max-bad-fraction 0.5
finish

#!/usr/bin/env bash
# frugal train --config: TOML that does not parse or holds what no option takes is exit 3 naming
# the file and line; numbers keep their value (lr = 1e-7 was once passed on as "0.000000"); the
# --config=FILE spelling is read too (it was once taken by the option parser and left unread).
source "$(dirname "$0")/lib/common.sh"
needs_python numpy
needs_commands frugal frugal-torch
"$py" - "$t/data.zip" <<'PY'
import io, sys, zipfile
import numpy as np
rng = np.random.default_rng(0)
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for cls in ("a", "b"):
        for i in range(8):
            buf = io.BytesIO()
            np.save(buf, rng.integers(0, 255, (8, 8), dtype=np.uint8))
            z.writestr(f"{cls}/{i}.npy", buf.getvalue())
PY

expect3() {  # expect3 NAME NEEDLE TOML
  printf '%s\n' "$3" >"$t/$1.toml"
  expect_exit "$1 is refused" 3 frugal train --data "$t/data.zip" --run "$t/run-$1" --config "$t/$1.toml"
  expect_msg "$1: the message names $2" "$2"
  [[ ! -e $t/run-$1 ]] || die "$1: the run folder was created"
}
expect3 unparsable "unparsable.toml:2" $'model = "cnn"\nepochs = '
expect3 table "table.toml:1" $'[optim]\nlr = 0.1'
expect3 date "a date or time" 'deadline = 1979-05-27T07:32:00Z'
expect3 key "\"not an option\"" '"not an option" = 1'

printf 'model = "cnn"\nepochs = 1\nbatch_size = 4\nworkers = 1\nlr = 1e-7\nseed = 7\nval_split = 0\n' >"$t/ok.toml"
frugal train --data "$t/data.zip" --run "$t/run" --config="$t/ok.toml" >"$t/ok.out" 2>&1 || die "train --config=FILE" "$t/ok.out"
"$py" - "$t/run/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
assert c["lr"] == 1e-7 and c["seed"] == 7 and c["epochs"] == 1, c
PY
ok "--config=FILE is read, numbers keep their value"
finish

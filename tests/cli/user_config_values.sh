#!/usr/bin/env bash
# train --config: a boolean for an option that takes a value ("workers = true" once became a bare
# --workers that took the next argument: "argument was not expected: cnn") is exit 3 naming the key
# and the line; `nproc = 2` launches the ranks as --nproc 2 does (each rank once read the file
# again and refused itself: exit 1 and a torchrun traceback).
source "$(dirname "$0")/lib/common.sh"
keep_going
needs_python numpy PIL
needs_commands frugal frugal-torch
make_two_class_zip "$t/data.zip" 8

printf 'model = "cnn"\nworkers = true\nepochs = 1\n' >"$t/bool.toml"
expect_exit "workers = true: exit 3" 3 frugal train --data "$t/data.zip" --run "$t/bool" --config "$t/bool.toml"
expect_msg "workers = true: the key, the line and what it takes" "bool.toml:2: expected a value for 'workers'"
check "workers = true: nothing of CLI11's" '! grep -q "not expected" "$t/err"'
check "workers = true: no run folder" '[ ! -e "$t/bool" ]'
printf 'model = "cnn"\nfresh = [true]\n' >"$t/flags.toml"
expect_exit "a flag given an array: exit 3" 3 frugal train --data "$t/data.zip" --run "$t/flags" --config "$t/flags.toml"
expect_msg "a flag given an array: said" "one true or false for 'fresh'"

torchrun=$(dirname "$py")/torchrun
[[ -x $torchrun ]] || torchrun=$(command -v torchrun) || { finish; skip "torchrun not found (it comes with torch: .venv/bin)"; }
export PATH=$(dirname "$torchrun"):$PATH OMP_NUM_THREADS=1
printf 'model = "cnn"\nnproc = 2\nepochs = 1\nbatch_size = 4\nworkers = 1\ndevice = "cpu"\nval_split = 0\n' >"$t/nproc.toml"
expect_exit "nproc = 2 from the config file: done" 0 \
  timeout 300 frugal train --data "$t/data.zip" --run "$t/two" --config "$t/nproc.toml"
check "no rank refused itself" '! grep -q "launch\|Traceback" "$t/err"'
check "the run finished with its config" '[ -s "$t/two/config.json" ] && [ -s "$t/two/best.safetensors" ]'
check "two ranks trained together" 'grep -q "(2 ranks x 4)" "$t/err"'
finish

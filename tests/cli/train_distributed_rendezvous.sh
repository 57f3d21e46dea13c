#!/usr/bin/env bash
# Issue 32, item 12: a rank whose rank 0 never arrives (WORLD_SIZE=2 RANK=1, nothing listening at
# MASTER_ADDR:MASTER_PORT) ends within --dist-timeout with a message naming the address, and one
# SIGTERM ends its wait at once (it was still waiting at 500 s, and a SIGTERM did not stop it).
source "$(dirname "$0")/lib/common.sh"
keep_going
needs_commands frugal frugal-torch
needs_python PIL numpy
make_two_class_zip "$t/data.zip" 8
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
lonely=(env RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port
        frugal train --data "$t/data.zip" --model cnn --epochs 1 --batch-size 4 --workers 1 --device cpu)

start=$(date +%s.%N)
expect_exit "rank 1 alone: exit 1 once the timeout passes" 1 "${lonely[@]}" --run "$t/run1" --dist-timeout 4s
took=$("$py" -c "import sys; print(round($(date +%s.%N) - $start, 1))")
check "...within the timeout and start-up, not minutes (took ${took}s)" '"$py" -c "import sys; sys.exit(0 if $took < 25 else 1)"'
expect_msg "...said it waits, on this rank too" "rank 1 of 2: waiting up to 4 s for the rendezvous at 127.0.0.1:$port"
expect_msg "...naming the address and the option" "127.0.0.1:$port: expected the rendezvous of 2 ranks"
expect_msg "...and the option that bounds it" "--dist-timeout"
check "...nothing written" '[ ! -e "$t/run1" ]'

# One SIGTERM while it waits (a 2-minute timeout): the wait ends at once, exit 75, nothing written.
"${lonely[@]}" --run "$t/run2" --dist-timeout 2m >"$t/out" 2>"$t/err" &
pid=$!
on_exit "kill -KILL $pid 2>/dev/null"
for _ in $(seq 1 400); do grep -q "waiting up to" "$t/err" && break; sleep 0.1; done
check "rank 1 is waiting for the rendezvous" 'grep -q "waiting up to 120 s" "$t/err"'
kill -TERM $pid
sent=$(date +%s.%N)
rc=0
wait $pid || rc=$?
took=$("$py" -c "print(round($(date +%s.%N) - $sent, 1))")
check "one SIGTERM ends the wait (exit $rc, ${took}s after the signal)" '[ $rc -eq 75 ] && "$py" -c "import sys; sys.exit(0 if $took < 5 else 1)"'
expect_msg "...saying nothing was written" "nothing was written"
check "...and nothing was" '[ ! -e "$t/run2" ]'
finish

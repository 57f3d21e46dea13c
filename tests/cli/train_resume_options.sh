#!/usr/bin/env bash
# Resuming with other options: session options (deadline, workers, save cadence) follow the new
# command; options that change what is learned (model, effective batch, data) are refused with
# exit 2 naming them, unless --fresh. A deadline too short for one step exits 4; a deadline reached
# mid-run exits 75 and says how to continue.
source "$(dirname "$0")/lib/common.sh"
keep_going
needs_python numpy PIL
needs_commands frugal-torch

make_two_class_zip "$t/data.zip" 40
make_two_class_zip "$t/more.zip" 50 png 1
args=(--data "$t/data.zip" --model cnn --epochs 2 --batch-size 8 --workers 1 --device cpu --run "$t/run")
frugal train "${args[@]}" 2>"$t/log1"
check "first run finishes" '[ $? -eq 0 ]'

cp "$t/data.zip" "$t/moved.zip"
frugal train "${args[@]}" --workers 2 --deadline 1h --save-every 5steps --data "$t/moved.zip" 2>"$t/log2"
check "session options and a moved archive may change (exit 0)" '[ $? -eq 0 ]'
check "...and the log says it resumed" 'grep -q resuming "$t/log2"'

frugal train "${args[@]}" --model resnet18 2>"$t/log3"
rc=$?
check "another model is refused as a usage error (2)" '[ $rc -eq 2 ]'
check "...naming the option and --fresh" 'grep -q "model" "$t/log3" && grep -q -- "--fresh" "$t/log3"'

frugal train "${args[@]}" --accum 2 2>"$t/log4"
check "another effective batch is refused (2)" '[ $? -eq 2 ] && grep -q "effective batch" "$t/log4"'

frugal train "${args[@]}" --data "$t/more.zip" 2>"$t/log5"
check "other data (image count) is refused (2)" '[ $? -eq 2 ] && grep -q "train_images" "$t/log5"'

frugal train "${args[@]}" --model resnet18 --image-size 32 --epochs 1 --fresh 2>"$t/log6"
check "--fresh starts over with the new options" '[ $? -eq 0 ] && ! grep -q resuming "$t/log6"'

frugal train --data "$t/data.zip" --model cnn --epochs 2 --batch-size 8 --device cpu --run "$t/short" \
  --deadline 1s 2>"$t/log7"
check "a deadline too short for one step exits 4" '[ $? -eq 4 ]'
check "...and leaves no checkpoint" '[ -z "$(ls "$t/short" 2>/dev/null | grep ckpt-)" ]'

frugal train --data "$t/data.zip" --model cnn --epochs 500 --batch-size 8 --workers 1 --device cpu \
  --run "$t/long" --deadline 4s 2>"$t/log8"
check "a deadline reached mid-run exits 75" '[ $? -eq 75 ]'
check "...says how to continue" 'grep -qi "same command" "$t/log8"'
check "...and leaves a checkpoint to resume from" '[ -n "$(ls "$t/long" | grep ckpt-)" ]'

[ $fails -eq 0 ] || for f in "$t"/log*; do echo "== $f"; tail -5 "$f"; done
finish

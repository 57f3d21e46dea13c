#!/usr/bin/env bash
# Runs that go on (issue 42): a finished run was refused a larger --epochs ("run the original
# command, or add --fresh") and --init refused a run folder. Now `--extend --epochs N` continues
# it from its newest checkpoint (optimizer state kept) on a new cosine tail, said in one line and
# kept in the checkpoint: an extension stopped by SIGTERM and resumed with the same command ends
# with the weights of one that was not (--deterministic); --init RUN takes its best checkpoint.
# A run planned by --time-budget goes on the same way to a larger --time-budget.
source "$(dirname "$0")/lib/common.sh"
needs_commands frugal frugal-torch
needs_python PIL safetensors torch
keep_going
cd "$t"
pid=
on_exit '[[ -n $pid ]] && kill -KILL $pid 2>/dev/null'
make_shapes_zip shapes.zip 20
args=(--data shapes.zip --model cnn --batch-size 2 --deterministic --device cpu --workers 1 --seed 3
      --save-every 4steps --keep-last 2)

expect_exit "a 2-epoch run" 0 frugal train "${args[@]}" --epochs 2 --run a
cp -r a b
first=$(newest_step a)
expect_exit "a larger --epochs alone is still refused" 2 frugal train "${args[@]}" --epochs 4 --run a
expect_msg "...naming the change" "epochs: 2 -> 4"
expect_exit "--extend with no more epochs is refused" 2 frugal train "${args[@]}" --epochs 2 --run a --extend
expect_exit "--extend on an empty run folder is refused" 2 frugal train "${args[@]}" --epochs 4 --run none --extend

expect_exit "--extend --epochs 4 goes on" 0 frugal train "${args[@]}" --epochs 4 --run a --extend
expect_msg "...saying the new tail" "extending the run from step $first to $((2 * first))"
expect_msg "...resuming, not starting over" "resuming from"
check "...to twice the steps" '[ "$(newest_step a)" -eq $((2 * first)) ]'
check "...with a learning rate above 0 in its epochs" \
  '"$py" -c "import json,sys; m=[json.loads(l) for l in open(\"a/metrics.jsonl\") if \"\\\"epoch\\\"\" in l]; sys.exit(0 if len(m) == 4 and m[2][\"lr\"] > 1e-5 else 1)"'

# The same extension, stopped by SIGTERM once a checkpoint past its start is saved, then the same
# command again: the tail comes from the checkpoint, so the weights end as the uninterrupted run's.
frugal train "${args[@]}" --epochs 4 --run b --extend > /dev/null 2> b.log &
pid=$!
deadline=$((SECONDS + 120))
until (($(newest_step b) >= first + 8)) || ((SECONDS > deadline)); do sleep 0.05; done
kill -TERM $pid
wait $pid
rc=$?
pid=
check "the extension was stopped mid-way (exit 75)" '[ $rc -eq 75 ] && (($(newest_step b) < 2 * first))'
expect_exit "the same command resumes the extension" 0 frugal train "${args[@]}" --epochs 4 --run b --extend
check "...from its checkpoint, no new tail" '! grep -q "extending the run" "$t/err"'
check "weights equal the uninterrupted extension's" 'same_weights a b'

# A run planned by --time-budget, finished, goes on to a larger budget (the whole run's): the plan
# is re-made at once and a new tail runs to its end. The kinds do not mix.
# (12 images: an epoch of a few steps fits the budget on a loaded machine too)
make_shapes_zip few.zip 4
tb=(--data few.zip --model cnn --batch-size 2 --device cpu --workers 1 --seed 3)
expect_exit "a run of a 6s budget finishes" 0 frugal train "${tb[@]}" --time-budget 6s --run tb
done_at=$(newest_step tb)
expect_exit "--extend with the same budget is refused" 2 frugal train "${tb[@]}" --time-budget 6s --run tb --extend
expect_msg "...asking for a larger one" "a time budget larger than the run's 6s to --extend it to"
expect_exit "--extend --epochs of a budget run is refused" 2 frugal train "${tb[@]}" --epochs 4 --run tb --extend
expect_msg "...naming the kind" "--epochs given to a run planned by --time-budget"
expect_exit "--extend --time-budget of an epochs run is refused" 2 frugal train "${args[@]}" --time-budget 20s --run a --extend
expect_msg "...naming the kind" "--time-budget given to a run of epochs"
expect_exit "--extend --time-budget 12s goes on" 0 frugal train "${tb[@]}" --time-budget 12s --run tb --extend
expect_msg "...saying the new tail" "extending the run from step $done_at to"
expect_msg "...over the new budget" "(the time budget 12s, re-planned as it goes)"
check "...to more steps" '(($(newest_step tb) > done_at))'
cat > lr_after.py <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
sys.exit(0 if any(r.get("step", 0) > int(sys.argv[2]) and r.get("lr", 0) > 1e-5 for r in rows if "epoch" in r) else 1)
PY
check "...with a learning rate above 0 after the old end" '"$py" lr_after.py tb/metrics.jsonl $done_at'
expect_exit "the finished extension given its budget again is done" 0 frugal train "${tb[@]}" --time-budget 12s --run tb --extend
check "...without a new tail" '! grep -q "extending the run" "$t/err"'

expect_exit "--init takes a run folder" 0 frugal train --data shapes.zip --model cnn --epochs 1 --init a --run c
expect_msg "...its best checkpoint" "a run folder: its best.safetensors"
finish

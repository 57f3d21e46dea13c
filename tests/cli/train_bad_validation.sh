#!/usr/bin/env bash
# One bad file never costs an epoch (issue 42): a truncated JPEG found only by validation used to end
# the run with exit 3 after the whole epoch, nothing saved, and the rerun failed the same way. Now
# validation's undecodable images count against --max-bad-fraction as training's do; past it the
# epoch's training is saved (exit 75), the message names the file and the --exclude that leaves it
# out, and that rerun evaluates the epoch again and continues without training any step twice.
# A validation set of at most 10,000 images is decoded before training (--check-val auto): its bad
# file is refused before any step (exit 3), nothing written.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
needs_commands frugal frugal-torch
keep_going
cd "$t"
"$py" - <<'PY'
import io, os
import numpy as np
from PIL import Image
rng = np.random.default_rng(5)
for split, n in (("train", 40), ("val", 10)):
    for k, (lo, hi) in enumerate(((150, 255), (0, 100))):
        os.makedirs(f"{split}/c{k}", exist_ok=True)
        for i in range(n):
            Image.fromarray(rng.integers(lo, hi, (28, 28), dtype=np.uint8)).save(f"{split}/c{k}/{i}.png")
b = io.BytesIO()
Image.fromarray(rng.integers(0, 255, (64, 64), dtype=np.uint8)).save(b, "JPEG")
open("val/c0/broken.jpg", "wb").write(b.getvalue()[:300])  # a JPEG cut short: 1 of 21 (> 1%)
PY
args=(--data train --val val --model cnn --epochs 2 --batch-size 16 --run run)

# A validation set this small is decoded before training (--check-val auto): refused before any step.
expect_exit "a small validation set's bad file is refused before training" 3 frugal train "${args[@]}"
expect_msg "...said checked" "checked the 21 validation images before training"
expect_msg "...naming the file" "1 of 21 undecodable: c0/broken.jpg"
expect_msg "...and the option that leaves it out" "nothing was trained: run the same command with --exclude 'c0/broken.jpg'"
check "...no checkpoint written" '[ "$(newest_step run)" -eq 0 ]'
expect_exit "with --exclude the check passes" 0 frugal train "${args[@]}" --exclude c0/broken.jpg --epochs 1 \
  --run checked
expect_msg "...said" "checked the 20 validation images before training"
expect_msg "...all decode" "all decode"

# Left to the first evaluation (--check-val off; a set over 10,000 images alike):
args+=(--check-val off)
expect_exit "validation's bad file stops the run resumable" 75 frugal train "${args[@]}"
expect_no_msg "...not checked up front" "before training"
expect_msg "...naming the file" "c0/broken.jpg"
expect_msg "...and the option that leaves it out" "--exclude 'c0/broken.jpg'"
steps=$(newest_step run)
check "the epoch's training was saved (5 steps)" '[ "$steps" -eq 5 ]'
check "no epoch was evaluated into metrics.jsonl" '! grep -q val_accuracy run/metrics.jsonl 2>/dev/null'

expect_exit "the same command again stops the same way, training nothing" 75 frugal train "${args[@]}"
check "...still at step 5" '[ "$(newest_step run)" -eq 5 ]'

expect_exit "with --exclude it evaluates the epoch and goes on" 0 frugal train "${args[@]}" --exclude c0/broken.jpg
check "both epochs evaluated on the 20 good images" \
  '[ "$(grep -c "\"val_samples\":20" run/metrics.jsonl)" -eq 2 ]'
check "no step trained twice: 10 steps in all" '[ "$(newest_step run)" -eq 10 ]'
expect_msg "...resumed, not started over" "resum"
finish

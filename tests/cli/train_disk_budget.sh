#!/usr/bin/env bash
# frugal train with a --disk-budget too small to keep one resumable checkpoint: exit 4 before any
# training, naming the budget that would fit; with that budget the run trains, ends exit 0, and the
# workspace (counted in allocated blocks) stays within it, best.safetensors included.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL
needs_commands frugal frugal-torch

make_two_class_zip "$t/data.zip" 16
mkdir -p "$t/ws"
train() {
  frugal train --data "$t/data.zip" --run "$t/ws/run" --workspace "$t/ws" --model cnn --epochs 2 --batch-size 8 \
    --val-split 0.25 --workers 1 "$@"
}

expect_exit "--disk-budget 1M is refused as too small" 4 train --disk-budget 1M
cp "$t/err" "$t/small.log"
expect_msg "...suggesting a budget" "raise --disk-budget to at least"
! grep -Eq "^training |epoch 1/" "$t/small.log" || die "trained before refusing" "$t/small.log"
shopt -s nullglob
written=("$t"/ws/run/ckpt-* "$t"/ws/run/best.safetensor[s] "$t"/ws/run/metrics.json[l] "$t"/ws/run/events.*)
[[ ${#written[@]} -eq 0 ]] || die "files written before refusing: ${written[*]}"

fits=$(sed -n 's/.*raise --disk-budget to at least \([0-9]*M\).*/\1/p' "$t/small.log" | head -1)
[[ -n $fits ]] || die "no size in the suggestion" "$t/small.log"
train --disk-budget "$fits" 2>"$t/fits.log" || die "the suggested budget $fits did not fit" "$t/fits.log"
[[ -f $t/ws/run/best.safetensors ]] || die "no best.safetensors" "$t/fits.log"
frugal du "$t/ws" --budget "$fits" --json >"$t/du.json"
"$py" - "$t/du.json" "$t/ws" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
assert not d["over_budget"], d
blocks = 0
for root, _, files in os.walk(sys.argv[2]):
    for f in files:
        blocks += os.lstat(os.path.join(root, f)).st_blocks * 512
assert d["usage"]["total"] == blocks, (d["usage"], blocks)  # du counts allocated blocks
assert blocks <= d["budget"], (blocks, d["budget"])
PY
ok "refused 1M, trained within $fits"
finish

#!/usr/bin/env bash
# Fashion-MNIST with `cnn` on the CPU: test accuracy and wall-clock time of one whole training run
# (issue target: >= 92% test accuracy in <= 10 minutes on 2 CPU cores). Packs Debian's
# dataset-fashion-mnist into zips, trains with the test set as the validation set, then runs
# `frugal eval` on the result. Prints one JSON line.
# Env: FRUGAL_BIN (default build/bin), EPOCHS (12), THREADS (2: the cores the target is for;
# the run is pinned to the first THREADS cores with taskset when it is there), AMP (default bf16
# when the CPU has bf16 instructions, AMX-BF16 or AVX512-BF16, as `frugal train` then suggests; else off).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${FRUGAL_BIN:-$here/../build/bin}
epochs=${EPOCHS:-12} threads=${THREADS:-2}
if [[ -z ${AMP:-} ]] && grep -qwE 'amx_bf16|avx512_bf16' /proc/cpuinfo 2>/dev/null; then amp=bf16; else amp=${AMP:-off}; fi
idx=/usr/share/datasets/fashion-mnist
[[ -x $bin/frugal ]] || { echo "bench/fashion_cnn.sh: $bin/frugal not built" >&2; exit 1; }
[[ -f $idx/train-images-idx3-ubyte.gz ]] || { echo "bench/fashion_cnn.sh: $idx missing (apt-get install dataset-fashion-mnist)" >&2; exit 1; }
w=$(mktemp -d "${TMPDIR:-/tmp}/frugal-bench-fashion.XXXXXX"); trap 'rm -rf "$w"' EXIT
"$bin/frugal" pack "$idx/train-images-idx3-ubyte.gz" -o "$w/train.zip" >/dev/null 2>"$w/pack.log" || { cat "$w/pack.log" >&2; exit 1; }
"$bin/frugal" pack "$idx/t10k-images-idx3-ubyte.gz" -o "$w/test.zip" >/dev/null 2>"$w/pack.log" || { cat "$w/pack.log" >&2; exit 1; }
pin=()
command -v taskset >/dev/null && [ "$(nproc)" -gt "$threads" ] && pin=(taskset -c "0-$((threads - 1))")
t0=$(date +%s.%N)
"${pin[@]}" "$bin/frugal" train --data "$w/train.zip" --val "$w/test.zip" --model cnn --run "$w/run" \
  --epochs "$epochs" --batch-size 128 --lr 2e-3 --workers "$threads" --device cpu --amp "$amp" --seed 1 2>"$w/train.log" ||
  { tail -20 "$w/train.log" >&2; exit 1; }
t1=$(date +%s.%N)
acc=$("$bin/frugal" eval "$w/run" --data "$w/test.zip" --json | sed -n 's/^  "accuracy": \([0-9.]*\),*$/\1/p')
python3 - "$acc" "$t0" "$t1" "$epochs" "$threads" "$amp" <<'PY'
import json, sys
acc, t0, t1, epochs, threads, amp = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
secs = t1 - t0
print(json.dumps({"bench": "fashion_cnn", "epochs": epochs, "threads": threads, "amp": amp, "test_accuracy": acc,
                  "train_seconds": round(secs, 1), "target_accuracy": 0.92, "target_seconds": 600,
                  "target_met": acc >= 0.92 and secs <= 600}))
PY

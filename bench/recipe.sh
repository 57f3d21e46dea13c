#!/usr/bin/env bash
# The training recipe (issue 45): Fashion-MNIST (Debian's dataset-fashion-mnist, packed into zips)
# trained by `frugal train --data train.zip --time-budget BUDGET` (nothing else but --val-split,
# default 5% held out, and --seed) on THREADS cores: the recipe frugal trained with before
# (`--recipe default`: crop and flip) against what the budget picks now (`--recipe auto`, the
# default), SEEDS seeds each, alternating old and new so that the machine's drift falls on both.
# Each run is scored by `frugal eval RUN --data test.zip` on the 10,000 test images (with --tta flip
# when the run validated with it: its config.json says "tta": "flip"). Prints one JSON line: every
# run's recipe, epochs, seconds and test accuracy, each side's median, and target_met (the new
# recipe's median >= 0.94).
# ABLATION=1 adds, at ABLATION_BUDGET (default 3m), one seed of: default, light, light without each
# of its parts (label smoothing, EMA, test-time flip), and strong: what each part is worth.
# Env: FRUGAL_BIN (default build/bin), BUDGET (9m30s), SEEDS (3), THREADS (2), ABLATION (0),
# ABLATION_BUDGET (3m). A seed pair takes 2 x BUDGET plus evaluation (~20 minutes at 9m30s).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${FRUGAL_BIN:-$here/../build/bin}
budget=${BUDGET:-9m30s} seeds=${SEEDS:-3} threads=${THREADS:-2}
idx=/usr/share/datasets/fashion-mnist
[[ -x $bin/frugal ]] || { echo "bench/recipe.sh: $bin/frugal not built" >&2; exit 1; }
[[ -f $idx/train-images-idx3-ubyte.gz ]] || { echo "bench/recipe.sh: $idx missing (apt-get install dataset-fashion-mnist)" >&2; exit 1; }
w=$(mktemp -d "${TMPDIR:-/tmp}/frugal-bench-recipe.XXXXXX"); trap 'rm -rf "$w"' EXIT
"$bin/frugal" pack "$idx/train-images-idx3-ubyte.gz" -o "$w/train.zip" >/dev/null 2>"$w/pack.log" || { cat "$w/pack.log" >&2; exit 1; }
"$bin/frugal" pack "$idx/t10k-images-idx3-ubyte.gz" -o "$w/test.zip" >/dev/null 2>"$w/pack.log" || { cat "$w/pack.log" >&2; exit 1; }
pin=()
command -v taskset >/dev/null && [ "$(nproc)" -gt "$threads" ] && pin=(taskset -c "0-$((threads - 1))")

# run NAME BUDGET SEED [train options...]: one run, scored; appends a JSON object to $w/runs.jsonl.
run() {
  local name=$1 b=$2 seed=$3; shift 3
  local t0 t1 tta acc
  t0=$(date +%s.%N)
  "${pin[@]}" "$bin/frugal" train --data "$w/train.zip" --run "$w/$name" --time-budget "$b" --seed "$seed" \
    --workers "$threads" "$@" 2>"$w/$name.log" || { tail -20 "$w/$name.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  tta=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("tta", "none"))' "$w/$name/config.json")
  acc=$("${pin[@]}" "$bin/frugal" eval "$w/$name" --data "$w/test.zip" --tta "$tta" --workers "$threads" --json |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["accuracy"])')
  python3 - "$w/$name" "$name" "$b" "$seed" "$t0" "$t1" "$acc" "$tta" "$*" >> "$w/runs.jsonl" <<'PY'
import json, sys
run, name, budget, seed, t0, t1, acc, tta, opts = sys.argv[1:]
config = json.load(open(f"{run}/config.json"))
records = [json.loads(line) for line in open(f"{run}/metrics.jsonl") if line.strip()]
epochs = max([r["epoch"] for r in records if "train_loss" in r and "epoch" in r] or [0])
print(json.dumps({"name": name, "budget": budget, "seed": int(seed), "recipe": config.get("recipe"),
                  "options": opts, "epochs": epochs, "seconds": round(float(t1) - float(t0), 1),
                  "test_accuracy": float(acc), "tta": tta}))
PY
  echo "bench/recipe.sh: $(tail -1 "$w/runs.jsonl")" >&2
}

for s in $(seq 1 "$seeds"); do
  run "old-$s" "$budget" "$s" --recipe default
  run "new-$s" "$budget" "$s"
done
if [[ ${ABLATION:-0} == 1 ]]; then
  ab=${ABLATION_BUDGET:-3m}
  run ab-default "$ab" 1 --recipe default
  run ab-light "$ab" 1 --recipe light
  run ab-light-no-smoothing "$ab" 1 --recipe light --label-smoothing 0
  run ab-light-no-ema "$ab" 1 --recipe light --ema 0
  run ab-light-no-tta "$ab" 1 --recipe light --tta none
  run ab-strong "$ab" 1 --recipe strong
fi
python3 - "$w/runs.jsonl" "$budget" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
side = lambda p: [r["test_accuracy"] for r in runs if r["name"].startswith(p)]
old, new = side("old-"), side("new-")
print(json.dumps({"bench": "recipe", "budget": sys.argv[2], "runs": runs,
                  "old_median": statistics.median(old), "new_median": statistics.median(new),
                  "new_minus_old": round(statistics.median(new) - statistics.median(old), 5),
                  "target_accuracy": 0.94, "target_met": statistics.median(new) >= 0.94}))
PY

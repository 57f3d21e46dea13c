#!/usr/bin/env bash
# A user's TorchScript module against the same model as frugal's own (issue 29): torchvision's
# resnet18 scripted (--model r18.pt) and frugal's resnet18 started from the same weights (--model
# resnet18 --init r18.safetensors), trained one epoch on the same photos, batches and seed
# (--deterministic). Prints, per round, each side's training images/s (metrics.jsonl) and loss, then
# the median ratio TorchScript/zoo (the interpreter's overhead) and the largest relative difference
# of the epoch's train loss (equal within float tolerance: the same weights see the same batches).
# On a CPU with bf16 instructions it also trains both with --amp bf16: autocast reaches the ops
# TorchScript's interpreter runs (it works at the dispatcher) when the module's bf16 loss equals
# the zoo model's bf16 loss and differs from fp32.
# Env: BENCH_ROUNDS (3), BENCH_DATA (cache folder), FRUGAL_BIN, FRUGAL_PYTHON, IMAGES (320), SIZE (96).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${FRUGAL_BIN:-$ROOT/build/bin}
PY=${FRUGAL_PYTHON:-$ROOT/.venv/bin/python}
ROUNDS=${BENCH_ROUNDS:-3}
DATA=${BENCH_DATA:-$ROOT/build/bench-data}
N=${IMAGES:-320} SIZE=${SIZE:-96}
[[ -x $BIN/frugal ]] || { echo "torchscript.sh: $BIN/frugal not built" >&2; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/frugal-bench-ts.XXXXXX"); trap 'rm -rf "$W"' EXIT
mkdir -p "$DATA"
PHOTOS=$DATA/photos.zip
if [[ ! -f $PHOTOS ]]; then
  "$PY" "$ROOT/scripts/make-photos.py" "$DATA/photos" --count 2400 --zip "$PHOTOS.tmp" >&2 && mv "$PHOTOS.tmp" "$PHOTOS"
fi
"$PY" - "$PHOTOS" "$W" "$N" <<'PY'
import sys, zipfile, torch, torchvision
from safetensors.torch import save_file
src, w, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with zipfile.ZipFile(src) as z, zipfile.ZipFile(f"{w}/data.zip", "w", zipfile.ZIP_STORED) as out:
    names = [i for i in z.infolist() if not i.is_dir()]
    for i in names[:: max(1, len(names) // n)][:n]:
        out.writestr(i.filename, z.read(i))
    classes = len({i.filename.split("/")[-2] for i in names})
torch.manual_seed(0)
m = torchvision.models.resnet18(num_classes=classes)
save_file({k: v.contiguous() for k, v in m.state_dict().items()}, f"{w}/r18.safetensors")
torch.jit.save(torch.jit.script(m), f"{w}/r18.pt")
PY
common=(--data "$W/data.zip" --image-size "$SIZE" --epochs 1 --batch-size 16 --workers 2 --seed 1 --deterministic
        --device cpu --val-split 0.1 --fresh)
bf16=0
grep -qwE 'amx_bf16|avx512_bf16' /proc/cpuinfo 2>/dev/null && bf16=1
figures() { "$PY" -c 'import json,sys; m=[json.loads(l) for l in open(sys.argv[1])][-1]; print(m["images_per_s"], m["train_loss"])' "$1/metrics.jsonl"; }
rows=()
for ((r = 1; r <= ROUNDS; r++)); do
  "$BIN/frugal" train "${common[@]}" --model resnet18 --init "$W/r18.safetensors" --run "$W/zoo" 2>/dev/null
  "$BIN/frugal" train "${common[@]}" --model "$W/r18.pt" --run "$W/ts" 2>/dev/null
  read -r zoo_ips zoo_loss < <(figures "$W/zoo")
  read -r ts_ips ts_loss < <(figures "$W/ts")
  bf_ips=null bf_loss=null zbf_ips=null zbf_loss=null
  if ((bf16)); then
    "$BIN/frugal" train "${common[@]}" --model resnet18 --init "$W/r18.safetensors" --amp bf16 --run "$W/zoobf" 2>/dev/null
    "$BIN/frugal" train "${common[@]}" --model "$W/r18.pt" --amp bf16 --run "$W/tsbf" 2>/dev/null
    read -r zbf_ips zbf_loss < <(figures "$W/zoobf")
    read -r bf_ips bf_loss < <(figures "$W/tsbf")
  fi
  row="{\"round\": $r, \"zoo_images_per_s\": $zoo_ips, \"torchscript_images_per_s\": $ts_ips, \"zoo_loss\": $zoo_loss, \"torchscript_loss\": $ts_loss, \"zoo_bf16_images_per_s\": $zbf_ips, \"zoo_bf16_loss\": $zbf_loss, \"torchscript_bf16_images_per_s\": $bf_ips, \"torchscript_bf16_loss\": $bf_loss}"
  echo "{\"bench\": \"torchscript_round\", ${row:1}"
  rows+=("$row")
done
"$PY" - "${rows[@]}" <<'PY'
import json, statistics, sys
rows = [json.loads(a) for a in sys.argv[1:]]
ratio = statistics.median(r["torchscript_images_per_s"] / r["zoo_images_per_s"] for r in rows)
loss_diff = max(abs(r["torchscript_loss"] - r["zoo_loss"]) / abs(r["zoo_loss"]) for r in rows)
out = {"bench": "torchscript_vs_zoo_resnet18", "ratio": round(ratio, 3), "loss_rel_diff_max": loss_diff,
       "losses_equal": loss_diff < 1e-3}
if rows[0]["torchscript_bf16_images_per_s"] is not None:
    # Autocast reached the module's ops when its bf16 loss moved away from fp32 exactly as the zoo
    # model's did (the same casts on the same ops), at the zoo's bf16 speed.
    out["bf16_ratio"] = round(statistics.median(r["torchscript_bf16_images_per_s"] / r["zoo_bf16_images_per_s"] for r in rows), 3)
    out["bf16_speedup_torchscript"] = round(statistics.median(r["torchscript_bf16_images_per_s"] / r["torchscript_images_per_s"] for r in rows), 3)
    out["bf16_speedup_zoo"] = round(statistics.median(r["zoo_bf16_images_per_s"] / r["zoo_images_per_s"] for r in rows), 3)
    out["bf16_loss_vs_fp32_rel_diff"] = max(abs(r["torchscript_bf16_loss"] - r["torchscript_loss"]) / abs(r["torchscript_loss"]) for r in rows)
    out["bf16_loss_torchscript_vs_zoo_rel_diff"] = max(abs(r["torchscript_bf16_loss"] - r["zoo_bf16_loss"]) / abs(r["zoo_bf16_loss"]) for r in rows)
print(json.dumps(out))
PY

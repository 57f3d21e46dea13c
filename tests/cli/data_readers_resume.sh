#!/usr/bin/env bash
# Issue 28: WebDataset shards and Hugging Face parquet resume exactly and are shared out per rank as
# a zip is. The same 3 x 24 shape images (make_shapes_zip) as a zip (the control), as 4 WebDataset
# shards (.png + .cls members, samples in a shuffled order, as sets are written) and as 2 parquet
# files of 10-row row groups (the windowed shuffle's unit of I/O). For each:
# - a --deterministic run SIGKILLed once a checkpoint of step >= 8 exists, then rerun, resumes
#   inside the run and ends with best.safetensors bit for bit that of an uninterrupted run;
# - 2 Gloo ranks of batch 4 (--nproc 2) end within 1e-5 of one process of batch 8, with a module
#   without batch norm or dropout (scripted here): between them the ranks took exactly the
#   samples, in the same global batches, that one process takes.
source "$(dirname "$0")/lib/common.sh"
needs_commands frugal frugal-torch
needs_python numpy PIL torch safetensors pyarrow
keep_going
export FRUGAL_CACHE_DIR=$t/cache
pid=
on_exit '[[ -n $pid ]] && kill -KILL $pid 2>/dev/null'

make_shapes_zip "$t/data.zip" 24 4
cat > "$t/nobn.py" <<'PY'
import torch, torch.nn as nn
class NoBN(nn.Module):  # for data parallel: no batch statistics, no dropout
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 6, 3, padding=1)
        self.head = nn.Linear(6 * 16, 3)
    def forward(self, x):
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(torch.relu(self.conv(x)), 4), 1))
PY
"$py" - "$t" <<'PY'
import io, json, os, random, sys, tarfile, zipfile
import pyarrow as pa, pyarrow.parquet as pq
import torch, torch.nn as nn
t = sys.argv[1]
with zipfile.ZipFile(f"{t}/data.zip") as z:
    samples = [(n, int(n.split("/")[0][-1]), z.read(n)) for n in sorted(z.namelist()) if n.endswith(".png")]
assert len(samples) == 72, len(samples)
random.Random(1).shuffle(samples)
os.makedirs(f"{t}/shards")
for s in range(4):
    with tarfile.open(f"{t}/shards/shard-{s:06d}.tar", "w") as tar:
        for i, (name, label, png) in enumerate(samples[s::4]):
            key = f"s{s}_{i:03d}"
            for ext, data in ((".png", png), (".cls", str(label).encode())):
                info = tarfile.TarInfo(key + ext)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
img_t = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
feat = {"image": {"_type": "Image"}, "label": {"_type": "ClassLabel", "names": ["class0", "class1", "class2"]}}
os.makedirs(f"{t}/pq")
for f, part in enumerate((samples[:36], samples[36:])):
    table = pa.table({"image": pa.array([{"bytes": p, "path": n} for n, _, p in part], type=img_t),
                      "label": pa.array([l for _, l, _ in part], type=pa.int64())})
    table = table.replace_schema_metadata({"huggingface": json.dumps({"info": {"features": feat}})})
    pq.write_table(table, f"{t}/pq/train-{f:05d}-of-00002.parquet", row_group_size=10)
sys.path.insert(0, t)
from nobn import NoBN  # TorchScript reads the class's source: it must be in a file
torch.manual_seed(1)
torch.jit.save(torch.jit.script(NoBN()), f"{t}/nobn.pt")
PY
[[ -f $t/nobn.pt ]] || die "making the data failed"

torchrun=$(dirname "$py")/torchrun

for reader in zip shards parquet; do
  case $reader in
    zip) data=$t/data.zip ;;
    shards) data="$t/shards/shard-{000000..000003}.tar" ;;
    parquet) data="$t/pq/train-*.parquet" ;;
  esac
  det=(--data "$data" --model cnn --workers 1 --device cpu --val-split 0.25 --deterministic --seed 3
       --epochs 3 --batch-size 2 --save-every 4steps)
  expect_exit "$reader: uninterrupted --deterministic run" 0 frugal train "${det[@]}" --run "$t/$reader-ref"
  expect_msg "$reader: ...of 72 images in 3 classes, nothing skipped" "72 images in 3 classes; skipped: nothing"
  frugal train "${det[@]}" --run "$t/$reader-int" > /dev/null 2> "$t/$reader-int1.log" &
  pid=$!
  until (($(newest_step "$t/$reader-int") >= 8)); do
    [[ -d /proc/$pid && $(cut -d' ' -f3 /proc/$pid/stat) != Z ]] || break
    sleep 0.02
  done
  kill -KILL $pid 2>/dev/null; killed=$?
  wait $pid 2>/dev/null; rc=$?
  pid=
  check "$reader: the run was alive and SIGKILLed after a checkpoint (rc $rc)" "[ $killed -eq 0 ] && [ $rc -eq 137 ]"
  expect_exit "$reader: the resumed run" 0 frugal train "${det[@]}" --run "$t/$reader-int"
  expect_msg "$reader: ...resumed inside the run" "resuming from ckpt-"
  check "$reader: resumed weights are bitwise those of the uninterrupted run" \
    'same_weights "$t/$reader-ref" "$t/$reader-int"'

  if [[ ! -x $torchrun ]]; then
    echo "skip: no torchrun beside $py (the data-parallel case of $reader)"
    continue
  fi
  dp=(--data "$data" --model "$t/nobn.pt" --image-size 28 --workers 1 --device cpu --val-split 0.25 --epochs 2
      --deterministic --seed 5)
  expect_exit "$reader: one process, batch 8" 0 frugal train "${dp[@]}" --batch-size 8 --run "$t/$reader-dp1"
  expect_exit "$reader: 2 ranks (--nproc 2), batch 4 each" 0 env PATH="$(dirname "$torchrun"):$PATH" \
    OMP_NUM_THREADS=1 frugal train "${dp[@]}" --batch-size 4 --nproc 2 --run "$t/$reader-dp2"
  "$py" - "$t/$reader-dp1" "$t/$reader-dp2" > "$t/$reader-dp.txt" 2>&1 <<'PY'
import sys
from safetensors.torch import load_file
a, b = (load_file(f"{r}/best.safetensors") for r in sys.argv[1:3])
assert a.keys() == b.keys()
d = max(float((a[k].double() - b[k].double()).abs().max()) for k in a)
print(f"largest weight difference, 2 ranks vs 1 process: {d:.3g}")
assert d < 1e-5, d
PY
  dp_rc=$?
  check "$reader: 2 ranks train as one process of the doubled batch ($(tail -1 "$t/$reader-dp.txt"))" \
    "[ $dp_rc -eq 0 ]"
  check "$reader: ...and the 2-rank run was one of 2 ranks" 'grep -q "distributed: rank 0 of 2" "$t/err"'
done
finish

#!/usr/bin/env bash
# The loader on the same photos read from each kind of DATA, against the zip in the same run
# (issue 28 item 6: every reader within 10% of the zip's images/s, i.e. ratio >= 0.9):
#   folder    the photos as files (a folder of class folders)
#   tar       one uncompressed tar of the same layout, read in place through its index
#   shards    a WebDataset set of 4 shards (.jpg + .cls members), read in place
#   parquet   Hugging Face parquet (an image struct {bytes, path} and a ClassLabel label column,
#             row groups of 100 rows as `datasets` writes image sets), when this build reads parquet
#   arrow     the same table as a Hugging Face save_to_disk folder (issue 42): one Arrow IPC stream,
#             record batches of 1,000 rows (datasets' writer_batch_size), state.json and
#             dataset_info.json, when this build reads parquet (the same plugin reads Arrow)
#   cifar     CIFAR-10 as downloaded (issue 42): the photos at 32x32 as cifar-10-python.tar.gz
#             (numpy pickles) and as cifar-10-binary.tar.gz, against a zip of the same 32x32 images
#             as PNG (what users made of CIFAR before) and as BMP, at --image-size 32: its own block
#             at the end, the same rounds and medians
# Same 2,400 stored JPEG photos (scripts/make-photos.py, about 500x375), 224 px random-resized-crop
# + flip, 2 decode threads, `frugal bench loader --json`. The sides run BENCH_ROUNDS times,
# alternating, and each ratio is the median of the rounds' ratios (this machine's speed drifts by
# 10% within minutes). One JSON line per reader and round, then one per reader with the median.
# Env: BENCH_SECONDS (per side and round, default 8), BENCH_ROUNDS (default 3), BENCH_DATA (cache
# folder for the generated data), FRUGAL_BIN, FRUGAL_PYTHON.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${FRUGAL_BIN:-$ROOT/build/bin}
PY=${FRUGAL_PYTHON:-$ROOT/.venv/bin/python}
SECS=${BENCH_SECONDS:-8}
ROUNDS=${BENCH_ROUNDS:-3}
DATA=${BENCH_DATA:-$ROOT/build/bench-data}
CPUS=${BENCH_CPUS:-0,1}
[[ -x $BIN/frugal ]] || { echo "loader_formats.sh: $BIN/frugal not built (ninja frugal frugal-torch)" >&2; exit 1; }
pin() { if command -v taskset >/dev/null; then taskset -c "$CPUS" "$@"; else "$@"; fi; }
mkdir -p "$DATA"
PHOTOS=$DATA/photos.zip
if [[ ! -f $PHOTOS ]]; then
  "$PY" "$ROOT/scripts/make-photos.py" "$DATA/photos" --count 2400 --zip "$PHOTOS.tmp" >&2 && mv "$PHOTOS.tmp" "$PHOTOS"
fi
F=$DATA/formats
if [[ ! -f $F/done || $F/done -ot $PHOTOS ]] || { [[ ! -f $F/arrow/state.json ]] && "$PY" -c 'import pyarrow' 2>/dev/null; }; then
  rm -rf "$F" && mkdir -p "$F"
  "$PY" - "$PHOTOS" "$F" <<'PY'
import io, json, os, sys, tarfile, zipfile
src, out = sys.argv[1:]
with zipfile.ZipFile(src) as z:
    items = [(i.filename, z.read(i)) for i in z.infolist() if not i.is_dir()]
classes = sorted({n.split("/")[-2] for n, _ in items})
for n, b in items:
    p = os.path.join(out, "folder", n)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    open(p, "wb").write(b)
def add(t, name, data):
    ti = tarfile.TarInfo(name); ti.size = len(data); t.addfile(ti, io.BytesIO(data))
with tarfile.open(os.path.join(out, "data.tar"), "w", format=tarfile.GNU_FORMAT) as t:
    for n, b in items:
        add(t, n, b)
# WebDataset: samples in one shuffled order (as sets are written), 4 shards.
import random
order = list(range(len(items))); random.Random(0).shuffle(order)
per = (len(order) + 3) // 4
for s in range(4):
    with tarfile.open(os.path.join(out, "shards-%06d.tar" % s), "w", format=tarfile.GNU_FORMAT) as t:
        for k in order[s * per:(s + 1) * per]:
            n, b = items[k]
            add(t, "%08d.jpg" % k, b)
            add(t, "%08d.cls" % k, str(classes.index(n.split("/")[-2])).encode())
try:
    import pyarrow as pa, pyarrow.parquet as pq
except ImportError:
    pa = None
if pa is not None:
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    table = pa.table({"image": pa.array([{"bytes": b, "path": n.split("/")[-1]} for n, b in items], type=image),
                      "label": pa.array([classes.index(n.split("/")[-2]) for n, _ in items], type=pa.int64())})
    features = {"image": {"_type": "Image"}, "label": {"_type": "ClassLabel", "names": classes}}
    table = table.replace_schema_metadata({"huggingface": json.dumps({"info": {"features": features}})})
    pq.write_table(table, os.path.join(out, "train-00000-of-00001.parquet"), row_group_size=100)
    # As Dataset.save_to_disk writes it: the features in dataset_info.json, the file in state.json.
    os.makedirs(os.path.join(out, "arrow"))
    arrow_file = os.path.join(out, "arrow", "data-00000-of-00001.arrow")
    with pa.OSFile(arrow_file, "wb") as f, pa.ipc.new_stream(f, table.schema) as w:
        w.write_table(table, max_chunksize=1000)
    json.dump({"features": features}, open(os.path.join(out, "arrow", "dataset_info.json"), "w"))
    json.dump({"_data_files": [{"filename": "data-00000-of-00001.arrow"}], "_split": "train"},
              open(os.path.join(out, "arrow", "state.json"), "w"))
open(os.path.join(out, "done"), "w").write("ok\n")
PY
fi

rate() { "$PY" -c 'import json,sys; print(json.load(sys.stdin)["images_per_s"])'; }
declare -A DATA_OF=([zip]=$PHOTOS [folder]=$F/folder [tar]=$F/data.tar [shards]="$F/shards-{000000..000003}.tar"
                    [parquet]=$F/train-00000-of-00001.parquet [arrow]=$F/arrow)
readers=(zip folder tar shards)
if [[ -f ${DATA_OF[parquet]} ]] && pin "$BIN/frugal" bench loader "${DATA_OF[parquet]}" --seconds 1 --workers 2 --json >/dev/null 2>&1; then
  readers+=(parquet arrow)
else
  echo '{"bench": "loader_parquet", "skipped": "this build or .venv does not read parquet"}'
fi
declare -A RATIOS
for ((r = 1; r <= ROUNDS; r++)); do
  declare -A RATE=()
  for k in "${readers[@]}"; do
    RATE[$k]=$(pin "$BIN/frugal" bench loader "${DATA_OF[$k]}" --image-size 224 --workers 2 --seconds "$SECS" --json 2>/dev/null | rate)
  done
  for k in "${readers[@]}"; do
    ratio=$("$PY" -c "print(round(${RATE[$k]} / ${RATE[zip]}, 3))")
    RATIOS[$k]+="$ratio "
    echo "{\"bench\": \"loader_$k\", \"round\": $r, \"images_per_s\": ${RATE[$k]}, \"zip_images_per_s\": ${RATE[zip]}, \"ratio\": $ratio}"
  done
done
for k in "${readers[@]}"; do
  [[ $k == zip ]] && continue
  "$PY" -c "
import json, statistics, sys
rs = [float(x) for x in sys.argv[2].split()]
m = statistics.median(rs)
print(json.dumps({'bench': 'loader_' + sys.argv[1] + '_vs_zip', 'ratio_median': m, 'ratios': rs, 'target': 0.9, 'met': m >= 0.9}))" "$k" "${RATIOS[$k]}"
done

# CIFAR (issue 42): the same photos at 32x32, as CIFAR-10's two downloads and as zips of PNG and BMP
# files (train/CLASS/N.png, test/...: the split rule trains on train/ in all four).
C=$DATA/cifar
if [[ ! -f $C/done || $C/done -ot $PHOTOS ]]; then
  rm -rf "$C" && mkdir -p "$C"
  "$PY" - "$PHOTOS" "$C" <<'PY'
import io, os, pickle, sys, tarfile, zipfile
import numpy as np
from PIL import Image
src, out = sys.argv[1:]
with zipfile.ZipFile(src) as z:
    items = [(i.filename, z.read(i)) for i in z.infolist() if not i.is_dir()]
classes = sorted({n.split("/")[-2] for n, _ in items})
imgs = [np.asarray(Image.open(io.BytesIO(b)).convert("RGB").resize((32, 32), Image.BILINEAR)) for _, b in items]
labels = [classes.index(n.split("/")[-2]) for n, _ in items]
split = {"train": range(0, len(items) - 400), "test": range(len(items) - 400, len(items))}
for fmt in ("png", "bmp"):
    with zipfile.ZipFile(os.path.join(out, f"cifar-{fmt}.zip"), "w", zipfile.ZIP_STORED) as z:
        for sp, idx in split.items():
            for i in idx:
                b = io.BytesIO()
                Image.fromarray(imgs[i]).save(b, fmt.upper())
                z.writestr(f"{sp}/{classes[labels[i]]}/{i:05d}.{fmt}", b.getvalue())
planar = np.stack([im.transpose(2, 0, 1).reshape(3072) for im in imgs])
def tar(name, folder, files):
    with tarfile.open(os.path.join(out, name), "w:gz") as t:
        for n, data in files.items():
            ti = tarfile.TarInfo(folder + "/" + n); ti.size = len(data); t.addfile(ti, io.BytesIO(data))
tr, te = list(split["train"]), list(split["test"])
batches = {"data_batch_1": tr, "test_batch": te}
tar("cifar-10-python.tar.gz", "cifar-10-batches-py",
    {**{n: pickle.dumps({b"data": planar[ix], b"labels": [labels[i] for i in ix], b"batch_label": n.encode(),
                         b"filenames": [b"%05d.png" % i for i in ix]}, protocol=2) for n, ix in batches.items()},
     "batches.meta": pickle.dumps({b"label_names": [c.encode() for c in classes]}, protocol=2)})
tar("cifar-10-binary.tar.gz", "cifar-10-batches-bin",
    {**{n + ".bin": b"".join(bytes([labels[i]]) + planar[i].tobytes() for i in ix) for n, ix in batches.items()},
     "batches.meta.txt": ("\n".join(classes) + "\n").encode()})
open(os.path.join(out, "done"), "w").write("ok\n")
PY
fi
declare -A CDATA=([png_zip]=$C/cifar-png.zip [bmp_zip]=$C/cifar-bmp.zip [cifar_py]=$C/cifar-10-python.tar.gz
                  [cifar_bin]=$C/cifar-10-binary.tar.gz)
creaders=(png_zip bmp_zip cifar_py cifar_bin)
declare -A CRATIOS CRATIOS_BMP
for ((r = 1; r <= ROUNDS; r++)); do
  declare -A CRATE=()
  for k in "${creaders[@]}"; do
    CRATE[$k]=$(pin "$BIN/frugal" bench loader "${CDATA[$k]}" --image-size 32 --workers 2 --seconds "$SECS" --json 2>/dev/null | rate)
  done
  for k in "${creaders[@]}"; do
    ratio=$("$PY" -c "print(round(${CRATE[$k]} / ${CRATE[png_zip]}, 3))")
    bmp_ratio=$("$PY" -c "print(round(${CRATE[$k]} / ${CRATE[bmp_zip]}, 3))")
    CRATIOS[$k]+="$ratio "
    CRATIOS_BMP[$k]+="$bmp_ratio "
    echo "{\"bench\": \"loader_$k\", \"round\": $r, \"images_per_s\": ${CRATE[$k]}, \"png_zip_images_per_s\": ${CRATE[png_zip]}, \"ratio\": $ratio, \"bmp_zip_ratio\": $bmp_ratio}"
  done
done
# Against the PNG zip (what users made of CIFAR), and against the zip of the same BMP bytes (the
# reader's own cost: the CIFAR entries are those BMPs, held in memory).
for k in bmp_zip cifar_py cifar_bin; do
  for base in png bmp; do
    [[ $k == bmp_zip && $base == bmp ]] && continue
    if [[ $base == png ]]; then rs=${CRATIOS[$k]}; else rs=${CRATIOS_BMP[$k]}; fi
    "$PY" -c "
import json, statistics, sys
rs = [float(x) for x in sys.argv[3].split()]
m = statistics.median(rs)
print(json.dumps({'bench': 'loader_' + sys.argv[1] + '_vs_' + sys.argv[2] + '_zip', 'ratio_median': m, 'ratios': rs, 'target': 0.9, 'met': m >= 0.9}))" "$k" "$base" "$rs"
  done
done

#!/usr/bin/env bash
# Hugging Face parquet as DATA (issue 28 item 1): 2 x 12 images written by pyarrow as `datasets`
# writes them (an image column of {bytes, path} structs, an int label column, class names in the
# schema's huggingface metadata), in two files of several row groups, plus a row without image
# bytes, one with empty bytes and one labelled -1. Trained from a glob and from the folder, each
# training says it used 24 images of the 2 named classes and skipped those 3 rows by reason;
# --class-names names the classes of a file without metadata; a table without images is refused
# naming the file (exit 3); ls and bench loader read it; without the Arrow plugin parquet is refused
# saying so (exit 3); nothing is written outside the run folder.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL pyarrow
needs_commands frugal frugal-torch
keep_going
mkdir -p "$t/w" && cd "$t/w"
export FRUGAL_CACHE_DIR=$t/cache
"$py" - <<'PY'
import io, json, os
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
from PIL import Image
rng = np.random.default_rng(4)
rows = []
for i in range(12):
    for label, lo, hi in [(0, 160, 255), (1, 0, 96)]:
        b = io.BytesIO()
        Image.fromarray(rng.integers(lo, hi, (28, 28), dtype=np.uint8)).save(b, "PNG")
        rows.append(({"bytes": b.getvalue(), "path": f"{label}_{i}.png"}, label))
rows[3:3] = [(None, 0), ({"bytes": b"", "path": "e.png"}, 1), ({"bytes": rows[0][0]["bytes"], "path": "u.png"}, -1)]
img_t = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
def table(part, names=True):
    t = pa.table({"image": pa.array([r[0] for r in part], type=img_t),
                  "label": pa.array([r[1] for r in part], type=pa.int64())})
    if names:
        feat = {"image": {"_type": "Image"}, "label": {"_type": "ClassLabel", "names": ["bright", "dark"]}}
        t = t.replace_schema_metadata({"huggingface": json.dumps({"info": {"features": feat}})})
    return t
os.makedirs("hf/data")
pq.write_table(table(rows[:14]), "hf/data/train-00000-of-00002.parquet", row_group_size=5)
pq.write_table(table(rows[14:]), "hf/data/train-00001-of-00002.parquet", row_group_size=5)
pq.write_table(table(rows, names=False), "ints.parquet", row_group_size=5)
pq.write_table(pa.table({"x": [1.5, 2.5], "name": ["a", "b"]}), "table.parquet")
open("names.txt", "w").write("light\nshade\n")
PY
snapshot() { find "$t/w" -path "$t/w/runs" -prune -o -print | sort; }
before=$(snapshot)
train() {  # train NAME DATA [OPTIONS...]: one epoch of the cnn, exit 0
  local name=$1 data=$2
  shift 2
  expect_exit "train $name: exit 0" 0 frugal train --data "$data" --run "runs/$name" --model cnn --epochs 1 \
    --batch-size 8 --workers 2 --seed 1 "$@"
}
skips="skipped: 1 empty image bytes (e.g. "
train glob 'hf/data/train-*.parquet'
expect_msg "glob: 24 images of 2 classes" "hf/data/train-*.parquet: 24 images in 2 classes"
expect_msg "glob: rows without image bytes and labels counted by reason" "$skips"
expect_msg "glob: the null row" "1 no image bytes (null) (e.g. "
expect_msg "glob: the -1 label" "1 no label (null or negative in column label)"
check "glob: the classes are the metadata's names" "grep -rqa '\"bright\"' runs/glob && grep -rqa '\"dark\"' runs/glob"
train folder hf/data/
expect_msg "folder: 24 images of 2 classes" "hf/data/: 24 images in 2 classes"
expect_exit "eval of the glob run on the folder" 0 frugal eval runs/glob --data hf/data/ --json
check "eval: an accuracy" "grep -q '\"accuracy\"' '$t/out'"
train ints ints.parquet --class-names names.txt
expect_msg "--class-names: 24 images of 2 classes" "ints.parquet: 24 images in 2 classes"
check "--class-names names the integer classes" "grep -rqa '\"light\"' runs/ints && grep -rqa '\"shade\"' runs/ints"
expect_exit "ls of a parquet file" 0 frugal ls ints.parquet --json
check "ls: a row's entry" "grep -q '\"ints.parquet/0.png\"' '$t/out'"
expect_exit "bench loader on the parquet set" 0 frugal bench loader 'hf/data/train-*.parquet' --seconds 1 --json
check "bench loader read images" "grep -q '\"images_per_s\"' '$t/out'"
expect_exit "a table without images: exit 3" 3 frugal train --data table.parquet --run runs/table --model cnn
expect_msg "names the file and what it holds" "table.parquet: expected an image column"
expect_exit "without the Arrow plugin: exit 3" 3 env FRUGAL_PARQUET_PLUGIN=$t/none.so frugal ls ints.parquet
expect_msg "says the parquet reader could not be loaded" "ints.parquet: expected data this frugal reads, found a Hugging Face parquet file, and its parquet reader could not be loaded"
check "nothing written outside the runs" '[ "$(snapshot)" == "$before" ]'
finish

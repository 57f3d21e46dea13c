#!/usr/bin/env bash
# Hugging Face save_to_disk folders and .arrow files as DATA (issue 42): written by pyarrow as
# `datasets` writes them (Arrow IPC streams of {bytes, path} image structs and an int64 label;
# dataset_info.json with the ClassLabel names, state.json with the data files; dataset_dict.json
# with the splits). A DatasetDict of train (2 x 12 images in two shards) and test (2 x 5) trains on
# train only and says which files are which; --val DATA:test validates on test and says so;
# `eval RUN --data DATA:test` evaluates the 10 test images; a lone .arrow stream and an IPC file
# (ARROW1) read; Arrow files named train-*/test-* train on train only; a cut .arrow is exit 3 naming
# it, without the zip advice it once got; without the plugin it is refused saying so.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL pyarrow
needs_commands frugal frugal-torch
keep_going
mkdir -p "$t/w" && cd "$t/w"
export FRUGAL_CACHE_DIR=$t/cache
"$py" - <<'PY'
import io, json, os
import numpy as np, pyarrow as pa
from PIL import Image
img_t = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
feat = {"image": {"_type": "Image"}, "label": {"names": ["bright", "dark"], "_type": "ClassLabel"}}
def rows(n, seed):
    r, out = np.random.default_rng(seed), []
    for i in range(n):
        for label, lo, hi in [(0, 160, 255), (1, 0, 96)]:
            b = io.BytesIO()
            Image.fromarray(r.integers(lo, hi, (28, 28), dtype=np.uint8)).save(b, "PNG")
            out.append(({"bytes": b.getvalue(), "path": None}, label))
    return out
def table(part, meta=True):
    t = pa.table({"image": pa.array([r[0] for r in part], type=img_t),
                  "label": pa.array([r[1] for r in part], type=pa.int64())})
    return t.replace_schema_metadata({"huggingface": json.dumps({"info": {"features": feat}})}) if meta else t
def stream(t, path):
    with pa.OSFile(path, "wb") as f, pa.ipc.new_stream(f, t.schema) as w:
        w.write_table(t, max_chunksize=10)
def save_to_disk(part, d, split, shards=1):  # as Dataset.save_to_disk lays it out
    os.makedirs(d)
    t, files, per = table(part, meta=False), [], (len(part) + shards - 1) // shards
    for s in range(shards):
        name = f"data-{s:05d}-of-{shards:05d}.arrow"
        stream(t.slice(s * per, per), f"{d}/{name}")
        files.append({"filename": name})
    json.dump({"citation": "", "description": "", "features": feat, "homepage": "", "license": ""},
              open(f"{d}/dataset_info.json", "w"), indent=2)
    json.dump({"_data_files": files, "_fingerprint": "0123456789abcdef", "_format_columns": None,
               "_format_kwargs": {}, "_format_type": None, "_output_all_columns": False, "_split": split},
              open(f"{d}/state.json", "w"), indent=2)
train, test = rows(12, 1), rows(5, 2)
save_to_disk(train, "dd/train", "train", shards=2)
save_to_disk(test, "dd/test", "test")
json.dump({"splits": ["train", "test"]}, open("dd/dataset_dict.json", "w"))
stream(table(train), "lone.arrow")
with pa.OSFile("file.arrow", "wb") as f, pa.ipc.new_file(f, table(train).schema) as w:
    w.write_table(table(train), max_chunksize=7)
os.makedirs("hf/data")
stream(table(train), "hf/data/train-00000-of-00001.arrow")
stream(table(test), "hf/data/test-00000-of-00001.arrow")
data = open("lone.arrow", "rb").read()
open("cut.arrow", "wb").write(data[: len(data) * 2 // 3])
PY
train() {  # train NAME DATA [OPTIONS...]: one epoch of the cnn, exit 0
  local name=$1 data=$2
  shift 2
  expect_exit "train $name: exit 0" 0 frugal train --data "$data" --run "runs/$name" --model cnn --epochs 1 \
    --batch-size 8 --workers 2 --seed 1 "$@"
}
train dict dd
expect_msg "DatasetDict: the 24 train images of the 2 ClassLabel classes" "dd: 24 images in 2 classes; skipped: nothing"
expect_msg "DatasetDict: the first lines say which files train and which do not" \
  "dd: a Hugging Face DatasetDict folder (dataset_dict.json): training on train/data-00000-of-00002.arrow, train/data-00001-of-00002.arrow; not read: test/data-00000-of-00001.arrow (--val dd:test validates on it)"
check "DatasetDict: the classes are dataset_info.json's names" \
  "grep -rqa '\"bright\"' runs/dict/config.json && grep -rqa '\"dark\"' runs/dict/config.json"
expect_json "DatasetDict: config.json's data names the train files" \
  "d['data']['train'] == 'train/data-00000-of-00002.arrow, train/data-00001-of-00002.arrow'" runs/dict/config.json
train dict_val dd --val dd:test
expect_json "--val dd:test: config.json's data names it" "d['data']['validation'] == 'dd:test'" runs/dict_val/config.json
expect_msg "--val dd:test reads the 10 test images" "dd:test: 10 images in 2 classes"
expect_msg "--val dd:test: the log says test validates" "; validating on test/data-00000-of-00001.arrow (--val)"
expect_msg "--val dd:test: trained on train only" "training cnn on 24 images (2 classes), validating on 10"
expect_exit "eval RUN --data dd:test" 0 frugal eval runs/dict --data dd:test --json
expect_json "eval dd:test: the 10 test images" "d['samples'] == 10"
expect_exit "eval RUN --data dd (its test split)" 0 frugal eval runs/dict --data dd
expect_msg "eval dd: says it evaluates the test split" "evaluating on test/data-00000-of-00001.arrow"
train lone lone.arrow
expect_msg "a lone .arrow stream: 24 images in 2 classes" "lone.arrow: 24 images in 2 classes"
expect_exit "an IPC file-format .arrow lists" 0 frugal ls file.arrow --json
check "ls file.arrow: 24 rows" "[ \$(grep -o '\"file.arrow/[0-9]*.png\"' '$t/out' | wc -l) -eq 24 ]"
train ipcfile file.arrow
expect_msg "an IPC file: 24 images in 2 classes" "file.arrow: 24 images in 2 classes"
train named hf/data
expect_msg "Arrow files named by split: train only, said" \
  "hf/data: Arrow files named by split: training on train-00000-of-00001.arrow; not read: test-00000-of-00001.arrow"
expect_msg "Arrow files named by split: 24 images" "hf/data: 24 images in 2 classes"
expect_exit "a cut .arrow: exit 3" 3 frugal train --data cut.arrow --run runs/cut --model cnn
expect_msg "a cut .arrow: names it, says it was cut short" "cut.arrow: expected an Arrow IPC file Arrow reads"
expect_msg "a cut .arrow: what was found" "(the file was cut short)"
expect_no_msg "a cut .arrow: no zip advice" "zip"
expect_exit "a cut .arrow in ls: exit 3" 3 frugal ls cut.arrow
expect_exit "without the Arrow plugin: exit 3" 3 env FRUGAL_PARQUET_PLUGIN=$t/none.so frugal ls lone.arrow
expect_msg "says the Arrow reader could not be loaded" \
  "lone.arrow: expected data this frugal reads, found a Hugging Face Arrow file (.arrow), and its Arrow reader could not be loaded"
finish

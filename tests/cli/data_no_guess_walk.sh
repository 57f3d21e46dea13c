#!/usr/bin/env bash
# No exit 0 on a guess (issue 42): a walk over every reader and every label source. What frugal
# decides that the user did not say (what a label is and where it comes from, which files train and
# which validate, how much is held out) is said in a line at the start, in train --json's "data"
# and in config.json's "data", alike; where the data is ambiguous it refuses, exit 2, naming the
# option that decides.
#
# The walk is driven by the code, not by this file: the reader kinds are what the readers'
# format() return (src/archive/*.cpp; "data"'s "reader"), the label sources what layout.cpp sets
# as label_source ("data"'s "label_source"). A reader or label source that no case below reaches
# fails the test: a new one needs its case here.
#
# Ambiguous data refused: files of one set named as two splits (mnist_train.parquet beside
# mnist_test.parquet, Arrow likewise, a shard glob over train-* and test-* tars): --data; class
# folders named as splits (seg_train/, seg_test/) in a folder and a zip: --data-root; labels that
# look like tag lists in --labels, --val-labels and a labels.csv found in the data:
# --label-separator; a first row that looks like data in --labels, --val-labels and a labels.csv
# read with --label-separator: --labels-header.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL pyarrow
needs_commands frugal frugal-torch
keep_going
mkdir -p "$t/w" && cd "$t/w"
export FRUGAL_CACHE_DIR=$t/cache
"$py" - <<'PY'
import io, json, os, pickle, tarfile, zipfile
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
from PIL import Image
rng = np.random.default_rng(3)
N = 6  # images a class: two classes of 12x12 grays, bright and dark
def png(k):
    b = io.BytesIO()
    Image.fromarray(rng.integers(*((160, 255), (0, 96))[k], (12, 12), dtype=np.uint8)).save(b, "PNG")
    return b.getvalue()
def put(path, data):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    open(path, "wb").write(data)
def add(t, name, data):
    info = tarfile.TarInfo(name); info.size = len(data); t.addfile(info, io.BytesIO(data))
cls = ("bright", "dark")
images = {f"{cls[k]}/{i}.png": png(k) for k in (0, 1) for i in range(N)}
# class folders: a folder, a zip, a tar; split folders train/ val/ in a folder
for name, data in images.items():
    put("folder/" + name, data)
    put("splits/train/" + name, data)
    put("splits/val/" + name, png(cls.index(name.split("/")[0])))
    put("segs/seg_train/" + name, data)
    put("segs/seg_test/" + name, data)
with zipfile.ZipFile("classes.zip", "w") as z:
    for name, data in images.items(): z.writestr(name, data)
with zipfile.ZipFile("segs.zip", "w") as z:
    for name, data in images.items(): z.writestr("seg_train/" + name, data); z.writestr("seg_test/" + name, data)
with tarfile.open("classes.tar", "w") as t:
    for name, data in images.items(): add(t, name, data)
# flat files: labels.csv inside a zip, --labels beside a folder, a label pattern
flat = {f"img/{c}_{i}.png": (c, png(k)) for k, c in enumerate(cls) for i in range(N)}
tags = ["clear", "haze", "road", "water", "primary", "cloudy"]
def tag_list(i): return " ".join([tags[i % 2]] + [x for j, x in enumerate(tags[2:]) if (i // 2) >> j & 1])
with zipfile.ZipFile("labels_csv.zip", "w") as z, zipfile.ZipFile("tags_csv.zip", "w") as zt, \
     zipfile.ZipFile("tags_nohead.zip", "w") as zn, zipfile.ZipFile("pattern.zip", "w") as zp:
    rows, trows = ["path,label"], ["path,tags"]
    for i, (name, (c, data)) in enumerate(flat.items()):
        for zz in (z, zt, zn): zz.writestr(name, data)
        zp.writestr(name.replace("img/", ""), data)
        rows.append(f"{name},{c}"); trows.append(f"{name},{tag_list(i)}")
        put("flat/" + name, data)
    z.writestr("labels.csv", "\n".join(rows) + "\n")
    zt.writestr("labels.csv", "\n".join(trows) + "\n")
    zn.writestr("labels.csv", "\n".join(trows[1:]) + "\n")
put("flat/train.csv", ("id,label\n" + "".join(f"{n[4:-4]},{c}\n" for n, (c, _) in flat.items())).encode())
put("flat/tags.csv", ("id,tags\n" + "".join(f"{n[4:-4]},{tag_list(i)}\n" for i, n in enumerate(flat))).encode())
put("flat/nohead.csv", "".join(f"{n[4:]},{c}\n" for n, (c, _) in flat.items()).encode())
# .npy arrays in a zip: x_train (N, 12, 12) uint8 labelled by y_train
with zipfile.ZipFile("arrays.zip", "w") as z:
    for stem, a in [("x_train", rng.integers(0, 255, (2 * N, 12, 12), dtype=np.uint8)),
                    ("y_train", np.array([0, 1] * N, dtype=np.int64))]:
        b = io.BytesIO(); np.save(b, a); z.writestr(stem + ".npy", b.getvalue())
# WebDataset: two shards of .png + .cls; one tar of .cls members; two shards named as splits
for s in range(2):
    with tarfile.open(f"shard-{s:06d}.tar", "w") as t:
        for i in range(N // 2):
            for k in (0, 1): add(t, f"s{s}_{k}_{i}.png", png(k)); add(t, f"s{s}_{k}_{i}.cls", str(k).encode())
os.makedirs("wds")
for split in ("train", "test"):
    with tarfile.open(f"wds/{split}-000000.tar", "w") as t:
        for i in range(N):
            for k in (0, 1): add(t, f"{k}_{i}.png", png(k)); add(t, f"{k}_{i}.cls", str(k).encode())
with tarfile.open("cls.tar", "w") as t:
    for i in range(N):
        for k in (0, 1): add(t, f"{k}_{i}.png", png(k)); add(t, f"{k}_{i}.cls", str(k).encode())
# parquet and Arrow: ClassLabel metadata; a label column not named label; files named as splits
img_t = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
feat = {"image": {"_type": "Image"}, "label": {"_type": "ClassLabel", "names": list(cls)}}
def table(n, label="label", meta=True):
    rows = [({"bytes": png(k), "path": None}, k) for i in range(n) for k in (0, 1)]
    t = pa.table({"image": pa.array([r[0] for r in rows], type=img_t),
                  label: pa.array([r[1] for r in rows], type=pa.int64())})
    return t.replace_schema_metadata({"huggingface": json.dumps({"info": {"features": feat}})}) if meta else t
def stream(t, path):
    with pa.OSFile(path, "wb") as f, pa.ipc.new_stream(f, t.schema) as w: w.write_table(t)
pq.write_table(table(N), "one.parquet")
pq.write_table(table(N, "target", meta=False), "target.parquet")
os.makedirs("pq"); os.makedirs("pqsplit"); os.makedirs("ar")
pq.write_table(table(N), "pq/mnist_train.parquet"); pq.write_table(table(2), "pq/mnist_test.parquet")
pq.write_table(table(N), "pqsplit/train-00000-of-00001.parquet")
pq.write_table(table(2), "pqsplit/test-00000-of-00001.parquet")
stream(table(N), "ar/mnist_train.arrow"); stream(table(2), "ar/mnist_test.arrow")
os.makedirs("saved")
stream(table(N, meta=False), "saved/data-00000-of-00001.arrow")
json.dump({"features": feat}, open("saved/dataset_info.json", "w"))
json.dump({"_data_files": [{"filename": "data-00000-of-00001.arrow"}], "_split": "train"}, open("saved/state.json", "w"))
# CIFAR-100, python pickles, extracted: 6 fine classes
fine = [0, 1, 2, 3, 4, 5] * 3
c100 = {"train": {b"data": rng.integers(0, 255, (18, 3072), dtype=np.uint8), b"fine_labels": fine,
                  b"coarse_labels": [f // 2 for f in fine], b"filenames": [b"f"] * 18, b"batch_label": b"t"},
        "test": {b"data": rng.integers(0, 255, (6, 3072), dtype=np.uint8), b"fine_labels": fine[:6],
                 b"coarse_labels": [f // 2 for f in fine[:6]], b"filenames": [b"f"] * 6, b"batch_label": b"t"},
        "meta": {b"fine_label_names": [b"fine%d" % k for k in range(100)],
                 b"coarse_label_names": [b"coarse%d" % k for k in range(20)]}}
for name, d in c100.items(): put("cifar-100-python/" + name, pickle.dumps(d, protocol=2))
PY
[[ -f cifar-100-python/meta ]] || die "the test data was not made"

n=0
train() {  # train RUN [OPTIONS...]: the cnn, one epoch
  local run=$1
  shift
  frugal train --run "$t/runs/$run" --model cnn --epochs 1 --batch-size 8 --workers 1 --seed 1 "$@"
}
# walk NAME READER LABEL_SOURCE TRAIN_OPTIONS...: trains (exit 0), then asks --json of the finished
# run; the "data" record names the reader and label source, config.json's equals --json's, and
# every decision in it is said in a line: the labels, the validation (5% unasked, or the split).
walk() {
  local name=$1 reader=$2 source=$3
  shift 3
  local options="$*"
  n=$((n + 1))
  expect_exit "$name: trains" 0 train "w$n" "$@"
  cp "$t/err" "$t/w$n.err"
  expect_exit "$name: --json" 0 train "w$n" "$@" --json
  echo "$reader $source" >>"$t/covered"
  check "$name: reader $reader, labels from $source, said in a line, in --json and in config.json alike" \
    '"$py" - "$t/out" "$t/runs/w$n/config.json" "$t/w$n.err" "$reader" "$source" "$options" <<'"'"'PY'"'"'
import json, sys
out, config, err, reader, source, options = sys.argv[1:]
d, c, said = json.load(open(out))["data"], json.load(open(config))["data"], open(err).read()
assert d == c, ("--json and config.json differ", d, c)
assert d["reader"] == reader and d["label_source"] == source, d
assert "labels: " + d["labels"] + " (read by its " + reader + " reader)" in said, (d["labels"], said)
if "--val-split" not in options and "val_split" in d:
    assert d["val_split"] == 0.05 and "validating on a stable 5% of the training data" in said, (d, said)
if "val_split" not in d and "--val" not in options:  # a split of the data validates: which, said
    assert "training on " in said and d["validation"], (d, said)
PY'
}
# refuse NAME OPTION TRAIN_OPTIONS...: exit 2, naming OPTION.
refuse() {
  local name=$1 option=$2
  shift 2
  n=$((n + 1))
  expect_exit "$name: refused" 2 train "r$n" "$@"
  expect_msg "$name: ...naming $option" "$option"
  check "$name: ...before a run was made" '[[ ! -e $t/runs/r$n/config.json ]]'
}

# Every reader x the label sources it has.
walk "folder, class folders" folder class_folders --data folder
walk "zip, class folders" zip class_folders --data classes.zip
walk "tar, class folders" tar class_folders --data classes.tar
walk "folder of split folders" folder class_folders --data splits
expect_msg "...said: which split trains, which validates" "splits: its top level is split folders: training on train/, validating on val/" "$t/w$n.err"
walk "zip, a labels.csv in it" zip labels_csv --data labels_csv.zip
expect_msg "...said: the file and how it was read" "labels: labels_csv.zip:labels.csv (a labels.csv found in the data, path,label rows): each label one class" "$t/w$n.err"
walk "folder, --labels" folder labels --data flat --labels train.csv --images-dir img/
walk "folder, --labels multi-label" folder labels --data flat --labels tags.csv --images-dir img/ --label-separator ' '
walk "zip, its labels.csv read with --label-separator" zip labels --data tags_csv.zip --label-separator ' '
expect_json "...read as --labels reads it: multi-label, 5 tags" 'd["data"]["multi_label"]["tags"] == 5 and d["data"]["labels"].startswith("tags_csv.zip:labels.csv: multi-label")'
walk "zip, a labels.csv of tag-like labels, --labels-are-classes" zip labels_csv --data tags_csv.zip --labels-are-classes
expect_json "...each whole label one class, recorded" '"labels_are_classes set" in d["data"]["labels"] and d["classes"] == 12'
walk "zip, --label-pattern" zip label_pattern --data pattern.zip --label-pattern '^([a-z]+)_'
walk "zip, .npy arrays" zip arrays --data arrays.zip
expect_msg "...said: which array labels which" "x_train.npy by y_train.npy (their names pair)" "$t/w$n.err"
walk "WebDataset shards, .cls" webdataset reader --data 'shard-{000000..000001}.tar'
walk "one tar of .cls members" tar reader --data cls.tar
walk "parquet, ClassLabel names" parquet reader --data one.parquet
expect_msg "...said: the column and the names' source" "labels: column 'label' of its rows; class names from its ClassLabel metadata" "$t/w$n.err"
walk "parquet, a label column of another name" parquet reader --data target.parquet
expect_msg "...said: taken as the first integer column" "column 'target' of its rows (the first integer column: none is named label)" "$t/w$n.err"
walk "parquet files named by split" parquet reader --data pqsplit
walk "save_to_disk folder" arrow reader --data saved
walk "CIFAR-100" cifar reader --data cifar-100-python
expect_msg "...said: fine labels, and the option for the coarse ones" "CIFAR's fine_labels lists (the 100 fine labels; --label-kind coarse takes the 20 superclasses)" "$t/w$n.err"

# Ambiguous data: refused, naming the option that decides.
refuse "parquet files named as two splits" "give the files to train on as a glob: --data" --data pq
refuse "Arrow files named as two splits" "give the files to train on as a glob: --data" --data ar
refuse "a shard glob over train and test shards" "give the files to train on as a glob: --data" --data 'wds/*.tar'
expect_exit "a shard glob naming its split reads" 0 train wdstrain --data 'wds/train-*.tar' --json
expect_exit "...--data-root decides" 0 train segroot --data segs --data-root seg_train/ --json
refuse "class folders named as splits (folder)" "name the folder to read: segs:seg_train/ (--data-root seg_train/" --data segs
refuse "class folders named as splits (zip)" "segs.zip:seg_train/ (--data-root seg_train/ in train; segs.zip:seg_test/" --data segs.zip
expect_exit "...DATA:seg_train/ decides too" 0 train segsub --data segs:seg_train/ --json
expect_exit "...eval is refused alike" 2 frugal eval "$t/runs/segroot" --data segs
expect_msg "...naming the folder to read" "name the folder to read: segs:seg_train/"
refuse "tag lists in --labels" "give --label-separator ' '" --data flat --labels tags.csv --images-dir img/
refuse "tag lists in --val-labels" "give --label-separator ' '" --data flat --labels train.csv --images-dir img/ \
  --val flat --val-labels tags.csv --val-images-dir img/
refuse "tag lists in a labels.csv found in the data" "give --label-separator ' '" --data tags_csv.zip
expect_msg "...and the option that reads them as classes" "add --labels-are-classes"
refuse "a header-less --labels" "--labels-header" --data flat --labels nohead.csv
refuse "a header-less --val-labels" "--labels-header" --data flat --labels train.csv --images-dir img/ \
  --val flat --val-labels nohead.csv
refuse "a header-less labels.csv read with --label-separator" "--labels-header" --data tags_nohead.zip --label-separator ' '
expect_exit "...--labels-header no decides" 0 train nohead --data tags_nohead.zip --label-separator ' ' --labels-header no --json
expect_json "...every row read as data (12 images)" 'd["train_images"] + d["val_images"] == 12'

# The walk reached every reader and every label source the code has.
readers=$( (grep -ho 'format() const override { return [^}]*' "$src"/src/archive/*.cpp
  grep -ho 'open_tar_archive([^;]*"[a-z]*"' "$src"/src/archive/*.cpp) | grep -o '"[a-z]*"' | tr -d '"' | sort -u)
sources=$(grep -ho 'label_source = "[a-z_]*"' "$src"/src/dataset/*.cpp | grep -o '"[a-z_]*"' | tr -d '"' | sort -u)
check "the code has readers and label sources to walk" '[[ $(wc -w <<<"$readers") -ge 7 && $(wc -w <<<"$sources") -ge 6 ]]'
for r in $readers; do check "reader $r has a case" 'grep -q "^$r " "$t/covered"'; done
for s in $sources; do check "label source $s has a case" 'grep -q " $s\$" "$t/covered"'; done
finish

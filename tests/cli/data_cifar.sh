#!/usr/bin/env bash
# CIFAR-10/100 as downloaded (issue 42, item 3): a small CIFAR-10 in both distributions (pickles
# written by Python's pickle with numpy, and binary records), each as its .tar.gz, as the extracted
# folder and as the folder holding it, plus a tiny CIFAR-100. ls lists an image per record; train
# finds 40 images in 10 classes named from batches.meta (split folder train/) and runs; --val
# DATA:test validates on the test batch (the log says so); eval RUN --data DATA:test works; CIFAR-100
# reads fine labels, or coarse ones with --label-kind coarse. A pickle naming another global
# (os.system) is refused with exit 3 and nothing runs; a truncated record file is exit 3 naming it.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy
needs_commands frugal frugal-torch
keep_going
mkdir -p "$t/w" && cd "$t/w"
export FRUGAL_CACHE_DIR=$t/cache
"$py" - <<'PY'
import io, os, pickle, tarfile
import numpy as np
rng = np.random.default_rng(7)
names = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
def images(labels):  # class k: a bright band at row 3k, the rest dim noise: learnable, all different
    x = rng.integers(0, 64, (len(labels), 3, 32, 32), dtype=np.uint8)
    for i, k in enumerate(labels):
        x[i, :, 3 * k:3 * k + 3, :] = 250
    return x.reshape(len(labels), 3072)
batches = {"data_batch_1": [k % 10 for k in range(20)], "data_batch_2": [(k * 3) % 10 for k in range(20)],
           "test_batch": [k % 10 for k in range(10)]}
arrays = {n: (images(l), l) for n, l in batches.items()}
def tar(path, folder, files):
    with tarfile.open(path, "w:gz") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(folder + "/" + name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    os.makedirs("x/" + folder, exist_ok=True)
    for name, data in files.items():
        open(f"x/{folder}/{name}", "wb").write(data)
py = {n: pickle.dumps({b"batch_label": n.encode(), b"labels": l, b"data": a,
                       b"filenames": [b"%d.png" % i for i in range(len(l))]}, protocol=2)
      for n, (a, l) in arrays.items()}
py["batches.meta"] = pickle.dumps({b"label_names": [n.encode() for n in names], b"num_vis": 3072}, protocol=2)
py["readme.html"] = b"<html></html>"
tar("cifar-10-python.tar.gz", "cifar-10-batches-py", py)
rec = {n + ".bin": b"".join(bytes([lab]) + row.tobytes() for row, lab in zip(a, l)) for n, (a, l) in arrays.items()}
rec["batches.meta.txt"] = ("\n".join(names) + "\n\n").encode()
tar("cifar-10-binary.tar.gz", "cifar-10-batches-bin", rec)
fine, coarse = [0, 1, 2, 3, 4, 5] * 3, [0, 0, 1, 1, 2, 2] * 3
a = images(fine)
c100 = {"train": pickle.dumps({b"data": a, b"fine_labels": fine, b"coarse_labels": coarse,
                               b"filenames": [b"f"] * 18, b"batch_label": b"training batch 1 of 1"}, protocol=2),
        "test": pickle.dumps({b"data": a[:6], b"fine_labels": fine[:6], b"coarse_labels": coarse[:6],
                              b"filenames": [b"f"] * 6, b"batch_label": b"testing batch 1 of 1"}, protocol=2),
        "meta": pickle.dumps({b"fine_label_names": [b"fine%d" % k for k in range(100)],
                              b"coarse_label_names": [b"coarse%d" % k for k in range(20)]}, protocol=2)}
tar("cifar-100-python.tar.gz", "cifar-100-python", c100)
class Evil:
    def __reduce__(self):
        return (os.system, ("touch ran",))
os.makedirs("evil/cifar-10-batches-py")
for name, data in py.items():
    open("evil/cifar-10-batches-py/" + name, "wb").write(data)
open("evil/cifar-10-batches-py/data_batch_2", "wb").write(pickle.dumps({b"data": Evil(), b"labels": [1]}, protocol=2))
os.makedirs("trunc/cifar-10-batches-bin")
for name, data in rec.items():
    open("trunc/cifar-10-batches-bin/" + name, "wb").write(data[:5000] if name == "data_batch_2.bin" else data)
PY
train() {  # train NAME DATA [OPTIONS...]: one epoch of the cnn, exit 0
  local name=$1 data=$2
  shift 2
  expect_exit "train $name: exit 0" 0 frugal train --data "$data" --run "runs/$name" --model cnn --epochs 1 \
    --batch-size 8 --workers 2 --seed 1 "$@"
}

expect_exit "ls of the python .tar.gz" 0 frugal ls cifar-10-python.tar.gz
check "ls: an image per record (40 + 10)" "[ \$(grep -c '\.bmp' '$t/out') -eq 50 ]"
check "ls: the test batch's entries" "grep -q 'test/test_batch/00009.bmp' '$t/out'"
train py cifar-10-python.tar.gz --val cifar-10-python.tar.gz:test
expect_msg "py: 40 training images in 10 classes" "cifar-10-python.tar.gz: 40 images in 10 classes; skipped: nothing"
expect_msg "py: trained on the train split" "its top level is split folders: training on train/"
expect_msg "py: validates on the test batch" "cifar-10-python.tar.gz:test: 10 images in 10 classes"
check "py: the classes are batches.meta's names" "grep -qa '\"airplane\"' runs/py/config.json && grep -qa '\"truck\"' runs/py/config.json"
check "py: the validation is the test batch in config.json" "grep -qa 'cifar-10-python.tar.gz:test' runs/py/config.json"
expect_exit "eval RUN --data DATA:test" 0 frugal eval runs/py --data cifar-10-python.tar.gz:test --json
check "eval: an accuracy" "grep -q '\"accuracy\"' '$t/out'"
train pyfolder x/cifar-10-batches-py
expect_msg "extracted folder: 40 images in 10 classes" "x/cifar-10-batches-py: 40 images in 10 classes"
expect_exit "a folder holding two CIFAR folders: exit 2" 2 frugal ls x
expect_msg "refused naming them" "x: expected one CIFAR folder, found several: cifar-10-batches-bin, cifar-10-batches-py"
train bin cifar-10-binary.tar.gz --val cifar-10-binary.tar.gz:test
expect_msg "bin: 40 images in 10 classes" "cifar-10-binary.tar.gz: 40 images in 10 classes; skipped: nothing"
expect_msg "bin: validates on the test batch" "cifar-10-binary.tar.gz:test: 10 images in 10 classes"
check "bin: the classes are batches.meta.txt's names" "grep -qa '\"automobile\"' runs/bin/config.json"
mkdir -p holder && mv x/cifar-10-batches-bin holder/
train binholder holder --val holder:test
expect_msg "the folder holding one CIFAR folder: 40 images" "holder: 40 images in 10 classes"
train c100 cifar-100-python.tar.gz --val cifar-100-python.tar.gz:test
expect_msg "CIFAR-100: fine labels by default" "cifar-100-python.tar.gz: 18 images in 6 classes"
check "CIFAR-100: fine names" "grep -qa '\"fine5\"' runs/c100/config.json"
train c100c cifar-100-python.tar.gz --val cifar-100-python.tar.gz:test --label-kind coarse
expect_msg "CIFAR-100 --label-kind coarse: 3 classes" "cifar-100-python.tar.gz: 18 images in 3 classes"
check "CIFAR-100 coarse names" "grep -qa '\"coarse2\"' runs/c100c/config.json"

expect_exit "a pickle naming os.system: exit 3" 3 frugal train --data evil --run runs/evil --model cnn --epochs 1
expect_msg "refused naming the global and the file" "data_batch_2: expected only what a CIFAR batch holds"
expect_msg "nothing was run" "refusing to load posix.system: it could run code"
check "the global was never called" "[ ! -e ran ] && [ ! -e runs/evil/config.json ]"
expect_exit "ls of it: exit 3" 3 frugal ls evil
check "still nothing ran" "[ ! -e ran ]"
expect_exit "a truncated record file: exit 3" 3 frugal train --data trunc --run runs/trunc --model cnn --epochs 1
expect_msg "names the file" "data_batch_2.bin: expected records of 3073 bytes"
finish

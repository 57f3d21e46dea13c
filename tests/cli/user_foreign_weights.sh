#!/usr/bin/env bash
# eval, predict and export of weights from elsewhere (issue 29 item 2): a torch.save state dict of a
# frugal-trained cnn (plain, and nested under "state_dict" with DDP's "module." prefix) gives the
# same accuracy and predictions as the run it came from; the model is chosen by the tensors' names
# or given with --model; the classes are the data's in sorted order (eval) or numbered (predict);
# a class count that differs, and weights of no zoo model, are refused with the fix.
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL torch safetensors
needs_commands frugal frugal-torch
keep_going

make_two_class_zip "$t/data.zip" 24
make_shapes_zip "$t/three.zip" 8
frugal train --data "$t/data.zip" --model cnn --epochs 2 --batch-size 8 --workers 1 --device cpu --run "$t/run" 2> "$t/train.log" \
  || die "training the reference run" "$t/train.log"
"$py" - "$t" <<'PY'
import sys, torch
from safetensors.torch import load_file
d = sys.argv[1]
w = load_file(f"{d}/run/best.safetensors")
torch.save(w, f"{d}/plain.pth")
torch.save({"epoch": 2, "state_dict": {"module." + k: v for k, v in w.items()}}, f"{d}/nested.pth")
torch.save({"encoder.weight": torch.zeros(3, 3)}, f"{d}/odd.pth")
PY
# eval --json's whole document: accuracy, loss and per-class accuracy.
same_eval() { "$py" -c 'import json,sys; a, b = (json.load(open(p)) for p in sys.argv[1:]); assert a == b, (a, b)' "$1" "$2"; }
frugal eval "$t/run" --data "$t/data.zip" --json > "$t/ref.json" 2>/dev/null

expect_exit "eval of a torch.save state dict (model chosen by its names)" 0 frugal eval "$t/plain.pth" --data "$t/data.zip" --json
check "the same accuracy, loss and per-class accuracy as the run it came from" 'same_eval "$t/ref.json" "$t/out"'
expect_exit "eval of it, human output" 0 frugal eval "$t/plain.pth" --data "$t/data.zip"
expect_msg "...saying what it read it as" "read as cnn (chosen by its tensors' names and shapes), 2 classes, 28 px"
expect_exit "eval of a nested, DDP-prefixed one with --model cnn" 0 frugal eval "$t/nested.pth" --model cnn --data "$t/data.zip" --json
check "the same figures" 'same_eval "$t/ref.json" "$t/out"'

frugal predict "$t/run" "$t/data.zip:dark/000.png" "$t/data.zip:bright/001.png" > "$t/ref_pred" 2>/dev/null
expect_exit "predict with the .pth" 0 frugal predict "$t/plain.pth" "$t/data.zip:dark/000.png" "$t/data.zip:bright/001.png"
# Classes numbered as torchvision's ImageFolder numbers the sorted folders: 0 bright, 1 dark.
check "the same predictions, classes numbered" "[ \"\$(sed 's/: bright/: 0/; s/: dark/: 1/' '$t/ref_pred')\" == \"\$(cat '$t/out')\" ]"
expect_exit "export of the .pth" 0 frugal export "$t/plain.pth" --format onnx -o "$t/plain.onnx"
check "an ONNX file was written" '[ -s "$t/plain.onnx" ]'
expect_exit "compress of the .pth" 0 frugal compress "$t/plain.pth" -o "$t/plain-small.safetensors" --prune 0.5 \
  --quantize int8 --data "$t/data.zip" --json
check "...its report gives the .pth's size as the input" \
  "\"\$py\" -c 'import json,os,sys; d=json.load(open(\"$t/out\")); sys.exit(0 if d[\"input\"][\"bytes\"] == os.path.getsize(\"$t/plain.pth\") else 1)'"
expect_exit "eval of the compressed .pth" 0 frugal eval "$t/plain-small.safetensors" --data "$t/data.zip" --json

expect_exit "data of 3 classes for weights of 2" 3 frugal eval "$t/plain.pth" --data "$t/three.zip"
expect_msg "...naming both counts" "the 2 classes the weights' head classifies"
expect_exit "weights of no zoo model" 2 frugal eval "$t/odd.pth" --data "$t/data.zip"
expect_msg "...asking for --model" "give --model NAME or --model FILE.pt"
finish

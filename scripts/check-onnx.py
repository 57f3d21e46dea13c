#!/usr/bin/env python3
"""Checks an exported ONNX model against frugal's own predictions on images of an archive.

usage: check-onnx.py MODEL.onnx ARCHIVE.zip --frugal PATH --ckpt CKPT [-n 64]
Runs onnxruntime on the first N images (decoded with PIL, preprocessed as the model's metadata
says), asks `frugal predict CKPT ARCHIVE:entry --top K --json` for the same images, and prints
{"max_abs_diff": ..., "top1_agreement": ..., "images": N}. Exits 1 when top-1 classes disagree
or probabilities differ by more than 1e-3. Images must already be at the model's input size
(true for Fashion-MNIST), so no resizing is involved on either side.
"""
import argparse, io, json, subprocess, sys, zipfile

import numpy as np
import onnx
import onnxruntime as ort
from PIL import Image

ap = argparse.ArgumentParser()
ap.add_argument("model"); ap.add_argument("archive")
ap.add_argument("--frugal", required=True); ap.add_argument("--ckpt", required=True)
ap.add_argument("-n", type=int, default=64)
a = ap.parse_args()

m = onnx.load(a.model)
onnx.checker.check_model(m)
meta = {p.key: p.value for p in m.metadata_props}
classes = json.loads(meta["frugal.classes"])
mean, std = json.loads(meta["frugal.mean"]), json.loads(meta["frugal.std"])
channels, size = int(meta["frugal.channels"]), int(meta["frugal.image_size"])

with zipfile.ZipFile(a.archive) as z:
    names = sorted(n for n in z.namelist() if n.lower().endswith(".png"))[: a.n]
    imgs = [Image.open(io.BytesIO(z.read(n))).convert("L" if channels == 1 else "RGB") for n in names]
x = np.stack([np.asarray(i, dtype=np.float32).reshape(size, size, channels) for i in imgs]) / 255.0
x = ((x - np.array(mean, np.float32)) / np.array(std, np.float32)).transpose(0, 3, 1, 2).astype(np.float32)
sess = ort.InferenceSession(a.model, providers=["CPUExecutionProvider"])
logits = sess.run(None, {sess.get_inputs()[0].name: x})[0]
probs = np.exp(logits - logits.max(1, keepdims=True)); probs /= probs.sum(1, keepdims=True)

out = subprocess.run([a.frugal, "predict", a.ckpt, *[f"{a.archive}:{n}" for n in names],
                      "--top", str(len(classes)), "--json"], check=True, capture_output=True, text=True)
preds = json.loads(out.stdout)["predictions"]
max_diff, agree = 0.0, 0
for row, p in zip(probs, preds):
    theirs = {q["class"]: q["probability"] for q in p["predictions"]}
    max_diff = max(max_diff, max(abs(row[i] - theirs[c]) for i, c in enumerate(classes)))
    agree += classes[int(row.argmax())] == p["predictions"][0]["class"]
res = {"max_abs_diff": float(max_diff), "top1_agreement": agree / len(names), "images": len(names)}
print(json.dumps(res))
sys.exit(0 if max_diff <= 1e-3 and agree == len(names) else 1)

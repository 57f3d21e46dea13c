#!/usr/bin/env bash
# Issue 44, item 2: eval's confusion matrix, per-class precision, recall, F1 and support (macro and
# weighted averages), and the N images of highest loss. A tiny TorchScript model of our own is
# trained on one-colour images (any resize keeps the colour, so Python builds the very input
# frugal's evaluation fed it), some filed under a wrong class so that there are confusions; Python
# reruns the checkpoint's weights on the test images with torch and holds eval --json to
# scikit-learn's confusion_matrix and precision_recall_fscore_support on those predictions
# (exactly), and the worst list to the images of highest cross-entropy (names, classes,
# probability and loss). --confusion prints the table; a multi-label model is refused (exit 2).
source "$(dirname "$0")/lib/common.sh"
needs_python numpy PIL sklearn safetensors torch
needs_commands frugal frugal-torch
keep_going
cd "$t"
"$py" - <<'PY'
import json, os
import numpy as np
import torch
from PIL import Image
rng = np.random.default_rng(44)
names = ["blue", "green", "red"]  # sorted: the model's class order
centres = {"red": (190, 50, 50), "green": (50, 190, 50), "blue": (50, 50, 190)}
colours = {}
for split, n in (("train", 300), ("test", 90)):
    for i in range(n):
        made = names[i % 3]
        colour = tuple(int(v) for v in np.clip(np.array(centres[made]) + rng.normal(0, 70, 3), 0, 255))
        filed = made if rng.random() > 0.2 else names[int(rng.integers(0, 3))]
        os.makedirs(f"{split}/{filed}", exist_ok=True)
        name = f"{filed}/{split}_{i:03d}.png"
        Image.new("RGB", (16, 16), colour).save(f"{split}/{name}")
        colours[f"{split}/{name}"] = colour
json.dump(colours, open("colours.json", "w"))

torch.manual_seed(0)
tiny = torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(3, 3))
torch.jit.save(torch.jit.script(tiny), "tiny.pt")
PY
[[ -f tiny.pt ]] || die "no model made"

expect_exit "a tiny run trains" 0 frugal train --data train --model tiny.pt --image-size 16 --epochs 3 \
  --batch-size 32 --lr 0.05 --val-split 0 --workers 1 --run run
expect_exit "eval --json --worst 5" 0 frugal eval run --data test --json --worst 5 --workers 1
cp out eval.json

check "eval --json agrees with scikit-learn and with torch on the checkpoint's weights" '"$py" - <<'"'"'PY'"'"'
import json, struct, sys
import numpy as np
import torch
from safetensors.torch import load_file
from sklearn.metrics import confusion_matrix, precision_recall_fscore_support as prfs
ev = json.load(open("eval.json"))
with open("run/best.safetensors", "rb") as f:
    md = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))["__metadata__"]
classes, mean, std = json.loads(md["classes"]), json.loads(md["mean"]), json.loads(md["std"])
weights = {k: v for k, v in load_file("run/best.safetensors").items()}
model = torch.jit.load("tiny.pt")
missing = model.load_state_dict({k.removeprefix("model."): v for k, v in weights.items()}, strict=False)
print("missing/unexpected:", missing)
model.eval()
colours = json.load(open("colours.json"))
names = sorted(k.removeprefix("test/") for k in colours if k.startswith("test/"))
x = torch.stack([torch.tensor(colours["test/" + n], dtype=torch.uint8).view(3, 1, 1).expand(3, 16, 16) for n in names])
x = x.to(torch.float32).div_(255.0).sub_(torch.tensor(mean).view(1, 3, 1, 1)).div_(torch.tensor(std).view(1, 3, 1, 1))
with torch.no_grad():
    logits = model(x)
y = torch.tensor([classes.index(n.split("/")[0]) for n in names])
pred = logits.argmax(1)
labels = list(range(len(classes)))
bad = []
def same(what, a, b):
    if a != b:
        bad.append(what)
        print("DIFFERENT", what, a, b)
same("classes", ev["classes"], classes)
same("confusion", ev["confusion"], confusion_matrix(y.numpy(), pred.numpy(), labels=labels).tolist())
p, r, f, s = prfs(y.numpy(), pred.numpy(), labels=labels, average=None, zero_division=0)
for c, row in enumerate(ev["per_class_report"]):
    same(f"class {c}", (row["class"], row["precision"], row["recall"], row["f1"], row["support"]),
         (classes[c], float(p[c]), float(r[c]), float(f[c]), int(s[c])))
for avg in ("macro", "weighted"):
    p, r, f, _ = prfs(y.numpy(), pred.numpy(), labels=labels, average=avg, zero_division=0)
    a = ev[avg]
    same(avg, (a["precision"], a["recall"], a["f1"], a["support"]), (float(p), float(r), float(f), len(names)))
loss = torch.nn.functional.cross_entropy(logits, y, reduction="none")
prob = torch.softmax(logits, 1)
order = sorted(range(len(names)), key=lambda i: (-float(loss[i]), names[i]))[:5]
same("worst names", [w["name"] for w in ev["worst"]], [names[i] for i in order])
for w, i in zip(ev["worst"], order):
    same(f"worst {names[i]} classes", (w["true"], w["predicted"]), (classes[int(y[i])], classes[int(pred[i])]))
    if abs(w["loss"] - float(loss[i])) > 1e-5 or abs(w["probability"] - float(prob[i, pred[i]])) > 1e-6:
        same(f"worst {names[i]} figures", (w["loss"], w["probability"]), (float(loss[i]), float(prob[i, pred[i]])))
off = sum(ev["confusion"][t][q] for t in labels for q in labels if t != q)
print("accuracy", ev["accuracy"], "confusions", off, "worst", ev["worst"][0])
sys.exit(1 if bad or off == 0 or missing.missing_keys else 0)
PY'

expect_exit "eval --confusion prints the table" 0 frugal eval run --data test --confusion --worst 3 --workers 1
expect_msg "...the matrix, rows the true class" "rows: true class, columns: predicted class" out
expect_msg "...each class's figures" "precision    recall  f1-score   support" out
expect_msg "...and their averages" "weighted avg" out
expect_msg "...and the worst images" "the 3 images of highest loss" out

# A multi-label model: --confusion is no figure of it (exit 2), eval without it still works.
mkdir -p ml/images
"$py" - <<'PY'
from PIL import Image
rows = []
for i in range(24):
    Image.new("L", (28, 28), 40 + 8 * i).save(f"ml/images/m{i}.png")
    rows.append(f"m{i},{'dark' if i < 12 else 'light'}{' odd' if i % 2 else ''}")
open("ml/labels.csv", "w").write("image_name,tags\n" + "\n".join(rows) + "\n")
PY
ml=(--labels labels.csv --images-dir images --label-separator ' ')
expect_exit "a multi-label run trains" 0 frugal train --data ml "${ml[@]}" --model cnn --epochs 1 --batch-size 8 \
  --val-split 0 --workers 1 --run mlrun
expect_exit "eval --confusion on a multi-label model is a usage error" 2 frugal eval mlrun --data ml "${ml[@]}" \
  --confusion
expect_msg "...naming the option" "--confusion"
expect_msg "...saying what it found" "a multi-label model"
expect_exit "eval --worst too" 2 frugal eval mlrun --data ml "${ml[@]}" --worst 3
expect_exit "plain eval of it still works" 0 frugal eval mlrun --data ml "${ml[@]}" --json
finish

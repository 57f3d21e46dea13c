#!/usr/bin/env bash
# Defaults from the data (issue 42): with no --image-size, a model that takes any size trains at the
# data's own size when every sampled image is smaller than its default (resnet18 on 28 px images:
# 28 px, not an 8x upscale to 224), said in the model line and in config.json's "data"; a TorchScript
# module that does not take that size trains at its default, said; --image-size still decides.
source "$(dirname "$0")/lib/common.sh"
needs_commands frugal frugal-torch
needs_python PIL torch
keep_going
cd "$t"
make_two_class_zip small.zip 16
common=(--data small.zip --epochs 1 --batch-size 8 --device cpu)

expect_exit "resnet18 on 28 px images" 0 frugal train "${common[@]}" --model resnet18 --run r1
expect_msg "...trains at their size, said" "model: resnet18 at 28 px (--model; the images' own size"
check "config.json's data record says it" \
  '"$py" -c "import json,sys; d=json.load(open(\"r1/config.json\"))[\"data\"]; sys.exit(0 if \"own size\" in d[\"image_size\"] else 1)"'
expect_exit "--image-size decides" 0 frugal train "${common[@]}" --model resnet18 --image-size 40 --run r2
expect_msg "...40 px" "model: resnet18 at 40 px"

"$py" - <<'PY'
import torch
class Fixed(torch.nn.Module):  # a head that takes 224 px inputs only
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 2, 8, stride=8)
        self.fc = torch.nn.Linear(2 * 28 * 28, 2)
    def forward(self, x):
        return self.fc(torch.flatten(self.conv(x), 1))
torch.jit.trace(Fixed(), torch.zeros(1, 1, 224, 224)).save("fixed.pt")  # traced: a script needs a source file
PY
expect_exit "a module that takes 224 px only" 0 frugal train "${common[@]}" --model fixed.pt --run r3
expect_msg "...is tried at 28 px and trained at its default, said" \
  "model: fixed.pt at 224 px (--model; its default image size: it does not take 28 px images"
finish

#!/usr/bin/env python3
"""timm's efficientnet_b0 against torchvision's, for tests/weights/timm_names_test.cpp.

  timm_reference.py names DIR        writes DIR/timm.json and DIR/torchvision.json: [[name, shape], ...]
                                     of each library's efficientnet_b0 state dict, in order
  timm_reference.py logits MAP.json...
                                     each MAP.json: {timm name: torchvision name}. Loads a timm
                                     efficientnet_b0 (random weights, BatchNorm statistics made
                                     non-trivial) into torchvision's efficientnet_b0 through MAP with
                                     load_state_dict(strict=True) and prints, one line per MAP,
                                     "max|timm - torchvision| max|timm|" of the logits on random images.
No weights are downloaded.
"""
import json
import sys

import timm
import torch
import torchvision


def names(out):
    t = timm.create_model("efficientnet_b0", pretrained=False).state_dict()
    v = torchvision.models.efficientnet_b0(weights=None).state_dict()
    for name, sd in (("timm", t), ("torchvision", v)):
        with open(f"{out}/{name}.json", "w") as f:
            json.dump([[k, list(x.shape)] for k, x in sd.items()], f)


def logits(mapping_paths):
    torch.manual_seed(0)
    src = timm.create_model("efficientnet_b0", pretrained=False).eval()
    with torch.no_grad():  # random running statistics, so that a BatchNorm mapped to the wrong place shows
        for m in src.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
    x = torch.randn(2, 3, 96, 96)
    with torch.no_grad():
        a = src(x)
    for path in mapping_paths:
        with open(path) as f:
            mapping = json.load(f)
        dst = torchvision.models.efficientnet_b0(weights=None).eval()
        dst.load_state_dict({mapping[k]: v for k, v in src.state_dict().items()}, strict=True)
        with torch.no_grad():
            b = dst(x)
        print((a - b).abs().max().item(), a.abs().max().item())


if __name__ == "__main__":
    torch.set_num_threads(1)
    if sys.argv[1] == "names":
        names(sys.argv[2])
    else:
        logits(sys.argv[2:])

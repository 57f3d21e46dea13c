#!/usr/bin/env python3
"""The ops of real classification models' TorchScript graphs: where src/models/script_ops.cpp's
allowlist came from. Scripts and traces torchvision's and timm's models (every call inlined) and
prints each op kind with how many of the graphs use it and one that does; with --check, also lists
the ops the allowlist in script_ops.cpp lacks (none, when it is current).

    .venv/bin/python scripts/torchscript_ops.py [--check]
"""
import collections
import pathlib
import re
import sys

import torch

TORCHVISION = ["resnet18", "resnet50", "mobilenet_v3_small", "mobilenet_v2", "efficientnet_b0", "convnext_tiny",
               "densenet121", "regnet_y_400mf", "shufflenet_v2_x0_5", "squeezenet1_0", "vit_b_16", "mnasnet0_5",
               "alexnet", "vgg11", "googlenet"]
TIMM = ["resnet18", "resnet10t", "efficientnet_b0", "mobilenetv3_small_100", "vit_tiny_patch16_224", "convnext_atto",
        "regnetx_002"]


def kinds(block, out, where):
    for node in block.nodes():
        out[node.kind()].add(where)
        for inner in node.blocks():
            kinds(inner, out, where)


def collect(out, label, model, x):
    model.eval()
    try:
        kinds(torch.jit.script(model).inlined_graph, out, f"{label} script")
    except Exception as e:  # a model that does not script is traced only
        print(f"# {label}: does not script ({str(e).splitlines()[0][:80]})", file=sys.stderr)
    with torch.no_grad():
        kinds(torch.jit.trace(model, x, check_trace=False).inlined_graph, out, f"{label} trace")


def main():
    out = collections.defaultdict(set)
    x = torch.randn(1, 3, 224, 224)
    import torchvision.models as tvm
    for name in TORCHVISION:
        collect(out, f"torchvision {name}", getattr(tvm, name)(num_classes=10), x)
    import timm
    for name in TIMM:
        collect(out, f"timm {name}", timm.create_model(name, pretrained=False, num_classes=10), x)
    for op in sorted(out):
        print(op, len(out[op]), sorted(out[op])[0], sep="\t")
    if "--check" in sys.argv:
        source = pathlib.Path(__file__).resolve().parent.parent / "src/models/script_ops.cpp"
        allowed = set(re.findall(r'^    "([^"]+)",$', source.read_text(), re.M))
        missing = sorted(set(out) - allowed)
        print("not on the allowlist:", ", ".join(missing) or "none")
        sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()

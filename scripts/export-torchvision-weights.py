#!/usr/bin/env python3
"""Export torchvision's pretrained weights as safetensors for `frugal train --init FILE`.

Run on a machine with internet access (torchvision downloads the weights), then copy the file:

    python scripts/export-torchvision-weights.py resnet18 resnet18.safetensors
    python scripts/export-torchvision-weights.py efficientnet_b0 effb0.safetensors --weights IMAGENET1K_V1

frugal's models use torchvision's parameter and buffer names, so every tensor loads by name; a
classifier head with another number of classes is replaced by a fresh one (the log says so).
Needs: torch, torchvision, safetensors (pip install torch torchvision safetensors).
"""
import argparse

import torchvision
from safetensors.torch import save_file

NAMES = ["resnet18", "resnet50", "efficientnet_b0"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", choices=NAMES)
    p.add_argument("output", help="the .safetensors file to write")
    p.add_argument("--weights", default="DEFAULT", help="torchvision weights enum name (default: DEFAULT)")
    a = p.parse_args()
    model = torchvision.models.get_model(a.model, weights=a.weights).eval()
    tensors = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    save_file(tensors, a.output, metadata={"source": f"torchvision {torchvision.__version__} {a.model} {a.weights}"})
    print(f"wrote {a.output}: {len(tensors)} tensors")


if __name__ == "__main__":
    main()

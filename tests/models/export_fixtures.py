"""Writes torchvision parity fixtures for tests/models: for each model name given, random weights
(batch-norm running statistics randomized too) as NAME.safetensors and an input with the eval-mode
output as NAME.io.safetensors.  Usage: export_fixtures.py OUT_DIR SIZE NAME..."""
import sys

import torch
import torchvision
from safetensors.torch import save_file

out_dir, size, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
torch.manual_seed(0)
for name in names:
    model = getattr(torchvision.models, name)(weights=None, num_classes=10).eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
                m.num_batches_tracked.fill_(7)
        x = torch.randn(2, 3, size, size)
        y = model(x)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, f"{out_dir}/{name}.safetensors")
    save_file({"input": x, "output": y}, f"{out_dir}/{name}.io.safetensors")

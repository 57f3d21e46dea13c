"""Eager PyTorch reference for bench/train_step.sh: the same `cnn` as frugal's (src/models/cnn.cpp),
the same batch, precision (fp32), threads and optimizer (AdamW, decay on >1-D weights only).
Usage: train_step_ref.py BATCH STEPS [channels_last] [bf16]  -> {"images_per_s": ...}
Without the third argument the model runs as the recipe writes it (default memory format); with
it, in channels-last as frugal runs it, to separate the format's gain from the rest. With bf16, the
forward pass runs under CPU autocast to bfloat16 (as `frugal train --amp bf16`)."""
import json
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def stage(cin, cout, pool):
    layers = [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]
    return nn.Sequential(*layers, *([nn.MaxPool2d(2)] if pool else []))


class Cnn(nn.Module):
    def __init__(self, channels=1, classes=10):
        super().__init__()
        self.features = nn.Sequential(stage(channels, 32, True), stage(32, 64, True), stage(64, 128, False))
        self.fc1 = nn.Linear(128 * 7 * 7, 128)
        self.dropout = nn.Dropout(0.3)
        self.fc = nn.Linear(128, classes)

    def forward(self, x):
        x = self.features(x)
        if x.shape[-2:] != (7, 7):  # as frugal's forward: the identity pool is skipped at 28x28
            x = F.adaptive_avg_pool2d(x, (7, 7))
        x = x.flatten(1)
        return self.fc(self.dropout(F.relu(self.fc1(x))))


def main():
    batch, steps = int(sys.argv[1]), int(sys.argv[2])
    channels_last = "channels_last" in sys.argv[3:]
    bf16 = "bf16" in sys.argv[3:]
    torch.manual_seed(0)
    model = Cnn().train()
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    decay = [p for p in model.parameters() if p.dim() > 1]
    no_decay = [p for p in model.parameters() if p.dim() <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
    images = torch.randint(0, 256, (batch, 1, 28, 28), dtype=torch.uint8)
    labels = torch.randint(0, 10, (batch,))

    def step():
        opt.zero_grad(set_to_none=True)
        x = (images.float() / 255 - 0.5) / 0.5
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = F.cross_entropy(model(x), labels)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(3):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    secs = time.perf_counter() - t0
    print(json.dumps({"images_per_s": batch * steps / secs, "threads": torch.get_num_threads(), "bf16": bf16}))


main()

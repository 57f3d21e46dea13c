"""Eager PyTorch reference for bench/gpu_train_step.cpp: torchvision's model, the same batch
(uint8 on the GPU, normalised in the step), AMP precision, channels_last, AdamW (decay on >1-D
weights only), cross-entropy. Usage: gpu_train_ref.py MODEL BATCH IMAGE_SIZE STEPS AMP
(AMP: bf16, fp16 or off) -> {"images_per_s": ...}"""
import json
import sys
import time

import torch
import torch.nn.functional as F
import torchvision


def main():
    name, batch, size, steps, amp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    model = getattr(torchvision.models, name)(num_classes=10).to(dev).to(memory_format=torch.channels_last)
    decay = [p for p in model.parameters() if p.dim() > 1]
    no_decay = [p for p in model.parameters() if p.dim() <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(amp)
    scaler = torch.amp.GradScaler("cuda", enabled=amp == "fp16")
    x8 = torch.randint(0, 256, (batch, 3, size, size), dtype=torch.uint8, device=dev)
    y = torch.randint(0, 10, (batch,), device=dev)
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1)

    def step():
        opt.zero_grad(set_to_none=True)
        x = ((x8.float() / 255 - mean) / std).contiguous(memory_format=torch.channels_last)
        with torch.autocast("cuda", dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = F.cross_entropy(model(x).float(), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    secs = time.perf_counter() - t0
    print(json.dumps({"model": name, "batch": batch, "image_size": size, "amp": amp, "images_per_s": batch * steps / secs}))


if __name__ == "__main__":
    main()

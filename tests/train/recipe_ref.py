#!/usr/bin/env python3
"""The reference for frugal's --ema and --mixup/--cutmix: timm's ModelEmaV3 and Mixup.

  recipe_ref.py ema IN OUT     IN holds s0.NAME ... sT.NAME (a model's state after each optimizer
                               step, s0 the start) and metadata decay, steps; OUT gets ema.NAME,
                               timm's ModelEmaV3(use_warmup=True) updated with step=1..T.
  recipe_ref.py mix IN OUT     IN holds per case K: x.K, labels.K and metadata case.K = JSON
                               {lam, cutmix, cy, cx, smoothing, classes, multi_label}; OUT gets
                               x.K and y.K as timm's Mixup (mode batch) makes them, with its draw
                               replaced by the case's, and loss.K = SoftTargetCrossEntropy(logits.K, y.K).
"""
import json, sys
import numpy as np
import torch
from safetensors.torch import load_file, save_file
from safetensors import safe_open

BUFFERS = ("running_mean", "running_var", "num_batches_tracked")


def module_from(state):
    """An nn.Module whose state_dict has these names (parameters, or buffers by their names)."""
    root = torch.nn.Module()
    for name, t in state.items():
        *path, leaf = name.split(".")
        m = root
        for p in path:
            if not hasattr(m, p):
                m.add_module(p, torch.nn.Module())
            m = getattr(m, p)
        if leaf in BUFFERS:
            m.register_buffer(leaf, t.clone())
        else:
            m.register_parameter(leaf, torch.nn.Parameter(t.clone()))
    return root


def ema(src, dst):
    from timm.utils.model_ema import ModelEmaV3
    tensors = load_file(src)
    with safe_open(src, "pt") as f:
        meta = f.metadata()
    steps, decay = int(meta["steps"]), float(meta["decay"])
    state = lambda t: {k[len(f"s{t}."):]: v for k, v in tensors.items() if k.startswith(f"s{t}.")}
    model = module_from(state(0))
    avg = ModelEmaV3(model, decay=decay, use_warmup=True)
    for t in range(1, steps + 1):
        model.load_state_dict(state(t))
        avg.update(model, step=t)
    save_file({f"ema.{k}": v.contiguous() for k, v in avg.module.state_dict().items()}, dst)


def mix(src, dst):
    from timm.data.mixup import Mixup
    from timm.loss import SoftTargetCrossEntropy
    tensors = load_file(src)
    with safe_open(src, "pt") as f:
        meta = f.metadata()
    out = {}
    for key, text in meta.items():
        if not key.startswith("case."):
            continue
        k = key[len("case."):]
        c = json.loads(text)
        m = Mixup(mixup_alpha=1.0, cutmix_alpha=1.0, label_smoothing=c["smoothing"], num_classes=c["classes"],
                  multi_label=c["multi_label"])
        m._params_per_batch = lambda c=c: (c["lam"], c["cutmix"])
        centre = iter([c["cy"], c["cx"]])
        real_randint = np.random.randint
        np.random.randint = lambda lo, hi, size=None: next(centre)
        try:
            x, y = m(tensors[f"x.{k}"].clone(), tensors[f"labels.{k}"])
        finally:
            np.random.randint = real_randint
        out[f"x.{k}"] = x.contiguous()
        out[f"y.{k}"] = y.contiguous()
        out[f"loss.{k}"] = SoftTargetCrossEntropy()(tensors[f"logits.{k}"], y).reshape(1)
    save_file(out, dst)


def groups(src, dst):
    tensors = load_file(src)
    with safe_open(src, "pt") as f:
        meta = f.metadata()
    lrs, scale, head, wd = json.loads(meta["lrs"]), float(meta["scale"]), meta["head"], float(meta["weight_decay"])
    params = {k[2:]: torch.nn.Parameter(v.clone()) for k, v in tensors.items() if k.startswith("p.")}
    in_head = lambda n: n == head or n.startswith(head + ".")
    spec = []  # (params, weight decay, scale), in frugal's order
    for backbone in (False, True):
        for decayed in (True, False):
            ps = [p for n, p in params.items() if (not in_head(n)) == backbone and (p.dim() > 1) == decayed]
            if ps:
                spec.append((ps, wd if decayed else 0.0, scale if backbone else 1.0))
    if meta["kind"] == "adamw":
        opt = torch.optim.AdamW([{"params": p, "weight_decay": w, "lr": lrs[0] * s} for p, w, s in spec], lr=lrs[0])
    else:
        opt = torch.optim.SGD([{"params": p, "weight_decay": w, "lr": lrs[0] * s} for p, w, s in spec], lr=lrs[0],
                              momentum=0.9, nesterov=True)
    for t, lr in enumerate(lrs):
        for group, (_, _, s) in zip(opt.param_groups, spec):
            group["lr"] = lr * s
        for n, p in params.items():
            p.grad = tensors[f"g.{t}.{n}"].clone()
        opt.step()
    save_file({f"p.{n}": p.detach().contiguous() for n, p in params.items()}, dst)


if __name__ == "__main__":
    {"ema": ema, "mix": mix, "groups": groups}[sys.argv[1]](sys.argv[2], sys.argv[3])

"""A user's own loop: a model not in frugal's zoo, AdamW, a scheduler, a GradScaler, dropout and
draws from Python's and NumPy's generators, fed by frugal.Loader and saved by frugal.Checkpointer.

    python train_loop.py DATA RUN OUT --steps N [--save-every K] [--deadline 6s] [--sleep S]

Prints "step N" after each step (flushed); at the end writes OUT (torch.save): the weights, the
optimizer's state and the next batch, for a test to compare with an uninterrupted run.
"""
import argparse
import random
import sys
import time

import numpy as np
import torch
import torch.nn as nn

import frugal


class Net(nn.Module):  # not in the zoo
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                  nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Dropout(0.2))
        self.head = nn.Linear(128, 3)

    def forward(self, x):
        return self.head(self.body(x))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("data")
    p.add_argument("run")
    p.add_argument("out")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--save-every", type=int, default=2)
    p.add_argument("--deadline")
    p.add_argument("--sleep", type=float, default=0)
    a = p.parse_args()

    torch.manual_seed(0)
    random.seed(0)
    np.random.seed(0)
    model = Net()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    scaler = torch.amp.GradScaler("cpu", enabled=True, init_scale=2.0**8)
    loader = frugal.Loader(a.data, batch_size=8, image_size=24, seed=7, workers=2, normalize=True)
    with frugal.Checkpointer(a.run, keep_last=2, deadline=a.deadline) as ckpt:
        started = time.monotonic()  # the deadline counts from here
        step = ckpt.restore(model, opt, scheduler=sched, scaler=scaler, loader=loader) or 0
        while step < a.steps:
            for x, y in loader:
                noise = random.random() * 1e-3 + float(np.random.rand()) * 1e-3
                loss = nn.functional.cross_entropy(model(x), y) + noise
                opt.zero_grad()
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
                sched.step()
                step += 1
                print(f"step {step}", flush=True)
                if a.sleep:
                    time.sleep(a.sleep)
                saved = step % a.save_every == 0 or step == a.steps
                if saved:
                    ckpt.save(step, model, opt, scheduler=sched, scaler=scaler, loader=loader,
                              metrics={"loss": loss})
                if ckpt.should_stop():
                    if not saved:
                        ckpt.save(step, model, opt, scheduler=sched, scaler=scaler, loader=loader)
                    ckpt.wait()
                    print(f"stopped saved {time.monotonic() - started:.2f} s after the start", file=sys.stderr)
                    sys.exit(frugal.EXIT_RESUMABLE)
                if step == a.steps:
                    break
        ckpt.wait()
    x, y = next(iter(loader))
    torch.save({"weights": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                "scaler": scaler.state_dict(), "next": (x, y), "random": random.random(),
                "numpy": float(np.random.rand()), "torch": torch.rand(1)}, a.out)


if __name__ == "__main__":
    main()

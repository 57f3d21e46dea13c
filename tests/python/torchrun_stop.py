"""A data-parallel loop's stop: every rank runs a Checkpointer and asks should_stop() each step
after a Gloo process group is up; the test signals rank 1 alone. Each rank writes the step it
stopped at to OUT.<rank>.json, and its pid to OUT.<rank>.pid once it is stepping."""
import json
import os
import sys
import time

import torch
import torch.distributed as dist

import frugal

run, out = sys.argv[1], sys.argv[2]
dist.init_process_group("gloo")
rank = dist.get_rank()
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
with frugal.Checkpointer(run) as ckpt:
    step = ckpt.restore(model, opt) or 0
    with open(f"{out}.{rank}.pid", "w") as f:
        f.write(str(os.getpid()))
    code = 0
    while step < 2000:
        model(torch.randn(8, 4)).sum().backward()
        opt.step()
        step += 1
        time.sleep(0.02)
        if ckpt.should_stop():
            ckpt.save(step, model, opt)
            ckpt.wait()
            code = frugal.EXIT_RESUMABLE
            break
with open(f"{out}.{rank}.json", "w") as f:
    json.dump({"rank": rank, "step": step, "code": code}, f)
dist.destroy_process_group()
sys.exit(code)

#!/usr/bin/env python3
"""The reference for frugal's LossScaler: torch.amp.GradScaler on a fixed sequence of gradients.

Writes OUT (safetensors) with the inputs and what GradScaler did at every step, for
tests/train/loss_scaler_ref_test.cpp to replay through frugal::LossScaler and compare:

  g.T.I           F32   the unscaled ("true") gradient of parameter I at step T (the input)
  p0.I            F32   parameter I before step 0
  scale_used      F32   [T] the scale the step's gradients were multiplied by
  skipped         U8    [T] 1 when GradScaler skipped optimizer.step() (inf/NaN found)
  unscaled.T.I    F32   parameter I's .grad after unscaling at step T
  param.T.I       F32   parameter I after step T (SGD, lr 0.125; unchanged when skipped)
  scale_after     F32   [T] the scale after update()
  tracker_after   I32   [T] the growth tracker after update()

metadata: options (init_scale, growth_factor, backoff_factor, growth_interval, lr), "steps",
"params", and "restore_after": after that step the scaler is saved with state_dict() and the run
goes on with a new GradScaler made by load_state_dict() (a resume).
"""
import json, sys
import numpy as np
import torch
from safetensors.torch import save_file

OPTIONS = {"init_scale": 1024.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3}
LR = 0.125
STEPS = 40
RESTORE_AFTER = 19
SHAPES = [(4, 3), (5,), (2, 2, 2)]

rng = np.random.default_rng(14)
grads = []
for t in range(STEPS):
    # Magnitudes over many binades, so unscaling is not exact by luck.
    g = [(rng.standard_normal(s) * 10.0 ** rng.uniform(-6, 2, s)).astype(np.float32) for s in SHAPES]
    grads.append(g)
grads[5][0][1, 2] = np.inf                   # an inf gradient
grads[9][1][3] = np.nan                      # a NaN
grads[10][2][1, 0, 1] = -np.inf              # two skips in a row
grads[17][0][0, 0] = np.float32(3e38)        # finite, but inf once scaled
grads[23][2][1, 1, 1] = np.nan               # NaN in the last parameter only
grads[31][1][0] = np.float32(1e-30)          # tiny: unscaled to a subnormal-ish value

params = [torch.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True) for s in SHAPES]
out = {f"p0.{i}": p.detach().clone() for i, p in enumerate(params)}
opt = torch.optim.SGD(params, lr=LR)
scaler = torch.amp.GradScaler("cpu", **OPTIONS)

scale_used, skipped, scale_after, tracker_after = [], [], [], []
for t in range(STEPS):
    opt.zero_grad(set_to_none=True)
    for i, p in enumerate(params):
        p.grad = scaler.scale(torch.from_numpy(grads[t][i].copy()))
        out[f"g.{t}.{i}"] = torch.from_numpy(grads[t][i].copy())
    scale_used.append(scaler._scale.item())
    before = [p.detach().clone() for p in params]
    scaler.unscale_(opt)
    found = sum(v.item() for v in scaler._per_optimizer_states[id(opt)]["found_inf_per_device"].values())
    scaler.step(opt)
    scaler.update()
    stepped = any(not torch.equal(b, p.detach()) for b, p in zip(before, params))
    assert stepped == (found == 0), (t, stepped, found)
    skipped.append(int(found != 0))
    for i, p in enumerate(params):
        out[f"unscaled.{t}.{i}"] = p.grad.detach().clone()
        out[f"param.{t}.{i}"] = p.detach().clone()
    scale_after.append(scaler._scale.item())
    tracker_after.append(scaler._get_growth_tracker())
    if t == RESTORE_AFTER:
        state = scaler.state_dict()
        # A fresh scaler with another init_scale: the restored state must win over it.
        scaler = torch.amp.GradScaler("cpu", init_scale=7.0, growth_factor=OPTIONS["growth_factor"],
                                      backoff_factor=OPTIONS["backoff_factor"],
                                      growth_interval=OPTIONS["growth_interval"])
        scaler.load_state_dict(state)

# The sequence must exercise what it claims: skips of each kind, growth, a restore mid-interval.
assert sum(skipped) == 5, skipped
assert any(b > a for a, b in zip(scale_used, scale_after)), "no growth"
assert tracker_after[RESTORE_AFTER] not in (0,), tracker_after
assert any(b > a for a, b in zip(scale_used[RESTORE_AFTER + 1:], scale_after[RESTORE_AFTER + 1:]))

out["scale_used"] = torch.tensor(scale_used, dtype=torch.float32)
out["skipped"] = torch.tensor(skipped, dtype=torch.uint8)
out["scale_after"] = torch.tensor(scale_after, dtype=torch.float32)
out["tracker_after"] = torch.tensor(tracker_after, dtype=torch.int32)
meta = {k: json.dumps(v) for k, v in OPTIONS.items()}
meta.update(lr=json.dumps(LR), steps=str(STEPS), params=str(len(SHAPES)), restore_after=str(RESTORE_AFTER),
            torch=torch.__version__)
save_file(out, sys.argv[1], metadata=meta)
print(f"GradScaler trace: {STEPS} steps, skipped {[t for t, s in enumerate(skipped) if s]}, "
      f"scale {scale_used[0]:g} -> {scale_after[-1]:g}, restored after step {RESTORE_AFTER} "
      f"(tracker {tracker_after[RESTORE_AFTER]})")

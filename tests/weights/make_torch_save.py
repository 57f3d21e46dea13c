#!/usr/bin/env python3
"""Writes torch.save files and, for each, what Python's torch.load reads from it: the reference
tests/weights/torch_save_test.cpp holds frugal's reader to.

Usage: make_torch_save.py DIR
For each case NAME: DIR/NAME.pth (torch.save) and DIR/NAME.json:
  {"found_under": "model", "prefix_removed": "module.",
   "tensors": [{"name", "dtype", "shape", "strides", "offset", "sha256"}]}
where the tensors are torch.load's (weights_only=True), found and unwrapped as the case says, and
sha256 is that of the tensor's elements in C order. Cases whose file frugal must refuse are written with
DIR/NAME.refused holding the words the message must contain. The evil cases carry live payloads:
each is checked here to run its code under torch.load(weights_only=False) (it creates "pwned"
in the folder it is loaded from), so that the C++ test's "nothing was run" is about a real attack.
"""
import argparse
import collections
import hashlib
import json
import os
import sys
import tempfile

import torch
import torchvision

DTYPES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
          torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
          torch.uint8: "U8", torch.bool: "BOOL"}


def reference(out, name, path_keys, prefix, weights_only=True):
    loaded = torch.load(os.path.join(out, name + ".pth"), weights_only=weights_only)
    sd = loaded
    for k in path_keys:
        sd = sd[k]
    tensors = []
    for k, t in sd.items():
        assert k.startswith(prefix), (name, k)
        data = t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        tensors.append({"name": k[len(prefix):], "dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "strides": list(t.stride()), "offset": t.storage_offset(),
                        "sha256": hashlib.sha256(data).hexdigest()})
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump({"found_under": ".".join(path_keys), "prefix_removed": prefix, "tensors": tensors}, f)


def save(out, name, obj, path_keys=(), prefix="", **kwargs):
    torch.save(obj, os.path.join(out, name + ".pth"), **kwargs)
    # torch.load's weights_only unpickler knows protocol 2's opcodes only (no FRAME); these files
    # are the test's own, so its full unpickler reads them.
    reference(out, name, list(path_keys), prefix, weights_only=kwargs.get("pickle_protocol", 2) == 2)


def refused(out, name, words):
    with open(os.path.join(out, name + ".refused"), "w") as f:
        f.write(words)


class Payload:
    """Pickles as a call of `fn` with `args`: what a malicious checkpoint holds."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


def evil(out, name, fn, args, words):
    """The payload creates the file "pwned" in the folder it is loaded from."""
    path = os.path.abspath(os.path.join(out, name + ".pth"))
    torch.save({"state_dict": {"w": torch.ones(2)}, "extra": Payload(fn, *args)}, path)
    with tempfile.TemporaryDirectory() as cwd:
        here = os.getcwd()
        os.chdir(cwd)
        try:
            torch.load(path, weights_only=False)
        except Exception:
            pass
        os.chdir(here)
        if not os.path.exists(os.path.join(cwd, "pwned")):
            sys.exit(f"{name}: the payload did not run under torch.load(weights_only=False)")
    refused(out, name, words)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    out = ap.parse_args().out
    torch.set_num_threads(1)  # small tensors; threads only contend on a busy machine
    torch.manual_seed(0)

    # The files are kept in the build tree: resnet18 twice (47 MB each), efficientnet_b0 (21 MB) for
    # the other forms.
    r18 = torchvision.models.resnet18(weights=None).state_dict()  # an OrderedDict with _metadata
    save(out, "resnet18_ordered", r18)
    save(out, "resnet18_dict", dict(r18))
    b0 = torchvision.models.efficientnet_b0(weights=None).state_dict()
    save(out, "efficientnet_b0", b0)
    save(out, "nested_model", {"model": dict(b0), "epoch": 3, "optimizer": {"state": {}, "param_groups": [{"lr": 0.1}]}},
         ["model"])
    save(out, "nested_state_dict", {"epoch": 90, "arch": "efficientnet_b0", "state_dict": b0,
                                    "best_acc1": torch.tensor(69.7)}, ["state_dict"])
    ddp = collections.OrderedDict(("module." + k, v) for k, v in b0.items())
    save(out, "ddp_prefixed", ddp, prefix="module.")
    save(out, "nested_ddp", {"model_state_dict": ddp, "epoch": 1}, ["model_state_dict"], "module.")
    save(out, "compiled_ddp", {"module._orig_mod." + k: v for k, v in list(r18.items())[:5]},
         prefix="module._orig_mod.")

    base = torch.arange(48, dtype=torch.float32).reshape(6, 8)
    lin = torch.nn.Linear(3, 2)
    tied = torch.randn(4, 3)
    save(out, "dtypes_and_views", collections.OrderedDict([
        ("f16", torch.randn(3, 5).half()),
        ("bf16", torch.randn(7).bfloat16()),
        ("f64", torch.randn(2, 2, dtype=torch.float64)),
        ("i64", torch.arange(-5, 5, dtype=torch.int64)),
        ("i32", torch.tensor([1, -2, 3], dtype=torch.int32)),
        ("i16", torch.tensor([[-300, 2]], dtype=torch.int16)),
        ("i8", torch.tensor([-7], dtype=torch.int8)),
        ("u8", torch.tensor([0, 255, 7], dtype=torch.uint8)),
        ("mask", torch.tensor([True, False, True])),
        ("num_batches_tracked", torch.tensor(12345, dtype=torch.int64)),  # 0-dim
        ("scalar_f32", torch.tensor(2.5)),
        ("columns", base[:, 2:5]),        # strided view of a shared storage, offset 2
        ("rows", base[3:]),               # contiguous, offset 24
        ("transposed", base.t()),         # strides (1, 8)
        ("every_other", base[::2, ::3]),  # steps
        ("empty", torch.zeros(0, 3)),
        ("param", lin.weight),            # a Parameter: _rebuild_parameter
        ("tied_a", tied),
        ("tied_b", tied),                 # the same tensor again (memo)
    ]))
    save(out, "protocol4", {"a": torch.randn(3), "b": torch.arange(4)}, pickle_protocol=4)
    save(out, "protocol5", {"a": torch.randn(3)}, pickle_protocol=5)
    torch.serialization.set_crc32_options(False)
    save(out, "no_crc", {"a": torch.randn(5), "b": torch.ones(2, 2)})
    torch.serialization.set_crc32_options(True)

    torch.save({"w": torch.ones(2)}, os.path.join(out, "legacy.pth"), _use_new_zipfile_serialization=False)
    refused(out, "legacy", "legacy format")
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), os.path.join(out, "torchscript.pth"))
    refused(out, "torchscript", "TorchScript")
    torch.save(torch.nn.Linear(2, 2), os.path.join(out, "whole_module.pth"))  # the module, not its state dict
    refused(out, "whole_module", "refusing to load torch.nn.modules.linear.Linear: it could run code")
    torch.save({"w": torch.ones(2, dtype=torch.uint16)}, os.path.join(out, "uint16.pth"))
    refused(out, "uint16", "uint16 tensors")
    torch.save({"epoch": 3, "best": 0.5}, os.path.join(out, "no_tensors.pth"))
    refused(out, "no_tensors", "'epoch' holds the int 3")
    torch.save({"model": {"w": torch.ones(2)}, "args": argparse.Namespace(lr=0.1)}, os.path.join(out, "with_namespace.pth"))
    refused(out, "with_namespace", "refusing to load argparse.Namespace")

    evil(out, "evil_os_system", os.system, ["touch pwned"], "refusing to load posix.system")
    evil(out, "evil_eval", eval, ["open('pwned', 'w')"], "refusing to load __builtin__.eval")
    evil(out, "evil_exec", exec, ["open('pwned', 'w')"], "refusing to load __builtin__.exec")
    torch.save({"w": torch.ones(2)}, os.path.join(out, "inner.pth"))
    torch.save({"w": torch.ones(2), "x": Payload(torch.load, os.path.join(out, "inner.pth"))},
               os.path.join(out, "evil_torch_load.pth"))
    refused(out, "evil_torch_load", "refusing to load torch.serialization.load")


if __name__ == "__main__":
    main()

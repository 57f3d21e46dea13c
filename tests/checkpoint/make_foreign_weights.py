"""Weights as other tools write them, for tests/checkpoint/weights_file_test.cpp: torchvision's
resnet18 as safetensors and as torch.save files (plain, nested under "state_dict" with DDP's
"module." prefix, the legacy format), timm's efficientnet_b0 as safetensors and torch.save, and
timm's logits on a fixed input. Usage: make_foreign_weights.py OUT_DIR (made if absent)."""
import os
import collections, sys, torch, torchvision, timm
from safetensors.torch import save_file
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
torch.manual_seed(3)
sd = torchvision.models.resnet18(weights=None).state_dict()
save_file({k: v.contiguous() for k, v in sd.items()}, f"{d}/r18.safetensors")
torch.save(sd, f"{d}/r18_plain.pth")
torch.save({"epoch": 3, "state_dict": collections.OrderedDict(("module." + k, v) for k, v in sd.items())},
           f"{d}/r18_nested_ddp.pth")
torch.save(sd, f"{d}/r18_legacy.pth", _use_new_zipfile_serialization=False)
m = timm.create_model("efficientnet_b0", pretrained=False).eval()
save_file({k: v.contiguous() for k, v in m.state_dict().items()}, f"{d}/effnet_timm.safetensors")
torch.save(m.state_dict(), f"{d}/effnet_timm.pth")
x = torch.randn(2, 3, 64, 64)
with torch.no_grad():
    save_file({"x": x, "logits": m(x)}, f"{d}/effnet_logits.safetensors")

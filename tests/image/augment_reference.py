"""torchvision.transforms.v2's augmentations on fixed images, for tests/image/augment_test.cpp.

Writes into OUT_DIR:
  <image>.raw              the input, (H, W, C) uint8, and its size in manifest.txt
  ops/<n>.raw              each op of TrivialAugmentWide and RandAugment at each magnitude bin and
                           sign, as the policies apply them (_apply_image_or_video_transform with
                           their default nearest interpolation and fill)
  manifest.txt             "image W H C" lines, then "op POLICY IMAGE OP BIN SIGN MAGNITUDE FILE" lines
  tables.txt               "POLICY OP W H BIN MAGNITUDE" lines: the magnitude tables as torch computes them
  erasing.txt              "W H draws" then RandomErasing.make_params statistics (see below)
  erased.raw               "rgb" erased (value 0) at x 7, y 5, 20 x 10
Usage: augment_reference.py OUT_DIR
"""
import os
import sys

import numpy as np
import torch
from torchvision.transforms import v2
from torchvision.transforms.v2 import InterpolationMode


def images():
    rng = np.random.default_rng(45)
    out = {}
    # A smooth scene with edges and noise (what photos are), not square: the rotation takes the
    # affine path; and a square one where +-90 degrees take torch.rot90.
    for name, (w, h) in {"rgb": (48, 40), "square": (32, 32)}.items():
        yy, xx = np.mgrid[0:h, 0:w]
        img = np.stack([xx * 255 / w, yy * 255 / h, (xx + yy) * 127 / (w + h) + 60], axis=-1)
        img[(xx - w / 3) ** 2 + (yy - h / 2) ** 2 < (h / 4) ** 2] = (220, 40, 30)
        img += rng.normal(0, 12, img.shape)
        out[name] = np.clip(img, 0, 255).astype(np.uint8)
    g = rng.normal(110, 45, (28, 28, 1))
    g[8:20, 10:14] = 250
    out["gray"] = np.clip(g, 0, 255).astype(np.uint8)
    # Few levels: equalize's and autocontrast's edge cases (a flat channel, a two-level one).
    few = np.zeros((16, 24, 3), np.uint8)
    few[..., 0] = 77
    few[:, 12:, 1] = 200
    few[..., 2] = rng.integers(0, 4, (16, 24)) * 60
    out["few"] = few
    return out


def main(out_dir):
    os.makedirs(os.path.join(out_dir, "ops"), exist_ok=True)
    manifest, tables = [], []
    policies = {"trivial": v2.TrivialAugmentWide(), "randaugment": v2.RandAugment()}
    imgs = images()
    for name, img in imgs.items():
        img.tofile(os.path.join(out_dir, name + ".raw"))
        manifest.append(f"image {name} {img.shape[1]} {img.shape[0]} {img.shape[2]}")
    n = 0
    for pname, policy in policies.items():
        for name, img in imgs.items():
            t = torch.from_numpy(img).permute(2, 0, 1).contiguous()
            h, w = img.shape[:2]
            for op, (fn, signed) in policy._AUGMENTATION_SPACE.items():
                mags = fn(policy.num_magnitude_bins, h, w)
                for b in range(policy.num_magnitude_bins) if mags is not None else [-1]:
                    for sign in ([1, -1] if signed else [1]):
                        m = 0.0 if mags is None else float(mags[b]) * sign
                        if mags is not None and sign == 1:
                            tables.append(f"{pname} {op} {w} {h} {b} {float(mags[b])!r}")
                        r = policy._apply_image_or_video_transform(
                            t, op, m, interpolation=InterpolationMode.NEAREST, fill=policy._fill)
                        r.permute(1, 2, 0).contiguous().numpy().tofile(os.path.join(out_dir, "ops", f"{n}.raw"))
                        manifest.append(f"op {pname} {name} {op} {b} {sign} {m!r} {n}")
                        n += 1
    with open(os.path.join(out_dir, "manifest.txt"), "w") as f:
        f.write("\n".join(manifest) + "\n")
    with open(os.path.join(out_dir, "tables.txt"), "w") as f:
        f.write("\n".join(tables) + "\n")
    erasing_stats(out_dir)
    # The erase itself, given a box: v2.functional.erase with value 0 on "rgb" at x 7, y 5, 20 x 10.
    t = torch.from_numpy(imgs["rgb"]).permute(2, 0, 1).contiguous()
    e = v2.functional.erase(t, i=5, j=7, h=10, w=20, v=torch.tensor([0.0])[:, None, None])
    e.permute(1, 2, 0).contiguous().numpy().tofile(os.path.join(out_dir, "erased.raw"))


# RandomErasing's box over many draws, per image size: the share of draws that erase nothing, and
# for those that erase: mean and standard deviation of h/H, w/W, area fraction, and of the centre's
# x/W and y/H. One line per size: "W H draws none mean_h sd_h mean_w sd_w mean_a sd_a mean_cx mean_cy".
def erasing_stats(out_dir):
    torch.manual_seed(0)
    lines = []
    for w, h in [(32, 32), (224, 224), (64, 16), (8, 8)]:
        e = v2.RandomErasing(p=1.0, value=0)
        flat = [torch.zeros(3, h, w, dtype=torch.uint8)]
        draws, rows = 20000, []
        none = 0
        for _ in range(draws):
            p = e.make_params(flat)
            if p["v"] is None:
                none += 1
                continue
            rows.append((p["h"] / h, p["w"] / w, p["h"] * p["w"] / (h * w), (p["j"] + p["w"] / 2) / w,
                         (p["i"] + p["h"] / 2) / h))
        a = np.array(rows)
        stats = [none / draws, a[:, 0].mean(), a[:, 0].std(), a[:, 1].mean(), a[:, 1].std(), a[:, 2].mean(),
                 a[:, 2].std(), a[:, 3].mean(), a[:, 4].mean()]
        lines.append(f"{w} {h} {draws} " + " ".join(repr(float(s)) for s in stats))
    with open(os.path.join(out_dir, "erasing.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])

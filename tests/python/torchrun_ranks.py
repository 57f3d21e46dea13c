"""Each rank torchrun starts reads its share of two epochs with frugal.Loader (rank and world size
from torchrun's environment) and writes the sample ids it saw, per epoch, to OUT.<rank>.json."""
import json
import sys

import frugal
from conftest import sample_ids

data, out = sys.argv[1], sys.argv[2]
loader = frugal.Loader(data, batch_size=8, image_size=24, seed=2, train=True)
epochs = []
for _ in range(2):
    epochs.append([i for x, _ in loader for i in sample_ids(x)])
with open(f"{out}.{loader.rank}.json", "w") as f:
    json.dump({"rank": loader.rank, "world": loader.world_size, "batches": len(loader), "epochs": epochs}, f)

#!/usr/bin/env python3
"""A delta checkpoint reader written from docs/formats.md alone ("Checkpoint file", "Delta
checkpoint"), as an independent check of frugal's codec: numpy for the bits, the zstd command for
decompression. Not from the C++.

    delta_reader.py DELTA FULL [--expect-modes same,xor,raw]

decodes DELTA (against the base its metadata names, in the same folder) and compares every tensor
with FULL, the same checkpoint saved whole: names in order, dtype, shape and bytes. Exit 0 when
all are equal, 1 otherwise. Not checked: the XXH3 checksums (no xxhash in the .venv).
"""
import json, subprocess, sys
from pathlib import Path
import numpy as np

ELEMENT_BYTES = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


def read_safetensors(path):
    """-> (metadata, [(name, dtype, shape, bytes)] in data-offset order)."""
    data = Path(path).read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    payload = data[8 + n:]
    metadata = header.pop("__metadata__", {})
    tensors = []
    for name, t in header.items():
        begin, end = t["data_offsets"]
        count = int(np.prod(t["shape"], dtype=np.int64))
        assert end - begin == count * ELEMENT_BYTES[t["dtype"]], (path, name)
        tensors.append((name, t["dtype"], list(t["shape"]), payload[begin:end], begin))
    assert sum(len(t[3]) for t in tensors) == len(payload), f"{path}: payload not fully indexed"
    tensors.sort(key=lambda t: t[4])
    return metadata, [t[:4] for t in tensors]


def zstd_decompress(b):
    return subprocess.run(["zstd", "-d", "-c", "-q"], input=b, stdout=subprocess.PIPE, check=True).stdout


def unshuffle(b, k, n):
    # formats.md: output byte j*n + i is input byte i*k + j.
    shuffled = np.frombuffer(b, dtype=np.uint8)
    assert shuffled.size == k * n, (shuffled.size, k, n)
    return shuffled.reshape(k, n).T.reshape(-1)


def decode_delta(path):
    path = Path(path)
    meta, stored = read_safetensors(path)
    assert meta["format"] == "frugal-checkpoint" and meta["kind"] == "delta", (meta.get("format"), meta.get("kind"))
    base_meta, base_tensors = read_safetensors(path.parent / meta["base"])
    assert base_meta["checksum"] == meta["base_checksum"], "the base changed"
    base = {name: (dtype, shape, b) for name, dtype, shape, b in base_tensors}
    stored = {name: b for name, _, _, b in stored}
    out, modes = [], {}
    for name, dtype, shape, mode in json.loads(meta["delta_index"]):
        k, n = ELEMENT_BYTES[dtype], int(np.prod(shape, dtype=np.int64))
        if mode == "same":
            bdtype, bshape, bits = base[name]
            assert (bdtype, bshape) == (dtype, list(shape)), name
        elif mode == "xor":
            bdtype, bshape, bbits = base[name]
            assert (bdtype, bshape) == (dtype, list(shape)), name
            x = unshuffle(zstd_decompress(stored["delta:" + name]), k, n)
            bits = (x ^ np.frombuffer(bbits, dtype=np.uint8)).tobytes()
        elif mode == "raw":
            bits = unshuffle(zstd_decompress(stored["delta:" + name]), k, n).tobytes()
        else:
            raise ValueError(f"{name}: unknown mode {mode}")
        modes[mode] = modes.get(mode, 0) + 1
        out.append((name, dtype, list(shape), bits))
    return out, modes


def main():
    delta, full = sys.argv[1], sys.argv[2]
    expect = sys.argv[4].split(",") if len(sys.argv) > 4 and sys.argv[3] == "--expect-modes" else []
    decoded, modes = decode_delta(delta)
    _, whole = read_safetensors(full)
    problems = []
    if [t[0] for t in decoded] != [t[0] for t in whole]:
        problems.append(f"names differ: {[t[0] for t in decoded]} vs {[t[0] for t in whole]}")
    whole = {t[0]: t for t in whole}
    for name, dtype, shape, bits in decoded:
        w = whole.get(name)
        if w is None or (dtype, shape, bits) != (w[1], w[2], w[3]):
            problems.append(f"{name}: decoded {dtype}{shape} differs from the full checkpoint's")
    missing = [m for m in expect if m not in modes]
    if missing:
        problems.append(f"modes not exercised: {missing}")
    print(f"delta reader: {len(decoded)} tensors decoded from {Path(delta).name} (modes {modes}), "
          f"{len(problems)} problem(s)")
    for p in problems:
        print("  " + p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()

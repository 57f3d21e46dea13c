#!/usr/bin/env bash
# The readers behind DATA against the zip reader as baseline, in one run, each printed as one JSON
# line (issue 28 targets in brackets):
#   open_100k_*   opening 100,000 members: the zip (central directory) [baseline]; the tar with no
#                 cache (every header read: its page cache warm, then evicted with
#                 posix_fadvise(DONTNEED) for a cold first open), writing its index cache, and from
#                 the cache [< 1 s]; a folder of 100,000 files (listing and stat); a WebDataset set
#                 of 10 shards of 10,000 samples (.jpg + .cls), opened and grouped
#   random_read_* 50,000 random single-member reads by index from the zip (stored, CRC-checked),
#                 the tar and the folder: the same members in the same order
# Wall-clock and CPU seconds are both reported: on a shared machine the CPU figures are the steadier.
# Measured on the development machine (2 shared cores, a virtual disk whose host caches it, so
# "cold" is kinder than a network disk), 100,000 members of 0.2-2 kB:
#   zip open 0.062 s [baseline]; tar: first open 0.35 s warm, 0.77 s cold, 0.26 s writing the cache;
#   from the cache 0.081 s warm (1.3x the zip), 0.49 s cold; cache file 5.1 MB (51 B a member);
#   folder of 100,000 files 0.83 s; 10 shards of 10,000 samples: first open 0.48 s, cached 0.21 s,
#   grouping (reading 100,000 .cls members) 0.26 s; 50,000 random reads: tar 0.93x the zip's time
#   (no CRC to compute), folder 6.7x (14 us a read: open, fstat, pread, fstat, close; a JPEG's
#   decode takes about 1 ms).
# Builds nothing: expects FRUGAL_BIN (default build/bin) with archive_read_bench.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
FRUGAL_BIN=${FRUGAL_BIN:-$HERE/../build/bin}
PY=${FRUGAL_PYTHON:-$HERE/../.venv/bin/python}
[ -x "$PY" ] || PY=python3
[ -x "$FRUGAL_BIN/archive_read_bench" ] || { echo "bench/readers.sh: $FRUGAL_BIN/archive_read_bench not built (build it, or set FRUGAL_BIN)" >&2; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/frugal-bench-readers.XXXXXX"); trap 'rm -rf "$W"' EXIT

"$PY" - "$W" "$FRUGAL_BIN/archive_read_bench" <<'PY'
import array, io, json, os, random, subprocess, sys, tarfile, zipfile
w, reader = sys.argv[1], sys.argv[2]
n = 100000
rng = random.Random(1)
payloads = [rng.randbytes(rng.randrange(200, 2000)) for _ in range(1000)]
names = ["class%02d/img%06d.jpg" % (i % 10, i) for i in range(n)]

def run(*args):
    return json.loads(subprocess.run([reader, *args], check=True, capture_output=True, text=True).stdout)

def evict(path):
    """Drops `path`'s pages from the page cache (clean pages; no root needed)."""
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)

def best(*args, runs=3):
    rows = [run(*args) for _ in range(runs)]
    return min(rows, key=lambda r: r["open_seconds"])

zpath, tpath = os.path.join(w, "data.zip"), os.path.join(w, "data.tar")
with zipfile.ZipFile(zpath, "w", zipfile.ZIP_STORED) as z:
    for i, name in enumerate(names):
        z.writestr(name, payloads[i % 1000])
with tarfile.open(tpath, "w", format=tarfile.GNU_FORMAT) as t:
    for i, name in enumerate(names):
        ti = tarfile.TarInfo(name); ti.size = len(payloads[i % 1000]); t.addfile(ti, io.BytesIO(payloads[i % 1000]))

zip_open = best("open1", zpath, "-")
print(json.dumps({"bench": "open_100k_zip", "entries": zip_open["entries"], "open_seconds": zip_open["open_seconds"],
                  "open_cpu_seconds": zip_open["open_cpu_seconds"], "baseline": True}), flush=True)
first = best("open1", tpath, "-")
evict(tpath)
cold = run("open1", tpath, "-")
cache = os.path.join(w, "cache")
writing = run("open1", tpath, cache)
cached = best("open1", tpath, cache)
evict(tpath)
for f in os.listdir(os.path.join(cache, "tar-index")):
    evict(os.path.join(cache, "tar-index", f))
cached_cold = run("open1", tpath, cache)
index_bytes = sum(os.path.getsize(os.path.join(cache, "tar-index", f)) for f in os.listdir(os.path.join(cache, "tar-index")))
print(json.dumps({"bench": "open_100k_tar", "entries": cached["entries"], "tar_bytes": os.path.getsize(tpath),
                  "first_open_seconds": first["open_seconds"], "first_open_cold_seconds": cold["open_seconds"],
                  "first_open_writing_cache_seconds": writing["open_seconds"],
                  "cached_open_seconds": cached["open_seconds"], "cached_open_cpu_seconds": cached["open_cpu_seconds"],
                  "cached_open_cold_seconds": cached_cold["open_seconds"], "index_cache_bytes": index_bytes,
                  "ratio_cached_to_zip": round(cached["open_seconds"] / zip_open["open_seconds"], 2),
                  "target_cached_seconds": 1.0}), flush=True)

folder = os.path.join(w, "folder")
for i, name in enumerate(names):
    p = os.path.join(folder, name)
    if i < 10:
        os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(payloads[i % 1000])
fo = best("open1", folder, "-")
print(json.dumps({"bench": "open_100k_folder", "entries": fo["entries"], "open_seconds": fo["open_seconds"],
                  "open_cpu_seconds": fo["open_cpu_seconds"],
                  "ratio_to_zip": round(fo["open_seconds"] / zip_open["open_seconds"], 2)}), flush=True)

shards = 10
for s in range(shards):
    with tarfile.open(os.path.join(w, "shard-%06d.tar" % s), "w") as t:
        for k in range(n // shards):
            i = s * (n // shards) + k
            for suffix, data in (("jpg", payloads[i % 1000]), ("cls", str(i % 10).encode())):
                ti = tarfile.TarInfo("%08d.%s" % (i, suffix)); ti.size = len(data); t.addfile(ti, io.BytesIO(data))
pattern = os.path.join(w, "shard-{000000..%06d}.tar" % (shards - 1))
scache = os.path.join(w, "shard-cache")
g_first = run("group", pattern, scache)
g_cached = min((run("group", pattern, scache) for _ in range(3)), key=lambda r: r["open_seconds"])
print(json.dumps({"bench": "open_100k_webdataset", "shards": shards, "entries": g_cached["entries"],
                  "samples": g_cached["samples"], "first_open_seconds": g_first["open_seconds"],
                  "cached_open_seconds": g_cached["open_seconds"], "group_seconds": g_cached["group_seconds"]}), flush=True)

reads = 50000
pick = random.Random(2)
seq = [pick.randrange(n) for _ in range(reads)]
seq_path = os.path.join(w, "seq")
with open(seq_path, "wb") as f:
    array.array("I", seq).tofile(f)
# The folder's entries include its 10 folders, sorted first in each class: map names to indices.
folder_names = sorted(["class%02d/" % c for c in range(10)] + names)
folder_index = {name: i for i, name in enumerate(folder_names)}
fseq_path = os.path.join(w, "fseq")
with open(fseq_path, "wb") as f:
    array.array("I", [folder_index[names[i]] for i in seq]).tofile(f)
rows = {}
for kind, path, sp in (("zip", zpath, seq_path), ("tar", tpath, seq_path), ("folder", folder, fseq_path)):
    rows[kind] = run("random", path, sp, "by-index")
for kind in ("tar", "folder"):
    if rows[kind]["bytes"] != rows["zip"]["bytes"]:
        sys.exit("bench/readers.sh: %s read %d bytes, the zip %d" % (kind, rows[kind]["bytes"], rows["zip"]["bytes"]))
for kind in ("zip", "tar", "folder"):
    r = rows[kind]
    print(json.dumps({"bench": "random_read_" + kind, "reads": reads, "bytes": r["bytes"], "seconds": r["seconds"],
                      "cpu_seconds": r["cpu_seconds"], "ratio_to_zip": round(r["seconds"] / rows["zip"]["seconds"], 2)}),
          flush=True)
PY

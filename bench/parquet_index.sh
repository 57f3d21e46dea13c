#!/usr/bin/env bash
# The parquet index cache (issue 28: "opening a 100k-row parquet in < 1 s when its index is
# cached, first-open cost stated"), each figure one JSON line, every open a `frugal ls DATA`
# (the process, the open, and 100,000 names written to /dev/null):
#   ls_100k_zip         the same images as a stored zip [baseline]
#   parquet_index_open  100,000 rows (1,000 distinct noise JPEGs of BENCH_IMAGE_PX px, default 64:
#                       about 3 kB each, 286 MB of parquet; 192: about 25 kB, 2.5 GB; 10 files of
#                       100-row groups, as datasets writes them): the first open (every image read,
#                       the cache written), the same with no cache folder at all (what every open
#                       cost before the cache), the cached open; warm (files in the page cache, best
#                       of BENCH_RUNS) and cold (pages dropped with posix_fadvise(DONTNEED): on a
#                       virtual disk its host may still cache them); the ratios first/cached and
#                       cached/zip [cached < 1 s].
# Measured on the development machine (2 shared cores, another build running), zip 0.05-0.07 s:
#   BENCH_IMAGE_PX=192 (2.3 GB): no cache 0.86 s, first open 0.81 s (3.9 s cold), cached 0.25 s
#   (0.52 s cold): first/cached 3.2x warm, 7.6x cold [cached < 1 s];
#   BENCH_IMAGE_PX=64 (286 MB): no cache 0.35 s, first open 0.43 s (0.78 s cold), cached 0.20 s
#   (0.35 s cold); the cache files 1.9 MB (19 bytes a row).
# Builds nothing: expects FRUGAL_BIN (default build/bin) with frugal, and lib/libfrugal_arrow_parquet.so
# beside it. Env: BENCH_RUNS (default 3), BENCH_IMAGE_PX (default 64), FRUGAL_PYTHON (default .venv's),
# BENCH_CPUS (default 0,1).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${FRUGAL_BIN:-$ROOT/build/bin}
PY=${FRUGAL_PYTHON:-$ROOT/.venv/bin/python}
RUNS=${BENCH_RUNS:-3}
PX=${BENCH_IMAGE_PX:-64}
CPUS=${BENCH_CPUS:-0,1}
[[ -x $BIN/frugal ]] || { echo "parquet_index.sh: $BIN/frugal not built (ninja frugal frugal_arrow_parquet)" >&2; exit 1; }
"$PY" -c 'import pyarrow, PIL' 2>/dev/null || { echo "parquet_index.sh: $PY lacks pyarrow or PIL (scripts/setup.sh installs them)" >&2; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/frugal-bench-pqindex.XXXXXX"); trap 'rm -rf "$W"' EXIT
PIN=()
if command -v taskset >/dev/null; then PIN=(taskset -c "$CPUS"); fi

"$PY" - "$W" "$BIN/frugal" "$RUNS" "$PX" "${PIN[@]}" <<'PY'
import io, json, os, random, shutil, subprocess, sys, time, zipfile
import pyarrow as pa, pyarrow.parquet as pq
from PIL import Image
w, frugal, runs, px, pin = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
n, files = 100000, 10
rng = random.Random(2)
tiny = []
for i in range(1000):
    b = io.BytesIO()
    Image.frombytes("RGB", (px, px), rng.randbytes(px * px * 3)).save(b, "JPEG", quality=75)
    tiny.append(b.getvalue())
img_t = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
names = [str(c) for c in range(10)]
feat = {"image": {"_type": "Image"}, "label": {"_type": "ClassLabel", "names": names}}
data = os.path.join(w, "data")
os.makedirs(data)
for k in range(files):
    ids = range(k * n // files, (k + 1) * n // files)
    t = pa.table({"image": pa.array([{"bytes": tiny[i % 1000], "path": f"{i}.jpg"} for i in ids], type=img_t),
                  "label": pa.array([i % 10 for i in ids], type=pa.int64())})
    t = t.replace_schema_metadata({"huggingface": json.dumps({"info": {"features": feat}})})
    pq.write_table(t, f"{data}/train-{k:05d}-of-{files:05d}.parquet", row_group_size=100)
zpath = os.path.join(w, "data.zip")
with zipfile.ZipFile(zpath, "w", zipfile.ZIP_STORED) as z:
    for i in range(n):
        z.writestr(f"c{i % 10}/{i}.jpg", tiny[i % 1000])
parquet_bytes = sum(os.path.getsize(os.path.join(data, f)) for f in os.listdir(data))

def ls(path, cache):
    """Seconds of one `frugal ls path`, its cache folder `cache` (None: no cache folder at all)."""
    env = {k: v for k, v in os.environ.items() if k not in ("FRUGAL_CACHE_DIR", "XDG_CACHE_HOME", "HOME")}
    if cache is not None:
        env["FRUGAL_CACHE_DIR"] = cache
    t0 = time.perf_counter()
    subprocess.run(pin + [frugal, "ls", path], check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0

def evict(folder):
    """Drops the files' pages from the page cache (clean pages; no root needed)."""
    for root, _, fs in os.walk(folder):
        for f in fs:
            fd = os.open(os.path.join(root, f), os.O_RDONLY)
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)

def fresh_cache(tag):
    c = os.path.join(w, "cache-" + tag)
    shutil.rmtree(c, ignore_errors=True)
    return c

zip_s = min(ls(zpath, None) for _ in range(runs))
print(json.dumps({"bench": "ls_100k_zip", "entries": n, "seconds": round(zip_s, 4), "baseline": True}), flush=True)
ls(data, None)  # the parquet files' pages in the page cache (they were just written: they are)
uncached = min(ls(data, None) for _ in range(runs))
first = min(ls(data, fresh_cache(f"w{k}")) for k in range(runs))
cache = fresh_cache("main")
ls(data, cache)
cached = min(ls(data, cache) for _ in range(runs))
evict(data)
cold_first = ls(data, fresh_cache("cold"))
evict(data)
evict(cache)
cold_cached = ls(data, cache)
index_bytes = sum(os.path.getsize(os.path.join(cache, "parquet-index", f)) for f in os.listdir(os.path.join(cache, "parquet-index")))
print(json.dumps({"bench": "parquet_index_open", "rows": n, "files": files, "image_px": px, "parquet_bytes": parquet_bytes,
                  "index_cache_bytes": index_bytes,
                  "no_cache_open_seconds": round(uncached, 4), "first_open_seconds": round(first, 4),
                  "cached_open_seconds": round(cached, 4), "cold_first_open_seconds": round(cold_first, 4),
                  "cold_cached_open_seconds": round(cold_cached, 4),
                  "ratio_first_to_cached": round(first / cached, 2),
                  "ratio_cold_first_to_cold_cached": round(cold_first / cold_cached, 2),
                  "ratio_cached_to_zip": round(cached / zip_s, 2), "target_cached_seconds": 1.0}), flush=True)
PY

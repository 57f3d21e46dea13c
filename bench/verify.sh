#!/usr/bin/env bash
# Archive reading benchmarks (issue targets in brackets), each printed as one JSON line:
#   verify_vs_unzip_t   frugal verify vs `unzip -t` on 50,000 entries of 1-4 KB   [ratio >= 2 on 2 cores]
#   open_500k           opening (central directory -> index) a 500,000-entry zip    [<= 0.3 s]
#   random_read_*       random single-entry reads, CRC-checked on both sides, vs Python's zipfile
#                       opened once (each read is zf.read(name)); both sides read one sequence of
#                       entries drawn beforehand and must agree on the bytes read; frugal reads by
#                       index, as its loader does (by_name_*: looking each name up too); stored and
#                       deflated                                                    [ratio >= 10]
#                       floor_*: libdeflate's inflate and CRC-32 alone over the same sequence, from
#                       memory (archive_read_bench floor); zipfile / floor is the highest ratio any
#                       reader built on libdeflate could show on these entries
# Wall-clock and CPU seconds are both reported: on a shared machine the CPU ratios are the steadier.
# Builds nothing: expects FRUGAL_BIN (default build/bin) with frugal and archive_read_bench.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
FRUGAL_BIN=${FRUGAL_BIN:-$HERE/../build/bin}
PY=${FRUGAL_PYTHON:-$HERE/../.venv/bin/python}
[ -x "$PY" ] || PY=python3
for exe in frugal archive_read_bench; do
  [ -x "$FRUGAL_BIN/$exe" ] || { echo "bench/verify.sh: $FRUGAL_BIN/$exe not built (build it, or set FRUGAL_BIN)" >&2; exit 1; }
done
command -v unzip >/dev/null || { echo "bench/verify.sh: unzip not installed" >&2; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/frugal-bench-verify.XXXXXX"); trap 'rm -rf "$W"' EXIT

"$PY" - "$W" "$FRUGAL_BIN" <<'PY'
import array, json, os, random, resource, subprocess, sys, time, zipfile
w, bin_dir = sys.argv[1], sys.argv[2]
frugal = os.path.join(bin_dir, "frugal")
reader = os.path.join(bin_dir, "archive_read_bench")
rng = random.Random(1)
pool = os.urandom(1 << 20)
words = [("w%d " % i).encode() for i in range(500)]

def payload():
    n = rng.randint(1024, 4096)
    half = n // 2  # half incompressible, half text: deflate has work to do
    start = rng.randrange(len(pool) - half)
    text = b"".join(rng.choice(words) for _ in range(n // 4))
    return (pool[start:start + half] + text)[:n]

def make(path, count, method, data_fn):
    with zipfile.ZipFile(path, "w", method) as z:
        for i in range(count):
            z.writestr("class%02d/img%06d.bin" % (i % 10, i), data_fn())

def best(cmd, runs=2):
    """Best wall-clock seconds of `runs`, and the CPU seconds (user + system) of that run."""
    t = []
    for _ in range(runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t.append((wall, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime))
    return min(t)

deflated = os.path.join(w, "deflated.zip")
stored = os.path.join(w, "stored.zip")
make(deflated, 50000, zipfile.ZIP_DEFLATED, payload)
make(stored, 50000, zipfile.ZIP_STORED, payload)

unzip_s, unzip_cpu = best(["unzip", "-tq", deflated])
frugal_s, frugal_cpu = best([frugal, "verify", deflated])
print(json.dumps({"bench": "verify_vs_unzip_t", "entries": 50000, "threads": os.cpu_count(),
                  "unzip_t_seconds": round(unzip_s, 3), "frugal_seconds": round(frugal_s, 3),
                  "ratio": round(unzip_s / frugal_s, 2), "unzip_t_cpu_seconds": round(unzip_cpu, 3),
                  "frugal_cpu_seconds": round(frugal_cpu, 3), "cpu_ratio": round(unzip_cpu / frugal_cpu, 2),
                  "target_ratio": 2}), flush=True)

many = os.path.join(w, "many.zip")
make(many, 500000, zipfile.ZIP_STORED, lambda: b"x" * 16)
r = json.loads(subprocess.run([reader, "open", many], check=True, capture_output=True, text=True).stdout)
print(json.dumps({"bench": "open_500k", "entries": r["entries"], "open_seconds": r["open_seconds"],
                  "open_cpu_seconds": r["open_cpu_seconds"], "target_seconds": 0.3}), flush=True)
os.remove(many)

reads = 50000  # enough that the first touch of each mapped page is amortized, as over epochs
for kind, path in (("stored", stored), ("deflate", deflated)):
    z = zipfile.ZipFile(path)  # opened once, outside the timing, as frugal's reader is
    names = z.namelist()  # central-directory order, the order of frugal's entry indices
    pick = random.Random(2)
    seq = [pick.randrange(len(names)) for _ in range(reads)]  # drawn outside both timings
    seq_path = os.path.join(w, "seq-" + kind)
    with open(seq_path, "wb") as f:
        array.array("I", seq).tofile(f)  # both sides read this very sequence
    py_bytes = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for i in seq:
        py_bytes += len(z.read(names[i]))  # zipfile checks the CRC-32 on read
    py_s, py_cpu = time.perf_counter() - t0, time.process_time() - c0
    r, rn = (json.loads(subprocess.run([reader, "random", path, seq_path] + extra, check=True,
                                       capture_output=True, text=True).stdout) for extra in (["by-index"], []))
    fl = json.loads(subprocess.run([reader, "floor", path, seq_path], check=True, capture_output=True,
                                   text=True).stdout)
    for got in (r, rn, fl):
        if (got["reads"], got["bytes"]) != (reads, py_bytes):
            sys.exit("bench/verify.sh: frugal read %d entries, %d bytes; zipfile %d, %d" % (got["reads"], got["bytes"], reads, py_bytes))
    # ratio: frugal reads by entry index, as its loader does after resolving names once (Python's
    # own name lookup is a dict hit, well under 1% of its read); by_name_*: frugal looks each name
    # up too (hash table), exactly as zf.read(name) does.
    print(json.dumps({"bench": "random_read_" + kind, "reads": reads, "zipfile_seconds": round(py_s, 3),
                      "frugal_seconds": r["seconds"], "ratio": round(py_s / r["seconds"], 1),
                      "zipfile_cpu_seconds": round(py_cpu, 3), "frugal_cpu_seconds": r["cpu_seconds"],
                      "cpu_ratio": round(py_cpu / r["cpu_seconds"], 1),
                      "by_name_seconds": rn["seconds"], "by_name_ratio": round(py_s / rn["seconds"], 1),
                      "by_name_cpu_ratio": round(py_cpu / rn["cpu_seconds"], 1),
                      "floor_seconds": fl["seconds"], "floor_ratio": round(py_s / fl["seconds"], 1),
                      "target_ratio": 10}), flush=True)
PY

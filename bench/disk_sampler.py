"""Samples disk use every 50 ms until SIGTERM, then prints two integers: the file system's peak
used bytes (statvfs) minus its used bytes at the start, and the same for the bytes allocated to
files under WATCH (st_blocks), which other processes on a shared machine cannot disturb.
Usage: disk_sampler.py WATCH OUTFILE  (OUTFILE.ready appears once sampling has started)"""
import os
import signal
import sys
import time


def fs_used(path):
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def tree_allocated(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except FileNotFoundError:  # removed while we looked (join --delete-parts)
                pass
    return total


def main():
    watch, out = sys.argv[1], sys.argv[2]
    start = peak_fs = fs_used(watch)
    start_tree = peak_tree = tree_allocated(watch)
    running = True

    def stop(*_):
        nonlocal running
        running = False

    signal.signal(signal.SIGTERM, stop)
    with open(out + ".ready", "w"):
        pass
    while True:
        peak_fs = max(peak_fs, fs_used(watch))
        peak_tree = max(peak_tree, tree_allocated(watch))
        if not running:
            break
        time.sleep(0.05)
    with open(out, "w") as f:
        f.write(f"{peak_fs - start} {peak_tree - start_tree}\n")


if __name__ == "__main__":
    main()

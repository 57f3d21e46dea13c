// Host (CPU) memory behaviour of the process. Torch-free: lives in util.
#pragma once

namespace frugal {

// CPU training frees and reallocates the same activation-sized blocks every step. glibc's
// defaults hand blocks above its (adaptive) mmap threshold back to the kernel and trim the heap
// top above 128 KiB, so each step page-faults its memory in again: 7% of a cnn step in the
// kernel, against 1.6% in Python, where other allocations keep the heap top busy. This keeps
// blocks below 32 MiB in the heap and up to 64 MiB of freed memory mapped (cnn, 2 cores: 1.25-1.6x
// more images/s). Left alone when the user tunes malloc (GLIBC_TUNABLES, MALLOC_*_ environment);
// returns whether it changed anything. Called first thing by frugal-torch and the step bench.
bool keep_freed_host_memory();

}  // namespace frugal

// Several processes on one machine: torchrun starts them (frugal has no launcher of its own), and
// each reads what it is from torchrun's environment (WORLD_SIZE, RANK: read in train/distributed.cpp
// only, beside the rest of the env:// contract the process group joins by).
#pragma once

#include <string>
#include <vector>

namespace frugal {

// This process as it was launched.
struct LaunchedAs {
  bool torchrun_rank = false;  // WORLD_SIZE is set (1 included): torchrun started this process
  bool rank0 = true;           // RANK absent or 0: this process speaks for the run (stdout, exit code)
};
LaunchedAs launched_as();

// This process's place among the ranks torchrun started ({0, 1} without torchrun), validated as
// the process group reads it: Error(usage) naming the variable when one is missing or out of range.
struct RankWorld {
  int rank = 0;
  int world = 1;
};
RankWorld rank_world();

// {nproc} N: runs `torchrun --standalone --nproc-per-node N` on this same program's `train` with
// `rank_args` (what each rank is to read: the front end leaves out nproc itself, else every rank
// would launch ranks of its own), and returns the exit code rank 0 recorded (record_rank0_exit),
// so that a stopped run is still 75 (torchrun itself exits 1 when any rank exits non-zero).
// SIGINT and SIGTERM are passed to torchrun, which passes them to the ranks. Error(usage) inside a
// rank torchrun started, or when torchrun is not on the PATH.
int run_torchrun(int nproc, const std::vector<std::string>& rank_args);

// Rank 0 of a run run_torchrun() started: leaves its exit code for the launching command.
void record_rank0_exit(int rc);

// The torch.distributed backends this build can train several processes with (torchrun; README
// "Several GPUs or machines"): "gloo (CPU)", and "nccl 2.27.3 (CUDA)" in a CUDA build.
std::vector<std::string> distributed_backends();

}  // namespace frugal

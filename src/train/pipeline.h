// Pipeline stages (train --pipeline N; internal): the model cut into N contiguous runs of its
// pieces (Model::pieces), rank r training stage r, each step's batch flowing through them in
// micro-batches on a 1F1B schedule (PipeDream-flush, as torch.distributed.pipelining's
// Schedule1F1B). Activations and their gradients go through c10d's point-to-point send/recv on
// the run's process group (Gloo on the CPU, NCCL on GPUs): no transport of frugal's own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "train/comm.h"
#include "train/parallelism.h"

namespace frugal {

// --pipeline: how the model is cut into stages.
struct PipelineOptions {
  int stages = 1;                    // 1: no pipeline
  int micro_batches = 0;             // per step
  std::vector<std::string> split;    // pieces that start stages 1..N-1 (empty: balanced)
  std::string balance = "time";      // what a balanced cut evens out: "time" (measured) or "parameters"
  std::vector<std::int64_t> sample;  // (micro-batch, C, H, W) of a measuring input
  AmpMode amp = AmpMode::off;
};

// Where each of `stages` stages begins (piece indices, the first 0), cutting `cost` (one entry
// per piece) into contiguous runs whose largest sum is as small as it can be.
std::vector<std::size_t> balance_stages(const std::vector<double>& cost, int stages);

// Where each stage begins when `names` name the pieces that start stages 1..N-1 (--pipeline-split);
// Error(usage) listing the pieces when a name is not one, or they are out of order.
std::vector<std::size_t> stages_at(const std::vector<ModelPiece>& pieces, const std::vector<std::string>& names,
                                   int stages);

// The schedule of one stage: which micro-batch is forwarded ('F') or backpropagated ('B') when.
// Stage s of N does min(M, N-1-s) forwards, then alternates one forward and one backward, then the
// backwards left: at most N-s micro-batches' activations are held at once.
std::vector<std::pair<char, int>> one_f_one_b(int stage, int stages, int micro_batches);

// This rank's stage of a pipeline of options.stages over the ranks of `comm` (grouped), which it
// uses until it is destroyed: N stages x D data-parallel replicas, else Error(usage).
std::unique_ptr<Parallelism> make_pipeline(Comm& comm, const PipelineOptions& options);

}  // namespace frugal

// Pipeline stages (train --pipeline N; internal): the model cut into N contiguous runs of its
// pieces (Model::pieces), rank r training stage r, each step's batch flowing through them in
// micro-batches on a 1F1B schedule (PipeDream-flush, as torch.distributed.pipelining's
// Schedule1F1B). Activations and their gradients go through c10d's point-to-point send/recv on
// the run's process group (Gloo on the CPU, NCCL on GPUs): no transport of frugal's own.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "train/collective.h"

namespace frugal {

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

std::unique_ptr<Collective> make_pipeline(std::unique_ptr<ProcessGroup> group, const PipelineOptions& options);

}  // namespace frugal

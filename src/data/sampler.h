// The sample order of one epoch as one rank reads it: which samples each batch holds, and the
// position (a global sample index) the epoch has reached after it. The one place where the
// (seed, epoch) order, batching, resume positions and the rank's share of each batch are decided;
// every BatchSource hands out batches through it (batch_queue.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "frugal/data.h"

namespace frugal {

// With B = batch_size and W = shard.world, a global batch is G = B * W samples of the order:
// global batch k (counted from the starting position p) is order[p + k*G, min(p + (k+1)*G, end)).
// Rank r takes the r-th of W contiguous, nearly equal parts of it: for a global batch of m samples
// starting at a, [a + r*m/W, a + (r+1)*m/W) (floor division). A full global batch (m = G) gives
// every rank exactly [a + r*B, a + (r+1)*B); only the last, partial one gives ranks floor(m/W) or
// ceil(m/W) samples (none when m < W). Every rank has the same number of batches and the same
// position after each, so W = 1 and any W with the same G walk the order identically.
struct EpochPlan {
  std::int64_t epoch = 0;
  std::vector<std::size_t> order;              // the (seed, epoch) order of dataset indices
  std::int64_t start = 0, end = 0;             // positions [start, end) of the order this epoch covers
  std::int64_t batches = 0;                    // global batches from start
  std::int64_t batch = 1, global_batch = 1;    // B and G
  Shard shard;

  // Throws Error(usage) naming `who` when position is outside [0, n].
  static EpochPlan make(std::size_t n, const LoaderOptions& options, std::int64_t epoch, std::int64_t position,
                        const std::string& who);
  // This rank's part of batch k: positions [first, second) of `order`.
  std::pair<std::int64_t, std::int64_t> slice(std::int64_t k) const;
  std::vector<std::size_t> samples(std::int64_t k) const;  // dataset indices of slice(k)
  // The first position of global batch k + 1 (end after the last): where a resume continues.
  std::int64_t position_after(std::int64_t k) const;
  std::int64_t rank_samples() const;  // this rank's samples over all its batches
};

std::int64_t global_batch_size(const LoaderOptions& options);  // batch_size * shard.world
// Batches per epoch from position 0: the same on every rank.
std::int64_t epoch_batches(std::size_t n, const LoaderOptions& options);

}  // namespace frugal

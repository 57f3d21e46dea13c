// The sample order of one epoch as one rank reads it: which samples each batch holds, and the
// position (a global sample index) the epoch has reached after it. The one place where the
// (seed, epoch) order, batching, resume positions and the rank's share of each batch are decided;
// every BatchSource hands out batches through it (include/frugal/dataset/prefetch_queue.h). Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "frugal/dataset/dataset.h"

namespace frugal {

// Which part of every global batch this process takes when `world` processes train together
// (rank in [0, world)). The global batch is batch_size * world samples of the one (seed, epoch)
// order; rank r takes its r-th contiguous part (EpochPlan below has the exact rule, also for the
// last partial batch). The default, one process, is the whole batch.
struct Shard {
  int rank = 0;
  int world = 1;
};

// The most decode threads a loader runs, the bound of every command's --workers: each thread holds
// a batch being built and its scratch images, and threads past the cores add only memory (100000
// asked for took 9.5 GB of thread stacks before an abort).
inline constexpr int kMaxWorkers = 256;

struct LoaderOptions {
  int image_size = 224;
  bool train = true;       // random augmentation; false: resize + center crop
  AugmentOptions augment;  // training: what follows the random crop (flip, TrivialAugment, ...; frugal/image/augment.h)
  int batch_size = 64;
  int workers = 2;  // decode threads, 1 to kMaxWorkers
  std::uint64_t seed = 0;
  bool shuffle = true;
  bool drop_last = false;
  bool pin_memory = false;   // only when CUDA is available; otherwise ordinary memory
  int prefetch_batches = 4;  // bound on decoded batches held ahead of next()
  Shard shard;               // batch_size is this process's part of a global batch
  // Undecodable images are counted and left out, never refused here: the caller holds the count
  // against max_bad_fraction itself (training's validation, whose processes decide together).
  bool count_bad_only = false;
  // --sampler balanced (training): each position of an epoch's order is a draw with replacement,
  // sample i with probability weight[i] / sum (torch's WeightedRandomSampler, replacement=True);
  // empty: every sample once (the permutation). One weight per dataset sample.
  std::vector<double> sample_weights;
};

// The epoch's sample order (a permutation of [0, n) when shuffling), from (seed, epoch); every
// rank of a sharded run reads the same one (src/dataset/sampler.cpp).
std::vector<std::size_t> epoch_order(std::size_t n, std::uint64_t seed, std::int64_t epoch, bool shuffle);

// Data read a row group at a time (parquet: Dataset::io_groups()) shuffled with locality, so that
// each decoded group serves all its rows while it is cached instead of one row per decode (a row
// group of 100 images decoded for each image read 100 times the bytes). From (seed, epoch) alone,
// a permutation of [0, n), so resume by position is exact as for epoch_order:
//   1. the groups are put in a random order;
//   2. consecutive groups of that order form windows of at most kShuffleWindowBytes decoded bytes
//      (at least one group each);
//   3. the samples of each window are shuffled among themselves; windows follow each other.
// The cost is randomness: a sample's neighbours come from the few groups of its window, not from
// the whole set, and a window is seen only once per epoch. A set written sorted by class (one
// class per group) gives batches of the classes of one window: write it shuffled (datasets'
// .shuffle() before push_to_hub does) or use a folder or zip. The parquet reader caches twice the
// window (kCacheBytes), so the loader's threads reading across a window boundary still hit it.
inline constexpr std::uint64_t kShuffleWindowBytes = std::uint64_t{128} << 20;
std::vector<std::size_t> epoch_order(std::size_t n, std::uint64_t seed, std::int64_t epoch, bool shuffle,
                                     const IoGroups& groups);

// n draws with replacement, index i with probability weights[i] / sum(weights), from (seed, epoch):
// the order of a --sampler balanced epoch (inverse-CDF draws of a generator of its own; a resume by
// position reads the same). Error(usage) for weights that are not n finite values >= 0 with a
// positive sum.
std::vector<std::size_t> weighted_epoch_order(std::size_t n, std::uint64_t seed, std::int64_t epoch,
                                              const std::vector<double>& weights);

// Batches of `batch` that `samples` make: a last partial batch counts unless drop_last.
std::int64_t batch_count(std::int64_t samples, std::int64_t batch, bool drop_last);

// With B = batch_size and W = shard.world, a global batch is G = B * W samples of the order:
// global batch k (counted from the starting position p) is order[p + k*G, min(p + (k+1)*G, end)).
// Rank r takes the r-th of W contiguous, nearly equal parts of it: for a global batch of m samples
// starting at a, [a + r*m/W, a + (r+1)*m/W) (floor division). A full global batch (m = G) gives
// every rank exactly [a + r*B, a + (r+1)*B); only the last, partial one gives ranks floor(m/W) or
// ceil(m/W) samples (none when m < W). Every rank has the same number of batches and the same
// position after each, so W = 1 and any W with the same G walk the order identically.
struct EpochPlan {
  std::int64_t epoch = 0;
  std::vector<std::size_t> order;            // the (seed, epoch) order of dataset indices
  std::int64_t start = 0, end = 0;           // positions [start, end) of the order this epoch covers
  std::int64_t batches = 0;                  // global batches from start
  std::int64_t batch = 1, global_batch = 1;  // B and G
  Shard shard;

  // Throws Error(usage) naming `who` when position is outside [0, n].
  static EpochPlan make(std::size_t n, const LoaderOptions& options, std::int64_t epoch, std::int64_t position,
                        const std::string& who);
  // The same, in the order epoch_order(..., groups) gives (n = groups.group.size() unless empty).
  static EpochPlan make(std::size_t n, const LoaderOptions& options, std::int64_t epoch, std::int64_t position,
                        const std::string& who, const IoGroups& groups);
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

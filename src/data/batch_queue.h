// The batch engine (include/frugal/dataset/prefetch_queue.h) with tensors in its batches: what the
// CPU Loader and the GpuLoader build, and the Batch they hand out.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "frugal/data/loader.h"
#include "frugal/dataset/prefetch_queue.h"

namespace frugal {

// One batch as a builder made it: the images it could decode, in sample order, their labels, and
// what it met on the way.
struct BuiltBatch : BatchTally {
  torch::Tensor images, labels;
  std::int64_t size() const { return images.defined() ? images.size(0) : 0; }
};

using BuildBatch = std::function<BuiltBatch(const BatchJob&)>;

class BatchQueue : public PrefetchQueue<BuiltBatch> {
 public:
  using PrefetchQueue::PrefetchQueue;
  // PrefetchQueue::next() as a Batch.
  std::optional<Batch> next_batch() {
    auto h = next();
    if (!h) return std::nullopt;
    Batch b;
    b.images = std::move(h->batch.images);
    b.labels = std::move(h->batch.labels);
    b.epoch = h->epoch;
    b.position = h->position;
    return b;
  }
};

}  // namespace frugal

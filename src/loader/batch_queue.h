// The batch engine (include/frugal/dataset/prefetch_queue.h) with tensors in its batches: what the
// CPU Loader and the GpuLoader build, and the Batch they hand out.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>

#include "frugal/loader/loader.h"
#include "frugal/dataset/prefetch_queue.h"

namespace frugal {

// One batch as a builder made it: the images it could decode, in sample order, their labels, and
// what it met on the way.
struct BuiltBatch : BatchTally {
  torch::Tensor images, labels;
  std::vector<std::int64_t> samples;  // the dataset's index of each image kept
  std::int64_t size() const { return images.defined() ? images.size(0) : 0; }
};

using BuildBatch = std::function<BuiltBatch(const BatchJob&)>;

// A batch's labels: (n) int64 class indices, or for multi-label data (n, classes) float32 0/1
// targets, a 1 for each of the sample's tags (what binary cross-entropy takes).
inline torch::Tensor empty_labels(const Dataset& data, std::int64_t n) {
  if (!data.multi_label()) return torch::empty({n}, torch::kInt64);
  return torch::zeros({n, static_cast<std::int64_t>(data.classes().size())}, torch::kFloat32);
}

// Row `row` of empty_labels()'s tensor: sample's label or tags.
inline void set_label(torch::Tensor& labels, std::int64_t row, const Dataset& data, std::size_t sample) {
  if (labels.dim() == 1) {
    labels.data_ptr<std::int64_t>()[row] = data.label(sample);
    return;
  }
  float* r = labels.data_ptr<float>() + row * labels.size(1);
  std::fill(r, r + labels.size(1), 0.0f);
  for (std::uint32_t tag : data.tags(sample)) r[tag] = 1.0f;
}

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
    b.samples = std::move(h->batch.samples);
    b.epoch = h->epoch;
    b.position = h->position;
    return b;
  }
};

}  // namespace frugal

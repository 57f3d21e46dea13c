// A deterministic, resumable, multi-threaded loader of a Dataset's batches as tensors.
//
// Layouts: class sub-folders (`[root/]class/file.jpg`, any common root), a `labels.csv`
// (`path,label`) inside the archive, labels from file names by a regex with one capture group,
// and `.npy` members (one sample per file, or an (N, H, W[, C]) uint8 array with an (N,) integer
// labels array). Junk (`__MACOSX/`, `._*`, `.DS_Store`, `Thumbs.db`, hidden files) and non-images
// are skipped and counted, never fatal.
//
// Determinism: the sample order is a function of (seed, epoch) and each sample's augmentation of
// (seed, epoch, sample index), so batches do not depend on the number of threads, and starting at
// (epoch, position) replays nothing. With several processes (LoaderOptions::shard), each takes its
// own slice of every global batch of that one order (frugal/dataset/sampler.h).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "frugal/dataset/dataset.h"
#include "frugal/dataset/sampler.h"

namespace frugal {

struct Batch {
  torch::Tensor images;  // (B, C, H, W) uint8
  torch::Tensor labels;  // (B) int64 class indices; multi-label data: (B, classes) float32 0/1 targets
  // The dataset's index of each image (Dataset::name() names it): undecodable images are left out
  // of a batch, so its rows are not its positions in the epoch order. Empty where a source does not say.
  std::vector<std::int64_t> samples;
  std::int64_t epoch = 0;
  // Index of the first sample of the NEXT global batch in the epoch order: the same on every rank,
  // so a run resumed with another world size but the same global batch continues there.
  std::int64_t position = 0;
};

// What training and evaluation read batches from, whoever builds them (the CPU Loader, the
// GpuLoader). Same order, batching, resume and bad-image rules for every source.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Begins (or restarts) an epoch at `position` (a sample index into the epoch's order).
  virtual void start(std::int64_t epoch, std::int64_t position = 0) = 0;
  // nullopt at the end of the epoch. Undecodable samples are left out of their batch and counted;
  // throws Error(invalid) once more than max_bad_fraction of the samples seen have failed. A batch
  // left with no images is skipped with one process; with shard.world > 1 it is handed out (0
  // images) so that every rank takes the same number of steps.
  virtual std::optional<Batch> next() = 0;
  virtual std::int64_t batches_per_epoch() const = 0;  // the same on every rank
  virtual std::uint64_t samples_seen() const = 0;
  virtual std::uint64_t samples_bad() const = 0;
};

class Loader : public BatchSource {
 public:
  Loader(std::shared_ptr<const Dataset> dataset, LoaderOptions options);
  ~Loader() override;
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  void start(std::int64_t epoch, std::int64_t position = 0) override;
  std::optional<Batch> next() override;
  std::int64_t batches_per_epoch() const override;
  std::uint64_t samples_seen() const override;
  std::uint64_t samples_bad() const override;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// A Loader's batches with their labels only: the same samples, order, positions and batch count,
// no image read or decoded (`images` is an empty (n, 0) tensor that says how many there are; none
// is found undecodable). What a pipeline stage after the first loads: its input comes from the
// stage before, its micro-batches' sizes and labels from the first (train/pipeline.cpp).
class LabelLoader : public BatchSource {
 public:
  LabelLoader(std::shared_ptr<const Dataset> dataset, LoaderOptions options);
  ~LabelLoader() override;
  LabelLoader(const LabelLoader&) = delete;
  LabelLoader& operator=(const LabelLoader&) = delete;

  void start(std::int64_t epoch, std::int64_t position = 0) override;
  std::optional<Batch> next() override;
  std::int64_t batches_per_epoch() const override;
  std::uint64_t samples_seen() const override;
  std::uint64_t samples_bad() const override;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The one rule for a model's per-channel statistics (mean or std) on images of `channels`:
// as many values as channels are taken as they are; one value serves every channel; gray images
// with RGB statistics take the mean of the three, as a gray photo would have. Error(usage) else.
// normalize() and the GPU loader's kernel both read their statistics through it.
std::vector<float> channel_statistics(const std::vector<float>& values, std::int64_t channels, const char* what);

// (B, C, H, W) uint8 on any device -> float, (x/255 - mean)/std, on that device.
torch::Tensor normalize(const torch::Tensor& images_u8, const std::vector<float>& mean, const std::vector<float>& std);

}  // namespace frugal

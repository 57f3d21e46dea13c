// Datasets read straight from an archive, and a deterministic, resumable, multi-threaded loader.
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
// own slice of every global batch of that one order (src/data/sampler.h).
#pragma once

#include <torch/torch.h>

#include "frugal/image.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace frugal {

class Archive;

struct DatasetOptions {
  std::string label_pattern;               // RE2 syntax, one capture group, searched for in the file name
  std::uint64_t max_pixels = 89478485;     // larger images count as bad
  double max_bad_fraction = 0.01;          // of the images seen by a loader
  int channels = 0;                        // 0: as the data; 1 or 3
  std::string name_encoding;               // for non-UTF-8 entry names (ArchiveOptions)
};

// Counts by reason of what open() left out ("junk", "not an image", "hidden", ...), plus the
// undecodable images the loaders have met so far.
struct SkipReport {
  std::map<std::string, std::uint64_t> counts;
  std::map<std::string, std::string> examples;  // one entry name per reason
  std::uint64_t total() const;
  std::string summary() const;  // "3 junk (e.g. __MACOSX/a/._x.jpg), 1 not an image (...)"
};

struct DatasetShared;  // archive, entries and labels; shared by subsets

class Dataset {
 public:
  static std::shared_ptr<Dataset> open(const std::filesystem::path& archive, const DatasetOptions& = {});

  const std::vector<std::string>& classes() const;  // sorted, stable
  std::size_t size() const;
  int label(std::size_t i) const;
  const std::string& name(std::size_t i) const;     // entry name ("x.npy[17]" for array samples)
  int channels() const;                             // 1 or 3 (after DatasetOptions::channels)
  int native_size() const;                          // typical image side (median of a sample)
  const DatasetOptions& options() const;
  const std::filesystem::path& path() const;

  std::shared_ptr<Dataset> subset(std::vector<std::size_t> indices) const;
  // {train, val}: a sample is in val when a hash of its entry name falls below `fraction`, so the
  // split is the same on every run and adding files does not move the others.
  std::pair<std::shared_ptr<Dataset>, std::shared_ptr<Dataset>> split_val(double fraction) const;

  SkipReport skipped() const;

  // Decodes + transforms sample i into `out` (image_size x image_size x channels()).
  // Throws Error(invalid) naming the entry when it cannot be decoded.
  void load(std::size_t i, const TransformOptions& transform, std::uint64_t seed,
            Image& scratch, Image& out) const;
  // Sample i's file as the archive holds it (JPEG, PNG or .npy bytes, not decoded), checked
  // against its CRC-32 as load() checks it: a view into the mapped archive when stored, else
  // inflated into `buffer`. nullopt for a sample inside an (N, ...) array member. Throws
  // Error(invalid) naming the entry when the bytes are damaged.
  std::optional<std::span<const std::uint8_t>> file_bytes(std::size_t i, std::vector<std::uint8_t>& buffer) const;
  // Counts an undecodable sample (thread-safe); shared by every subset of one archive.
  void record_bad(std::size_t i, const std::string& why) const;

  Dataset(std::shared_ptr<DatasetShared> shared, std::vector<std::size_t> indices);

 private:
  std::shared_ptr<DatasetShared> shared_;
  std::vector<std::size_t> indices_;  // into shared_->samples
};

// Which part of every global batch this process takes when `world` processes train together
// (rank in [0, world)). The global batch is batch_size * world samples of the one (seed, epoch)
// order; rank r takes its r-th contiguous part (src/data/sampler.h has the exact rule, also for
// the last partial batch). The default, one process, is the whole batch.
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
  bool train = true;         // random augmentation; false: resize + center crop
  int batch_size = 64;
  int workers = 2;           // decode threads, 1 to kMaxWorkers
  std::uint64_t seed = 0;
  bool shuffle = true;
  bool drop_last = false;
  bool pin_memory = false;   // only when CUDA is available; otherwise ordinary memory
  int prefetch_batches = 4;  // bound on decoded batches held ahead of next()
  Shard shard;               // batch_size is this process's part of a global batch
};

struct Batch {
  torch::Tensor images;   // (B, C, H, W) uint8
  torch::Tensor labels;   // (B) int64
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

// One rule for the memory of every loader, whatever command made it: Error(usage) for workers
// outside [1, kMaxWorkers]; Error(budget) when one image of image_size^2 x channels is past what
// the decoders count in an int, or when the batches a loader may hold at once (prefetch_batches +
// workers + 2 of batch_size images: the CPU Loader's pool) and each worker's scratch images (a few
// output-sized images) need more than half of this machine's RAM. The message names the workers,
// batch size and image size that fit. The loaders call it before starting a thread.
void check_loader_memory(const LoaderOptions& options, int channels);

// (B, C, H, W) uint8 on any device -> float, (x/255 - mean)/std, on that device.
torch::Tensor normalize(const torch::Tensor& images_u8, const std::vector<float>& mean,
                        const std::vector<float>& std);

// The epoch's sample order (a permutation of [0, n) when shuffling), from (seed, epoch); every
// rank of a sharded run reads the same one (src/data/sampler.cpp).
std::vector<std::size_t> epoch_order(std::size_t n, std::uint64_t seed, std::int64_t epoch, bool shuffle);

// Batches of `batch` that `samples` make: a last partial batch counts unless drop_last.
std::int64_t batch_count(std::int64_t samples, std::int64_t batch, bool drop_last);

}  // namespace frugal

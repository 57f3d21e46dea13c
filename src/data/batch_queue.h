// The one batch engine under every BatchSource: an ordered prefetch queue filled by worker
// threads, start/next with resume positions, and the bad-image limit. A source only BUILDS a batch
// from its sample indices (the CPU Loader by decoding on the CPU, the GpuLoader with nvJPEG and a
// CUDA kernel); which samples, in which order, and what is handed out when is decided here and in
// sampler.h. A batch is a pure function of (seed, epoch, its samples), so the thread count never
// changes what comes out.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "frugal/dataset/sampler.h"
#include "frugal/data/loader.h"
#include "frugal/util/error.h"

namespace frugal {

// One batch as a builder made it: the images it could decode, in sample order, their labels, and
// what it met on the way.
struct BuiltBatch {
  torch::Tensor images, labels;
  std::int64_t seen = 0, bad = 0;
  std::int64_t cpu_decoded = 0;  // GpuLoader: images that went through the CPU
  std::string first_error;

  // For a builder's `catch (const Error& e)` around one sample: when `e` says the sample's bytes
  // are bad (invalid, unsupported), counts it here and with the dataset and returns true; false
  // for anything else, which the builder rethrows (it is not the image's fault).
  bool count_bad(const Dataset& data, std::size_t idx, const Error& e);
};

// What a worker is asked to build: batch `index` (counted from start()) of `epoch`, whose samples
// are these dataset indices, in order.
struct BatchJob {
  std::int64_t epoch = 0;
  std::int64_t index = 0;
  std::vector<std::size_t> samples;
};

using BuildBatch = std::function<BuiltBatch(const BatchJob&)>;

// Positive batch and image sizes and a valid shard, else Error(usage) naming `who`; workers and
// prefetch_batches raised to at least 1.
LoaderOptions checked_loader_options(const std::string& who, LoaderOptions options);

class BatchQueue {
 public:
  // `who` names the source in usage errors ("Loader", "GpuLoader"). Each of options.workers
  // threads calls make_worker() once and builds all its batches with what it returns, so that
  // per-thread state (scratch images, a CUDA stream and decoder) lives and dies on its thread.
  // The threads start here: whatever make_worker and its builders use must outlive the queue.
  BatchQueue(std::string who, std::shared_ptr<const Dataset> data, const LoaderOptions& options,
             std::function<BuildBatch()> make_worker);
  ~BatchQueue();  // stops and joins the workers (a batch being built is finished first)
  BatchQueue(const BatchQueue&) = delete;
  BatchQueue& operator=(const BatchQueue&) = delete;

  // BatchSource's contract (include/frugal/data/data.h).
  void start(std::int64_t epoch, std::int64_t position);
  std::optional<Batch> next();
  std::int64_t batches_per_epoch() const;
  std::uint64_t samples_seen() const;
  std::uint64_t samples_bad() const;
  std::uint64_t cpu_decoded() const;  // sum of BuiltBatch::cpu_decoded handed out since start()

 private:
  struct Slot {
    BuiltBatch batch;
    std::exception_ptr error;  // anything but a bad image: rethrown by next()
  };
  void worker();

  const std::string who_;
  const std::shared_ptr<const Dataset> data_;
  const LoaderOptions opt_;
  const std::function<BuildBatch()> make_worker_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_, ready_cv_;
  bool stop_ = false, active_ = false;
  std::uint64_t generation_ = 0;  // bumped by start(): batches of an older epoch are dropped
  EpochPlan plan_;
  std::int64_t claimed_ = 0, returned_ = 0;  // batches since start()
  std::map<std::int64_t, Slot> ready_;
  std::int64_t seen_ = 0, bad_ = 0, cpu_ = 0;
  std::string first_error_;
  std::vector<std::thread> threads_;
};

}  // namespace frugal

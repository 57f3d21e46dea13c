// The one batch engine under every BatchSource: an ordered prefetch queue filled by worker
// threads, start/next with resume positions, and the bad-image limit. A source only BUILDS a batch
// from its sample indices (the CPU Loader by decoding on the CPU, the GpuLoader with nvJPEG and a
// CUDA kernel); which samples, in which order, and what is handed out when is decided here and in
// sampler.h. A batch is a pure function of (seed, epoch, its samples), so the thread count never
// changes what comes out.
//
// Torch-free: the batch a builder makes is a template parameter (src/loader/batch_queue.h holds the
// tensors), so that these threads run under ThreadSanitizer in the torch-free unit tests
// (scripts/sanitize.sh) with the code the loaders run.
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
#include <utility>
#include <vector>

#include "frugal/dataset/dataset.h"
#include "frugal/dataset/sampler.h"
#include "frugal/util/error.h"

namespace frugal {

// What a builder met making one batch: the part every batch type has (it derives from this).
struct BatchTally {
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

// Positive batch and image sizes and a valid shard, else Error(usage) naming `who`; workers and
// prefetch_batches raised to at least 1.
LoaderOptions checked_loader_options(const std::string& who, LoaderOptions options);

// One rule for the memory of every loader, whatever command made it: Error(usage) for workers
// outside [1, kMaxWorkers]; Error(budget) when one image of image_size^2 x channels is past what
// the decoders count in an int, or when the batches a loader may hold at once (prefetch_batches +
// workers + 2 of batch_size images: the CPU Loader's pool) and each worker's scratch images (a few
// output-sized images) need more than half of this machine's RAM. The message names the workers,
// batch size and image size that fit. The loaders call it before starting a thread.
void check_loader_memory(const LoaderOptions& options, int channels);

// Error(invalid) naming the dataset once `bad` undecodable images of the `seen` so far are over
// max_bad_fraction: as soon as the epoch (`epoch_total` samples for this rank) can no longer end
// below it, or at its end (`epoch_done`).
void check_bad_fraction(const Dataset& data, std::int64_t bad, std::int64_t seen, std::int64_t epoch_total,
                        bool epoch_done, const std::string& first_error);

// Built: a BatchTally with `std::int64_t size() const` (the images it holds), movable and
// default-constructible.
template <class Built>
class PrefetchQueue {
 public:
  using Build = std::function<Built(const BatchJob&)>;
  struct Handed {
    Built batch;
    std::int64_t epoch = 0;
    std::int64_t position = 0;  // EpochPlan::position_after this batch
  };

  // `who` names the source in usage errors ("Loader", "GpuLoader"). Each of options.workers
  // threads calls make_worker() once and builds all its batches with what it returns, so that
  // per-thread state (scratch images, a CUDA stream and decoder) lives and dies on its thread.
  // The threads start here: whatever make_worker and its builders use must outlive the queue.
  PrefetchQueue(std::string who, std::shared_ptr<const Dataset> data, const LoaderOptions& options,
                std::function<Build()> make_worker)
      : who_(std::move(who)),
        data_(std::move(data)),
        opt_(checked_loader_options(who_, options)),
        make_worker_(std::move(make_worker)) {
    if (!data_) fail(ErrorKind::usage, who_, "a dataset", "none", "");
    check_loader_memory(opt_, data_->channels());
    for (int i = 0; i < opt_.workers; ++i) threads_.emplace_back([this] { worker(); });
  }
  ~PrefetchQueue() {  // stops and joins the workers (a batch being built is finished first)
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  PrefetchQueue(const PrefetchQueue&) = delete;
  PrefetchQueue& operator=(const PrefetchQueue&) = delete;

  // BatchSource's contract (include/frugal/loader/loader.h): start() drops whatever an earlier
  // start() left in flight; next() hands the batches out in order, rethrows a builder's error,
  // enforces max_bad_fraction, and in one process skips a batch whose every image was bad.
  void start(std::int64_t epoch, std::int64_t position) {
    EpochPlan plan = EpochPlan::make(data_->size(), opt_, epoch, position, who_, data_->io_groups());
    std::lock_guard<std::mutex> lock(mu_);
    ++generation_;
    ready_.clear();
    plan_ = std::move(plan);
    claimed_ = returned_ = 0;
    seen_ = bad_ = cpu_ = 0;
    first_error_.clear();
    active_ = true;
    work_cv_.notify_all();
  }

  std::optional<Handed> next() {
    for (;;) {
      std::unique_lock<std::mutex> lock(mu_);
      if (!active_) fail(ErrorKind::usage, who_ + "::next", "start(epoch) first", "a loader that was not started", "");
      if (returned_ >= plan_.batches) return std::nullopt;
      const std::int64_t k = returned_;
      ready_cv_.wait(lock, [&] { return ready_.count(k) > 0; });
      Slot slot = std::move(ready_[k]);
      ready_.erase(k);
      ++returned_;
      work_cv_.notify_all();
      if (slot.error) std::rethrow_exception(slot.error);
      const Built& r = slot.batch;
      seen_ += r.seen;
      bad_ += r.bad;
      cpu_ += r.cpu_decoded;
      if (first_error_.empty()) first_error_ = r.first_error;
      if (bad_ > 0 && !opt_.count_bad_only)
        check_bad_fraction(*data_, bad_, seen_, plan_.rank_samples(), returned_ == plan_.batches, first_error_);
      // Every image of this batch was bad: one process skips it; ranks must stay in step.
      if (r.size() == 0 && opt_.shard.world == 1) continue;
      return Handed{std::move(slot.batch), plan_.epoch, plan_.position_after(k)};
    }
  }

  std::int64_t batches_per_epoch() const { return epoch_batches(data_->size(), opt_); }
  std::uint64_t samples_seen() const { return counted(seen_); }
  std::uint64_t samples_bad() const { return counted(bad_); }
  std::uint64_t cpu_decoded() const { return counted(cpu_); }  // BatchTally::cpu_decoded since start()

 private:
  struct Slot {
    Built batch;
    std::exception_ptr error;  // anything but a bad image: rethrown by next()
  };

  std::uint64_t counted(const std::int64_t& n) const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<std::uint64_t>(n);
  }

  void worker() {
    Build build = make_worker_();
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_cv_.wait(lock, [&] {
        return stop_ || (active_ && claimed_ < plan_.batches && claimed_ < returned_ + opt_.prefetch_batches);
      });
      if (stop_) return;
      BatchJob job;
      job.index = claimed_++;
      job.epoch = plan_.epoch;
      job.samples = plan_.samples(job.index);
      const std::uint64_t gen = generation_;
      lock.unlock();
      Slot slot;
      try {
        slot.batch = build(job);
      } catch (...) {
        slot.error = std::current_exception();
      }
      lock.lock();
      if (gen == generation_) {  // else start() was called since: a batch of the older epoch
        ready_[job.index] = std::move(slot);
        ready_cv_.notify_all();
      }
    }
  }

  const std::string who_;
  const std::shared_ptr<const Dataset> data_;
  const LoaderOptions opt_;
  const std::function<Build()> make_worker_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_, ready_cv_;
  bool stop_ = false, active_ = false;
  std::uint64_t generation_ = 0;  // bumped by start(): batches of an older epoch are dropped
  EpochPlan plan_;
  std::int64_t claimed_ = 0, returned_ = 0;  // batches since start()
  std::map<std::int64_t, Slot> ready_;
  std::int64_t seen_ = 0, bad_ = 0, cpu_ = 0;
  std::string first_error_;
  std::vector<std::thread> threads_;  // last: started when everything above is set
};

}  // namespace frugal

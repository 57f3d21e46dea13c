#include "data/batch_queue.h"

#include <unistd.h>

#include <climits>
#include <cmath>
#include <sstream>

#include "frugal/util/units.h"

namespace frugal {
namespace {
std::string percent(double f) {
  std::ostringstream s;
  s << f * 100 << "%";
  return s.str();
}
}  // namespace

bool BuiltBatch::count_bad(const Dataset& data, std::size_t idx, const Error& e) {
  if (e.kind() != ErrorKind::invalid && e.kind() != ErrorKind::unsupported) return false;
  ++bad;
  if (first_error.empty()) first_error = e.what();
  data.record_bad(idx, e.what());
  return true;
}

namespace {

std::uint64_t physical_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
}

// Per worker, beside the batch it builds: its output image and its scratch (a decoded crop kept at
// most about twice the output's side by the JPEG and PNG region decoders, and a resize buffer).
constexpr double kScratchImagesPerWorker = 6;

}  // namespace

void check_loader_memory(const LoaderOptions& o, int channels) {
  if (o.workers < 1 || o.workers > kMaxWorkers)
    fail(ErrorKind::usage, "{workers}", "from 1 to " + std::to_string(kMaxWorkers) + " decode threads",
         std::to_string(o.workers), "");
  const double S = std::max(1, o.image_size), C = std::max(1, channels), B = std::max(1, o.batch_size);
  const double W = o.workers, image = S * S * C;
  const double held = std::max(1, o.prefetch_batches) + W + 2;  // batches that can exist at once
  const std::uint64_t ram = physical_memory();
  const double have = static_cast<double>(ram) / 2;  // the rest: the model, the archive's pages, the system
  const double need = image * (held * B + kScratchImagesPerWorker * W);
  const bool too_many_elements = image > static_cast<double>(INT_MAX);
  if (!too_many_elements && (ram == 0 || need <= have)) return;
  // What fits, each with the other two as given.
  const double side_fit = std::min(std::sqrt(have / (C * (held * B + kScratchImagesPerWorker * W))),
                                   std::sqrt(static_cast<double>(INT_MAX) / C));
  const double batch_fit = std::floor((have / image - kScratchImagesPerWorker * W) / held);
  const double workers_fit = std::floor((have / image - (held - W) * B) / (B + kScratchImagesPerWorker));
  std::string fix = "use {image_size} " + std::to_string(static_cast<long long>(side_fit)) + " or less";
  if (!too_many_elements && batch_fit >= 1)
    fix += ", {batch_size} " + std::to_string(static_cast<long long>(batch_fit)) + " or less";
  if (!too_many_elements && workers_fit >= 1 && workers_fit < W)
    fix += ", or {workers} " + std::to_string(static_cast<long long>(workers_fit)) + " or less";
  const std::string what = "image size " + std::to_string(o.image_size) + ", batch size " +
                           std::to_string(o.batch_size) + ", " + std::to_string(o.workers) + " workers";
  if (too_many_elements)
    fail(ErrorKind::budget, what, "images of at most 2^31 bytes (" + std::to_string(channels) + " channels)",
         "one of " + format_size(static_cast<std::uint64_t>(std::min(image, 1.8e19))), fix + "; nothing was changed");
  fail(ErrorKind::budget, what,
       "the loader's batches within half of the " + format_size(ram) + " of RAM (" +
           std::to_string(static_cast<long long>(held)) + " batches at once: prefetched, one per worker, two held)",
       format_size(static_cast<std::uint64_t>(std::min(need, 1.8e19))) + " needed", fix + "; nothing was changed");
}

LoaderOptions checked_loader_options(const std::string& who, LoaderOptions o) {
  if (o.batch_size <= 0 || o.image_size <= 0)
    fail(ErrorKind::usage, who, "a positive batch size and image size",
         std::to_string(o.batch_size) + " and " + std::to_string(o.image_size), "");
  if (o.shard.world < 1 || o.shard.rank < 0 || o.shard.rank >= o.shard.world)
    fail(ErrorKind::usage, who, "a rank in [0, world) of a world of at least 1",
         "rank " + std::to_string(o.shard.rank) + " of " + std::to_string(o.shard.world), "");
  o.workers = std::max(1, o.workers);
  o.prefetch_batches = std::max(1, o.prefetch_batches);
  return o;
}

BatchQueue::BatchQueue(std::string who, std::shared_ptr<const Dataset> data, const LoaderOptions& options,
                       std::function<BuildBatch()> make_worker)
    : who_(std::move(who)),
      data_(std::move(data)),
      opt_(checked_loader_options(who_, options)),
      make_worker_(std::move(make_worker)) {
  if (!data_) fail(ErrorKind::usage, who_, "a dataset", "none", "");
  check_loader_memory(opt_, data_->channels());
  for (int i = 0; i < opt_.workers; ++i) threads_.emplace_back([this] { worker(); });
}

BatchQueue::~BatchQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void BatchQueue::worker() {
  BuildBatch build = make_worker_();
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
    if (gen == generation_) {
      ready_[job.index] = std::move(slot);
      ready_cv_.notify_all();
    }
  }
}

std::int64_t BatchQueue::batches_per_epoch() const { return epoch_batches(data_->size(), opt_); }

void BatchQueue::start(std::int64_t epoch, std::int64_t position) {
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

std::optional<Batch> BatchQueue::next() {
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
    BuiltBatch& r = slot.batch;
    seen_ += r.seen;
    bad_ += r.bad;
    cpu_ += r.cpu_decoded;
    if (first_error_.empty()) first_error_ = r.first_error;
    // Over the limit once the epoch can no longer end below it, or at its end.
    const double limit = data_->options().max_bad_fraction;
    const std::int64_t epoch_total = plan_.rank_samples();
    if (bad_ > 0 && (bad_ > limit * epoch_total || (returned_ == plan_.batches && bad_ > limit * seen_)))
      fail(ErrorKind::invalid, data_->path().string(),
           "at most " + percent(limit) + " undecodable images ({max_bad_fraction})",
           std::to_string(bad_) + " of " + std::to_string(seen_) + " seen failed, e.g. " + first_error_,
           "remove or replace the bad files, or raise {max_bad_fraction}");
    // Every image of this batch was bad: one process skips it; ranks must stay in step.
    if (r.images.size(0) == 0 && opt_.shard.world == 1) continue;
    Batch b;
    b.images = std::move(r.images);
    b.labels = std::move(r.labels);
    b.epoch = plan_.epoch;
    b.position = plan_.position_after(k);
    return b;
  }
}

std::uint64_t BatchQueue::samples_seen() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<std::uint64_t>(seen_);
}

std::uint64_t BatchQueue::samples_bad() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<std::uint64_t>(bad_);
}

std::uint64_t BatchQueue::cpu_decoded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<std::uint64_t>(cpu_);
}

}  // namespace frugal

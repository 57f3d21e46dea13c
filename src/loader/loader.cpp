// The CPU Loader: batches decoded and transformed on the CPU by the BatchQueue's workers.
#include <atomic>
#include <mutex>
#include <vector>

#include "loader/batch_queue.h"
#include "frugal/loader/loader.h"
#include "frugal/util/error.h"

namespace frugal {
struct Loader::State {
  std::shared_ptr<const Dataset> data;
  TransformOptions transform;
  std::uint64_t seed = 0;
  bool pin = false;
  // Image buffers of earlier batches, reused once nobody else holds them (take_buffer).
  mutable std::mutex pool_mu;
  mutable std::vector<torch::Tensor> pool;
  std::size_t pool_cap = 0;
  std::unique_ptr<BatchQueue> queue;  // last: its workers stop before the rest goes

  BuiltBatch build(const BatchJob& job, Image& scratch, Image& out) const;
  torch::Tensor take_buffer(std::int64_t n, std::int64_t C, std::int64_t S) const;
};

// Why a pool: a batch's images (9.6 MB at 64 x 3 x 224 x 224) are allocated on a worker thread and
// freed on the consumer's, back into the worker's malloc arena; glibc unmaps an arena heap (64 MB)
// once all of it is free, so the next batches wrote into freshly mapped pages: 280k page faults in
// 4 s, 7-9% of the photo loader's CPU time in the kernel (perf, `frugal-torch bench loader`).
// A buffer is reused only when the pool's reference is the last one to the tensor and to its
// storage (a narrowed batch is a view): the consumer is done with it, and nobody can take a new
// reference. The acquire fence pairs with the consumer's releasing decrement, so its last reads
// happen before the worker writes. Pinned batches are not pooled: an asynchronous copy to the GPU
// may still read one after its last reference is gone (the CUDA host allocator tracks that).
torch::Tensor Loader::State::take_buffer(std::int64_t n, std::int64_t C, std::int64_t S) const {
  auto options = torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(pin);
  if (pin) return torch::empty({n, C, S, S}, options);
  std::lock_guard<std::mutex> lock(pool_mu);
  for (const torch::Tensor& t : pool) {
    if (t.use_count() == 1 && t.storage().use_count() == 1 && t.size(0) == n && t.size(1) == C && t.size(2) == S) {
      std::atomic_thread_fence(std::memory_order_acquire);
      return t;
    }
  }
  auto t = torch::empty({n, C, S, S}, options);
  if (pool.size() < pool_cap) pool.push_back(t);  // beyond the cap (all in use): not kept
  return t;
}

BuiltBatch Loader::State::build(const BatchJob& job, Image& scratch, Image& out) const {
  const int S = transform.image_size, C = data->channels();
  const auto n = static_cast<std::int64_t>(job.samples.size());
  BuiltBatch r;
  r.images = take_buffer(n, C, S);
  r.labels = empty_labels(*data, n);
  std::uint8_t* dst = r.images.data_ptr<std::uint8_t>();
  std::int64_t kept = 0;
  const std::uint64_t epoch_seed = mix_seed(seed, static_cast<std::uint64_t>(job.epoch));
  for (std::size_t idx : job.samples) {
    ++r.seen;
    try {
      data->load(idx, transform, mix_seed(epoch_seed, idx), scratch, out);
    } catch (const Error& e) {
      if (!r.count_bad(*data, idx, e)) throw;
      continue;
    }
    to_planar(out, dst + kept * C * S * S);  // (H, W, C) -> (C, H, W), vectorised
    set_label(r.labels, kept++, *data, idx);
    r.samples.push_back(static_cast<std::int64_t>(idx));
  }
  if (kept < n) {
    r.images = r.images.narrow(0, 0, kept);
    r.labels = r.labels.narrow(0, 0, kept);
  }
  return r;
}

Loader::Loader(std::shared_ptr<const Dataset> dataset, LoaderOptions options) : state_(std::make_unique<State>()) {
  State& s = *state_;
  if (!dataset) fail(ErrorKind::usage, "Loader", "a dataset", "none", "");
  options = checked_loader_options("Loader", options);
  s.data = dataset;
  s.seed = options.seed;
  s.transform.image_size = options.image_size;
  s.transform.train = options.train;
  s.transform.augment = options.augment;
  s.transform.small = s.data->native_size() <= 64;
  s.pin = options.pin_memory && torch::cuda::is_available();
  // The batches that can exist at once: those prefetched, one being built per worker, the one the
  // consumer holds, and one it may still hold while taking the next.
  s.pool_cap = static_cast<std::size_t>(std::max(1, options.prefetch_batches) + std::max(1, options.workers) + 2);
  s.queue = std::make_unique<BatchQueue>("Loader", std::move(dataset), options, [&s]() -> BuildBatch {
    // Each worker's own scratch images, reused from batch to batch.
    auto images = std::make_shared<std::pair<Image, Image>>();
    return [&s, images](const BatchJob& job) { return s.build(job, images->first, images->second); };
  });
}

Loader::~Loader() = default;

void Loader::start(std::int64_t epoch, std::int64_t position) { state_->queue->start(epoch, position); }
std::optional<Batch> Loader::next() { return state_->queue->next_batch(); }
std::int64_t Loader::batches_per_epoch() const { return state_->queue->batches_per_epoch(); }
std::uint64_t Loader::samples_seen() const { return state_->queue->samples_seen(); }
std::uint64_t Loader::samples_bad() const { return state_->queue->samples_bad(); }

struct LabelLoader::State {
  std::unique_ptr<BatchQueue> queue;
};

LabelLoader::LabelLoader(std::shared_ptr<const Dataset> dataset, LoaderOptions options)
    : state_(std::make_unique<State>()) {
  if (!dataset) fail(ErrorKind::usage, "LabelLoader", "a dataset", "none", "");
  options.workers = 1;  // a label is a lookup
  options.pin_memory = false;
  const Dataset* data = dataset.get();  // the queue holds the dataset as long as its worker runs
  state_->queue = std::make_unique<BatchQueue>("LabelLoader", std::move(dataset), options, [data]() -> BuildBatch {
    return [data](const BatchJob& job) {
      BuiltBatch r;
      const auto n = static_cast<std::int64_t>(job.samples.size());
      r.images = torch::empty({n, 0}, torch::kUInt8);
      r.labels = empty_labels(*data, n);
      for (std::size_t i = 0; i < job.samples.size(); ++i) {
        set_label(r.labels, static_cast<std::int64_t>(i), *data, job.samples[i]);
        r.samples.push_back(static_cast<std::int64_t>(job.samples[i]));
      }
      r.seen = n;
      return r;
    };
  });
}

LabelLoader::~LabelLoader() = default;

void LabelLoader::start(std::int64_t epoch, std::int64_t position) { state_->queue->start(epoch, position); }
std::optional<Batch> LabelLoader::next() { return state_->queue->next_batch(); }
std::int64_t LabelLoader::batches_per_epoch() const { return state_->queue->batches_per_epoch(); }
std::uint64_t LabelLoader::samples_seen() const { return state_->queue->samples_seen(); }
std::uint64_t LabelLoader::samples_bad() const { return state_->queue->samples_bad(); }

namespace {

// (1, C, 1, 1) float32 statistics on `device`, made once: a fresh torch::tensor(...).to(cuda) per
// micro-step is a synchronous copy from pageable memory, a host stall on every step. Leaked on
// purpose: CUDA tensors must not be freed by static destructors after the driver shut down.
torch::Tensor on_device(const std::vector<float>& values, std::int64_t C, const torch::Device& device) {
  struct Entry {
    torch::Device device;
    std::vector<float> values;
    torch::Tensor tensor;
  };
  static std::mutex mu;
  static auto* cache = new std::vector<Entry>();
  std::lock_guard<std::mutex> lock(mu);
  for (const Entry& e : *cache)
    if (e.device == device && e.values == values) return e.tensor;
  auto t = torch::tensor(values, torch::kFloat32).view({1, C, 1, 1}).to(device);
  if (cache->size() >= 16) cache->erase(cache->begin());  // a run uses one or two
  cache->push_back({device, values, t});
  return t;
}

}  // namespace

std::vector<float> channel_statistics(const std::vector<float>& values, std::int64_t channels, const char* what) {
  if (static_cast<std::int64_t>(values.size()) == channels) return values;
  if (channels == 1 && !values.empty()) {
    float m = 0;
    for (float f : values) m += f;
    return std::vector<float>(1, m / static_cast<float>(values.size()));
  }
  if (values.size() == 1 && channels > 0) return std::vector<float>(static_cast<std::size_t>(channels), values.front());
  fail(ErrorKind::usage, "normalize", std::to_string(channels) + " " + what + " values", std::to_string(values.size()),
       "");
}

torch::Tensor normalize(const torch::Tensor& images_u8, const std::vector<float>& mean, const std::vector<float>& std) {
  TORCH_CHECK(images_u8.dim() == 4, "normalize: expected (B, C, H, W), got ", images_u8.sizes());
  const std::int64_t C = images_u8.size(1);
  auto stat = [&](const std::vector<float>& v, const char* what) {
    return on_device(channel_statistics(v, C, what), C, images_u8.device());
  };
  torch::Tensor m = stat(mean, "mean"), s = stat(std, "std");
  return images_u8.to(torch::kFloat32).div_(255.0f).sub_(m).div_(s);
}

}  // namespace frugal

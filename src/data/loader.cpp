// Decode threads fill whole batches; next() hands them out in order. A batch is a pure function
// of (seed, epoch, its position), so the thread count never changes what comes out.
#include <condition_variable>
#include <map>
#include <sstream>
#include <mutex>
#include <thread>

#include "frugal/data.h"
#include "frugal/error.h"

namespace frugal {

std::int64_t batch_count(std::int64_t samples, std::int64_t batch, bool drop_last) {
  return drop_last ? samples / batch : (samples + batch - 1) / batch;
}

std::vector<std::size_t> epoch_order(std::size_t n, std::uint64_t seed, std::int64_t epoch, bool shuffle) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  if (!shuffle) return order;
  Rng rng(mix_seed(mix_seed(seed, 0x5eed0f0bde7ULL), static_cast<std::uint64_t>(epoch)));
  for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[static_cast<std::size_t>(rng.randint(0, i))]);
  return order;
}

namespace {
std::string percent(double f) {
  std::ostringstream s;
  s << f * 100 << "%";
  return s.str();
}

struct Result {
  torch::Tensor images, labels;
  std::int64_t seen = 0, bad = 0;
  std::string first_error;
  std::exception_ptr error;  // anything but a bad image: rethrown by next()
};
}  // namespace

struct Loader::State {
  std::shared_ptr<const Dataset> data;
  LoaderOptions opt;
  TransformOptions transform;
  bool pin = false;

  std::mutex mu;
  std::condition_variable work_cv, ready_cv;
  bool stop = false;
  std::uint64_t generation = 0;
  bool active = false;
  std::int64_t epoch = 0, start = 0, end = 0;  // positions [start, end) of this epoch's order
  std::vector<std::size_t> order;
  std::int64_t claimed = 0, returned = 0, batches = 0;  // batch counts since start
  std::map<std::int64_t, Result> ready;
  std::int64_t seen = 0, bad = 0;
  std::string first_error;
  std::vector<std::thread> threads;

  void worker();
  Result build(std::int64_t epoch, const std::vector<std::size_t>& samples);
};

Result Loader::State::build(std::int64_t ep, const std::vector<std::size_t>& samples) {
  const int S = transform.image_size, C = data->channels();
  Result r;
  auto opts = torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(pin);
  r.images = torch::empty({static_cast<std::int64_t>(samples.size()), C, S, S}, opts);
  r.labels = torch::empty({static_cast<std::int64_t>(samples.size())}, torch::kInt64);
  std::uint8_t* dst = r.images.data_ptr<std::uint8_t>();
  std::int64_t* lab = r.labels.data_ptr<std::int64_t>();
  thread_local Image scratch, out;
  std::int64_t kept = 0;
  const std::uint64_t epoch_seed = mix_seed(opt.seed, static_cast<std::uint64_t>(ep));
  for (std::size_t idx : samples) {
    ++r.seen;
    try {
      data->load(idx, transform, mix_seed(epoch_seed, idx), scratch, out);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::invalid && e.kind() != ErrorKind::unsupported) throw;
      ++r.bad;
      if (r.first_error.empty()) r.first_error = e.what();
      data->record_bad(idx, e.what());
      continue;
    }
    to_planar(out, dst + kept * C * S * S);  // (H, W, C) -> (C, H, W), vectorised
    lab[kept++] = data->label(idx);
  }
  if (kept < static_cast<std::int64_t>(samples.size())) {
    r.images = r.images.narrow(0, 0, kept);
    r.labels = r.labels.narrow(0, 0, kept);
  }
  return r;
}

void Loader::State::worker() {
  std::unique_lock<std::mutex> lock(mu);
  for (;;) {
    work_cv.wait(lock, [&] {
      return stop || (active && claimed < batches && claimed < returned + opt.prefetch_batches);
    });
    if (stop) return;
    std::int64_t k = claimed++;
    std::uint64_t gen = generation;
    std::int64_t ep = epoch;
    std::int64_t from = start + k * opt.batch_size, to = std::min<std::int64_t>(from + opt.batch_size, end);
    std::vector<std::size_t> samples(order.begin() + from, order.begin() + to);
    lock.unlock();
    Result r;
    try {
      r = build(ep, samples);
    } catch (...) {
      r.error = std::current_exception();
    }
    lock.lock();
    if (gen == generation) {
      ready[k] = std::move(r);
      ready_cv.notify_all();
    }
  }
}

Loader::Loader(std::shared_ptr<const Dataset> dataset, LoaderOptions options) : state_(std::make_unique<State>()) {
  State& s = *state_;
  if (!dataset) fail(ErrorKind::usage, "Loader", "a dataset", "none", "");
  if (options.batch_size <= 0 || options.image_size <= 0)
    fail(ErrorKind::usage, "Loader", "a positive batch size and image size",
         std::to_string(options.batch_size) + " and " + std::to_string(options.image_size), "");
  options.workers = std::max(1, options.workers);
  options.prefetch_batches = std::max(1, options.prefetch_batches);
  s.data = std::move(dataset);
  s.opt = options;
  s.transform.image_size = options.image_size;
  s.transform.train = options.train;
  s.transform.small = s.data->native_size() <= 64;
  s.pin = options.pin_memory && torch::cuda::is_available();
  for (int i = 0; i < options.workers; ++i) s.threads.emplace_back([&s] { s.worker(); });
}

Loader::~Loader() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stop = true;
  }
  state_->work_cv.notify_all();
  for (auto& t : state_->threads) t.join();
}

std::int64_t Loader::batches_per_epoch() const {
  std::int64_t n = static_cast<std::int64_t>(state_->data->size()), b = state_->opt.batch_size;
  return batch_count(n, b, state_->opt.drop_last);
}

void Loader::start(std::int64_t epoch, std::int64_t position) {
  State& s = *state_;
  std::int64_t n = static_cast<std::int64_t>(s.data->size());
  if (position < 0 || position > n)
    fail(ErrorKind::usage, "Loader::start", "a position in [0, " + std::to_string(n) + "]",
         std::to_string(position), "");
  auto order = epoch_order(s.data->size(), s.opt.seed, epoch, s.opt.shuffle);
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.generation;
  s.ready.clear();
  s.order = std::move(order);
  s.epoch = epoch;
  s.start = position;
  std::int64_t left = n - position;
  s.batches = batch_count(left, s.opt.batch_size, s.opt.drop_last);
  s.end = std::min(n, position + s.batches * s.opt.batch_size);
  s.claimed = s.returned = 0;
  s.seen = s.bad = 0;
  s.first_error.clear();
  s.active = true;
  s.work_cv.notify_all();
}

std::optional<Batch> Loader::next() {
  State& s = *state_;
  for (;;) {
    std::unique_lock<std::mutex> lock(s.mu);
    if (!s.active)
      fail(ErrorKind::usage, "Loader::next", "start(epoch) first", "a loader that was not started", "");
    if (s.returned >= s.batches) return std::nullopt;
    std::int64_t k = s.returned;
    s.ready_cv.wait(lock, [&] { return s.ready.count(k) > 0; });
    Result r = std::move(s.ready[k]);
    s.ready.erase(k);
    ++s.returned;
    s.work_cv.notify_all();
    if (r.error) std::rethrow_exception(r.error);
    s.seen += r.seen;
    s.bad += r.bad;
    if (s.first_error.empty()) s.first_error = r.first_error;
    // Over the limit once the epoch can no longer end below it, or at its end.
    double limit = s.data->options().max_bad_fraction;
    std::int64_t epoch_total = s.end - s.start;
    if (s.bad > 0 && (s.bad > limit * epoch_total || (s.returned == s.batches && s.bad > limit * s.seen)))
      fail(ErrorKind::invalid, s.data->path().string(),
           "at most " + percent(limit) + " undecodable images (--max-bad-fraction)",
           std::to_string(s.bad) + " of " + std::to_string(s.seen) + " seen failed, e.g. " + s.first_error,
           "remove or replace the bad files, or raise --max-bad-fraction");
    if (r.images.size(0) == 0) continue;  // every image of this batch was bad
    Batch b;
    b.images = std::move(r.images);
    b.labels = std::move(r.labels);
    b.epoch = s.epoch;
    b.position = s.start + s.returned * s.opt.batch_size;
    if (b.position > s.end) b.position = s.end;
    return b;
  }
}

std::uint64_t Loader::samples_seen() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return static_cast<std::uint64_t>(state_->seen);
}

std::uint64_t Loader::samples_bad() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return static_cast<std::uint64_t>(state_->bad);
}

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

torch::Tensor normalize(const torch::Tensor& images_u8, const std::vector<float>& mean, const std::vector<float>& std) {
  TORCH_CHECK(images_u8.dim() == 4, "normalize: expected (B, C, H, W), got ", images_u8.sizes());
  const std::int64_t C = images_u8.size(1);
  auto stat = [&](const std::vector<float>& v, const char* what) {
    std::vector<float> x = v;
    if (static_cast<std::int64_t>(x.size()) != C) {
      // Gray images with RGB statistics: the mean of the three, as a gray photo would have.
      if (C == 1 && !x.empty()) {
        float m = 0;
        for (float f : x) m += f;
        x = {m / static_cast<float>(x.size())};
      } else if (x.size() == 1) {
        x.assign(C, x[0]);
      } else {
        fail(ErrorKind::usage, "normalize", std::to_string(C) + " " + what + " values",
             std::to_string(v.size()), "");
      }
    }
    return on_device(x, C, images_u8.device());
  };
  torch::Tensor m = stat(mean, "mean"), s = stat(std, "std");
  return images_u8.to(torch::kFloat32).div_(255.0f).sub_(m).div_(s);
}

}  // namespace frugal

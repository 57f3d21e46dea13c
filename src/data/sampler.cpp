#include "data/sampler.h"

#include <algorithm>

#include "frugal/error.h"
#include "frugal/image.h"

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

std::int64_t global_batch_size(const LoaderOptions& o) {
  return static_cast<std::int64_t>(o.batch_size) * o.shard.world;
}

std::int64_t epoch_batches(std::size_t n, const LoaderOptions& o) {
  return batch_count(static_cast<std::int64_t>(n), global_batch_size(o), o.drop_last);
}

EpochPlan EpochPlan::make(std::size_t size, const LoaderOptions& o, std::int64_t epoch, std::int64_t position,
                          const std::string& who) {
  const auto n = static_cast<std::int64_t>(size);
  if (position < 0 || position > n)
    fail(ErrorKind::usage, who + "::start", "a position in [0, " + std::to_string(n) + "]", std::to_string(position), "");
  EpochPlan p;
  p.epoch = epoch;
  p.order = epoch_order(size, o.seed, epoch, o.shuffle);
  p.batch = o.batch_size;
  p.global_batch = global_batch_size(o);
  p.shard = o.shard;
  p.start = position;
  p.batches = batch_count(n - position, p.global_batch, o.drop_last);
  p.end = std::min(n, position + p.batches * p.global_batch);
  return p;
}

std::pair<std::int64_t, std::int64_t> EpochPlan::slice(std::int64_t k) const {
  const std::int64_t a = start + k * global_batch, m = std::min(a + global_batch, end) - a;
  const std::int64_t r = shard.rank, w = shard.world;
  return {a + r * m / w, a + (r + 1) * m / w};
}

std::vector<std::size_t> EpochPlan::samples(std::int64_t k) const {
  auto [from, to] = slice(k);
  return {order.begin() + from, order.begin() + to};
}

std::int64_t EpochPlan::position_after(std::int64_t k) const { return std::min(start + (k + 1) * global_batch, end); }

std::int64_t EpochPlan::rank_samples() const {
  if (batches == 0) return 0;
  auto [from, to] = slice(batches - 1);  // only the last global batch can be partial
  return (batches - 1) * batch + (to - from);
}

}  // namespace frugal

#include "frugal/dataset/sampler.h"

#include <algorithm>
#include <cmath>

#include "frugal/util/error.h"
#include "frugal/image/image.h"

namespace frugal {

std::int64_t batch_count(std::int64_t samples, std::int64_t batch, bool drop_last) {
  return drop_last ? samples / batch : (samples + batch - 1) / batch;
}

std::vector<std::size_t> epoch_order(std::size_t n, std::uint64_t seed, std::int64_t epoch, bool shuffle) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  if (!shuffle) return order;
  Rng rng(mix_seed(mix_seed(seed, 0x5eed0f0bde7ULL), static_cast<std::uint64_t>(epoch)));
  for (std::size_t i = n; i > 1; --i)
    std::swap(order[i - 1], order[static_cast<std::size_t>(rng.randint(0, static_cast<std::int64_t>(i)))]);
  return order;
}

std::vector<std::size_t> epoch_order(std::size_t n, std::uint64_t seed, std::int64_t epoch, bool shuffle,
                                     const IoGroups& groups) {
  if (!shuffle || groups.empty()) return epoch_order(n, seed, epoch, shuffle);
  if (groups.group.size() != n)
    fail(ErrorKind::usage, "epoch_order", std::to_string(n) + " samples' groups", std::to_string(groups.group.size()),
         "");
  // Samples by group, in index order: the group numbers are the reader's, maybe with gaps (a subset).
  std::vector<std::uint32_t> ids(groups.group);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<std::vector<std::size_t>> members(ids.size());
  for (std::size_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(std::lower_bound(ids.begin(), ids.end(), groups.group[i]) - ids.begin());
    members[k].push_back(i);
  }
  Rng rng(mix_seed(mix_seed(seed, 0x9a7c0e7ULL), static_cast<std::uint64_t>(epoch)));
  std::vector<std::size_t> group_order(ids.size());
  for (std::size_t k = 0; k < group_order.size(); ++k) group_order[k] = k;
  auto shuffle_range = [&rng](std::vector<std::size_t>& v, std::size_t from) {
    for (std::size_t i = v.size() - from; i > 1; --i)
      std::swap(v[from + i - 1], v[from + static_cast<std::size_t>(rng.randint(0, static_cast<std::int64_t>(i)))]);
  };
  shuffle_range(group_order, 0);
  std::vector<std::size_t> order;
  order.reserve(n);
  std::size_t window_start = 0;
  std::uint64_t window_bytes = 0;
  for (std::size_t k = 0; k < group_order.size(); ++k) {
    const std::uint32_t id = ids[group_order[k]];
    const std::uint64_t bytes = id < groups.bytes.size() ? groups.bytes[id] : 0;
    if (order.size() > window_start && window_bytes + bytes > kShuffleWindowBytes) {
      shuffle_range(order, window_start);
      window_start = order.size();
      window_bytes = 0;
    }
    window_bytes += bytes;
    const auto& m = members[group_order[k]];
    order.insert(order.end(), m.begin(), m.end());
  }
  shuffle_range(order, window_start);
  return order;
}

std::int64_t global_batch_size(const LoaderOptions& o) {
  return static_cast<std::int64_t>(o.batch_size) * o.shard.world;
}

std::int64_t epoch_batches(std::size_t n, const LoaderOptions& o) {
  return batch_count(static_cast<std::int64_t>(n), global_batch_size(o), o.drop_last);
}

std::vector<std::size_t> weighted_epoch_order(std::size_t n, std::uint64_t seed, std::int64_t epoch,
                                              const std::vector<double>& weights) {
  std::vector<double> cdf(weights.size());
  double sum = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    if (!std::isfinite(weights[i]) || weights[i] < 0)
      fail(ErrorKind::usage, "sample weights", "finite weights >= 0", std::to_string(weights[i]), "");
    sum += weights[i];
    cdf[i] = sum;
  }
  if (weights.size() != n || !(sum > 0))
    fail(ErrorKind::usage, "sample weights", std::to_string(n) + " weights with a positive sum",
         std::to_string(weights.size()) + " summing to " + std::to_string(sum), "");
  Rng rng(mix_seed(mix_seed(seed, 0xba1a9cedULL), static_cast<std::uint64_t>(epoch)));
  std::vector<std::size_t> order(n);
  for (auto& o : order) {
    const double u = rng.uniform() * sum;
    const auto it = std::upper_bound(cdf.begin(), cdf.end(), u);
    o = std::min<std::size_t>(static_cast<std::size_t>(it - cdf.begin()), n - 1);
  }
  return order;
}

EpochPlan EpochPlan::make(std::size_t size, const LoaderOptions& o, std::int64_t epoch, std::int64_t position,
                          const std::string& who) {
  return make(size, o, epoch, position, who, IoGroups{});
}

EpochPlan EpochPlan::make(std::size_t size, const LoaderOptions& o, std::int64_t epoch, std::int64_t position,
                          const std::string& who, const IoGroups& groups) {
  const auto n = static_cast<std::int64_t>(size);
  if (position < 0 || position > n)
    fail(ErrorKind::usage, who + "::start", "a position in [0, " + std::to_string(n) + "]", std::to_string(position),
         "");
  EpochPlan p;
  p.epoch = epoch;
  p.order = !o.sample_weights.empty() ? weighted_epoch_order(size, o.seed, epoch, o.sample_weights)
                                      : epoch_order(size, o.seed, epoch, o.shuffle, groups);
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

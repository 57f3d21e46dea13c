// The torch-free parts of the batch engine (include/frugal/dataset/prefetch_queue.h): the options'
// and memory checks every loader makes, a builder's count of bad images, the bad-image limit.
#include "frugal/dataset/prefetch_queue.h"

#include <unistd.h>

#include <algorithm>
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

bool BatchTally::count_bad(const Dataset& data, std::size_t idx, const Error& e) {
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

void check_bad_fraction(const Dataset& data, std::int64_t bad, std::int64_t seen, std::int64_t epoch_total,
                        bool epoch_done, const std::string& first_error) {
  const double limit = data.options().max_bad_fraction;
  const auto b = static_cast<double>(bad);
  if (b > limit * static_cast<double>(epoch_total) || (epoch_done && b > limit * static_cast<double>(seen)))
    fail(ErrorKind::invalid, data.path().string(),
         "at most " + percent(limit) + " undecodable images ({max_bad_fraction})",
         std::to_string(bad) + " of " + std::to_string(seen) + " seen failed, e.g. " + first_error,
         "remove or replace the bad files, or raise {max_bad_fraction}");
}

}  // namespace frugal

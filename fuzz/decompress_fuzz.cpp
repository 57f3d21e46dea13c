// libFuzzer target for the decoders of compressed tars (decompress.h): any input must decode or
// fail with frugal::Error; never crash, hang, leak or allocate more than the 2 GiB dictionary or
// window the limits allow (libFuzzer's -malloc_limit_mb, set by scripts/fuzz.sh's -rss_limit_mb,
// fails a larger allocation). The format comes from the input's magic bytes; xz when there is none,
// so that most inputs reach the xz decoder's stream and block headers.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "archive/decompress_stream.h"
#include "frugal/archive/decompress.h"
#include "frugal/util/error.h"

namespace {

struct Enough {};  // output past what one input may take in time, not a failure

frugal::FileType type_of(const std::uint8_t* data, std::size_t size) {
  auto starts = [&](const char* magic, std::size_t n) { return size >= n && std::memcmp(data, magic, n) == 0; };
  if (starts("\x1f\x8b", 2)) return frugal::FileType::gzip;
  if (starts("\x28\xb5\x2f\xfd", 4)) return frugal::FileType::zstd;
  if (starts("BZh", 3)) return frugal::FileType::bzip2;
  return frugal::FileType::xz;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr std::uint64_t kMaxOutput = std::uint64_t{32} << 20;
  std::uint64_t out = 0;
  try {
    frugal::decompress_bytes(type_of(data, size), std::span<const std::uint8_t>(data, size), "fuzz",
                             [&](std::span<const std::uint8_t> piece) {
                               out += piece.size();
                               if (out > kMaxOutput) throw Enough{};
                             });
  } catch (const frugal::Error&) {
  } catch (const Enough&) {}
  return 0;
}

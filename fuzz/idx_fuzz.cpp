// libFuzzer target for IDX files (raw or gzipped, images or labels): any input must parse into
// exactly the bytes its header declares, or fail with frugal::Error; never crash, wrap a size, or
// inflate past the declared size (ASan/UBSan and -rss_limit_mb in scripts/fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <span>

#include "archive/mnist_idx.h"
#include "frugal/util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The fourth byte is the IDX dimension count: 3 reads images, anything else labels (which then
  // refuses any count but 1), so both paths see every input shape.
  const std::span<const std::uint8_t> raw(data, size);
  try {
    if (size >= 4 && data[3] == 3) {
      const frugal::IdxImages img = frugal::parse_idx_images(raw, "fuzz-images-idx3-ubyte");
      if (img.pixels.size() != std::uint64_t{img.count} * img.rows * img.cols) __builtin_trap();
    } else {
      (void)frugal::parse_idx_labels(raw, "fuzz-labels-idx1-ubyte");
    }
  } catch (const frugal::Error&) {}
  return 0;
}

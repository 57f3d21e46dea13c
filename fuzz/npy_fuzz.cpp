// libFuzzer target for .npy files (training samples and (N, ...) arrays): any input must parse into
// a header whose data lies inside the input, or fail with frugal::Error; never crash, read out of
// bounds, or let another exception (std::out_of_range...) escape. The reads the dataset does with
// a parsed header (labels via npy_int, images via npy_image, per sample too) run over it.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dataset/npy.h"
#include "frugal/util/error.h"

namespace {

void read_as_dataset_does(const frugal::detail::NpyHeader& h, std::span<const std::uint8_t> b) {
  const std::uint64_t n = h.count();
  if (h.kind == 'i' || h.kind == 'u')
    for (std::uint64_t i = 0; i < n && i < 64; ++i) (void)frugal::detail::npy_int(h, b, i);
  if (h.kind != 'u' || h.item_size != 1) return;
  frugal::Image out;
  try {
    frugal::detail::npy_image(b.subspan(h.data_offset), h.shape, "fuzz.npy", out);  // one-sample file
  } catch (const frugal::Error&) {}
  if (h.shape.size() >= 3 && h.shape[0] > 0) {  // an (N, ...) array: its last sample
    std::vector<std::int64_t> one(h.shape.begin() + 1, h.shape.end());
    std::size_t sample = 1;
    for (auto d : one) sample *= static_cast<std::size_t>(d);
    const std::size_t last = h.data_offset + static_cast<std::size_t>(h.shape[0] - 1) * sample;
    try {
      frugal::detail::npy_image(b.subspan(last, sample), one, "fuzz.npy[N-1]", out);
    } catch (const frugal::Error&) {}
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::uint8_t> b(data, size);
  try {
    auto h = frugal::detail::parse_npy(b, "fuzz.npy");
    // What parse_npy promises: the data the shape needs lies inside the input.
    if (h.data_offset > size || h.count() * static_cast<std::uint64_t>(h.item_size) > size - h.data_offset)
      __builtin_trap();
    read_as_dataset_does(h, b);
  } catch (const frugal::Error&) {}
  return 0;
}

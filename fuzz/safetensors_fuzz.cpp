// libFuzzer target for the safetensors header parser: any input either parses into a header whose
// every tensor lies inside the input with dtype x shape equal to its byte range, or fails with
// frugal::Error; never a crash, a wrapped offset or an unbounded allocation (ASan/UBSan).
#include <cstddef>
#include <cstdint>
#include <string>

#include "frugal/util/checked.h"
#include "frugal/util/error.h"
#include "frugal/checkpoint_files/run_folder.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    auto h = frugal::parse_safetensors_header(data, size, "fuzz.safetensors");
    if (!frugal::range_inside(h.payload_offset(), h.payload_size, size)) __builtin_trap();
    for (const auto& [name, spec] : h.tensors.items()) {
      const auto begin = spec["data_offsets"][0].get<std::uint64_t>();
      const auto end = spec["data_offsets"][1].get<std::uint64_t>();
      if (begin > end || end > h.payload_size) __builtin_trap();
      const std::size_t elem = frugal::safetensors_dtype_size(spec["dtype"].get<std::string>());
      if (!elem) continue;
      unsigned __int128 bytes = elem;
      for (const auto& d : spec["shape"]) bytes *= d.get<std::uint64_t>();
      if (bytes != end - begin) __builtin_trap();
    }
  } catch (const frugal::Error&) {}
  return 0;
}

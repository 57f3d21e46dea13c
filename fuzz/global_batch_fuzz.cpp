// libFuzzer target for the global batch of a checkpoint's "config" metadata (JSON from a
// safetensors header a user did not write): any input gives a number or "unreadable", never an
// exception, and a number is the exact product of its integer batch_size, accum and world_size.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "frugal/training/global_batch.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto j = nlohmann::json::parse(std::string_view(reinterpret_cast<const char*>(data), size), nullptr, false);
  if (j.is_discarded()) return 0;
  const auto g = frugal::global_batch_of(j);  // must not throw: no try
  if (!g || !j.is_object()) return 0;
  auto part = [&](const char* key, std::int64_t absent) {
    return j.contains(key) ? j[key].get<std::int64_t>() : absent;  // integers: global_batch_of checked
  };
  const __int128 exact = static_cast<__int128>(part("batch_size", 0)) * part("accum", 1) * part("world_size", 1);
  if (exact != *g) __builtin_trap();
  return 0;
}

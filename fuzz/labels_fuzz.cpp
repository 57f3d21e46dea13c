// libFuzzer target for labels.csv inside a training archive: any input must give a table of
// normalised paths, or fail with frugal::Error; never crash or let another exception escape.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "dataset/labels_csv.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    auto table =
        frugal::detail::parse_labels_csv(std::string_view(reinterpret_cast<const char*>(data), size), "labels.csv");
    for (const auto& [path, label] : table)
      if (path.empty() || frugal::normalize_relative(path) != path) __builtin_trap();
  } catch (const frugal::Error&) {}
  return 0;
}

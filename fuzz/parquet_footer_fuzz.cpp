// libFuzzer target for the parquet footer's walk (archive/parquet_footer.h): any bytes as a
// footer's Thrift must be walked or refused without reading past them, and a footer the walk lets
// through must be one Arrow parses within the walk's bound. The input is the footer alone, wrapped
// here into "PAR1" + footer + length + "PAR1" and opened as a parquet file (Arrow's parse, where
// the plugin is built). The memory bound is asserted by scripts/fuzz.sh's limits for this target
// (fuzz/parquet_footer.cmake: no allocation over 300 MB, 256 MiB being the walk's bound for a
// whole footer); seeds in fuzz/corpus/parquet_footer/ are footers pyarrow wrote and the crafted
// ones of issue 47, shrunk.
#include <cstddef>
#include <cstdint>
#include <string>

#include "archive/parquet_footer.h"
#include "archive/parquet_plugin.h"
#include "frugal/archive/archive.h"
#include "frugal/util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string footer(reinterpret_cast<const char*>(data), size);
  std::string why;
  const auto census = frugal::walk_parquet_footer(footer, why);
  if (census && census->memory <= frugal::parquet_plugin::kMaxFooterMemory) {
    if (census->footer_bytes != size || census->memory < frugal::parquet_plugin::kFooterStructBytes) __builtin_trap();
  } else if (!census && why.empty()) {
    __builtin_trap();  // refused without saying why
  }
  std::string file = "PAR1" + footer;
  for (int k = 0; k < 4; ++k) file += static_cast<char>((size >> (8 * k)) & 0xff);
  file += "PAR1";
  try {
    auto a = frugal::Archive::open(frugal::memory_byte_source(std::move(file), "fuzz.parquet"), "fuzz.parquet");
    if (!census || census->memory > frugal::parquet_plugin::kMaxFooterMemory) __builtin_trap();  // opened unwalked
  } catch (const frugal::Error&) {}
  return 0;
}

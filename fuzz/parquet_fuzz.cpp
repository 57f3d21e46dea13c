// libFuzzer target for the parquet reader: any input must open and read, or fail with
// frugal::Error; never crash, hang or allocate beyond the reader's bounds (ASan/UBSan in the fuzz
// build, scripts/fuzz.sh). The seed corpus holds files written by pyarrow as datasets writes them.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "frugal/archive/archive.h"
#include "frugal/util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    auto a = frugal::Archive::open(
        frugal::memory_byte_source(std::string(reinterpret_cast<const char*>(data), size), "fuzz.parquet"),
        "fuzz.parquet");
    if (std::string(a->format()) != "parquet") return 0;  // the bytes made a zip or tar: their own targets'
    const frugal::EntryLabels* labels = a->entry_labels();
    if (!labels || labels->label.size() != a->entries().size() || labels->io_group.size() != a->entries().size())
      __builtin_trap();
    std::vector<std::uint8_t> out;
    for (std::size_t i = 0; i < a->entries().size() && i < 64; ++i) {
      a->read(i, out);
      if (out.size() != a->entries()[i].size) __builtin_trap();
    }
  } catch (const frugal::Error&) {}
  return 0;
}

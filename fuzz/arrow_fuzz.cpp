// libFuzzer target for the Arrow IPC reader (.arrow: streams and ARROW1 files): any input must open
// and read, or fail with frugal::Error; never crash, hang or allocate beyond the reader's bounds
// (ASan/UBSan in the fuzz build, scripts/fuzz.sh). The seed corpus holds a stream and a file
// written by pyarrow as datasets writes them. Inputs that do not start as Arrow does are made so
// (the continuation marker, or ARROW1), so that every run reaches the reader.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "frugal/archive/archive.h"
#include "frugal/util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (bytes.compare(0, 4, "\xff\xff\xff\xff") != 0 && bytes.compare(0, 8, std::string("ARROW1\0\0", 8)) != 0)
    bytes = std::string("\xff\xff\xff\xff", 4) + bytes;
  try {
    auto a = frugal::Archive::open(frugal::memory_byte_source(bytes, "fuzz.arrow"), "fuzz.arrow");
    if (std::string(a->format()) != "arrow") return 0;  // sniffed as something else: its own target's
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

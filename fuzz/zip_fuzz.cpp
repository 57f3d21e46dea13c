// libFuzzer target for the zip parser and reader: any input must either open and read, or fail
// with frugal::Error; never crash, hang, leak or allocate without bound (ASan/UBSan in the fuzz
// build, scripts/fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "frugal/archive/archive.h"
#include "frugal/util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  frugal::ArchiveOptions options;
  // One input bit picks legacy-name decoding, so iconv's path is fuzzed too; the byte stays part
  // of the archive (junk before a zip is legal).
  if (size > 0 && (data[0] & 1)) options.name_encoding = "cp437";
  try {
    auto archive = frugal::Archive::open(
        frugal::memory_byte_source(std::string(reinterpret_cast<const char*>(data), size), "fuzz.zip"), "fuzz.zip",
        options);
    std::vector<std::uint8_t> buf;
    const auto& entries = archive->entries();
    for (std::size_t i = 0; i < entries.size() && i < 64; ++i) {
      (void)frugal::entry_problem(entries[i]);
      (void)archive->find(entries[i].name);
      try {
        archive->read(i, buf);
        if (auto v = archive->stored_view(i); v && v->size() != buf.size()) __builtin_trap();
      } catch (const frugal::Error&) {}
    }
  } catch (const frugal::Error&) {}
  return 0;
}

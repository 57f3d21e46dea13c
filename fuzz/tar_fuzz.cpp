// libFuzzer target for the tar reader: any input must index and read, or fail with frugal::Error;
// never crash, hang, leak or allocate beyond what the input's size allows (ASan/UBSan in the fuzz
// build, scripts/fuzz.sh). What indexes also goes through the WebDataset grouping, and its index
// through the cache's bytes and back, then with one byte changed (checksum made right again).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "archive/readers.h"
#include "archive/tar_index.h"
#include "archive/tar_index_cache.h"
#include "frugal/archive/archive.h"
#include "frugal/util/error.h"
#include "frugal/util/hash.h"
#include "frugal/archive/webdataset.h"

namespace {

void check_cache_round_trip(const frugal::ByteSource& src, const std::uint8_t* data, std::size_t size) {
  std::vector<frugal::TarRecord> records;
  try {
    records = frugal::parse_tar(src, 0, src.size(), "fuzz.tar");
  } catch (const frugal::Error&) {
    return;
  }
  frugal::TarCacheIdentity id;
  id.files.push_back({"/fuzz.tar", src.size(), 1, 2, 3});
  id.end = src.size();
  std::string bytes = frugal::tar_cache_bytes(id, records, 0);
  const auto back = frugal::parse_tar_cache(bytes, id, src, 0);
  if (!back || back->size() != records.size()) __builtin_trap();
  for (std::size_t i = 0; i < records.size(); ++i)
    if ((*back)[i].name != records[i].name || (*back)[i].data_offset != records[i].data_offset ||
        (*back)[i].size != records[i].size || (*back)[i].kind != records[i].kind)
      __builtin_trap();
  if (size < 4 || bytes.size() <= 8) return;
  // One byte of the cache changed where the input's last bytes say, the checksum made right: the
  // parser must refuse it or return records that lie inside the tar.
  const std::size_t at = (static_cast<std::size_t>(data[size - 1]) << 8 | data[size - 2]) % (bytes.size() - 8);
  bytes[at] = static_cast<char>(bytes[at] ^ (data[size - 3] | 1));
  const std::uint64_t sum = frugal::xxh3_64(bytes.data(), bytes.size() - 8);
  for (int k = 0; k < 8; ++k) bytes[bytes.size() - 8 + k] = static_cast<char>((sum >> (8 * k)) & 0xff);
  if (const auto changed = frugal::parse_tar_cache(bytes, id, src, 0))
    for (const auto& r : *changed)
      if (r.data_offset > src.size() || r.size > src.size() - r.data_offset) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  frugal::ArchiveOptions options;
  options.index_cache_dir = std::filesystem::path();  // never the disk
  if (size > 0 && (data[0] & 1)) options.name_encoding = "cp437";
  try {
    std::vector<frugal::TarShard> shards;
    shards.push_back({frugal::memory_byte_source(bytes, "fuzz.tar"), "fuzz.tar", "", 0});
    auto archive = frugal::open_tar_archive(std::move(shards), "fuzz.tar", "tar", options);
    std::vector<std::uint8_t> buf;
    const auto& entries = archive->entries();
    for (std::size_t i = 0; i < entries.size() && i < 64; ++i) {
      (void)frugal::entry_problem(*archive, i);
      if (archive->find(entries[i].name) > i) __builtin_trap();  // find returns the first of a name
      try {
        archive->read(i, buf);
        if (buf.size() != entries[i].size) __builtin_trap();
        if (auto v = archive->stored_view(i); v && v->size() != buf.size()) __builtin_trap();
        std::uint64_t streamed = 0;
        archive->read_to(i, [&](std::span<const std::uint8_t> piece) { streamed += piece.size(); });
        if (streamed != buf.size()) __builtin_trap();
      } catch (const frugal::Error&) {}
    }
    try {
      (void)frugal::group_webdataset(*archive);
    } catch (const frugal::Error&) {}
  } catch (const frugal::Error&) {}
  check_cache_round_trip(*frugal::memory_byte_source(bytes, "fuzz.tar"), data, size);
  return 0;
}

// libFuzzer target for the tar reader: any input must index and read, or fail with frugal::Error;
// never crash, hang, leak or allocate beyond what the input's size allows (ASan/UBSan in the fuzz
// build, scripts/fuzz.sh). What indexes also goes through the WebDataset grouping, and its index
// through the cache's bytes and back, then with one byte changed (its MAC made right again under
// the fixed key below: the parser must hold even against the key's owner).
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

frugal::CacheKey fuzz_key() {
  frugal::CacheKey key;
  for (std::size_t i = 0; i < key.bytes.size(); ++i) key.bytes[i] = static_cast<unsigned char>(i);
  return key;
}

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
  const frugal::CacheKey key = fuzz_key();
  std::string bytes = frugal::tar_cache_bytes(id, records, 0, key);
  const auto back = frugal::parse_tar_cache(bytes, id, src, 0, key);
  if (!back || back->size() != records.size()) __builtin_trap();
  for (std::size_t i = 0; i < records.size(); ++i)
    if ((*back)[i].name != records[i].name || (*back)[i].data_offset != records[i].data_offset ||
        (*back)[i].size != records[i].size || (*back)[i].kind != records[i].kind)
      __builtin_trap();
  constexpr std::size_t kMac = frugal::kCacheMacBytes;
  if (size < 4 || bytes.size() <= kMac) return;
  // One byte of the cache changed where the input's last bytes say, the MAC made right: the
  // parser must refuse it or return records that lie inside the tar.
  const std::size_t at = (static_cast<std::size_t>(data[size - 1]) << 8 | data[size - 2]) % (bytes.size() - kMac);
  bytes[at] = static_cast<char>(bytes[at] ^ (data[size - 3] | 1));
  const auto mac = frugal::cache_mac(key, std::string_view(bytes).substr(0, bytes.size() - kMac));
  if (!mac) return;
  bytes.replace(bytes.size() - kMac, kMac, reinterpret_cast<const char*>(mac->data()), kMac);
  if (const auto changed = frugal::parse_tar_cache(bytes, id, src, 0, key))
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

// libFuzzer target for the parquet index cache's reader (parquet_index_cache.h): any bytes given as
// a cache file must be refused or give rows that an open could have recorded for the file's footer
// (the shape); never crash, hang or allocate beyond what the footer's row count allows.
//
// Input: one byte choosing the footer's shape (with or without a label column, two row-group
// layouts), then a cache file without its last 32 bytes: the target appends the right HMAC-SHA256
// under the fixed key below, so that the parser is tried against the key's owner too (the raw
// input is parsed as well, MAC and all). Then the rows the input's bytes describe go through the
// cache's bytes and back, and again with one byte changed (MAC made right). Seeds in fuzz/corpus/parquet_index/ are genuine
// caches for the fixed identity below (scripts/fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "archive/parquet_index_cache.h"
#include "frugal/util/hash.h"

namespace {

frugal::ParquetCacheIdentity identity() {
  frugal::ParquetCacheIdentity id;
  id.source.files.push_back({"/fuzz.parquet", 4096, 1, 2, 3});
  id.source.end = 4096;
  id.footer_xxh3 = 5;
  id.sample_xxh3 = 6;
  return id;
}

frugal::ParquetShape shape_of(std::uint8_t choice) {
  frugal::ParquetShape s;
  s.image_field = 0;
  s.label_field = (choice & 1) ? 1 : -1;
  s.group_rows = (choice & 2) ? std::vector<std::int64_t>{3, 0, 2} : std::vector<std::int64_t>{1};
  return s;
}

frugal::CacheKey fuzz_key() {
  frugal::CacheKey key;
  for (std::size_t i = 0; i < key.bytes.size(); ++i) key.bytes[i] = static_cast<unsigned char>(i);
  return key;
}

std::string with_checksum(std::string bytes) {
  const auto mac = frugal::cache_mac(fuzz_key(), bytes);
  if (mac) bytes.append(reinterpret_cast<const char*>(mac->data()), mac->size());
  return bytes;
}

// What an open could have recorded for `shape`: else the reader let through what it must not.
void check_plausible(const frugal::ParquetRowIndex& index, const frugal::ParquetShape& shape) {
  if (index.rows.size() != shape.rows()) __builtin_trap();
  if (index.labels.size() != (shape.label_field >= 0 ? index.rows.size() : 0)) __builtin_trap();
  for (const auto& r : index.rows) {
    if (r.image == frugal::ParquetImage::bytes ? (r.size == 0 || r.size > (std::uint64_t{1} << 30)) : r.size != 0)
      __builtin_trap();
    if (static_cast<int>(r.format) > static_cast<int>(frugal::ImageFormat::jpeg2000)) __builtin_trap();
  }
}

// Rows described by the input's bytes (two bytes a row, one more for its label), written and read back.
void check_round_trip(const std::uint8_t* data, std::size_t size, const frugal::ParquetShape& shape) {
  const frugal::ParquetCacheIdentity id = identity();
  frugal::ParquetRowIndex index;
  for (std::size_t i = 0; i < shape.rows(); ++i) {
    const std::uint8_t a = size ? data[(2 * i) % size] : 0, b = size ? data[(2 * i + 1) % size] : 0;
    frugal::ParquetRow r;
    r.image = static_cast<frugal::ParquetImage>(a % 3);
    if (r.image == frugal::ParquetImage::bytes) {
      r.format = static_cast<frugal::ImageFormat>(b % 12);
      r.size = 1 + (std::uint64_t{a} << 8 | b);
    }
    index.rows.push_back(r);
    if (shape.label_field >= 0) {
      const std::uint8_t l = size ? data[(3 * i + 2) % size] : 0;
      index.labels.push_back(l & 1 ? std::nullopt : std::optional<std::int64_t>(static_cast<std::int8_t>(l)));
    }
  }
  std::string bytes = frugal::parquet_cache_bytes(id, shape, index, fuzz_key());
  const auto back = frugal::parse_parquet_cache(bytes, id, shape, fuzz_key());
  if (!back || back->labels != index.labels || back->rows.size() != index.rows.size()) __builtin_trap();
  for (std::size_t i = 0; i < index.rows.size(); ++i)
    if (back->rows[i].image != index.rows[i].image || back->rows[i].format != index.rows[i].format ||
        back->rows[i].size != index.rows[i].size)
      __builtin_trap();
  if (size < 4) return;
  constexpr std::size_t kMac = frugal::kCacheMacBytes;
  const std::size_t at = (static_cast<std::size_t>(data[size - 1]) << 8 | data[size - 2]) % (bytes.size() - kMac);
  bytes[at] = static_cast<char>(bytes[at] ^ (data[size - 3] | 1));
  bytes = with_checksum(bytes.substr(0, bytes.size() - kMac));
  if (const auto changed = frugal::parse_parquet_cache(bytes, id, shape, fuzz_key())) check_plausible(*changed, shape);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const frugal::ParquetShape shape = shape_of(data[0]);
  const frugal::ParquetCacheIdentity id = identity();
  const std::string raw(reinterpret_cast<const char*>(data + 1), size - 1);
  if (const auto index = frugal::parse_parquet_cache(raw, id, shape, fuzz_key())) check_plausible(*index, shape);
  if (const auto index = frugal::parse_parquet_cache(with_checksum(raw), id, shape, fuzz_key()))
    check_plausible(*index, shape);
  check_round_trip(data + 1, size - 1, shape);
  return 0;
}

// What opening a parquet file learns of its rows, kept between opens (docs/formats.md, "Parquet
// index cache"; data_source.h says when it is used). Learning it reads every row group's image
// bytes (the whole file, seconds for gigabytes, more on a cold disk); the cache is read instead when
// it was made from the same bytes as far as can be told.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "archive/index_cache.h"
#include "frugal/archive/archive.h"
#include "frugal/image/image.h"

namespace frugal {

// One row's image as the open found it.
enum class ParquetImage : std::uint8_t { bytes, null, empty };
struct ParquetRow {
  ParquetImage image = ParquetImage::bytes;
  ImageFormat format = ImageFormat::unknown;  // sniffed from the first bytes (bytes only)
  std::uint64_t size = 0;                     // of the image bytes (0 unless bytes)
};

// What the footer says of a file, which a cached index must agree with.
struct ParquetShape {
  int image_field = -1, label_field = -1;  // the columns chosen (-1: no label column)
  std::vector<std::int64_t> group_rows;    // rows of each row group
  std::uint64_t rows() const;
};

// Every row of one parquet file, in file order.
struct ParquetRowIndex {
  std::vector<ParquetRow> rows;
  std::vector<std::optional<std::int64_t>> labels;  // the label column as read; empty without one
};

// The source's identity (index_cache.h) and two hashes of its bytes: the footer (the last 64 KiB)
// and 64 blocks of 4 KiB spread over it (all of it when it is 256 KiB or less). Stamps can match
// bytes that changed (a file rewritten within one mtime tick, a clock set back, a copy that keeps
// mtimes onto a reused inode); the hashes catch a new footer and most rewrites.
struct ParquetCacheIdentity {
  SourceIdentity source;
  std::uint64_t footer_xxh3 = 0, sample_xxh3 = 0;
};

// The identity of `src`, whose offset 0 lies at `base` in the concatenation of src.files();
// nullopt when it cannot be cached (bytes in memory).
std::optional<ParquetCacheIdentity> parquet_cache_identity(const ByteSource& src, std::uint64_t base);

// <dir>/parquet-index/<hash of the paths and range>-<first file's name>.pqindex
std::filesystem::path parquet_cache_file(const std::filesystem::path& dir, const ParquetCacheIdentity& id);

// The rows saved for `id`; nullopt when there is no cache file, or no key (user_cache_key()), or
// the file is another user's, was made from other bytes or with another key, is damaged, or
// disagrees with `shape` (columns, row groups, rows).
std::optional<ParquetRowIndex> load_parquet_cache(const std::filesystem::path& file, const ParquetCacheIdentity& id,
                                                  const ParquetShape& shape);

// The cache file's bytes under `key`, and the rows back from such bytes (nullopt as
// load_parquet_cache says; `forged` as unframe_cache() sets it): what load and save use, apart from
// the file and the user's key (the fuzz target's seam).
std::string parquet_cache_bytes(const ParquetCacheIdentity& id, const ParquetShape& shape, const ParquetRowIndex& index,
                                const CacheKey& key);
std::optional<ParquetRowIndex> parse_parquet_cache(std::string_view bytes, const ParquetCacheIdentity& id,
                                                   const ParquetShape& shape, const CacheKey& key,
                                                   bool* forged = nullptr);

// Writes the rows crash-safely under the user's key (nothing without one); throws Error on failure
// (the caller notes it and goes on).
void save_parquet_cache(const std::filesystem::path& file, const ParquetCacheIdentity& id, const ParquetShape& shape,
                        const ParquetRowIndex& index);

}  // namespace frugal

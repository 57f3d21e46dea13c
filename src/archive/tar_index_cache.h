// The tar index kept between opens (docs/formats.md, "Tar index cache"; data_source.h says when it
// is used and where it lives).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "archive/index_cache.h"
#include "archive/tar_index.h"
#include "frugal/archive/archive.h"

namespace frugal {

// What a cached index was made from, as far as the file system tells (index_cache.h).
using TarCacheIdentity = SourceIdentity;

// The identity of the tar in [begin, end) of `src`, whose offset 0 lies at `base` in the
// concatenation of src.files() (a window inside an outer archive); nullopt when a file cannot be
// stat'ed (bytes in memory): such a tar is not cached.
std::optional<TarCacheIdentity> tar_cache_identity(const ByteSource& src, std::uint64_t base, std::uint64_t begin,
                                                   std::uint64_t end);

// <dir>/tar-index/<hash of the paths and range>-<first file's name>.tarindex
std::filesystem::path tar_cache_file(const std::filesystem::path& dir, const TarCacheIdentity& id);

// The records saved for `id`, offsets made absolute again (+ begin in src); nullopt when there is no
// cache file, or no key (user_cache_key()), or the file is another user's, was made from other
// bytes or with another key, is damaged, or its spot check against the tar fails (up to 64
// members' first headers, spread over the tar, must still be valid headers).
std::optional<std::vector<TarRecord>> load_tar_cache(const std::filesystem::path& file, const TarCacheIdentity& id,
                                                     const ByteSource& src, std::uint64_t begin);

// The cache file's bytes for `records` under `key`, and the records back from such bytes (nullopt
// as load_tar_cache says; `forged` as unframe_cache() sets it); what load and save use, apart from
// the file and the user's key (the fuzz target's seam).
std::string tar_cache_bytes(const TarCacheIdentity& id, const std::vector<TarRecord>& records, std::uint64_t begin,
                            const CacheKey& key);
std::optional<std::vector<TarRecord>> parse_tar_cache(std::string_view bytes, const TarCacheIdentity& id,
                                                      const ByteSource& src, std::uint64_t begin, const CacheKey& key,
                                                      bool* forged = nullptr);

// Writes the records crash-safely under the user's key (nothing without one); throws Error on
// failure (the caller notes it and goes on).
void save_tar_cache(const std::filesystem::path& file, const TarCacheIdentity& id,
                    const std::vector<TarRecord>& records, std::uint64_t begin);

}  // namespace frugal

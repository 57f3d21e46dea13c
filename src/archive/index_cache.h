// What the index caches share (the tar's, tar_index_cache.h; the parquet rows', parquet_index_cache.h):
// the folder they live in, what their source was as far as the file system tells, their framing on
// disk, and reading and writing them. docs/formats.md describes the files; data_source.h says when
// each is used.
//
// A cache file is never trusted: one made from other bytes, damaged, cut short or written by
// someone hostile must read as absent (nullopt), so that the caller indexes its source again and
// replaces the file. Nothing here throws on a cache file's content. The folder may be writable by
// others (a shared or network cache): a file is read only when the current user owns it, and used
// only when its HMAC-SHA256 under the user's key (cache_key.h) is right, so that nobody else can
// plant an index that renames classes or flips labels.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "archive/cache_key.h"
#include "frugal/archive/archive.h"

namespace frugal {

// The cache folder for `options`: index_cache_dir when set (an empty path: never cached), else
// default_index_cache_dir() (empty when no folder can be named).
std::filesystem::path index_cache_dir(const ArchiveOptions& options);

// What a cached index was made from, as far as the file system tells.
struct SourceIdentity {
  struct File {
    std::string path;  // absolute
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
    std::uint64_t dev = 0, ino = 0;
  };
  std::vector<File> files;  // the files the bytes come from, in order (split parts, an outer zip)
  std::uint64_t begin = 0;  // the indexed range in their concatenation
  std::uint64_t end = 0;
};

// The identity of [begin, end) of `src`, whose offset 0 lies at `base` in the concatenation of
// src.files() (a window inside an outer archive); nullopt when a file cannot be stat'ed (bytes in
// memory): such a source is not cached.
std::optional<SourceIdentity> source_identity(const ByteSource& src, std::uint64_t base, std::uint64_t begin,
                                              std::uint64_t end);

// <dir>/<folder>/<16 hex digits: xxh3 of the user id, the paths and the range>-<first file's
// name><extension>: users sharing a folder keep a file each.
std::filesystem::path cache_file_path(const std::filesystem::path& dir, const std::string& folder,
                                      const SourceIdentity& id, const std::string& extension);

// Little-endian fields of a cache file's bytes.
void put_le(std::string& s, std::uint64_t v, int bytes = 8);
void put_identity(std::string& s, const SourceIdentity& id);

// Reads little-endian fields; `ok` turns false (and stays so) past the end, reads then give 0 / "".
struct LeReader {
  std::string_view s;
  std::size_t at = 0;
  bool ok = true;
  std::uint64_t get(int bytes = 8);
  std::string_view bytes(std::uint64_t n);
  std::size_t left() const { return s.size() - at; }
};

// Every cache file is `magic (16 bytes) | u32 version | body | HMAC-SHA256 of all bytes before it`
// (32 bytes, under `key`). Throws Error(io) when OpenSSL cannot compute it.
using CacheMagic = char[16];
inline constexpr std::size_t kCacheMacBytes = 32;
std::string frame_cache(const CacheMagic& magic, std::uint32_t version, std::string_view body, const CacheKey& key);
// The body of a framed file: nullopt unless the magic, the version and the MAC are right; `forged`
// (when given) is set when only the MAC is wrong: damaged, made with another key, or planted.
std::optional<std::string_view> unframe_cache(std::string_view data, const CacheMagic& magic, std::uint32_t version,
                                              const CacheKey& key, bool* forged = nullptr);

// The file's bytes when it is a regular file (no link) of at most max_bytes that the current user
// owns; nullopt when absent, larger, unreadable (a cache that cannot be read is indexed again, and
// replaced), or another user's (never trusted: a note says so).
std::optional<std::string> read_cache_file(const std::filesystem::path& file, std::uint64_t max_bytes);

// The note for a cache file whose MAC is wrong (unframe_cache's `forged`): it is not used.
void note_forged_cache(const std::filesystem::path& file);

// Writes `bytes` crash-safely (temporary, fsync, rename), making the folder; throws Error on
// failure (the caller notes it and goes on without the cache).
void write_cache_file(const std::filesystem::path& file, std::string_view bytes);

}  // namespace frugal

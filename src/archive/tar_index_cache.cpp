#include "archive/tar_index_cache.h"

#include <algorithm>

#include "archive/tar_format.h"

namespace frugal {
namespace fs = std::filesystem;

namespace {

constexpr CacheMagic kMagic = {'F', 'R', 'U', 'G', 'A', 'L', '-', 'T', 'A', 'R', '-', 'I', 'D', 'X', '\n', '\0'};
constexpr std::uint32_t kVersion = 2;  // 1: an unkeyed xxh3 checksum
constexpr std::size_t kSpotChecks = 64;

}  // namespace

std::optional<TarCacheIdentity> tar_cache_identity(const ByteSource& src, std::uint64_t base, std::uint64_t begin,
                                                   std::uint64_t end) {
  return source_identity(src, base, begin, end);
}

fs::path tar_cache_file(const fs::path& dir, const TarCacheIdentity& id) {
  return cache_file_path(dir, "tar-index", id, ".tarindex");
}

std::string tar_cache_bytes(const TarCacheIdentity& id, const std::vector<TarRecord>& records, std::uint64_t begin,
                            const CacheKey& key) {
  std::string s;
  put_identity(s, id);
  put_le(s, records.size());
  for (const TarRecord& r : records) {
    put_le(s, r.header_offset - begin);
    put_le(s, r.data_offset - begin);
    put_le(s, r.size);
    put_le(s, static_cast<std::uint64_t>(r.kind), 1);
    put_le(s, r.utf8 ? 1 : 0, 1);
    put_le(s, r.name.size(), 4);
    s += r.name;
  }
  return frame_cache(kMagic, kVersion, s, key);
}

void save_tar_cache(const fs::path& file, const TarCacheIdentity& id, const std::vector<TarRecord>& records,
                    std::uint64_t begin) {
  if (const std::optional<CacheKey> key = user_cache_key())
    write_cache_file(file, tar_cache_bytes(id, records, begin, *key));
}

std::optional<std::vector<TarRecord>> load_tar_cache(const fs::path& file, const TarCacheIdentity& id,
                                                     const ByteSource& src, std::uint64_t begin) {
  const std::uint64_t range = id.end - id.begin;
  // A record costs at least 22 bytes here and one 512-byte block in the tar; a name at most its
  // own bytes there too: a genuine cache is never larger than this.
  const std::uint64_t bound = 4096 + range + range / 512 * 32;
  const std::optional<CacheKey> key = user_cache_key();
  if (!key) return std::nullopt;
  const std::optional<std::string> data = read_cache_file(file, bound);
  if (!data) return std::nullopt;
  bool forged = false;
  auto records = parse_tar_cache(*data, id, src, begin, *key, &forged);
  if (forged) note_forged_cache(file);
  return records;
}

std::optional<std::vector<TarRecord>> parse_tar_cache(std::string_view data, const TarCacheIdentity& id,
                                                      const ByteSource& src, std::uint64_t begin, const CacheKey& key,
                                                      bool* forged) {
  const std::uint64_t range = id.end - id.begin;
  const std::optional<std::string_view> body = unframe_cache(data, kMagic, kVersion, key, forged);
  if (!body) return std::nullopt;
  LeReader in{*body};
  std::string expected;
  put_identity(expected, id);
  if (in.bytes(expected.size()) != expected) return std::nullopt;
  const std::uint64_t n = in.get();
  if (!in.ok || n > range / tar::kBlock) return std::nullopt;
  std::vector<TarRecord> records(static_cast<std::size_t>(n));
  for (TarRecord& r : records) {
    r.header_offset = in.get();
    r.data_offset = in.get();
    r.size = in.get();
    const std::uint64_t kind = in.get(1);
    r.utf8 = in.get(1) != 0;
    const std::uint64_t len = in.get(4);
    if (!in.ok || kind > static_cast<std::uint64_t>(TarKind::other) || len > kMaxTarName || r.header_offset >= range ||
        r.data_offset > range || r.size > range - r.data_offset)
      return std::nullopt;
    r.kind = static_cast<TarKind>(kind);
    r.name = std::string(in.bytes(len));
    if (!in.ok) return std::nullopt;
    r.header_offset += begin;
    r.data_offset += begin;
  }
  if (in.at != in.s.size()) return std::nullopt;
  // Stamps can match bytes that changed (a file rewritten within one mtime tick, a clock set
  // back): the first headers of members spread over the tar must still be headers.
  std::uint8_t block[tar::kBlock];
  const std::size_t step = std::max<std::size_t>(1, records.size() / kSpotChecks);
  for (std::size_t i = 0; i < records.size(); i += step) {
    if (records[i].header_offset > src.size() || src.size() - records[i].header_offset < tar::kBlock)
      return std::nullopt;
    src.read_at(records[i].header_offset, block, sizeof block);
    if (!tar::is_header(block)) return std::nullopt;
  }
  return records;
}

}  // namespace frugal

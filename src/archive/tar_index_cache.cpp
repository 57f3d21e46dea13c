#include "archive/tar_index_cache.h"

#include <sys/stat.h>

#include <cstring>

#include "archive/tar_format.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/hash.h"

namespace frugal {
namespace fs = std::filesystem;

namespace {

constexpr char kMagic[16] = {'F', 'R', 'U', 'G', 'A', 'L', '-', 'T', 'A', 'R', '-', 'I', 'D', 'X', '\n', '\0'};
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kSpotChecks = 64;

void put(std::string& s, std::uint64_t v, int bytes = 8) {
  for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}

// Reads little-endian fields from the cache's bytes; `ok` turns false past the end.
struct Reader {
  std::string_view s;
  std::size_t at = 0;
  bool ok = true;
  std::uint64_t get(int bytes = 8) {
    if (s.size() - at < static_cast<std::size_t>(bytes)) {
      ok = false;
      return 0;
    }
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(s[at + i])) << (8 * i);
    at += static_cast<std::size_t>(bytes);
    return v;
  }
  std::string_view bytes(std::uint64_t n) {
    if (s.size() - at < n) {
      ok = false;
      return {};
    }
    std::string_view v = s.substr(at, static_cast<std::size_t>(n));
    at += static_cast<std::size_t>(n);
    return v;
  }
};

void put_identity(std::string& s, const TarCacheIdentity& id) {
  put(s, id.files.size(), 4);
  for (const auto& f : id.files) {
    put(s, f.size);
    put(s, static_cast<std::uint64_t>(f.mtime_ns));
    put(s, f.dev);
    put(s, f.ino);
    put(s, f.path.size(), 4);
    s += f.path;
  }
  put(s, id.begin);
  put(s, id.end);
}

std::string safe_name(const std::string& name) {
  std::string out;
  for (char c : name.substr(0, 80))
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
  return out;
}

}  // namespace

std::optional<TarCacheIdentity> tar_cache_identity(const ByteSource& src, std::uint64_t base, std::uint64_t begin,
                                                   std::uint64_t end) {
  TarCacheIdentity id;
  for (const auto& f : src.files()) {
    struct stat st {};
    if (::stat(f.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    std::error_code ec;
    const fs::path abs = fs::absolute(f, ec);
    if (ec) return std::nullopt;
    id.files.push_back({abs.lexically_normal().string(), static_cast<std::uint64_t>(st.st_size),
                        static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                        static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)});
  }
  if (id.files.empty()) return std::nullopt;
  id.begin = base + begin;
  id.end = base + end;
  return id;
}

fs::path tar_cache_file(const fs::path& dir, const TarCacheIdentity& id) {
  std::string key;
  for (const auto& f : id.files) key += f.path + '\0';
  put(key, id.begin);
  put(key, id.end);
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(xxh3_64(key.data(), key.size())));
  return dir / "tar-index" /
         (std::string(hash) + "-" + safe_name(fs::path(id.files.front().path).filename().string()) + ".tarindex");
}

std::string tar_cache_bytes(const TarCacheIdentity& id, const std::vector<TarRecord>& records, std::uint64_t begin) {
  std::string s(kMagic, sizeof kMagic);
  put(s, kVersion, 4);
  put_identity(s, id);
  put(s, records.size());
  for (const TarRecord& r : records) {
    put(s, r.header_offset - begin);
    put(s, r.data_offset - begin);
    put(s, r.size);
    put(s, static_cast<std::uint64_t>(r.kind), 1);
    put(s, r.utf8 ? 1 : 0, 1);
    put(s, r.name.size(), 4);
    s += r.name;
  }
  put(s, xxh3_64(s.data(), s.size()));
  return s;
}

void save_tar_cache(const fs::path& file, const TarCacheIdentity& id, const std::vector<TarRecord>& records,
                    std::uint64_t begin) {
  const std::string s = tar_cache_bytes(id, records, begin);
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  if (ec) fail_errno("create folder", file.parent_path().string(), ec.value());
  write_file_atomic(file, s);
}

std::optional<std::vector<TarRecord>> load_tar_cache(const fs::path& file, const TarCacheIdentity& id,
                                                     const ByteSource& src, std::uint64_t begin) {
  const std::uint64_t range = id.end - id.begin;
  // A record costs at least 22 bytes here and one 512-byte block in the tar; a name at most its
  // own bytes there too: a genuine cache is never larger than this.
  const std::uint64_t bound = 4096 + range + range / 512 * 32;
  std::optional<std::string> data;
  try {
    data = read_regular_at_most(file, bound, Links::refuse);
  } catch (const Error&) {
    return std::nullopt;  // absent, or not a regular file: indexed again, and replaced
  }
  if (!data) return std::nullopt;
  return parse_tar_cache(*data, id, src, begin);
}

std::optional<std::vector<TarRecord>> parse_tar_cache(std::string_view data, const TarCacheIdentity& id,
                                                      const ByteSource& src, std::uint64_t begin) {
  const std::uint64_t range = id.end - id.begin;
  if (data.size() < sizeof kMagic + 8 || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0) return std::nullopt;
  Reader in{data.substr(0, data.size() - 8)};
  Reader sum{data.substr(data.size() - 8)};
  if (sum.get() != xxh3_64(data.data(), data.size() - 8)) return std::nullopt;
  in.bytes(sizeof kMagic);
  if (in.get(4) != kVersion) return std::nullopt;
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

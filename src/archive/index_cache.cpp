#include "archive/index_cache.h"

#include <openssl/crypto.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstring>

#include "frugal/archive/data_source.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/hash.h"
#include "frugal/util/progress.h"

namespace frugal {
namespace fs = std::filesystem;

namespace {

std::string safe_name(const std::string& name) {
  std::string out;
  for (char c : name.substr(0, 80))
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
  return out;
}

}  // namespace

fs::path index_cache_dir(const ArchiveOptions& options) {
  return options.index_cache_dir ? *options.index_cache_dir : default_index_cache_dir();
}

std::optional<SourceIdentity> source_identity(const ByteSource& src, std::uint64_t base, std::uint64_t begin,
                                              std::uint64_t end) {
  SourceIdentity id;
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

fs::path cache_file_path(const fs::path& dir, const std::string& folder, const SourceIdentity& id,
                         const std::string& extension) {
  std::string key;
  put_le(key, ::geteuid(), 4);
  for (const auto& f : id.files) key += f.path + '\0';
  put_le(key, id.begin);
  put_le(key, id.end);
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(xxh3_64(key.data(), key.size())));
  return dir / folder /
         (std::string(hash) + "-" + safe_name(fs::path(id.files.front().path).filename().string()) + extension);
}

void put_le(std::string& s, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}

void put_identity(std::string& s, const SourceIdentity& id) {
  put_le(s, id.files.size(), 4);
  for (const auto& f : id.files) {
    put_le(s, f.size);
    put_le(s, static_cast<std::uint64_t>(f.mtime_ns));
    put_le(s, f.dev);
    put_le(s, f.ino);
    put_le(s, f.path.size(), 4);
    s += f.path;
  }
  put_le(s, id.begin);
  put_le(s, id.end);
}

std::uint64_t LeReader::get(int bytes) {
  if (!ok || left() < static_cast<std::size_t>(bytes)) {
    ok = false;
    return 0;
  }
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(s[at + i])) << (8 * i);
  at += static_cast<std::size_t>(bytes);
  return v;
}

std::string_view LeReader::bytes(std::uint64_t n) {
  if (!ok || left() < n) {
    ok = false;
    return {};
  }
  std::string_view v = s.substr(at, static_cast<std::size_t>(n));
  at += static_cast<std::size_t>(n);
  return v;
}

std::string frame_cache(const CacheMagic& magic, std::uint32_t version, std::string_view body, const CacheKey& key) {
  std::string s(magic, sizeof(CacheMagic));
  put_le(s, version, 4);
  s += body;
  const std::optional<CacheMac> mac = cache_mac(key, s);
  if (!mac) fail(ErrorKind::io, "OpenSSL", "an HMAC-SHA256 of the index", "an error", "");
  s.append(reinterpret_cast<const char*>(mac->data()), mac->size());
  return s;
}

std::optional<std::string_view> unframe_cache(std::string_view data, const CacheMagic& magic, std::uint32_t version,
                                              const CacheKey& key, bool* forged) {
  constexpr std::size_t kHead = sizeof(CacheMagic) + 4;
  if (forged) *forged = false;
  if (data.size() < kHead + kCacheMacBytes || std::memcmp(data.data(), magic, sizeof(CacheMagic)) != 0)
    return std::nullopt;
  LeReader head{data.substr(sizeof(CacheMagic), 4)};
  if (head.get(4) != version) return std::nullopt;  // another frugal's: replaced without a word
  const std::optional<CacheMac> mac = cache_mac(key, data.substr(0, data.size() - kCacheMacBytes));
  // CRYPTO_memcmp: the time taken says nothing of how many bytes of a forged MAC were right.
  if (!mac || CRYPTO_memcmp(mac->data(), data.data() + data.size() - kCacheMacBytes, kCacheMacBytes) != 0) {
    if (forged) *forged = true;
    return std::nullopt;
  }
  return data.substr(kHead, data.size() - kHead - kCacheMacBytes);
}

std::optional<std::string> read_cache_file(const fs::path& file, std::uint64_t max_bytes) {
  UniqueFd fd;
  struct stat st {};
  try {
    fd = open_regular(file, Links::refuse);
    if (::fstat(fd.get(), &st) != 0) return std::nullopt;
  } catch (const Error&) {
    return std::nullopt;  // absent, or not a regular file: indexed again, and replaced
  }
  if (st.st_uid != ::geteuid()) {
    note(file.string() + ": a cache written by another user (uid " + std::to_string(st.st_uid) +
         ") is never trusted; indexed again from the data, and the cache replaced");
    return std::nullopt;
  }
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) return std::nullopt;
  std::string out(static_cast<std::size_t>(st.st_size), '\0');
  try {
    pread_full(fd.get(), out.data(), out.size(), 0, file.string());
  } catch (const Error&) {
    return std::nullopt;  // shorter than fstat said, or unreadable
  }
  return out;
}

void note_forged_cache(const fs::path& file) {
  note(file.string() +
       ": its checksum is not one made with your cache key (damaged, made with another key, or written by someone "
       "else); not used: indexed again from the data, and the cache replaced");
}

void write_cache_file(const fs::path& file, std::string_view bytes) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  if (ec) fail_errno("create folder", file.parent_path().string(), ec.value());
  write_file_atomic(file, bytes);
}

}  // namespace frugal

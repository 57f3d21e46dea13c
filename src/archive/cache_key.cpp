#include "archive/cache_key.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "frugal/util/fs.h"
#include "frugal/util/progress.h"

namespace frugal {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kKeyBytes = 32;

std::string errno_words(int err) { return std::strerror(err); }

std::string mode_text(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// The key in the open file `fd`, or nullopt and why it is not used.
std::optional<CacheKey> read_key(int fd, std::string& why) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    why = "cannot be read (" + errno_words(errno) + ")";
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) {
    why = "is not a regular file";
  } else if (st.st_uid != ::geteuid()) {
    why = "belongs to uid " + std::to_string(st.st_uid) + ", not to you (uid " + std::to_string(::geteuid()) + ")";
  } else if ((st.st_mode & 077) != 0) {
    why = "can be read or written by others (mode " + mode_text(st.st_mode) +
          "), who could then forge caches that relabel your data";
  } else if (st.st_size != static_cast<off_t>(kKeyBytes)) {
    why = "holds " + std::to_string(st.st_size) + " bytes, not " + std::to_string(kKeyBytes);
  }
  if (!why.empty()) return std::nullopt;
  CacheKey key;
  std::size_t done = 0;
  while (done < kKeyBytes) {
    const ssize_t n = ::pread(fd, key.bytes.data() + done, kKeyBytes - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      why = n < 0 ? "cannot be read (" + errno_words(errno) + ")" : "ends before its 32 bytes";
      return std::nullopt;
    }
    done += static_cast<std::size_t>(n);
  }
  return key;
}

bool write_all(int fd, const unsigned char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t k = ::write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

// Makes `file` holding a new key; true also when another process made it first (it is read then).
bool make_key(const fs::path& file, std::string& why) {
  std::error_code ec;
  fs::create_directories(file.parent_path().parent_path(), ec);
  if (!ec && ::mkdir(file.parent_path().c_str(), 0700) != 0 && errno != EEXIST)
    ec = std::error_code(errno, std::generic_category());
  if (ec) {
    why = "cannot be made: its folder cannot be made (" + ec.message() + ")";
    return false;
  }
  CacheKey key;
  if (RAND_bytes(key.bytes.data(), static_cast<int>(kKeyBytes)) != 1) {
    why = "cannot be made: OpenSSL gave no random bytes";
    return false;
  }
  const fs::path tmp = temp_path_for(file);
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) {
    why = "cannot be made (" + errno_words(errno) + ")";
    return false;
  }
  // fchmod: exactly 0600 whatever the umask; link: the name appears with all 32 bytes, or not at all.
  bool ok = ::fchmod(fd.get(), 0600) == 0 && write_all(fd.get(), key.bytes.data(), kKeyBytes) && ::fsync(fd.get()) == 0;
  int err = errno;
  fd = UniqueFd();
  if (ok && ::link(tmp.c_str(), file.c_str()) != 0 && errno != EEXIST) {
    ok = false;
    err = errno;
  }
  ::unlink(tmp.c_str());
  if (!ok) why = "cannot be made (" + errno_words(err) + ")";
  return ok;
}

}  // namespace

fs::path cache_key_file() {
  if (const char* d = std::getenv("XDG_CONFIG_HOME"); d && *d) return fs::path(d) / "frugal" / "cache-key";
  if (const char* d = std::getenv("HOME"); d && *d) return fs::path(d) / ".config" / "frugal" / "cache-key";
  return {};
}

std::optional<CacheKey> load_or_make_cache_key(const fs::path& file, std::string& why) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    UniqueFd fd(::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (fd) return read_key(fd.get(), why);
    const int err = errno;
    if (err == ELOOP) {
      why = "is a symbolic link";
      return std::nullopt;
    }
    if (err != ENOENT || attempt > 0) {
      why = "cannot be opened (" + errno_words(err) + ")";
      return std::nullopt;
    }
    if (!make_key(file, why)) return std::nullopt;
  }
  return std::nullopt;  // not reached
}

std::optional<CacheKey> user_cache_key() {
  static std::mutex mu;
  static std::map<std::string, std::optional<CacheKey>> keys;  // by file: each said once
  const fs::path file = cache_key_file();
  const std::lock_guard<std::mutex> lock(mu);
  if (auto it = keys.find(file.string()); it != keys.end()) return it->second;
  std::optional<CacheKey> key;
  std::string why;
  if (file.empty()) {
    note(
        "the index caches have no key (neither XDG_CONFIG_HOME nor HOME is set): tar indexes and parquet rows "
        "are not cached, and every open reads them from the data");
  } else if (key = load_or_make_cache_key(file, why); !key && why.starts_with("cannot be made")) {
    note(file.string() + ", the key of the index caches, " + why +
         ": tar indexes and parquet rows are not cached, and every open reads them from the data");
  } else if (!key) {  // one is there that others may have read or made: said even when quiet
    warn(file.string() + ": not used as the key of the index caches: it " + why +
         "; tar indexes and parquet rows are not cached, and every open reads them from the data. Delete it: "
         "frugal then makes a new one, readable by you alone");
  }
  keys.emplace(file.string(), key);
  return key;
}

std::optional<CacheMac> cache_mac(const CacheKey& key, std::string_view data) {
  CacheMac mac{};
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), key.bytes.data(), static_cast<int>(key.bytes.size()),
            reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac.data(), &len) ||
      len != mac.size())
    return std::nullopt;
  return mac;
}

}  // namespace frugal

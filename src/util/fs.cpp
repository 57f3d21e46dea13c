#include "frugal/fs.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <limits>
#include <cstdio>
#include <ctime>
#include <random>

#include "frugal/env.h"
#include "frugal/error.h"

namespace frugal {

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

UniqueFd open_read(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_errno("open", path.string(), errno);
  return UniqueFd(fd);
}

void pread_full(int fd, void* buf, std::size_t n, std::uint64_t offset, const std::string& name) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      fail_errno("read", name, errno);
    }
    if (r == 0)
      fail(ErrorKind::invalid, name, std::to_string(n) + " more bytes at offset " + std::to_string(offset),
           "end of file", "the file is truncated; download or copy it again");
    p += r;
    n -= static_cast<std::size_t>(r);
    offset += static_cast<std::uint64_t>(r);
  }
}

void write_full(int fd, const void* buf, std::size_t n, const std::string& name) {
  auto* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail_errno("write", name, errno);
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

std::optional<std::string> read_file_at_most(const std::filesystem::path& path, std::uint64_t max_bytes) {
  UniqueFd fd = open_read(path);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    ssize_t r = ::read(fd.get(), buf, sizeof buf);
    if (r < 0) {
      if (errno == EINTR) continue;
      fail_errno("read", path.string(), errno);
    }
    if (r == 0) return out;
    if (static_cast<std::uint64_t>(r) > max_bytes - out.size()) return std::nullopt;
    out.append(buf, static_cast<std::size_t>(r));
  }
}

std::string read_file(const std::filesystem::path& path) {
  return *read_file_at_most(path, std::numeric_limits<std::uint64_t>::max());
}

std::filesystem::path temp_path_for(const std::filesystem::path& path) {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
  static const char* const hex = "0123456789abcdef";
  std::string suffix;
  auto v = rng();
  for (int i = 0; i < 12; ++i, v >>= 4) suffix += hex[v & 15];
  return path.string() + std::string(kTempMarker) + suffix;
}

bool is_temp_path(const std::filesystem::path& path) {
  return path.filename().string().find(kTempMarker) != std::string::npos;
}

int create_owned_temp(const std::filesystem::path& temp) {
  const std::filesystem::path dir = temp.parent_path().empty() ? std::filesystem::path(".") : temp.parent_path();
  int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  if (fd >= 0) {
    // Private until linked: nobody else can hold its lock, so this cannot block.
    if (::flock(fd, LOCK_EX) == 0) {
      char proc[64];
      std::snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
      if (::linkat(AT_FDCWD, proc, AT_FDCWD, temp.c_str(), AT_SYMLINK_FOLLOW) == 0) return fd;
    }
    const int err = errno;
    ::close(fd);
    if (err != ENOENT && err != EPERM && err != EACCES && err != EINVAL && err != EOPNOTSUPP) {
      errno = err;  // EEXIST, ENOSPC, EDQUOT, ...: the named create would fail the same way
      return -1;
    }
  } else if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
    return -1;
  }
  // No O_TMPFILE here (or no /proc): created by name, then locked. A sweeper that runs between
  // the two calls can remove it; the writer's rename then fails and nothing else is lost.
  fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  if (::flock(fd, LOCK_EX) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    ::close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

TempState sweep_temp(const std::filesystem::path& temp, std::chrono::seconds quiet, bool remove) {
  int fd = ::open(temp.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return TempState::absent;
  UniqueFd guard(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return TempState::absent;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) return TempState::owned;  // its writer is alive
  if (quiet.count() > 0 && std::time(nullptr) - st.st_mtime < quiet.count()) return TempState::recent;
  if (!remove) return TempState::abandoned;
  // Still the file we locked (not replaced under the name meanwhile); unlinked while we hold the
  // lock, so no writer can have adopted it in between.
  struct stat now {};
  if (::lstat(temp.c_str(), &now) != 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev)
    return TempState::absent;
  return ::unlink(temp.c_str()) == 0 ? TempState::abandoned : TempState::absent;
}

void fsync_fd(int fd, const std::string& name) {
  if (::fsync(fd) != 0) fail_errno("fsync", name, errno);
}

void fsync_dir(const std::filesystem::path& dir) {
  auto d = dir.empty() ? std::filesystem::path(".") : dir;
  int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail_errno("open folder", d.string(), errno);
  UniqueFd guard(fd);
  if (::fsync(fd) != 0 && errno != EINVAL) fail_errno("fsync folder", d.string(), errno);
}

void write_file_atomic(const std::filesystem::path& path, std::string_view data) {
  write_file_atomic(Env::real(), path, data);
}

void write_file_atomic(Env& env, const std::filesystem::path& path, std::string_view data) {
  write_atomic(env, path, [&](WritableFile& f) { f.append(data); });
}

std::string normalize_relative(std::string_view rel) {
  if (rel.empty() || rel.front() == '/') return "";
  if (rel.find('\0') != std::string_view::npos || rel.find('\\') != std::string_view::npos) return "";
  std::string out;
  std::size_t start = 0;
  while (start <= rel.size()) {
    std::size_t end = rel.find('/', start);
    if (end == std::string_view::npos) end = rel.size();
    const std::string_view part = rel.substr(start, end - start);
    if (part == "..") return "";
    if (!part.empty() && part != ".") {
      if (!out.empty()) out += '/';
      out += part;
    }
    start = end + 1;
  }
  return out;
}

std::filesystem::path confine_path(const std::filesystem::path& root, std::string_view rel,
                                   const std::string& where) {
  const std::string norm = normalize_relative(rel);
  const std::string shown(rel.substr(0, 200));
  if (norm.empty())
    fail(ErrorKind::invalid, where, "a relative path inside " + root.string(), "'" + shown + "'",
         "names may not be empty, absolute or contain '..'; the file is damaged or crafted");
  std::filesystem::path p = root;
  for (const auto& part : std::filesystem::path(norm)) {
    p /= part;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) break;  // nothing there yet: nothing below it exists either
    if (S_ISLNK(st.st_mode))
      fail(ErrorKind::invalid, where, "a path inside " + root.string(),
           "'" + shown + "' through the symbolic link " + p.string(),
           "frugal does not follow links out of the folder; remove the link or choose another folder");
  }
  return root / norm;
}

std::uint64_t free_space(const std::filesystem::path& path) {
  struct statvfs st {};
  if (::statvfs(path.c_str(), &st) != 0) fail_errno("statvfs", path.string(), errno);
  return static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
}

}  // namespace frugal

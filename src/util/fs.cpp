#include "frugal/util/fs.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <sys/sysmacros.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "frugal/util/env.h"
#include "frugal/util/error.h"
#include "frugal/util/terminal.h"

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

std::string file_kind(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return "nothing";
  switch (st.st_mode & S_IFMT) {
    case S_IFREG:
      return "a regular file";
    case S_IFDIR:
      return "a folder";
    case S_IFLNK:
      return "a symbolic link";
    case S_IFIFO:
      return "a FIFO (named pipe)";
    case S_IFSOCK:
      return "a socket";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    default:
      return "a special file";
  }
}

UniqueFd open_regular(const std::filesystem::path& path, Links links) {
  const int nofollow = links == Links::refuse ? O_NOFOLLOW : 0;
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | nofollow);
  if (fd < 0) {
    if (errno == ELOOP && links == Links::refuse)
      fail(ErrorKind::invalid, path.string(), "a regular file", "a symbolic link",
           "frugal does not follow links in its own folders; replace the link with the file itself");
    fail_errno("open", path.string(), errno);
  }
  UniqueFd guard(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail_errno("stat", path.string(), errno);
  if (!S_ISREG(st.st_mode)) {
    std::string kind = S_ISDIR(st.st_mode)    ? "a folder"
                       : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "a special file";
    if (links == Links::follow && kind != "a folder" && file_kind(path) == "a symbolic link")
      kind = "a symbolic link to " + kind;
    fail(ErrorKind::invalid, path.string(), "a regular file", kind,
         S_ISDIR(st.st_mode) ? "give a file, not a folder"
                             : "frugal reads only regular files here (a pipe or device would block or never end); "
                               "replace it with the file itself");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) fail_errno("fcntl", path.string(), errno);
  return guard;
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

std::optional<std::string> read_regular_at_most(const std::filesystem::path& path, std::uint64_t max_bytes,
                                                Links links) {
  UniqueFd fd = open_regular(path, links);
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && static_cast<std::uint64_t>(st.st_size) > max_bytes) return std::nullopt;
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

std::filesystem::path temp_path_for(const std::filesystem::path& path) {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
  static const char* const hex = "0123456789abcdef";
  std::string suffix(kTempMarker);
  auto v = rng();
  for (int i = 0; i < 12; ++i, v >>= 4) suffix += hex[v & 15];
  constexpr std::size_t kNameMax = 255;  // NAME_MAX of every file system frugal writes to
  std::string name = path.filename().string();
  if (name.size() + suffix.size() > kNameMax) {
    std::size_t keep = kNameMax - suffix.size();
    while (keep > 0 && (static_cast<unsigned char>(name[keep]) & 0xC0) == 0x80) --keep;  // not inside a character
    name.resize(keep);
  }
  return path.parent_path() / (name + suffix);
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
  if (::lstat(temp.c_str(), &now) != 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev) return TempState::absent;
  return ::unlink(temp.c_str()) == 0 ? TempState::abandoned : TempState::absent;
}

namespace {

// "pid 1234: frugal train --run runs/a" for the process holding a flock on (dev, ino), from
// /proc/locks; "" when none is listed.
std::string lock_holder(dev_t dev, ino_t ino) {
  std::ifstream locks("/proc/locks");
  char want[64];
  std::snprintf(want, sizeof want, "%02x:%02x:%llu", major(dev), minor(dev), static_cast<unsigned long long>(ino));
  for (std::string line; std::getline(locks, line);) {
    std::istringstream in(line);
    std::string id, type, mode, access, pid, where;
    if (!(in >> id >> type)) continue;
    if (type == "->") in >> type;  // a waiter on a lock
    if (!(in >> mode >> access >> pid >> where) || where != want || pid == std::to_string(::getpid())) continue;
    std::string cmd;
    std::ifstream cmdline("/proc/" + pid + "/cmdline", std::ios::binary);
    for (std::string arg; std::getline(cmdline, arg, '\0');) cmd += (cmd.empty() ? "" : " ") + arg;
    if (cmd.size() > 200) cmd = cmd.substr(0, 200) + "...";
    return "pid " + pid + (cmd.empty() ? "" : ": " + printable(cmd));
  }
  return "";
}

}  // namespace

std::optional<FileLock> FileLock::try_lock(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail_errno("open", path.string(), errno);
  UniqueFd guard(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail_errno("stat", path.string(), errno);
  if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
    fail(ErrorKind::invalid, path.string(), "a file or a folder", file_kind(path), "remove it or choose another path");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return std::nullopt;
    if (errno == ENOLCK || errno == EINVAL || errno == EOPNOTSUPP)
      fail(ErrorKind::unsupported, path.string(), "a file system that can lock files (flock)",
           std::string("none (") + std::strerror(errno) + ")",
           "use a folder on a local disk, so that two frugal processes cannot write it at once");
    fail_errno("lock", path.string(), errno);
  }
  return FileLock(path, std::move(guard));
}

FileLock FileLock::lock(const std::filesystem::path& path, const std::string& doing) {
  if (auto l = try_lock(path)) return std::move(*l);
  const std::string who = holder(path);
  throw Error(ErrorKind::io, path.string() + ": in use by another frugal process" +
                                 (who.empty() ? std::string() : " (" + who + ")") + "; " + doing +
                                 " did not start: let it finish or stop it, then run the same command again");
}

std::string FileLock::holder(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return lock_holder(st.st_dev, st.st_ino);
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

std::filesystem::path confine_path(const std::filesystem::path& root, std::string_view rel, const std::string& where) {
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

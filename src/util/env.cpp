#include "frugal/util/env.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "frugal/util/fs.h"

namespace frugal {
namespace {

[[noreturn]] void fail_write_errno(const std::string& what, const std::filesystem::path& path, int err) {
  if (err == ENOSPC || err == EDQUOT)
    throw DiskFullError(
        message(path.string(), "", "",
                what + " failed: " + std::strerror(err) + "; free disk space (frugal du, frugal clean) and run again"));
  fail_errno(what, path.string(), err);
}

[[noreturn]] void refuse_special(const std::filesystem::path& path, const std::string& kind) {
  fail(ErrorKind::invalid, path.string(), "a regular file to append to", kind,
       "frugal appends only to regular files in its own folders (a FIFO would block it, a device never "
       "end, a link lead out of the folder): remove it, then run the same command again");
}

class PosixWritableFile : public WritableFile {
 public:
  // `lock`: a duplicate of `fd` holding the owner's flock on a temporary (fs.h), kept until this
  // object is destroyed, so close() before the rename does not let a sweeper take the file.
  // `whole_appends`: a failed append() cuts the file back to its length before the call.
  PosixWritableFile(std::filesystem::path path, int fd, int lock = -1, bool whole_appends = false)
      : path_(std::move(path)), fd_(fd), lock_(lock), whole_appends_(whole_appends) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
    if (lock_ >= 0) ::close(lock_);
  }
  void append(const void* data, std::size_t n) override {
    if (!whole_appends_) return write_all(data, n);
    struct stat st {};
    if (::fstat(fd_, &st) != 0) fail_write_errno("stat", path_, errno);
    try {
      write_all(data, n);
    } catch (const Error& e) {
      // The kernel may have taken part of the bytes before ENOSPC (or EFBIG): a torn record would
      // make every later reader of the log stop or choke here.
      if (S_ISREG(st.st_mode) && ::ftruncate(fd_, st.st_size) != 0)
        throw Error(ErrorKind::io, std::string(e.what()) + "; cutting " + path_.string() +
                                       " back to its last whole record failed too: " + std::strerror(errno) +
                                       "; its last record is torn");
      throw;
    }
  }
  void sync() override {
    if (::fsync(fd_) != 0) fail_write_errno("fsync", path_, errno);
  }
  void close() override {
    if (fd_ < 0) return;
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail_write_errno("close", path_, errno);
  }

 private:
  void write_all(const void* data, std::size_t n) {
    auto* p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        fail_write_errno("write", path_, errno);
      }
      p += w;
      n -= static_cast<std::size_t>(w);
    }
  }

  std::filesystem::path path_;
  int fd_;
  int lock_;
  bool whole_appends_;
};

class PosixEnv : public Env {
 public:
  std::unique_ptr<WritableFile> new_writable_file(const std::filesystem::path& path) override {
    if (is_temp_path(path)) {
      int fd = create_owned_temp(path);
      if (fd < 0) fail_write_errno("create", path, errno);
      int lock = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
      if (lock < 0) {
        const int err = errno;
        ::unlink(path.c_str());
        ::close(fd);
        fail_write_errno("duplicate the descriptor of", path, err);
      }
      return std::make_unique<PosixWritableFile>(path, fd, lock);
    }
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) fail_write_errno("create", path, errno);
    return std::make_unique<PosixWritableFile>(path, fd);
  }
  // Logs live in frugal's own folders: a FIFO there would block the open (or every append), a
  // device take bytes without end, a link send the records out of the folder. So the open neither
  // blocks nor follows a link, and anything but a regular file is refused before a byte is written.
  std::unique_ptr<WritableFile> new_appendable_file(const std::filesystem::path& path) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (fd < 0 && (errno == ELOOP || errno == ENXIO))  // a link; a FIFO nobody reads
      refuse_special(path, errno == ELOOP ? "a symbolic link" : file_kind(path));
    if (fd < 0) fail_write_errno("open for appending", path, errno);
    UniqueFd guard(fd);
    struct stat st {};
    if (::fstat(fd, &st) != 0) fail_write_errno("stat", path, errno);
    if (!S_ISREG(st.st_mode)) refuse_special(path, file_kind(path));
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) fail_write_errno("fcntl", path, errno);
    return std::make_unique<PosixWritableFile>(path, guard.release(), -1, /*whole_appends=*/true);
  }
  void create_dirs(const std::filesystem::path& dir) override {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) fail_write_errno("create folder", dir, ec.value());
  }
  void rename_file(const std::filesystem::path& from, const std::filesystem::path& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) fail_write_errno("rename", to, errno);
  }
  void sync_dir(const std::filesystem::path& dir) override { fsync_dir(dir); }
  bool remove_file(const std::filesystem::path& path) override {
    if (::unlink(path.c_str()) == 0) return true;
    if (errno == ENOENT) return false;
    fail_errno("remove", path.string(), errno);
  }
  std::uint64_t free_space(const std::filesystem::path& path) override { return frugal::free_space(path); }
  SteadyTime steady_now() override { return std::chrono::steady_clock::now(); }
  WallTime wall_now() override { return std::chrono::system_clock::now(); }
};

}  // namespace

std::uint64_t Env::disk_size(const std::filesystem::path& path) {
  struct statvfs st {};
  if (::statvfs(path.c_str(), &st) != 0) fail_errno("statvfs", path.string(), errno);
  return static_cast<std::uint64_t>(st.f_blocks) * st.f_frsize;
}

Env& Env::real() {
  static PosixEnv env;
  return env;
}

AtomicWrite::AtomicWrite(Env& env, std::filesystem::path path)
    : env_(env), path_(std::move(path)), temp_(temp_path_for(path_)) {
  file_ = env_.new_writable_file(temp_);
}

AtomicWrite::~AtomicWrite() {
  if (committed_) return;
  try {
    env_.remove_file(temp_);  // before file_ goes: its owner's lock is held until then
  } catch (const std::exception&) {
    // Best effort: the lock dies with file_ below, so the next run or `frugal clean` removes it.
  }
  file_.reset();
}

void AtomicWrite::commit() {
  file_->sync();
  file_->close();
  env_.rename_file(temp_, path_);
  committed_ = true;
  file_.reset();  // drops the owner's lock, now that the temporary has its final name
  // After the rename the new file is visible; a failed folder sync only weakens durability
  // across a power cut, but callers must still hear about it.
  env_.sync_dir(path_.parent_path().empty() ? std::filesystem::path(".") : path_.parent_path());
}

}  // namespace frugal

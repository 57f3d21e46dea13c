// The seam between frugal and the operating system for everything it writes and every clock it
// reads (as leveldb's Env class): file writes and appends, fsync, rename, folder creation
// and sync, removal, free space and the clocks. Production code uses Env::real(); tests pass a
// FaultEnv-style wrapper (tests/budget/fault_env.h) that fails the N-th operation or reports a
// full disk, so crash and disk-full paths run without a real disk filling and deadlines and
// throughput run on a fake clock.
//
// Torch-free (lives in frugal_util, the bottom layer, so every library can take an Env&).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "frugal/util/error.h"

namespace frugal {

// Thrown (kind io) when a write fails with ENOSPC or EDQUOT, so callers can tell "disk full"
// (stop resumable, exit 75, or retry after making room) from other I/O errors.
class DiskFullError : public Error {
 public:
  explicit DiskFullError(const std::string& what) : Error(ErrorKind::io, what) {}
};

// A file being written. Errors throw (DiskFullError for ENOSPC/EDQUOT, else Error(io)).
// On a file from new_appendable_file, append() is all or nothing: when it throws, the file has
// been cut back to its length before the call, so a log of records never ends in a torn one.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual void append(const void* data, std::size_t n) = 0;
  void append(std::string_view s) { append(s.data(), s.size()); }
  virtual void sync() = 0;   // fsync: data on disk before the rename that publishes it
  virtual void close() = 0;  // idempotent; the destructor closes too, ignoring errors
};

class Env {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;
  using WallTime = std::chrono::system_clock::time_point;

  virtual ~Env() = default;

  // Creates (or truncates) `path` for writing. A temporary name (fs.h's is_temp_path) is created
  // exclusively and owned (create_owned_temp) until the file object is destroyed.
  virtual std::unique_ptr<WritableFile> new_writable_file(const std::filesystem::path& path) = 0;
  // Opens `path` for appending (O_APPEND), creating it if missing; existing content is kept.
  // For logs of records (metrics.jsonl, TensorBoard events): see WritableFile::append. Opened
  // O_NOFOLLOW|O_NONBLOCK: anything but a regular file there (a FIFO, a device, a link out of the
  // folder) is Error(invalid), never waited on or written through.
  virtual std::unique_ptr<WritableFile> new_appendable_file(const std::filesystem::path& path) = 0;
  // mkdir -p: creates `dir` and its missing parents; an existing folder is not an error.
  virtual void create_dirs(const std::filesystem::path& dir) = 0;
  // rename(2): atomically replaces `to`.
  virtual void rename_file(const std::filesystem::path& from, const std::filesystem::path& to) = 0;
  // fsync of a folder, so a rename in it survives a power cut.
  virtual void sync_dir(const std::filesystem::path& dir) = 0;
  // Removes a file; a missing file is not an error. Returns whether something was removed.
  virtual bool remove_file(const std::filesystem::path& path) = 0;
  // Bytes an unprivileged user may still write on the file system holding `path`.
  virtual std::uint64_t free_space(const std::filesystem::path& path) = 0;
  // Size of the file system holding `path` (statvfs f_blocks), for reserves sized as a share of
  // the disk (decompress.h). Not pure: the real one serves every Env that does not fake it.
  virtual std::uint64_t disk_size(const std::filesystem::path& path);

  virtual SteadyTime steady_now() = 0;  // for measuring and deadlines
  virtual WallTime wall_now() = 0;      // for "HH:MM" deadlines (local time)

  // The process-wide real implementation (POSIX calls, std::chrono clocks).
  static Env& real();
};

// Crash-safe replacement of `path` through `env` (fs.h's protocol: write "<path>.frugal-tmp-*",
// sync, rename, sync folder). The temporary is removed when any step fails; `path` is then
// untouched. `write` receives the open temporary and appends the content.
template <class WriteFn>
void write_atomic(Env& env, const std::filesystem::path& path, WriteFn&& write);

// Not a template detail: the temporary's lifecycle, shared by write_atomic.
class AtomicWrite {
 public:
  AtomicWrite(Env& env, std::filesystem::path path);
  ~AtomicWrite();  // removes the temporary unless committed
  AtomicWrite(const AtomicWrite&) = delete;
  AtomicWrite& operator=(const AtomicWrite&) = delete;
  WritableFile& file() { return *file_; }
  const std::filesystem::path& temp_path() const { return temp_; }
  void commit();  // sync, close, rename over path, sync folder

 private:
  Env& env_;
  std::filesystem::path path_, temp_;
  std::unique_ptr<WritableFile> file_;
  bool committed_ = false;
};

template <class WriteFn>
void write_atomic(Env& env, const std::filesystem::path& path, WriteFn&& write) {
  AtomicWrite w(env, path);
  write(w.file());
  w.commit();
}

}  // namespace frugal

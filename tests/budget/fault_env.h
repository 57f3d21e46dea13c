// An Env for tests: real files, with an injected failure at the N-th file operation (create,
// append, sync, close, rename, folder creation or sync) or at the N-th append only, a fake
// free-space figure and a fake clock that tests advance.
#pragma once

#include <ftw.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include "frugal/util/env.h"
#include "frugal/util/error.h"

namespace frugal::testing {

class FaultEnv : public Env {
 public:
  enum class Fault { io, disk_full };
  // Operation index (0-based, counted across all files and kinds) that fails; -1 = none.
  int fail_at = -1;
  // Append index (0-based, counted over append() calls on every file) that fails; -1 = none.
  int fail_append_at = -1;
  Fault fault = Fault::disk_full;
  // After the first injected failure every later operation fails the same way (a disk that
  // stays full), instead of only the one.
  bool sticky = false;
  // A failed append on a file from new_writable_file first writes half its bytes, as a kernel
  // does when the disk fills midway. Appendable files keep Env's contract (all or nothing).
  bool torn = false;
  int ops = 0;                       // operations seen so far
  int appends = 0;                   // append() calls seen so far
  int failures = 0;                  // failures injected so far
  std::uint64_t free_bytes = ~0ull;  // what free_space() reports (min with reality is not taken)
  std::uint64_t disk_bytes = ~0ull;  // what disk_size() reports
  SteadyTime now = SteadyTime{} + std::chrono::hours(1);
  WallTime wall = WallTime{};

  // Throws the injected error when operation `what` is the one chosen to fail.
  void tick(const std::string& what, const std::filesystem::path& path, bool is_append = false) {
    const bool op_hit = ops++ == fail_at;
    const bool append_hit = is_append && appends++ == fail_append_at;
    if (op_hit || append_hit || (sticky && failures > 0)) {
      ++failures;
      if (fault == Fault::disk_full) throw DiskFullError(path.string() + ": injected ENOSPC at " + what);
      throw Error(ErrorKind::io, path.string() + ": injected I/O error at " + what);
    }
  }

  std::unique_ptr<WritableFile> new_writable_file(const std::filesystem::path& path) override {
    tick("create", path);
    return std::make_unique<File>(*this, path, real().new_writable_file(path), torn);
  }
  std::unique_ptr<WritableFile> new_appendable_file(const std::filesystem::path& path) override {
    tick("open for appending", path);
    return std::make_unique<File>(*this, path, real().new_appendable_file(path), false);
  }
  void create_dirs(const std::filesystem::path& dir) override {
    tick("create folder", dir);
    real().create_dirs(dir);
  }
  void rename_file(const std::filesystem::path& from, const std::filesystem::path& to) override {
    tick("rename", to);
    real().rename_file(from, to);
  }
  void sync_dir(const std::filesystem::path& dir) override {
    tick("sync_dir", dir);
    real().sync_dir(dir);
  }
  bool remove_file(const std::filesystem::path& path) override { return real().remove_file(path); }
  std::uint64_t free_space(const std::filesystem::path&) override { return free_bytes; }
  std::uint64_t disk_size(const std::filesystem::path&) override { return disk_bytes; }
  SteadyTime steady_now() override { return now; }
  WallTime wall_now() override { return wall; }
  // Moves the steady clock (not the wall clock) forward.
  void advance(double seconds) {
    now += std::chrono::duration_cast<SteadyTime::duration>(std::chrono::duration<double>(seconds));
  }

 private:
  class File : public WritableFile {
   public:
    File(FaultEnv& env, std::filesystem::path path, std::unique_ptr<WritableFile> inner, bool torn)
        : env_(env), path_(std::move(path)), inner_(std::move(inner)), torn_(torn) {}
    void append(const void* data, std::size_t n) override {
      try {
        env_.tick("append", path_, /*is_append=*/true);
      } catch (const Error&) {
        if (torn_) inner_->append(data, n / 2);
        throw;
      }
      inner_->append(data, n);
    }
    void sync() override {
      env_.tick("sync", path_);
      inner_->sync();
    }
    void close() override {
      env_.tick("close", path_);
      inner_->close();
    }

   private:
    FaultEnv& env_;
    std::filesystem::path path_;
    std::unique_ptr<WritableFile> inner_;
    bool torn_;
  };
};

// rm -rf without std::filesystem::remove_all, and quietly (what cannot be removed stays): libtorch.so
// (2.11 wheel) exports its own copy of that symbol, which crashes when a torch-linked binary calls it.
inline void remove_tree_quietly(const std::filesystem::path& dir) {
  ::nftw(
      dir.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }, 16,
      FTW_DEPTH | FTW_PHYS);
}

// A fresh folder under the build tree's temp area, removed at destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "frugal-test-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw Error(ErrorKind::io, "mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() { remove_tree_quietly(path_); }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& s) const { return path_ / s; }

 private:
  std::filesystem::path path_;
};

}  // namespace frugal::testing

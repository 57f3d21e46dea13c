// Test inputs that a script makes, made once per build tree however many test processes want them.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "test_files.h"

namespace frugal::testing {

// Files made once per build tree into `dir` by `make(tmp)` (again when `source` changes). CTest
// runs tests in parallel processes, so the first one makes them under an exclusive lock beside
// `dir`, aside, and moves them in whole; the others wait on the lock and then find them made. (A
// process that found them made must not see them removed under it: only a stale copy is replaced.)
template <class Make>
std::filesystem::path made_once(const std::filesystem::path& dir, const std::filesystem::path& source, Make make) {
  namespace fs = std::filesystem;
  const fs::path stamp = dir / "done";
  std::error_code ec;
  auto fresh = [&] { return fs::exists(stamp) && fs::last_write_time(stamp, ec) >= fs::last_write_time(source, ec); };
  if (fresh()) return dir;
  fs::create_directories(dir.parent_path(), ec);
  const int lock = ::open((dir.string() + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) {
    ADD_FAILURE() << "could not lock " << dir << ".lock";
    if (lock >= 0) ::close(lock);
    return {};
  }
  fs::path out = dir;
  if (!fresh()) {
    const fs::path tmp = dir.string() + ".tmp." + std::to_string(::getpid());
    if (make(tmp)) {
      std::ofstream(tmp / "done") << "ok\n";
      if (fs::exists(dir)) remove_tree(dir);
      fs::rename(tmp, dir, ec);
      if (ec) ADD_FAILURE() << "could not move " << tmp << " to " << dir << ": " << ec.message();
    } else {
      out.clear();
    }
    if (fs::exists(tmp)) remove_tree(tmp);
  }
  ::close(lock);  // releases the lock
  return out;
}

}  // namespace frugal::testing

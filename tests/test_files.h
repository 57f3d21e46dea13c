// Files for tests: fresh folders under the build tree, whole files written, folders removed.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace frugal::testing {

// An empty folder test-tmp/<name> under the build tree (what a test left there before is removed).
// It calls std::filesystem::remove_all, so it is not for the torch test binaries (see remove_tree).
inline std::filesystem::path fresh_dir(const std::string& name) {
  std::filesystem::path d = std::filesystem::path(FRUGAL_BINARY_DIR) / "test-tmp" / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// `data` as the whole of file `p` (its folder must exist).
inline void write(const std::filesystem::path& p, const std::string& data) {
  std::ofstream(p, std::ios::binary).write(data.data(), static_cast<std::streamsize>(data.size()));
}

// rm -rf; the test fails when `p` cannot be removed. Not std::filesystem::remove_all: libtorch.so
// exports its own, which crashes when it wins symbol resolution in the torch test binaries.
inline void remove_tree(const std::filesystem::path& p) {
  std::string cmd = "rm -rf '" + p.string() + "'";
  if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << "could not remove " << p;
}

}  // namespace frugal::testing

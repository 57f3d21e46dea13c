// Test images made by tests/image/make_fixtures.py with the project's Python (PIL), decoded by
// PIL beside each one. Shared by the image and data tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "frugal/image.h"

namespace frugal::testing {

inline std::string python() {
  if (const char* p = std::getenv("FRUGAL_PYTHON")) return p;
  std::filesystem::path venv = std::filesystem::path(FRUGAL_SOURCE_DIR) / ".venv/bin/python";
  return std::filesystem::exists(venv) ? venv.string() : "";
}

// Runs a Python script of the source tree; false when no Python with PIL is available.
inline bool run_python(const std::string& script, const std::string& args) {
  std::string py = python();
  if (py.empty()) return false;
  std::string cmd = py + " " + std::string(FRUGAL_SOURCE_DIR) + "/" + script + " " + args;
  return std::system(cmd.c_str()) == 0;
}

// libtorch.so exports its own std::filesystem::remove_all, which crashes when it wins symbol
// resolution in the torch test binaries; rm -rf does not depend on that.
inline void remove_tree(const std::filesystem::path& p) {
  std::string cmd = "rm -rf '" + p.string() + "'";
  if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << "could not remove " << p;
}

// The image fixtures, made once per build tree (again when the script changes); empty path when
// they cannot be made.
inline std::filesystem::path image_fixtures() {
  namespace fs = std::filesystem;
  const char* script = "tests/image/make_fixtures.py";
  fs::path dir = fs::path(FRUGAL_BINARY_DIR) / "test-fixtures/image";
  fs::path stamp = dir / "done";
  fs::path src = fs::path(FRUGAL_SOURCE_DIR) / script;
  std::error_code ec;
  if (fs::exists(stamp) && fs::last_write_time(stamp, ec) >= fs::last_write_time(src, ec)) return dir;
  // CTest runs tests in parallel processes: make them aside and move them in whole.
  fs::path tmp = dir.string() + ".tmp." + std::to_string(::getpid());
  if (!run_python(script, tmp.string())) return {};
  std::ofstream(tmp / "done") << "ok\n";
  if (fs::exists(stamp) && fs::last_write_time(stamp, ec) < fs::last_write_time(src, ec)) remove_tree(dir);
  fs::rename(tmp, dir, ec);
  if (ec) remove_tree(tmp);
  return dir;
}

inline std::vector<std::uint8_t> read_bytes(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// A "W H\n" header then raw pixels, `channels` per pixel.
inline Image read_raw(const std::filesystem::path& p, int channels) {
  std::vector<std::uint8_t> b = read_bytes(p);
  std::string head(b.begin(), std::find(b.begin(), b.end(), '\n'));
  std::istringstream s(head);
  Image img;
  int w = 0, h = 0;
  s >> w >> h;
  img.resize(w, h, channels);
  std::copy(b.begin() + head.size() + 1, b.end(), img.pixels.begin());
  EXPECT_EQ(b.size() - head.size() - 1, img.pixels.size()) << p;
  return img;
}

struct Diff {
  int max = 0;
  double mean = 0;
};

inline Diff diff(const Image& a, const Image& b) {
  Diff d;
  EXPECT_EQ(a.width, b.width);
  EXPECT_EQ(a.height, b.height);
  EXPECT_EQ(a.channels, b.channels);
  if (a.pixels.size() != b.pixels.size()) return {999, 999};
  double sum = 0;
  for (std::size_t i = 0; i < a.pixels.size(); ++i) {
    int v = std::abs(int(a.pixels[i]) - int(b.pixels[i]));
    d.max = std::max(d.max, v);
    sum += v;
  }
  d.mean = a.pixels.empty() ? 0 : sum / a.pixels.size();
  return d;
}

}  // namespace frugal::testing

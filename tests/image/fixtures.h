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

#include "frugal/image/image.h"
#include "made_once.h"
#include "reference_python.h"
#include "test_files.h"

namespace frugal::testing {

// Runs a Python script of the source tree; false when no Python with PIL is available.
inline bool run_python(const std::string& script, const std::string& args) {
  std::string py = python();
  if (py.empty()) return false;
  std::string cmd = py + " " + std::string(FRUGAL_SOURCE_DIR) + "/" + script + " " + args;
  return std::system(cmd.c_str()) == 0;
}

// The fixtures a script makes (tests/image/make_*.py) in test-fixtures/<name>; empty path when
// they cannot be made.
inline std::filesystem::path fixtures_made_by(const char* script, const char* name) {
  return made_once(std::filesystem::path(FRUGAL_BINARY_DIR) / "test-fixtures" / name,
                   std::filesystem::path(FRUGAL_SOURCE_DIR) / script,
                   [&](const std::filesystem::path& tmp) { return run_python(script, tmp.string()); });
}

// JPEG and PNG images of every kind (tests/image/make_fixtures.py).
inline std::filesystem::path image_fixtures() { return fixtures_made_by("tests/image/make_fixtures.py", "image"); }
// WebP, GIF, BMP and TIFF images and EXIF-oriented photos (tests/image/make_format_fixtures.py).
inline std::filesystem::path format_fixtures() {
  return fixtures_made_by("tests/image/make_format_fixtures.py", "formats");
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

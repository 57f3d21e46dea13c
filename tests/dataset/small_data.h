// Small data for the dataset tests: PNG images of one grey level, and zips of them with text files
// (labels, class names) beside, each zip in a folder of its own that goes with it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "archive/zip_read_fixture.h"
#include "frugal/image/image.h"

namespace frugal::testing {

// An 8x8 grey PNG, every pixel `level`.
inline std::string png(std::uint8_t level) {
  std::vector<std::uint8_t> pixels(8 * 8, level);
  auto b = encode_png(pixels, 8, 8, 1);
  return std::string(b.begin(), b.end());
}

// A 4x4 grey PNG, every pixel `level`.
inline std::vector<std::uint8_t> tiny_png_bytes(std::uint8_t level) {
  Image img;
  img.resize(4, 4, 1);
  std::fill(img.pixels.begin(), img.pixels.end(), level);
  return encode_png(img);
}

inline std::string tiny_png(std::uint8_t level) {
  const auto b = tiny_png_bytes(level);
  return {b.begin(), b.end()};
}

// A zip and the folder that holds it, removed at destruction.
struct ZipInFolder {
  std::filesystem::path dir, zip;
  ~ZipInFolder() { std::filesystem::remove_all(dir); }
};

// <name>.zip of text files (name, text) and 8x8 PNG images (names without text), in
// temp_dir(folder_prefix + name).
inline std::unique_ptr<ZipInFolder> zip_of(const std::string& folder_prefix, const std::string& name,
                                           const std::vector<std::pair<std::string, std::string>>& texts,
                                           const std::vector<std::string>& images) {
  std::vector<TestEntry> entries;
  for (const auto& [n, t] : texts) entries.push_back({n, t});
  std::uint8_t level = 0;
  for (const auto& n : images) entries.push_back({n, png(level += 7)});
  auto d = std::make_unique<ZipInFolder>();
  d->dir = temp_dir(folder_prefix + name);
  d->zip = d->dir / (name + ".zip");
  write(d->zip, build_zip(entries));
  return d;
}

}  // namespace frugal::testing

// The split manifest (docs/formats.md): {"format": "frugal-split", "version": 1, "name", "size",
// "sha256", "parts": [{"file", "size", "sha256"}, ...]}, part files relative to the manifest. A
// name that is not UTF-8 is stored repaired in "name"/"file" and exactly in "raw_name_hex" /
// "raw_file_hex" beside it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "frugal/util/env.h"

namespace frugal {

struct SplitPart {
  std::string file;  // relative to the manifest's folder
  std::uint64_t size = 0;
  std::string sha256;
};

struct SplitManifest {
  static constexpr int kVersion = 1;
  std::string name;  // the original file's name
  std::uint64_t size = 0;
  std::string sha256;
  std::vector<SplitPart> parts;
  std::filesystem::path dir;  // folder the manifest was read from (not stored)

  // Manifests come from downloads: every field is checked (names are plain file names in the
  // manifest's folder, sizes unsigned integers whose sum fits 64 bits, each part listed once), and
  // any parser exception becomes Error(invalid) naming the file.
  static SplitManifest load(const std::filesystem::path& manifest_path);  // throws Error(invalid)
  // The same checks on text already read; `dir` becomes the manifest's folder.
  static SplitManifest parse(std::string_view json, const std::filesystem::path& dir, const std::string& where);
  std::string to_json() const;
  void save(const std::filesystem::path& manifest_path, Env& env = Env::real()) const;  // crash-safe write
  std::filesystem::path part_path(std::size_t i) const { return dir / parts[i].file; }
};

bool is_manifest_path(const std::filesystem::path& path);  // "*.manifest.json"

// Checks part i's size and SHA-256; returns an empty string when good, else the problem.
std::string check_part(const SplitManifest& m, std::size_t i);

}  // namespace frugal

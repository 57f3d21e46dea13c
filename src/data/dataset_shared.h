// What every subset of one opened archive shares: the archive, its samples and labels, and the
// running count of undecodable images.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "data/npy.h"
#include "frugal/archive.h"
#include "frugal/data.h"

namespace frugal {

struct Sample {
  std::size_t entry = 0;      // archive entry (a file sample) or index into arrays (item >= 0)
  std::int64_t item = -1;     // sample within an (N, ...) array; -1 for a file
  int label = 0;
  std::string name;
};

// An (N, H, W[, C]) uint8 array member: mapped from the archive when stored, else read once.
struct NpyArray {
  std::string name;
  detail::NpyHeader header;
  std::vector<std::uint8_t> owned;
  std::span<const std::uint8_t> bytes;  // the whole .npy file
  std::string damage;                   // why none of its samples can be trusted (a CRC mismatch)
  std::size_t sample_bytes() const;
  std::span<const std::uint8_t> sample(std::int64_t i) const;
};

struct DatasetShared {
  std::filesystem::path path;
  DatasetOptions options;
  std::unique_ptr<Archive> archive;
  std::vector<std::string> classes;
  std::vector<Sample> samples;
  std::vector<NpyArray> arrays;
  int channels = 3;
  int native_size = 0;
  SkipReport open_skips;

  mutable std::mutex bad_mu;
  mutable SkipReport bad;

  std::string where(const Sample& s) const { return archive->display_name() + ":" + s.name; }
};

// "" when a mapped stored entry's bytes match its CRC-32 (as Archive::read checks the ones it
// inflates), else what was found; always "" under FRUGAL_BENCH_NO_CRC=1 (bench/loader.sh's A/B).
std::string view_crc_problem(const Archive& archive, std::size_t entry, std::span<const std::uint8_t> bytes);

// Fills classes, samples and arrays from the archive's entries (layout.cpp).
void scan_layout(DatasetShared& d);

}  // namespace frugal

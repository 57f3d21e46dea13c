// What every subset of one opened archive shares: the archive, its samples and labels, and the
// running count of undecodable images.
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "dataset/label_sources.h"
#include "dataset/npy.h"
#include "frugal/archive/archive.h"
#include "frugal/dataset/dataset.h"

namespace frugal {

struct Sample {
  std::size_t entry = 0;      // archive entry (a file sample) or index into arrays (item >= 0)
  std::int64_t item = -1;     // sample within an (N, ...) array; -1 for a file
  int label = 0;              // -1 on multi-label data
  std::uint32_t tag_set = 0;  // multi-label: into DatasetShared::tag_sets
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
  // Multi-label data: the distinct sets of tags (sorted indices into classes) that samples hold,
  // one copy each however many images share it (Sample::tag_set).
  bool multi_label = false;
  std::vector<std::vector<std::uint32_t>> tag_sets;
  std::vector<NpyArray> arrays;
  int channels = 3;
  int native_size = 0;
  int largest_sampled_size = 0;
  SkipReport open_skips;
  std::unique_ptr<CsvLabels> csv_labels;        // --labels, read before the split folder was chosen
  std::optional<ClassNames> class_names;        // --class-names
  std::string split_folder, validation_folder;  // Dataset::split_folder()
  std::optional<SplitFiles> split_files;        // Dataset::split_files()
  std::string taken_by_bytes;                   // Dataset::taken_by_bytes()
  std::string label_source, labels_read;        // Dataset::label_source(), labels_read()

  mutable std::mutex bad_mu;
  mutable SkipReport bad;
  mutable std::set<std::string> bad_names;  // Dataset::bad_files()

  std::string where(const Sample& s) const { return archive->display_name() + ":" + s.name; }
  // Whether `path` (relative to the data as given) is --labels or --class-names: neither a sample
  // nor a skipped file, as labels.csv is not.
  bool is_label_file(const std::string& path) const {
    return (csv_labels && csv_labels->is_label_file(path)) || (class_names && class_names->member == path);
  }
};

// "" when a mapped stored entry's bytes match its CRC-32 (as Archive::read checks the ones it
// inflates), else what was found; always "" under FRUGAL_BENCH_NO_CRC=1 (bench/loader.sh's A/B).
std::string view_crc_problem(const Archive& archive, std::size_t entry, std::span<const std::uint8_t> bytes);

// Fills classes, samples and arrays from the archive's entries (layout.cpp).
void scan_layout(DatasetShared& d);

}  // namespace frugal

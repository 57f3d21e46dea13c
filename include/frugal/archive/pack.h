// `frugal pack`: a dataset zip from a folder of class sub-folders, or from IDX image + label files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "frugal/archive/read_limit.h"
#include "frugal/util/env.h"

namespace frugal {

struct PackOptions {
  std::filesystem::path output;          // OUT.zip; with split_size, the name of the split set
  std::uint64_t split_size = 0;          // > 0: write only OUT.zip.partNNNN + OUT.zip.manifest.json
  std::string root;                      // optional folder every entry name starts with
  std::string idx_set;                   // IDX folder: which set ("train", "t10k"); empty: the only one
  std::vector<std::string> class_names;  // IDX: folder names for labels 0..n-1 (default: see src/archive/mnist_idx.h)
  int threads = 2;                       // compression / PNG encoding threads
  int level = 6;                         // libdeflate level for the files that are deflated
  // IDX: an images or labels file whose data (as its header declares) is larger is refused before
  // it is read. A folder's files are not capped: one above 64 MiB is stored and streamed.
  std::uint64_t max_file_bytes = kDefaultMaxFileBytes;
};

struct PackResult {
  std::filesystem::path output;  // the zip, or the manifest with split_size
  std::string source;            // "folder" or "idx"
  std::size_t entries = 0, stored = 0, deflated = 0, parts = 0;
  std::uint64_t bytes = 0;  // archive size
  bool zip64 = false;
  std::vector<std::pair<std::string, std::size_t>> classes;  // top-level folder -> entries
  std::size_t unfinished_skipped = 0;   // *.frugal-tmp-* and *.frugal-join files in SRC, never packed
  std::size_t temporaries_removed = 0;  // abandoned temporaries of an interrupted pack of OUT
};

// Entries are written in sorted name order with fixed timestamps, so the same input gives the
// same bytes. Already-compressed images are stored, other files deflated; a file larger than
// 64 MiB is stored and copied into the archive in pieces, never read into memory whole. Files that are
// interrupted writes, not data (frugal's temporaries "*.frugal-tmp-*" and partial joins
// "*.frugal-join"), are left out and counted. Abandoned temporaries of an interrupted pack of the
// same output are removed from its folder first.
// Every write goes through `env`.
PackResult pack(const std::filesystem::path& src, const PackOptions& options, Env& env = Env::real());

}  // namespace frugal

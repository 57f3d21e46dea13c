// Split sets: cutting a file into parts with a SHA-256 manifest, and joining them back, resumably.
// The manifest format is in docs/formats.md ("frugal-split", version 1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace frugal {

struct SplitPartInfo {
  std::string file;  // relative to the manifest's folder
  std::uint64_t size = 0;
  std::string sha256;
};

struct SplitOptions {
  std::uint64_t part_size = 1000ull << 20;  // "1000M"
  std::filesystem::path out_dir;            // empty: the file's own folder
  // false skips every fsync: for benchmarks only (`--no-sync`); a crash may then leave parts
  // that are named final but not on disk.
  bool sync = true;
};

struct SplitResult {
  std::filesystem::path manifest;
  std::string name;
  std::uint64_t size = 0;
  std::string sha256;
  std::vector<SplitPartInfo> parts;
  std::size_t temporaries_removed = 0;  // abandoned temporaries of an interrupted split of FILE
};

// One pass over `file`: writes the parts (each through a temporary name, renamed when complete)
// and then the manifest, so a manifest on disk always describes a complete set. Abandoned
// temporaries of an interrupted split of the same file in the output folder are removed first;
// a name too long for its parts' names is refused before anything is written (Error unsupported).
SplitResult split_file(const std::filesystem::path& file, const SplitOptions& options);

struct JoinOptions {
  std::filesystem::path output;  // empty: the manifest's folder / the original name
  bool delete_parts = false;     // remove each part once it is safely in the output
  bool sync = true;              // as in SplitOptions
  // Test seam: called after part i is in the partial output (and deleted, with delete_parts).
  // An exception thrown here interrupts the join as a crash would, leaving the partial output.
  std::function<void(std::size_t)> after_part;
  // Test seam: called once part i's bytes are written to the partial output, before they are read
  // back and checked (what another writer could change in between).
  std::function<void(std::size_t)> after_copy;
};

struct JoinResult {
  std::filesystem::path output;
  std::uint64_t size = 0;
  std::string sha256;
  std::size_t parts = 0;
  std::size_t parts_resumed = 0;  // parts found already in a partial output from an earlier run
  std::size_t parts_deleted = 0;
  // The output was there already, holding exactly the manifest's bytes (a rerun of a finished
  // join): nothing was written; with delete_parts, parts still present were removed.
  bool already_joined = false;
};

// The partial output of an interrupted join: "<output>.frugal-join". A rerun verifies what it
// holds part by part against the manifest, keeps the longest good prefix and continues. For an
// output name within 12 bytes of NAME_MAX the name is cut and tagged with a digest of the whole.
std::filesystem::path join_partial_path(const std::filesystem::path& output);

// Copies every part (size checked) and reads it back from the output, whose bytes decide: each
// part's SHA-256 and the whole file's come from the output file itself. Then renames the partial
// output to `output`, never over an existing file. Throws Error(invalid) (exit 3) on a mismatch,
// naming the part, what was expected and what was found. Holds a lock on the manifest (and on the
// partial output): a second join of the same set or into the same output fails at once with
// Error(io) (exit 1) naming the first. When `output` exists: returns already_joined when it holds
// exactly the manifest's bytes (size and SHA-256), else Error(invalid) and nothing is changed.
JoinResult join_parts(const std::filesystem::path& manifest, const JoinOptions& options);

}  // namespace frugal

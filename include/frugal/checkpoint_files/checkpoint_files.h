// Checkpoint files as bytes on disk, read without LibTorch (src/checkpoint_files/, library
// frugal_checkpoint_files), so that `frugal du`, `frugal clean` and the fuzzers can use them: the
// safetensors header, checkpoint file names, the payload checksum and its verification, a delta's
// index and base, and retention (which checkpoints may go). Loading tensors (LibTorch) is
// checkpoint.h's. Formats: docs/formats.md, "Checkpoint file", "Delta checkpoint".
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "frugal/util/fs.h"

namespace frugal {

inline constexpr const char* kCheckpointFormat = "frugal-checkpoint";
inline constexpr int kCheckpointVersion = 1;
// A multi-label model's files (ModelInfo::multi_label): a frugal that knows only version 1 would
// read its sigmoid outputs as one softmax, so they say 2 and such a frugal refuses them.
inline constexpr int kCheckpointVersionMultiLabel = 2;

// ---- safetensors header ---------------------------------------------------------------------------

// The header of a safetensors file: tensor index (JSON) and its string metadata. Every tensor's
// data_offsets are checked against dtype x shape and the file size, without wrapping.
struct SafetensorsHeader {
  nlohmann::json tensors;  // name -> {"dtype","shape","data_offsets"}
  std::map<std::string, std::string> metadata;
  std::uint64_t header_size = 0;  // JSON bytes (the 8-byte length excluded)
  std::uint64_t payload_offset() const { return 8 + header_size; }
  std::uint64_t payload_size = 0;  // largest data_offsets end
};
// Throws Error(invalid) naming the file for anything that is not safetensors, and for anything but a
// regular file (fs.h's open_regular: a FIFO is never waited on); Links::refuse for files found in a
// run folder, which are never followed out of it.
SafetensorsHeader read_safetensors_header(const std::filesystem::path& path, Links links = Links::follow);
// Parses an in-memory file (8-byte length + JSON + payload); `name` is used in messages.
SafetensorsHeader parse_safetensors_header(const void* data, std::size_t size, const std::string& name);

// How many safetensors headers this process has parsed (both functions above count). A load parses
// each file's header once; tests hold loads to that.
std::uint64_t safetensors_header_parses();

// Bytes per element of a safetensors dtype name ("F32" -> 4); 0 for a name it does not know.
std::size_t safetensors_dtype_size(std::string_view dtype);

// JSON from a file, nested at most `max_depth` deep: nlohmann parses iteratively, but copying and
// dumping a value recurse, so a crafted "[[[[..." of a few MB would overflow the stack later.
// Throws Error(invalid) naming `where` for unparsable or too deeply nested text.
nlohmann::json parse_json_bounded(std::string_view text, const std::string& where, int max_depth = 32);

// ---- checkpoint files -----------------------------------------------------------------------------

struct CheckpointName {
  std::int64_t epoch = 0, step = 0;
  bool delta = false;
};

// "ckpt-e0003-s000120.safetensors" (or ".delta.safetensors"); more digits when needed.
std::string checkpoint_file_name(std::int64_t epoch, std::int64_t step, bool delta);
std::optional<CheckpointName> parse_checkpoint_name(const std::string& file_name);

// "xxh3-64:<16 hex digits>" of a checkpoint's tensor payload (metadata "checksum").
std::string payload_checksum(const void* data, std::size_t n);

// Checks format, version, file size and the xxh3 checksum of the payload (metadata "checksum").
// Returns "" when good, else what is wrong (for messages).
std::string verify_checkpoint_file(const std::filesystem::path& path);

// One tensor of a delta checkpoint's metadata "delta_index" (docs/formats.md, "Delta checkpoint").
struct DeltaIndexItem {
  std::string name, dtype, mode;  // mode: "same", "xor" or "raw"
  std::vector<std::int64_t> shape;
  std::uint64_t bytes = 0;  // dtype size x elements, computed without overflow
};
// Parses "delta_index" (torch-free, so it can be fuzzed). Throws Error(invalid) naming `where` for
// anything but an array of [NAME, DTYPE, SHAPE, MODE] with known dtypes, non-negative dimensions
// whose byte count fits 64 bits, known modes and unique names.
std::vector<DeltaIndexItem> parse_delta_index(std::string_view text, const std::string& where);

// The base of the delta checkpoint `delta_file`, from its metadata "base": a file name in the
// same folder (not a path, not the delta itself), through confine_path(). Throws Error(invalid).
std::filesystem::path delta_base_path(const std::filesystem::path& delta_file, std::string_view base);

// ---- retention ------------------------------------------------------------------------------------

// A checkpoint on disk as retention and resumption see it.
struct CheckpointEntry {
  std::filesystem::path path;
  CheckpointName name;
  std::optional<double> metric;  // metadata "metric_value", when the run validates
  bool higher_is_better = true;  // metadata "metric_mode" == "max"
  std::string base;              // for a delta: the full checkpoint's file name
  bool valid = false;            // header readable, format/version right, checksum matches
  std::string problem;           // why not valid
};

// Every ckpt-*.safetensors in `run`, newest (highest step, then epoch) first. With `verify` each
// is checksummed (reads whole files); without, only headers are read. One that is not a regular
// file (a FIFO, a device, a symbolic link: never opened through) is listed invalid, its problem
// naming what it is; folders of such a name are not listed.
std::vector<CheckpointEntry> list_checkpoints(const std::filesystem::path& run, bool verify);

struct RetentionPolicy {
  int keep_last = 2;  // newest K checkpoints (counting full and delta)
  int keep_best = 1;  // best K by metric (none when the run does not validate)
};

// Reads keep_best / keep_last from RUN/config.json where present, else the defaults above. A value
// that is not a whole number (10, 10.0 and 1e1 are 10) from 0 to 2^20 is Error(invalid) naming the
// file, the key and the value; so is a config.json that is not a regular file (run_folder.h).
RetentionPolicy retention_from_config(const std::filesystem::path& run);

// Which checkpoints retention no longer needs, oldest first. Never listed: the newest valid
// checkpoint (the last good resumable state), the kept ones, the full checkpoint any kept delta
// is based on, anything newer than the newest valid one, and invalid files (kept for inspection;
// the loader names them).
std::vector<std::filesystem::path> checkpoints_to_delete(const std::vector<CheckpointEntry>& entries,
                                                         const RetentionPolicy& policy);

}  // namespace frugal

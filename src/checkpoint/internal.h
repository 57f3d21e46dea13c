// Pieces shared by the checkpoint sources; not public API.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "frugal/checkpoint/checkpoint.h"

namespace frugal {

// Checksum of the payload that disk_tensors(...) makes when written in order (no padding
// between tensors), as payload_checksum() computes it from a file.
std::string tensors_checksum(const NamedTensors& tensors);

// On-disk tensor list: weights, then state under kStatePrefix.
NamedTensors disk_tensors(const Checkpoint& ckpt);

// A checkpoint file read whole, its header parsed (once: everything after reads this one).
struct ParsedFile {
  std::string bytes;
  SafetensorsHeader header;
};
ParsedFile read_parsed_file(const std::filesystem::path& path, Links links);

// A checkpoint as a load leaves it, with what a resume goes on from.
struct LoadedCheckpoint {
  Checkpoint ckpt;
  std::string checksum;            // the file's metadata "checksum" (verified)
  std::optional<Checkpoint> base;  // a delta's base (a full checkpoint), loaded and verified with it
  std::filesystem::path base_path;
  std::string base_checksum;
};

// load_checkpoint() keeping the file's checksum and a delta's base (CheckpointManager::load_latest
// goes on from both without reading them again).
LoadedCheckpoint load_checkpoint_file(const std::filesystem::path& path, Links links);

// A delta's base, already read and its header checked by the caller (kind "full", checksum the
// delta names): verified and decoded; bad input names `path`.
Checkpoint base_from_parsed(const std::filesystem::path& path, ParsedFile file);

// A verified delta file -> the checkpoint it encodes, with its base (read beside it and verified).
LoadedCheckpoint load_delta(const std::filesystem::path& path, SafetensorsFile file);

}  // namespace frugal

// Pieces shared by the checkpoint sources; not public API.
#pragma once

#include <filesystem>
#include <string>

#include "frugal/checkpoint.h"

namespace frugal {

// Checksum of the payload that disk_tensors(...) makes when written in order (no padding
// between tensors), as payload_checksum() computes it from a file.
std::string tensors_checksum(const NamedTensors& tensors);

// On-disk tensor list: weights, then state under kStatePrefix.
NamedTensors disk_tensors(const Checkpoint& ckpt);

// A verified delta file -> the checkpoint it encodes (loads and verifies its base beside it).
Checkpoint load_delta(const std::filesystem::path& path, SafetensorsFile file);

// load_checkpoint() for a file that must not be a delta (a delta's base): Error(invalid) if it is.
Checkpoint load_full_checkpoint(const std::filesystem::path& path);

}  // namespace frugal

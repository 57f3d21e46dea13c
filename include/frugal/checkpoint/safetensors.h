// safetensors files (https://github.com/huggingface/safetensors, "Format"): an 8-byte little-endian
// header length N, N bytes of JSON {name: {"dtype", "shape", "data_offsets": [begin, end]}, ...,
// "__metadata__": {string: string}}, padded with spaces to a multiple of 8, then the raw
// little-endian tensor bytes (C order). Python's `safetensors` reads what we write and vice versa
// (tests/checkpoint/safetensors_test.cpp checks both ways).
//
// Supported dtypes: F32, F16, BF16, F64, I64, I32, I16, I8, U8, BOOL.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "frugal/checkpoint_files/checkpoint_files.h"
#include "frugal/util/env.h"

namespace frugal {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;
using Metadata = std::map<std::string, std::string>;

struct SafetensorsFile {
  NamedTensors tensors;  // in file order (ascending data offset), on the CPU, owning their memory
  Metadata metadata;

  const torch::Tensor* find(const std::string& name) const;
  // Throws Error(invalid) naming `name` and the file when absent.
  const torch::Tensor& get(const std::string& name) const;
  std::string source;  // file name for messages
};

// Tensors are written in the order given (any device/layout; copied to contiguous CPU memory).
// Names must be unique and not "__metadata__". Crash-safe through `env` (write temp, fsync,
// rename, fsync folder): on any failure the previous file at `path` is untouched and the
// temporary removed. Throws DiskFullError on ENOSPC/EDQUOT.
void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors, const Metadata& metadata,
                      Env& env = Env::real());

// The exact bytes save_safetensors writes (for checksums and in-memory uses).
std::string safetensors_bytes(const NamedTensors& tensors, const Metadata& metadata);

// Reads the whole file. Throws Error(invalid) naming the file for a bad header, overlapping or
// out-of-range offsets, a size that does not match dtype x shape, a truncated file, or anything
// but a regular file (a link to one is followed; a FIFO or device is refused unread).
SafetensorsFile load_safetensors(const std::filesystem::path& path);
SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& name);
// The same with the header of `bytes` already parsed (parse_safetensors_header), not parsed again.
SafetensorsFile parse_safetensors(const std::string& bytes, SafetensorsHeader header, const std::string& name);

// "F32" <-> torch::kFloat32 etc.; Error(unsupported) for others.
std::string safetensors_dtype(torch::ScalarType type);
torch::ScalarType torch_dtype(const std::string& safetensors_dtype, const std::string& where);

}  // namespace frugal

// The decoders behind decompress_tar() (frugal/archive/decompress.h) over bytes in memory, for the
// fuzz target (fuzz/decompress_fuzz.cpp): the same memory limits, the same errors.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "frugal/archive/file_type.h"

namespace frugal {

// Decodes all of `in` (gzip, zstd, xz or bzip2, concatenated streams included), passing each piece
// of output to `emit`. Throws Error(invalid) for corrupt or truncated data and for a window or
// dictionary over kMaxDecoderWindow, Error(unsupported) for another `type`.
void decompress_bytes(FileType type, std::span<const std::uint8_t> in, const std::string& where,
                      const std::function<void(std::span<const std::uint8_t>)>& emit);

}  // namespace frugal

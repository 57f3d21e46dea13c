// MNIST-family IDX files (images-idx3 + labels-idx1, big-endian, optionally gzipped) and their
// conversion to PNG, for `frugal pack` from IDX. (The zip central directory is zip_index.h.)
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "frugal/archive/read_limit.h"

namespace frugal {

struct IdxImages {
  std::uint32_t count = 0, rows = 0, cols = 0;
  std::vector<std::uint8_t> pixels;  // (count, rows, cols) uint8
};

// An IDX file's bytes (gunzipped when they start with the gzip magic, all members) checked against
// its header: magic, dimensions whose product fits 64 bits, and exactly the declared length.
// Decompression stops at the declared size (a gzip bomb is refused, its memory bounded by what the
// header declares and what was inflated). Data declared larger than max_bytes ({max_file_bytes}) is
// refused before it is allocated. Throws Error(invalid) naming `where`.
IdxImages parse_idx_images(std::span<const std::uint8_t> raw, const std::string& where,
                           std::uint64_t max_bytes = kDefaultMaxFileBytes);
std::vector<std::uint8_t> parse_idx_labels(std::span<const std::uint8_t> raw, const std::string& where,
                                           std::uint64_t max_bytes = kDefaultMaxFileBytes);

// The same from a file, whose header is checked against its size (fstat) and max_bytes before the
// rest is read: a raw file longer or shorter than its header says is refused unread, and the file
// is read once, into the returned buffer. Throws Error(invalid).
IdxImages read_idx_images(const std::filesystem::path& path, std::uint64_t max_bytes = kDefaultMaxFileBytes);
std::vector<std::uint8_t> read_idx_labels(const std::filesystem::path& path,
                                          std::uint64_t max_bytes = kDefaultMaxFileBytes);

struct IdxSet {
  std::string name;  // "train", "t10k", ... (the file name before "-images")
  std::filesystem::path images, labels;
};

bool looks_like_idx(const std::filesystem::path& path);  // "*idx3-ubyte*" / "*idx1-ubyte*"
bool folder_has_idx(const std::filesystem::path& dir);

// `src`: an images IDX file (its labels file is found beside it by name), or a folder holding
// IDX files, of which `wanted` ("train", "t10k") picks one set; empty: the only one there.
IdxSet find_idx_set(const std::filesystem::path& src, const std::string& wanted);

// Canonical folder names for the labels 0..classes-1: Fashion-MNIST's names ("0_T-shirt_top", ...)
// when `images` names Fashion-MNIST and there are 10 classes, else the numbers, zero-padded so
// that sorted order keeps label order.
std::vector<std::string> default_class_names(const std::filesystem::path& images, std::size_t classes);

}  // namespace frugal

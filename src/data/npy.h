// The .npy format (NumPy's NEP 1): a magic, a Python-dict header, then C-order data.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "frugal/image.h"

namespace frugal::detail {

struct NpyHeader {
  char kind = 0;          // 'u', 'i', 'f', 'b'
  int item_size = 0;      // bytes per element
  bool big_endian = false;
  std::vector<std::int64_t> shape;
  std::size_t data_offset = 0;  // where the array data starts in the file
  std::uint64_t count() const;
};

// Throws Error(invalid) naming `where` for a malformed header, Fortran order, or data shorter than
// the shape says.
NpyHeader parse_npy(std::span<const std::uint8_t> bytes, const std::string& where);

// Integer element i of an integer array (any size, either endianness).
std::int64_t npy_int(const NpyHeader& h, std::span<const std::uint8_t> bytes, std::uint64_t i);

// One image from uint8 data of shape (H, W), (H, W, C) or (C, H, W) with C in {1, 3, 4}
// (a 4th channel is dropped). `shape` excludes any leading sample dimension.
void npy_image(std::span<const std::uint8_t> data, const std::vector<std::int64_t>& shape, const std::string& where,
               Image& out);

}  // namespace frugal::detail

// The .npy format (NumPy's NEP 1): a magic, a Python-dict header, then C-order data.
// Torch-free, as the whole dataset library is: the fuzz target (fuzz/npy.cmake) links that library.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "frugal/image/image.h"

namespace frugal::detail {

// The longest header read (NumPy writes a few hundred bytes; its reader refuses past 10000 unless told).
inline constexpr std::uint64_t kMaxNpyHeaderBytes = std::uint64_t{1} << 20;

struct NpyHeader {
  char kind = 0;      // 'u', 'i', 'f', 'b'
  int item_size = 0;  // bytes per element, 1..8
  bool big_endian = false;
  std::vector<std::int64_t> shape;  // each >= 0; their product (and times item_size) fits 63 bits
  std::size_t data_offset = 0;      // where the array data starts in the file
  std::uint64_t count() const;      // elements; parse_npy has checked that it does not overflow
};

// Throws Error(invalid) naming `where` for a malformed header (anything not a plain dict with
// 'descr', 'fortran_order' and 'shape'), numbers out of range, a shape whose byte size overflows,
// Fortran order, or data shorter than the shape says.
NpyHeader parse_npy(std::span<const std::uint8_t> bytes, const std::string& where);
// The same from a file's first bytes alone (its header; more may follow), `file_size` being the
// whole file's: what a reader that never holds the data checks it by. `head` shorter than the
// header says (npy_header_size) is "a truncated header".
NpyHeader parse_npy_header(std::span<const std::uint8_t> head, std::uint64_t file_size, const std::string& where);
// How many bytes the header of a .npy file starting with `head` (at least its first 12 bytes, or
// the whole file when shorter) takes: the magic, the version, the length field and the dict. Throws
// as parse_npy does when there is no NUMPY magic or the version is unknown.
std::uint64_t npy_header_size(std::span<const std::uint8_t> head, const std::string& where);

// Integer element i of an integer array (any size, either endianness); i < h.count().
std::int64_t npy_int(const NpyHeader& h, std::span<const std::uint8_t> bytes, std::uint64_t i);

// How an image lies in a uint8 array of shape (H, W), (H, W, C) or (C, H, W), C in {1, 3, 4}.
struct NpyImageShape {
  int height = 0, width = 0, channels = 0;
  bool channels_first = false;
  std::size_t bytes() const { return static_cast<std::size_t>(height) * width * channels; }
};
// Error(unsupported) for other shapes, Error(invalid) for an empty image or sides that do not fit
// an int (or whose byte count overflows).
NpyImageShape npy_image_shape(const std::vector<std::int64_t>& shape, const std::string& where);

// One image from uint8 data of npy_image_shape(shape) (a 4th channel is dropped). `shape` excludes
// any leading sample dimension. Error(invalid) when `data` is shorter than the shape needs.
void npy_image(std::span<const std::uint8_t> data, const std::vector<std::int64_t>& shape, const std::string& where,
               Image& out);

}  // namespace frugal::detail

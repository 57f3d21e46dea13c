// CIFAR-10 and CIFAR-100 as their maintainers publish them (www.cs.toronto.edu/~kriz/cifar.html),
// read in place: the python distribution (a pickled dict per batch: b'data' a numpy uint8 array of
// N rows of 3072 bytes, b'labels' or b'fine_labels'/b'coarse_labels' lists of ints; batches.meta or
// meta naming the classes) and the binary one (records of 1 label byte, or coarse and fine bytes,
// then 3072 pixel bytes; the class names one a line). The pixels are planar: 1024 red, 1024 green,
// 1024 blue bytes of 32 rows of 32.
//
// The pickles go through the data-only unpickler (frugal/util/pickle.h, Profile::numpy_arrays):
// numpy's array and dtype makers are the only globals it knows; any other one is refused when it is
// named, before anything is looked up. Every size is checked before it is kept: an array whose shape
// disagrees with its bytes, a record file that is not a whole number of records, a label count that
// is not the row count, a label without a class name are Error(invalid) naming the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace frugal::cifar {

inline constexpr std::size_t kSide = 32;
inline constexpr std::size_t kPixels = 3 * kSide * kSide;  // 3072 bytes an image
inline constexpr std::size_t kBmpHeader = 54;
inline constexpr std::size_t kBmpBytes = kBmpHeader + kPixels;  // an entry's bytes (bmp_of_record)
// All of a distribution's files together: the largest is 184 MB (CIFAR-10's 60000 images); what is
// larger is not CIFAR, and is refused before it is kept.
inline constexpr std::uint64_t kMaxCifarBytes = std::uint64_t{1} << 30;

enum class Layout : std::uint8_t { python10, python100, binary10, binary100 };

// One batch file's images and labels.
struct Batch {
  std::string data;  // `rows` records of `stride` bytes, each image's 3072 bytes at `offset` in its record
  std::size_t stride = kPixels, offset = 0, rows = 0;
  std::vector<std::int64_t> fine, coarse;  // a label per row (CIFAR-10's in `fine`; coarse: CIFAR-100's only)
};

// A pickled batch (data_batch_1, test_batch, train, test); `cifar100` reads fine_labels and
// coarse_labels instead of labels.
Batch parse_pickle_batch(std::span<const std::uint8_t> bytes, const std::string& where, bool cifar100);
// A record file (data_batch_1.bin, train.bin, ...): 1 + 3072 bytes a record, 2 + 3072 for CIFAR-100.
Batch parse_record_file(std::string bytes, const std::string& where, bool cifar100);
// The class names under `key` of a pickled meta file (b'label_names', b'fine_label_names', ...).
std::vector<std::string> parse_pickle_names(std::span<const std::uint8_t> bytes, const std::string& where,
                                            const std::string& key);
// One name a line (batches.meta.txt, fine_label_names.txt); blank lines and '\r' left out.
std::vector<std::string> parse_name_lines(std::string_view text);

// Which distribution a folder holding these file names is, or nullopt when it is none.
std::optional<Layout> layout_of(const std::vector<std::string>& names);
// Whether `name` is a file of some CIFAR distribution (what is kept from a tar).
bool is_cifar_file(std::string_view name);
// The folders the distributions unpack to ("cifar-10-batches-py", ...).
bool is_cifar_folder_name(std::string_view name);

// An image's 3072 planar bytes as a 32x32 24-bit BMP (kBmpBytes): the format frugal's BMP decoder
// reads with a copy, and whose bytes are the pixels as they are (lossless, nothing to compress).
void bmp_of_record(const std::uint8_t* planar, std::uint8_t* out);  // kBmpBytes at `out`
void bmp_of_record(const std::uint8_t* planar, std::vector<std::uint8_t>& out);

}  // namespace frugal::cifar

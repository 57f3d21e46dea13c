// How much of one user file or archive member is read into memory: an image or a .npy array is
// read whole only up to a cap ({max_file_bytes}, kDefaultMaxFileBytes unless the user raises it),
// checked against the size the container states (a zip's central directory, a tar header, a
// folder's stat) before anything is allocated; a .npy header is read as far as it says it reaches.
// A 4 GiB "JPEG" (a photo followed by zeros) once took 8.6 GB of memory to train on and made
// predict die of std::bad_alloc; a 2 GB .npy was read whole for its 128-byte header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace frugal {

class Archive;

// 256 MiB: no photo or scan a classifier is trained on comes near it (a 100-megapixel RGB TIFF
// stored raw is 300 MB: raise the cap for such data). A .npy array of many samples lying stored in
// a zip is read in place (mapped), so the cap does not apply to it.
inline constexpr std::uint64_t kDefaultMaxFileBytes = std::uint64_t{256} << 20;

// "" when a file of `size` bytes may be read whole under `max_bytes`, else why not, as a skip
// reason: "larger than --max-file-bytes (256 MiB)".
std::string file_size_skip_reason(std::uint64_t size, std::uint64_t max_bytes);

// Throws Error(invalid) naming `where`, its size, the cap and {max_file_bytes} when size > max_bytes.
void check_file_size(const std::string& where, std::uint64_t size, std::uint64_t max_bytes);

// Entry i read whole by Archive::read once its declared size is within max_bytes (check_file_size,
// named ARCHIVE:entry): nothing is allocated for an entry above the cap. Thread-safe.
void read_entry_capped(const Archive& a, std::size_t i, std::vector<std::uint8_t>& out, std::uint64_t max_bytes);

// The first min(n, size) bytes of entry i: from a mapped view when it is stored in one, else read
// in pieces and stopped after n bytes (memory: one piece of at most 4 MiB, whatever the entry's
// size). The bytes are not checked against a CRC-32 (the rest is never read).
std::vector<std::uint8_t> read_entry_head(const Archive& a, std::size_t i, std::size_t n);

// A file on disk read whole: refused by check_file_size on its size (fstat) before anything is
// allocated, and stopped at max_bytes + 1 bytes when it grows while read or has no size (a FIFO).
std::vector<std::uint8_t> read_file_capped(const std::filesystem::path& path, std::uint64_t max_bytes);

}  // namespace frugal

// Reading archives for training: a zip file, or a split set read in place (a frugal manifest or
// first part, plain `split` parts NAME_aa/NAME.000, a `zip -s` set .z01…/.zip). Nothing is joined
// or extracted to read it.
//
// The central directory is parsed once into a compact index; entries are then read by many
// threads at once with positioned reads (no shared file offset, no lock on the read path).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace frugal {

struct ArchiveOptions {
  // Encoding of entry names that lack the UTF-8 flag and are not valid UTF-8 (e.g. "cp437", "gbk").
  // Empty: such names are shown with U+FFFD for the invalid bytes and raw bytes kept.
  std::string name_encoding;
};

enum class ZipMethod : std::uint16_t { stored = 0, deflate = 8 };

struct ZipEntry {
  std::string name;        // UTF-8 (decoded per ArchiveOptions)
  std::string raw_name;    // the bytes as stored in the archive
  bool name_is_utf8 = true;  // false when `name` had to be repaired or decoded
  std::uint64_t size = 0;             // uncompressed
  std::uint64_t compressed_size = 0;
  std::uint64_t local_header_offset = 0;  // in the virtual (joined) file
  std::uint32_t crc32 = 0;
  std::uint16_t method = 0;   // raw zip method number; 0 stored, 8 deflate
  std::uint16_t flags = 0;
  bool is_dir = false;
  bool is_symlink = false;
  bool encrypted = false;
};

std::string method_name(std::uint16_t method);  // "stored", "deflate", "bzip2", ... or "method-N"

// A random-access byte source: one file, or parts read as one virtual file. Thread-safe reads.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual std::uint64_t size() const = 0;
  // Reads exactly n bytes at offset; throws Error(invalid) past the end.
  virtual void read_at(std::uint64_t offset, void* buf, std::size_t n) const = 0;
  // The files it reads, in order (one for a plain file).
  virtual std::vector<std::filesystem::path> files() const = 0;
  // A zero-copy view of [offset, offset+n) when it lies in one memory-mapped piece, else empty.
  virtual std::optional<std::span<const std::uint8_t>> view(std::uint64_t offset, std::size_t n) const {
    (void)offset; (void)n;
    return std::nullopt;
  }
};

// Opens FILE, a manifest or a first part, detecting split sets as described above.
std::unique_ptr<ByteSource> open_byte_source(const std::filesystem::path& path);

class Archive {
 public:
  // Throws Error(invalid) for a corrupt or unsafe archive, naming the file and what was wrong.
  static std::unique_ptr<Archive> open(const std::filesystem::path& path, const ArchiveOptions& options = {});
  virtual ~Archive() = default;

  virtual const std::vector<ZipEntry>& entries() const = 0;
  virtual std::optional<std::size_t> find(std::string_view name) const = 0;
  virtual const std::string& display_name() const = 0;  // the path the user gave
  virtual const ByteSource& source() const = 0;

  // Reads entry i whole: inflates, checks size and CRC-32. Thread-safe. Throws Error(invalid)
  // naming archive and entry on any mismatch; the inflated size is capped at the declared size.
  virtual void read(std::size_t i, std::vector<std::uint8_t>& out) const = 0;
  std::vector<std::uint8_t> read(std::size_t i) const {
    std::vector<std::uint8_t> out;
    read(i, out);
    return out;
  }
  // For a stored entry lying in one mapped piece: its bytes without a copy (CRC not checked).
  virtual std::optional<std::span<const std::uint8_t>> stored_view(std::size_t i) const = 0;
};

}  // namespace frugal

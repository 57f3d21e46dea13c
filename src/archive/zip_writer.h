// A zip writer, hand-written rather than taken from minizip or libzip because frugal needs three
// things they do not give together: streaming into a ByteSink that may roll over into split parts
// (no seeking back, so no data descriptors either: sizes and CRC are known before each local
// header), byte-for-byte deterministic output (fixed timestamps and attributes, names in the
// caller's order), and no dependency beyond libdeflate, which frugal already uses.
//
// Written: local headers with CRC-32 and sizes, bit 11 (UTF-8 names) set, DOS time 1980-01-01
// 00:00; Zip64 extra fields for any size or offset >= 0xFFFFFFFF and the Zip64 end records when
// there are more than 65,535 entries or the central directory lies past 4 GiB.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "archive/byte_sink.h"

namespace frugal {

// An entry ready to be written: compressed (or not) and checksummed, e.g. on a worker thread.
struct PreparedEntry {
  std::string name;          // UTF-8, '/' separated
  std::uint16_t method = 0;  // 0 stored, 8 deflate
  std::uint32_t crc32 = 0;
  std::uint64_t size = 0;          // uncompressed
  std::vector<std::uint8_t> data;  // as stored in the archive
  // Non-empty: a large file, stored, whose bytes are copied from here in pieces when the entry is
  // written (data is empty); size and crc32 are those of a first read, checked again as it is copied.
  std::filesystem::path source;
};

// Files above this are streamed (prepare_file_entry): never held in memory whole.
inline constexpr std::uint64_t kStreamedEntryBytes = std::uint64_t{64} << 20;

// True for data that is already compressed (JPEG, PNG, WebP, GIF by their magic bytes): storing
// it costs nothing in size and saves inflating it at every read.
bool is_precompressed_image(std::span<const std::uint8_t> data);

// Decides the method: stored for precompressed images and where deflate does not shrink the
// data, deflate (libdeflate, `level`) otherwise. Thread-safe.
PreparedEntry prepare_entry(std::string name, std::vector<std::uint8_t> data, int level = 6);

// A file on disk as an entry: read whole and given to prepare_entry when it holds at most
// kStreamedEntryBytes; a larger one is read once in pieces for its CRC-32 and size and stored,
// its bytes copied into the archive by ZipWriter::add (memory: one 1 MiB piece, whatever its size).
PreparedEntry prepare_file_entry(std::string name, const std::filesystem::path& file, int level = 6);

class ZipWriter {
 public:
  explicit ZipWriter(ByteSink& sink) : sink_(sink) {}
  // Throws Error(io) when a streamed entry's file changed since prepare_file_entry read it.
  void add(const PreparedEntry& entry);
  void finish();  // central directory and end records; nothing may be added afterwards
  std::size_t entries() const { return central_.size(); }
  bool zip64() const { return zip64_; }

 private:
  struct Central {
    std::string name;
    std::uint16_t method;
    std::uint32_t crc32;
    std::uint64_t size, compressed_size, offset;
  };
  void copy_source(const PreparedEntry& e);
  ByteSink& sink_;
  std::vector<Central> central_;
  bool zip64_ = false, finished_ = false;
};

}  // namespace frugal

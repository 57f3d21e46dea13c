// What a file is, from its first bytes, so that a file frugal does not read is named for what it is
// with what to do, rather than "not a zip; copy it again" (which sent users after a download that
// was fine: a tar, a .tgz, a WebDataset shard, a parquet file).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace frugal {

enum class FileType {
  unknown,  // nothing recognised (a zip with junk before it, an executable stub, random bytes)
  empty,
  zip,
  tar,
  gzip,
  zstd,
  xz,
  bzip2,  // compressed streams; `inner` tells a compressed tar from another file
  parquet,
  arrow,  // Apache Arrow IPC: a stream (Hugging Face save_to_disk's .arrow) or a file (ARROW1)
  seven_zip,
  rar,
  jpeg,
  png,
  webp,
  gif,
  bmp,
  tiff,
  text,  // printable UTF-8 (a CSV, a JSON, a README)
};

struct FileTypeInfo {
  FileType type = FileType::unknown;
  // For gzip, zstd, xz and bzip2: FileType::tar when the decompressed start is a tar header,
  // FileType::unknown when it is something else or could not be decompressed.
  FileType inner = FileType::unknown;
};

// Bytes from the start of the file: 512 are enough for everything but a compressed tar, whose
// first decompressed block is looked at: a few KiB of gzip, zstd or xz give it; bzip2 decodes
// nothing before its first whole block (up to 900 kB, compressed to about as much for images).
// Too few bytes leave `inner` unknown.
FileTypeInfo sniff_file_type(std::span<const std::uint8_t> head);

inline constexpr std::size_t kSniffBytes = 64 << 10;
inline constexpr std::size_t kSniffBzip2Bytes = 1 << 20;

// Reads kSniffBytes from the start of `path` (a regular file; kSniffBzip2Bytes for bzip2) and
// sniffs them.
FileTypeInfo file_type(const std::filesystem::path& path);

// "a gzip-compressed tar", "a Parquet file", "a JPEG image", ...
std::string describe(const FileTypeInfo& info);

// For a file that is no archive frugal reads in place: "<where>: expected an archive frugal reads
// (a zip, a tar or a folder), found <describe()>; <what frugal reads instead and what to do>".
// Empty for zip, tar, empty files and unknown bytes (the zip parser's own message applies). Text
// and images are given to the zip parser first (a self-extracting zip starts with a script or a
// stub): the message is for when it found no zip either.
std::string not_an_archive_message(const std::string& where, const FileTypeInfo& info);

// True when `info` is a tar compressed as a whole (random access needs it decompressed).
bool is_compressed_tar(const FileTypeInfo& info);

}  // namespace frugal

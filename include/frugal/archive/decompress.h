// A compressed tar (.tar.gz, .tgz, .tar.zst, .tar.xz, .tar.bz2) decompressed once, so that it can be
// read in place like any tar ({cache_decompressed}). A compressed stream has no random access:
// reading member k means decompressing everything before it, every epoch, on every worker.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

namespace frugal {

class Env;

struct DecompressedTar {
  std::filesystem::path tar;  // the decompressed file
  std::uint64_t bytes = 0;    // its size
  bool reused = false;        // an earlier run had made it from the same file
};

// Decompresses `path` (gzip, zstd, xz or bzip2, several concatenated streams included) into
// `dir`/<name>-<hash of path>.tar, crash-safely (a temporary, renamed when complete; a sidecar
// "<that>.source" records the compressed file's size and mtime). A file made earlier from the same
// compressed file (same size and mtime, complete) is reused without decompressing.
//
// Disk: the output counts against `max_bytes` (nullopt: no limit but the disk) and the free space
// of `dir`'s file system, checked as it grows; either running out stops it with Error(budget)
// naming what it needed so far, the temporary removed. Two processes decompressing into `dir` take
// turns (a lock on `dir`): the second waits, then reuses the first one's file.
// Throws Error(unsupported) when `path` is not a compressed tar, Error(invalid) for corrupt data.
DecompressedTar decompress_tar(const std::filesystem::path& path, const std::filesystem::path& dir,
                               std::optional<std::uint64_t> max_bytes, Env& env);
DecompressedTar decompress_tar(const std::filesystem::path& path, const std::filesystem::path& dir,
                               std::optional<std::uint64_t> max_bytes = std::nullopt);

}  // namespace frugal

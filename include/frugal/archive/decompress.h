// A compressed tar (.tar.gz, .tgz, .tar.zst, .tar.xz, .tar.bz2) decompressed once, so that it can be
// read in place like any tar ({cache_decompressed}). A compressed stream has no random access:
// reading member k means decompressing everything before it, every epoch, on every worker.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

namespace frugal {

class Env;

// Decoder memory, whatever a file asks for: a zstd frame's window and an xz (LZMA2) dictionary of
// at most 2 GiB (zstd --long=31, zstd's largest on 64-bit; xz's presets use at most 64 MiB); the
// xz decoder's limit is that and 1 MiB for its own state. gzip (a 32 KiB window) and bzip2 (at
// most 3.6 MiB for 900 kB blocks) are bounded by their formats.
constexpr int kZstdWindowLogMax = 31;
constexpr std::uint64_t kMaxDecoderWindow = std::uint64_t{1} << kZstdWindowLogMax;
constexpr std::uint64_t kXzMemLimit = kMaxDecoderWindow + (std::uint64_t{1} << 20);

// The room at the end of a disk that decompressing never takes: 5% of the disk, at most 1 GiB.
std::uint64_t decompress_reserve(std::uint64_t disk_bytes);

struct DecompressedTar {
  std::filesystem::path tar;  // the decompressed file
  std::uint64_t bytes = 0;    // its size
  bool reused = false;        // an earlier run had made it from the same file
};

// Decompresses `path` (gzip, zstd, xz or bzip2, several concatenated streams included) into
// `dir`/<name>-<hash of path>.tar, crash-safely (a temporary, renamed when complete; a sidecar
// "<that>.source" records the compressed file's size and mtime). A file made earlier from the same
// compressed file (same size and mtime, complete) is reused without decompressing, only when the
// current user owns it and its sidecar, nobody else can write them, and the sidecar's HMAC under
// the user's cache key binds the tar's size, mtime and inode to the source (docs/formats.md,
// "Decompressed tar"); otherwise a note, and it is made again (under another name when another
// user's file there cannot be removed).
//
// Disk: the output is written through a byte budget: `max_bytes` (what is left of {disk_budget}, the
// decompressed tar counting against it wherever `dir` is; nullopt: no limit but the disk) and the
// free space of `dir`'s file system less decompress_reserve() of it, measured at the start, every
// 64 MiB and before a write that would pass it. The write that would pass either stops it with
// Error(budget) naming the file, the bytes needed so far and the limit, the temporary removed. A
// size the file states (a zstd frame's content size) that cannot fit is refused before writing.
// A reused file larger than `max_bytes` is Error(budget) too. Two processes decompressing into
// `dir` take turns (a lock on `dir`): the second waits, then reuses the first one's file.
// Memory: a zstd window and an xz dictionary of at most kMaxDecoderWindow, for every stream of the
// file (a later xz stream cannot ask for more): a file that asks for more is Error(invalid) naming
// the limit, before the decoder allocates it.
// Throws Error(unsupported) when `path` is not a compressed tar, Error(invalid) for corrupt data.
DecompressedTar decompress_tar(const std::filesystem::path& path, const std::filesystem::path& dir,
                               std::optional<std::uint64_t> max_bytes, Env& env);
DecompressedTar decompress_tar(const std::filesystem::path& path, const std::filesystem::path& dir,
                               std::optional<std::uint64_t> max_bytes = std::nullopt);

// The file decompress_tar(path, dir) writes (made or not): what a disk budget counts.
std::filesystem::path decompressed_tar_path(const std::filesystem::path& path, const std::filesystem::path& dir);

}  // namespace frugal

// The central directory parsed once into a compact, immutable index.
//
// Why a hand-written index and not libzip or minizip (the zip libraries Debian ships): training
// reads entries at random from many threads at once, over split sets read in place. Those libraries
// keep one file handle with a seek position per archive (reads serialize on it), read one file
// rather than a virtual concatenation of parts, and hold a heavier per-entry structure. Here the
// index is a vector of ZipEntry plus one offset per entry, and every read is a positioned read
// (a memcpy or a view of the mapped parts), so threads share nothing mutable.
//
// What is checked when (so that `ls` and `verify` can still show a hostile archive):
//   at open (build_zip_index) — the structure: the end-of-central-directory record (a fake one in
//     the comment is skipped when it does not describe a central directory; none that does is an
//     error), Zip64 records, disk numbers of split sets, every central header, entry count, and
//     that no entry's data can overlap another's or the central directory. Junk before the archive
//     (self-extractors) is allowed, as unzip does, by shifting every offset.
//   per entry, never fatal at open — unsafe names, symlinks, duplicate names, encryption,
//     unsupported methods (entry_problem()); `extract` refuses them, `verify` reports them.
//   at read — the local header (signature, name), that the data stays below the next entry, the
//     declared size (inflation stops there), and the CRC-32.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <optional>
#include <vector>

#include "frugal/archive/archive.h"

namespace frugal {

// Name -> first entry with that name: open addressing over entry indices, so that 500,000 names
// cost one flat array rather than 500,000 hash-map nodes.
class NameTable {
 public:
  void build(std::vector<ZipEntry>& entries);  // also sets ZipEntry::duplicate_name
  std::optional<std::uint32_t> find(const std::vector<ZipEntry>& entries, std::string_view name) const;

 private:
  void mark_normalised_duplicates(std::vector<ZipEntry>& entries) const;

  // A slot holds (hash tag << 32 | entry index); the tag spares most probes a visit to the entry.
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  std::vector<std::uint64_t> slots_;
  std::uint64_t mask_ = 0;
};

struct ZipIndex {
  std::vector<ZipEntry> entries;
  // Per entry: the first byte its local header and data may not reach (the next entry's local
  // header or the central directory). Holding reads below it refuses overlapping entries.
  std::vector<std::uint64_t> data_limit;
  NameTable by_name;
  std::uint64_t cd_offset = 0;
  std::uint64_t cd_size = 0;
  std::uint64_t prefix_bytes = 0;  // junk before the archive (self-extractor stub)
};

// Throws Error(invalid) naming `where` for any structural problem.
ZipIndex build_zip_index(const ByteSource& src, const std::string& where, const ArchiveOptions& options);

}  // namespace frugal

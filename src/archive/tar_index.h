// A tar's headers parsed once into member records: where each member's data lies and what it is.
//
// Why by hand and not libarchive (Debian's): libarchive reads a tar as a stream, one member after
// the other, through one handle; training reads members at random from many threads. The index
// here is what zip_index.h is for zips: records built once, then positioned reads of the mapping.
//
// Hostile tars are refused at open, naming the offset (Error invalid): a header whose checksum does
// not match, a number field that is not one, sizes that run past the end of the file (or wrap),
// a GNU long-name record or PAX header larger than a name can be (64 KiB; PAX: 1 MiB) or that runs
// past the file, a long name with bytes after its end, two long names (or a long name and a PAX
// path that differ) for one member, an extended header with no member after it, and a link,
// device, folder or FIFO that declares data (readers disagree where the next header is). Members
// that are not files are kept as records (SpecialMember, is_symlink) so that listing shows them and
// entry_problem() names them; their data is never read. Unsafe names ("..", absolute) are kept as
// written and named by entry_problem(), as for zips.
//
// Python's tarfile, the reference of the tests, stops listing silently at a damaged header after
// the first; here any damaged header refuses the whole tar (a tar truncated by damage would train
// on part of its members without a word).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "frugal/archive/archive.h"

namespace frugal {

enum class TarKind : std::uint8_t { file, dir, symlink, hard_link, device, fifo, sparse, other };

struct TarRecord {
  std::uint64_t header_offset = 0;  // the member's first header (its extension records included)
  std::uint64_t data_offset = 0;
  std::uint64_t size = 0;  // data bytes (a sparse file's stored bytes)
  TarKind kind = TarKind::file;
  bool utf8 = false;  // the name came from a PAX path (UTF-8 by the standard)
  std::string name;   // as stored, less a leading "./"; folders end with '/'
};

inline constexpr std::size_t kMaxTarName = 65535;  // a zip's limit too
inline constexpr std::size_t kMaxPaxHeader = std::size_t{1} << 20;

// Parses the tar lying in [begin, end) of `src`. Offsets in the records are absolute (in src).
// `where` names the tar in messages.
std::vector<TarRecord> parse_tar(const ByteSource& src, std::uint64_t begin, std::uint64_t end,
                                 const std::string& where);

// The entry a record becomes: names decoded (`decoder` for names that are not flagged UTF-8),
// `prefix` put before the name (a shard's file name in a shard set).
class NameDecoder;
ZipEntry tar_entry(const TarRecord& r, const std::string& prefix, NameDecoder& decoder);

}  // namespace frugal

#include "archive/zip_index.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "archive/name_encoding.h"
#include "archive/zip_format.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/hash.h"

namespace frugal {

using namespace zip;

namespace {

struct EndRecord {
  std::uint64_t eocd_pos = 0;
  std::uint64_t cd_end = 0;    // where the central directory must end (the EOCD or Zip64 record)
  std::uint64_t cd_start = 0;  // virtual offset of the central directory
  std::uint64_t cd_size = 0;
  std::uint64_t entries = 0;
  std::uint64_t adjust = 0;  // bytes of junk before the archive
  bool zip64 = false;
  std::vector<std::uint64_t> disk_base;  // virtual offset of each disk's first byte
};

std::uint64_t name_hash(std::string_view name) { return xxh3_64(name.data(), name.size()); }

bool add_overflows(std::uint64_t a, std::uint64_t b, std::uint64_t& sum) { return __builtin_add_overflow(a, b, &sum); }

std::uint32_t sig_at(const ByteSource& src, std::uint64_t pos) {
  std::uint8_t b[4];
  if (pos > src.size() || src.size() - pos < 4) return 0;
  src.read_at(pos, b, 4);
  return le32(b);
}

// Disk bases: a single-disk archive counts offsets in the virtual file; a `zip -s` set counts them
// per part, so each part's offsets start at the sum of the sizes before it.
std::string disk_bases(const ByteSource& src, std::uint64_t disks, EndRecord& r) {
  if (disks <= 1) {
    r.disk_base = {0};
    return "";
  }
  const auto sizes = src.part_sizes();
  if (sizes.size() != disks)
    return "a set of " + std::to_string(disks) + " parts ('zip -s'), given " + std::to_string(sizes.size()) +
           " file(s); put every part (.z01, .z02, ..., .zip) in one folder and name the .zip or .z01";
  r.disk_base.assign(disks, 0);
  std::partial_sum(sizes.begin(), sizes.end() - 1, r.disk_base.begin() + 1);
  return "";
}

// Reads the EOCD at `pos` (and its Zip64 records); "" when it describes a central directory.
std::string read_end_record(const ByteSource& src, std::uint64_t pos, const std::uint8_t* e, EndRecord& r) {
  r.eocd_pos = pos;
  std::uint64_t this_disk = le16(e + 4), cd_disk = le16(e + 6);
  r.entries = le16(e + 10);
  r.cd_size = le32(e + 12);
  std::uint64_t cd_offset = le32(e + 16);
  std::uint64_t disks = this_disk + 1;
  r.cd_end = pos;
  std::uint8_t loc[kEocd64LocSize];
  r.zip64 = pos >= kEocd64LocSize && sig_at(src, pos - kEocd64LocSize) == kEocd64LocSig;
  if (r.zip64) {
    src.read_at(pos - kEocd64LocSize, loc, sizeof loc);
    disks = le32(loc + 16);
    if (disks == 0 || disks > 65536) return "a Zip64 locator with 1..65536 disks, found " + std::to_string(disks);
  }
  if (auto p = disk_bases(src, disks, r); !p.empty()) return p;
  if (r.zip64) {
    const std::uint64_t z64_disk = le32(loc + 4);
    if (z64_disk >= disks) return "a Zip64 end record on one of the " + std::to_string(disks) + " disks";
    const std::uint64_t beside = pos - kEocd64LocSize - std::min<std::uint64_t>(pos - kEocd64LocSize, kEocd64Size);
    std::uint64_t z64 = 0;
    // Not where the locator says (shifted by junk before the archive, or an offset that wraps
    // around 2^64): right before the locator, where writers put it.
    if (add_overflows(r.disk_base[z64_disk], le64(loc + 8), z64) || sig_at(src, z64) != kEocd64Sig) z64 = beside;
    if (sig_at(src, z64) != kEocd64Sig || z64 + kEocd64Size > pos) return "a Zip64 end-of-central-directory record";
    std::uint8_t z[kEocd64Size];
    src.read_at(z64, z, sizeof z);
    this_disk = le32(z + 16);
    cd_disk = le32(z + 20);
    r.entries = le64(z + 32);
    r.cd_size = le64(z + 40);
    cd_offset = le64(z + 48);
    r.cd_end = z64;
    if (this_disk + 1 != disks) return "a Zip64 record whose disk count matches its locator";
  }
  if (cd_disk >= disks) return "the central directory on one of the " + std::to_string(disks) + " disks";
  if (r.cd_size > r.cd_end) return "a central directory that fits before its end record";
  if (disks == 1) {
    // unzip's rule for self-extractors: the directory ends where its end record starts, so any
    // difference from the stated offset is junk before the archive, added to every offset.
    r.cd_start = r.cd_end - r.cd_size;
    if (cd_offset > r.cd_start) return "a central directory offset inside the file";
    r.adjust = r.cd_start - cd_offset;
  } else {
    if (add_overflows(r.disk_base[cd_disk], cd_offset, r.cd_start) || r.cd_start > r.cd_end ||
        r.cd_end - r.cd_start < r.cd_size)
      return "a central directory that ends before its end record";
  }
  if (r.entries > r.cd_size / kCentralSize) return "room for " + std::to_string(r.entries) + " central headers";
  if (r.entries > 0 && sig_at(src, r.cd_start) != kCentralSig) return "a central header where the directory starts";
  return "";
}

EndRecord find_end_record(const ByteSource& src, const std::string& where) {
  const std::uint64_t size = src.size();
  if (size < kEocdSize)
    fail(ErrorKind::invalid, where, "a zip archive (at least 22 bytes)", std::to_string(size) + " bytes",
         "the file is truncated or not a zip; copy it again");
  const std::size_t tail = static_cast<std::size_t>(std::min<std::uint64_t>(size, kEocdSize + kMaxComment));
  std::vector<std::uint8_t> buf(tail);
  src.read_at(size - tail, buf.data(), tail);
  std::string first_problem;
  // Scanning back from the end, as unzip does; a candidate counts only when its comment ends the
  // file exactly, and a fake one (e.g. inside the comment) must also describe a central directory.
  for (std::size_t i = tail - kEocdSize + 1; i-- > 0;) {
    const std::uint8_t* e = buf.data() + i;
    if (le32(e) != kEocdSig || i + kEocdSize + le16(e + 20) != tail) continue;
    EndRecord r;
    std::string problem = read_end_record(src, size - tail + i, e, r);
    if (problem.empty()) return r;
    if (first_problem.empty()) first_problem = problem;
  }
  if (first_problem.empty())
    fail(ErrorKind::invalid, where, "an end-of-central-directory record at the end of the file", "none",
         "the file is truncated or not a zip; copy it again (for split sets give the manifest or first part)");
  fail(ErrorKind::invalid, where, first_problem, "an inconsistent end-of-central-directory record",
       "the archive is damaged or crafted; copy it again");
}

// Zip64 extra field: 8-byte sizes and offset (4-byte disk) for each field saturated in the header.
void apply_zip64(const std::uint8_t* x, std::size_t n, ZipEntry& e, std::uint64_t& disk, bool& ok) {
  std::size_t p = 0;
  auto take8 = [&](std::uint64_t& v) {
    if (p + 8 > n) return void(ok = false);
    v = le64(x + p);
    p += 8;
  };
  if (e.size == 0xffffffffu) take8(e.size);
  if (e.compressed_size == 0xffffffffu) take8(e.compressed_size);
  if (e.local_header_offset == 0xffffffffu) take8(e.local_header_offset);
  if (disk == 0xffff) {
    if (p + 4 > n) return void(ok = false);
    disk = le32(x + p);
  }
}

struct CentralParser {
  const std::uint8_t* cd;
  std::uint64_t cd_size;
  const EndRecord& r;
  const std::string& where;
  NameDecoder decoder;

  [[noreturn]] void bad(std::size_t n, const std::string& expected, const std::string& found) {
    fail(ErrorKind::invalid, where, expected + " (central header " + std::to_string(n + 1) + ")", found,
         "the archive is damaged; copy it again");
  }

  // Parses the header at `pos` into `e`; returns the position of the next one.
  std::uint64_t parse(std::uint64_t pos, std::size_t n, ZipEntry& e) {
    if (cd_size - pos < kCentralSize) bad(n, "a whole central header", "the directory's end");
    const std::uint8_t* h = cd + pos;
    if (le32(h) != kCentralSig) bad(n, "a central header signature", "other bytes");
    const std::uint16_t made_by = le16(h + 4);
    e.flags = le16(h + 8);
    e.method = le16(h + 10);
    e.crc32 = le32(h + 16);
    e.compressed_size = le32(h + 20);
    e.size = le32(h + 24);
    const std::size_t nlen = le16(h + 28), xlen = le16(h + 30), clen = le16(h + 32);
    std::uint64_t disk = le16(h + 34);
    const std::uint32_t ext_attr = le32(h + 38);
    e.local_header_offset = le32(h + 42);
    if (cd_size - pos - kCentralSize < nlen + xlen + clen)
      bad(n, "a central header's name and fields", "the directory's end");
    const std::uint8_t* name = h + kCentralSize;
    e.raw_name.assign(reinterpret_cast<const char*>(name), nlen);
    std::string unicode_name;
    for (std::size_t p = 0; p + 4 <= xlen;) {
      const std::uint8_t* x = name + nlen + p;
      const std::uint16_t id = le16(x), len = le16(x + 2);
      if (p + 4 + len > xlen) break;
      if (id == kExtraZip64) {
        bool ok = true;
        apply_zip64(x + 4, len, e, disk, ok);
        if (!ok) bad(n, "a complete Zip64 extra field", "a short one");
      } else if (id == kExtraUnicodePath && len > 5 && x[4] == 1 && le32(x + 5) == crc32(0, name, nlen)) {
        unicode_name.assign(reinterpret_cast<const char*>(x + 9), len - 5);
      }
      p += 4 + len;
    }
    if (disk >= r.disk_base.size())
      bad(n, "a disk number below " + std::to_string(r.disk_base.size()), "disk " + std::to_string(disk));
    if (add_overflows(e.local_header_offset, r.disk_base[disk] + r.adjust, e.local_header_offset))
      bad(n, "a local header offset inside the file", "an overflowing one");
    // A Unicode path holding a NUL is ignored: it would cut every message naming the entry short.
    if (!unicode_name.empty() && is_valid_utf8(unicode_name) && unicode_name.find('\0') == std::string::npos) {
      e.name = std::move(unicode_name);
      e.name_is_utf8 = is_valid_utf8(e.raw_name);
    } else {
      e.name_is_utf8 = decoder.decode(e.raw_name, e.flags & kFlagUtf8, e.name);
    }
    e.is_dir = !e.name.empty() && e.name.back() == '/';
    const unsigned host = made_by >> 8;
    e.is_symlink = host == 3 && ((ext_attr >> 16) & S_IFMT) == S_IFLNK;  // Unix host, mode in high bits
    e.encrypted = (e.flags & (kFlagEncrypted | kFlagStrongEncryption)) != 0;
    return pos + kCentralSize + nlen + xlen + clen;
  }
};

// 500,000 entries take 56 MB, touched once each while parsing: in 4 KiB pages that is 14,000 page
// faults, a third of the time to open (measured). Transparent huge pages, where the kernel grants
// them on request ("madvise" or "always" mode), cut that to a few dozen. Advice only: where it is
// refused nothing changes.
void advise_huge_pages(void* p, std::size_t n) {
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const std::uintptr_t begin = (reinterpret_cast<std::uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t end = (reinterpret_cast<std::uintptr_t>(p) + n) & ~(kHuge - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

// Sorted by local header offset, each entry's smallest possible extent (header, name as in the
// central directory, data) must end before the next entry's header and the directory itself.
void check_layout(ZipIndex& idx, std::uint64_t cd_start, const std::string& where) {
  const std::size_t n = idx.entries.size();
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  auto by_offset = [&](std::uint32_t a, std::uint32_t b) {
    return idx.entries[a].local_header_offset < idx.entries[b].local_header_offset;
  };
  if (!std::is_sorted(order.begin(), order.end(), by_offset)) std::sort(order.begin(), order.end(), by_offset);
  idx.data_limit.assign(n, 0);
  for (std::size_t k = 0; k < n; ++k) {
    const ZipEntry& e = idx.entries[order[k]];
    const std::uint64_t limit = k + 1 < n ? idx.entries[order[k + 1]].local_header_offset : cd_start;
    std::uint64_t end = 0;
    const bool overflow = add_overflows(e.local_header_offset, kLocalSize + e.raw_name.size(), end) ||
                          add_overflows(end, e.compressed_size, end);
    if (overflow || end > limit) {
      const std::string other = k + 1 < n ? "entry '" + idx.entries[order[k + 1]].name + "'" : "the central directory";
      fail(ErrorKind::invalid, where + ":" + e.name, "data that ends before " + other,
           "data overlapping it (" + std::to_string(e.compressed_size) + " bytes at offset " +
               std::to_string(e.local_header_offset) + ")",
           "the archive is damaged or crafted (overlapping entries are a zip-bomb technique); do not use it");
    }
    idx.data_limit[order[k]] = limit;
  }
}

}  // namespace

ZipIndex build_zip_index(const ByteSource& src, const std::string& where, const ArchiveOptions& options) {
  const EndRecord r = find_end_record(src, where);
  ZipIndex idx;
  idx.cd_offset = r.cd_start;
  idx.cd_size = r.cd_size;
  idx.prefix_bytes = r.adjust;
  std::vector<std::uint8_t> copy;
  const std::uint8_t* cd;
  if (auto v = src.view(r.cd_start, r.cd_size)) {
    cd = v->data();
  } else {
    copy.resize(r.cd_size);
    src.read_at(r.cd_start, copy.data(), copy.size());
    cd = copy.data();
  }
  CentralParser parser{cd, r.cd_size, r, where, NameDecoder(options.name_encoding)};
  idx.entries.reserve(r.entries);
  advise_huge_pages(idx.entries.data(), idx.entries.capacity() * sizeof(ZipEntry));
  // Walk the whole directory rather than trusting the count: writers that predate Zip64 store the
  // count modulo 65536. Bytes after the last header (a digital-signature record) end the walk.
  auto count_ok = [&] {
    return r.zip64 ? idx.entries.size() == r.entries : idx.entries.size() % 65536 == r.entries % 65536;
  };
  for (std::uint64_t pos = 0; pos < r.cd_size;) {
    if (count_ok() && (r.cd_size - pos < 4 || le32(cd + pos) != kCentralSig)) break;
    idx.entries.emplace_back();
    pos = parser.parse(pos, idx.entries.size() - 1, idx.entries.back());
  }
  if (!count_ok())
    fail(ErrorKind::invalid, where, std::to_string(r.entries) + " entries (end-of-central-directory record)",
         std::to_string(idx.entries.size()) + " central headers", "the archive is damaged; copy it again");
  check_layout(idx, r.cd_start, where);
  idx.by_name.build(idx.entries);
  return idx;
}

void NameTable::build(std::vector<ZipEntry>& entries) {
  std::uint64_t cap = 16;
  while (cap < entries.size() * 2) cap <<= 1;
  slots_.assign(cap, kEmpty);
  mask_ = cap - 1;
  // Slots are hit at random, and for 500,000 names the table (8 MiB) is far larger than the cache:
  // hashing kAhead names in advance and prefetching their slots overlaps those misses.
  constexpr std::size_t kAhead = 16;
  std::uint64_t ring[kAhead];
  const std::size_t n = entries.size();
  auto hash_of = [&](std::size_t i) { return name_hash(entries[i].name); };
  for (std::size_t i = 0; i < std::min(n, kAhead); ++i) {
    ring[i] = hash_of(i);
    __builtin_prefetch(&slots_[ring[i] & mask_]);
  }
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint64_t h = ring[i % kAhead];
    if (i + kAhead < n) {
      ring[i % kAhead] = hash_of(i + kAhead);
      __builtin_prefetch(&slots_[ring[i % kAhead] & mask_]);
    }
    const std::string& name = entries[i].name;
    const std::uint64_t tag = h >> 32;
    for (std::uint64_t s = h & mask_;; s = (s + 1) & mask_) {
      if (slots_[s] == kEmpty) {
        slots_[s] = tag << 32 | i;
        break;
      }
      if (slots_[s] >> 32 == tag && entries[slots_[s] & 0xffffffffu].name == name) {
        entries[i].duplicate_name = true;
        entries[i].duplicate_of = static_cast<std::uint32_t>(slots_[s] & 0xffffffffu);
        break;
      }
    }
  }
  mark_normalised_duplicates(entries);
}

namespace {
// True when normalize_relative(name) == name, decided without allocating: most names are.
bool is_normal_name(std::string_view name) {
  if (name.empty() || name.find('\0') != std::string_view::npos || name.find('\\') != std::string_view::npos)
    return false;
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    const std::string_view part = name.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}
}  // namespace

// The exact-name table above finds "d/f" twice; "d/./f", "d//f" and the folder entry "d/" beside a
// file "d" name the same path on disk too. Only names not already in normal form need a second look.
void NameTable::mark_normalised_duplicates(std::vector<ZipEntry>& entries) const {
  std::unordered_map<std::string, std::uint32_t> first;  // normal form -> first entry not written so
  for (std::uint32_t i = 0; i < entries.size(); ++i) {
    if (is_normal_name(entries[i].name)) continue;
    std::string key = normalize_relative(entries[i].name);
    if (key.empty()) continue;  // unsafe or empty: entry_problem() reports it as such
    const auto [it, added] = first.emplace(key, i);
    const std::optional<std::uint32_t> exact = find(entries, key);
    const std::uint32_t earliest = std::min(it->second, exact.value_or(i));
    if (earliest < i) {
      if (!entries[i].duplicate_name) entries[i].duplicate_of = earliest;
      entries[i].duplicate_name = true;
    } else if (added && exact && *exact > i && !entries[*exact].duplicate_name) {
      entries[*exact].duplicate_name = true;
      entries[*exact].duplicate_of = i;
    }
  }
}

std::optional<std::uint32_t> NameTable::find(const std::vector<ZipEntry>& entries, std::string_view name) const {
  if (slots_.empty()) return std::nullopt;
  const std::uint64_t h = name_hash(name);
  for (std::uint64_t s = h & mask_;; s = (s + 1) & mask_) {
    if (slots_[s] == kEmpty) return std::nullopt;
    const auto i = static_cast<std::uint32_t>(slots_[s] & 0xffffffffu);
    if (slots_[s] >> 32 == h >> 32 && entries[i].name == name) return i;
  }
}

}  // namespace frugal

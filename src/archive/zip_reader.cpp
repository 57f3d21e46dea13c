// Reading entries: positioned reads of the mapped parts, inflation with libdeflate into a buffer
// that grows with the output and never past the declared size (a lying header can flood neither
// memory nor disk), then the CRC-32. read_to inflates large entries in pieces through zlib.
#include <libdeflate.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "archive/name_encoding.h"
#include "archive/readers.h"
#include "archive/zip_format.h"
#include "archive/zip_index.h"
#include "frugal/archive/archive.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/hash.h"
#include "frugal/archive/name_encoding.h"

namespace frugal {

using namespace zip;

std::string method_name(std::uint16_t method) {
  switch (method) {
    case 0:
      return "stored";
    case 1:
      return "shrink";
    case 6:
      return "implode";
    case 8:
      return "deflate";
    case 9:
      return "deflate64";
    case 12:
      return "bzip2";
    case 14:
      return "lzma";
    case 93:
      return "zstd";
    case 95:
      return "xz";
    case 98:
      return "ppmd";
    case 99:
      return "aes";
    default:
      return "method-" + std::to_string(method);
  }
}

namespace {

std::string name_problem(std::string_view raw) {
  if (raw.empty()) return "empty name";
  if (raw.find('\0') != std::string_view::npos) return "NUL byte in name";
  if (raw.find('\\') != std::string_view::npos) return "backslash in name (a Windows path?)";
  if (raw.front() == '/') return "absolute path";
  if (raw.size() >= 2 && raw[1] == ':' && std::isalpha(static_cast<unsigned char>(raw[0])))
    return "drive letter in name";
  std::size_t start = 0;
  while (start <= raw.size()) {
    std::size_t end = raw.find('/', start);
    if (end == std::string_view::npos) end = raw.size();
    if (raw.substr(start, end - start) == "..") return "'..' in path (path traversal)";
    start = end + 1;
  }
  return "";
}

libdeflate_decompressor* thread_decompressor() {
  struct Holder {
    libdeflate_decompressor* d = libdeflate_alloc_decompressor();
    ~Holder() { libdeflate_free_decompressor(d); }
  };
  thread_local Holder h;
  if (!h.d) fail(ErrorKind::io, "libdeflate", "a decompressor", "out of memory", "free some memory");
  return h.d;
}

class ZipArchive final : public Archive {
 public:
  static constexpr std::size_t kChunk = std::size_t{4} << 20;
  static constexpr std::size_t kInflateSlack = 320;
  static constexpr std::uint64_t kInitialRatio = 8;
  static constexpr std::uint64_t kMinBuffer = 64 << 10;

  ZipArchive(std::unique_ptr<ByteSource> src, std::string display, const ArchiveOptions& options)
      : src_(std::move(src)), display_(std::move(display)), idx_(build_zip_index(*src_, display_, options)) {}

  const char* format() const override { return "zip"; }
  const std::vector<ZipEntry>& entries() const override { return idx_.entries; }
  std::optional<std::size_t> find(std::string_view name) const override {
    if (auto i = idx_.by_name.find(idx_.entries, name)) return *i;
    return std::nullopt;
  }
  const std::string& display_name() const override { return display_; }
  const ByteSource& source() const override { return *src_; }

  void read(std::size_t i, std::vector<std::uint8_t>& out) const override {
    const ZipEntry& e = entry(i);
    if (e.encrypted)
      bad(e, ErrorKind::unsupported, "an unencrypted entry", "an encrypted one",
          "decrypt it with unzip and pack it again");
    if (e.method != 0 && e.method != 8)
      bad(e, ErrorKind::unsupported, "stored or deflate", method_name(e.method),
          "repack with 'zip' (deflate) or 'frugal pack'");
    const std::uint8_t* in = nullptr;
    const std::uint64_t data = data_offset(i, &in);
    // Every size check comes before the buffer is sized: a lying header must not allocate.
    if (e.method == 0 && e.compressed_size != e.size)
      bad(e, ErrorKind::invalid, "equal sizes for a stored entry",
          std::to_string(e.compressed_size) + " stored for " + std::to_string(e.size), "the archive is damaged");
    std::uint64_t bound = 0;
    if (e.method == 8 && (__builtin_mul_overflow(e.compressed_size, kMaxDeflateRatio, &bound) ||
                          __builtin_add_overflow(bound, 64, &bound) || e.size > bound))
      bad(e, ErrorKind::invalid, "a size deflate can reach from " + std::to_string(e.compressed_size) + " bytes",
          std::to_string(e.size) + " bytes declared", "the header lies; the archive is damaged or crafted");
    if (e.method == 0) {
      out.resize(static_cast<std::size_t>(e.size));
      if (in) {
        if (!out.empty()) std::memcpy(out.data(), in, out.size());
      } else {
        src_->read_at(data, out.data(), out.size());
      }
    } else {
      inflate(e, data, in, out);
    }
    src_->check_intact();  // before the CRC: a part that shrank is named as such, not as corrupt
    const std::uint32_t crc = crc32(0, out.data(), out.size());
    if (crc != e.crc32)
      bad(e, ErrorKind::invalid, "CRC-32 " + hex32(e.crc32), "CRC-32 " + hex32(crc),
          "the archive is damaged; copy it again");
  }

  void read_to(std::size_t i, const std::function<void(std::span<const std::uint8_t>)>& sink) const override {
    const ZipEntry& e = entry(i);
    if ((e.method != 0 && e.method != 8) || e.encrypted || e.size <= kChunk) return Archive::read_to(i, sink);
    if (e.method == 8) return inflate_to(e, data_offset(i), sink);
    if (e.compressed_size != e.size)
      bad(e, ErrorKind::invalid, "equal sizes for a stored entry",
          std::to_string(e.compressed_size) + " stored for " + std::to_string(e.size), "the archive is damaged");
    const std::uint64_t data = data_offset(i);
    std::vector<std::uint8_t> buf(kChunk);
    std::uint32_t crc = 0;
    for (std::uint64_t done = 0; done < e.size;) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, e.size - done));
      src_->read_at(data + done, buf.data(), n);
      crc = crc32(crc, buf.data(), n);
      sink(std::span<const std::uint8_t>(buf.data(), n));
      done += n;
    }
    if (crc != e.crc32)
      bad(e, ErrorKind::invalid, "CRC-32 " + hex32(e.crc32), "CRC-32 " + hex32(crc),
          "the archive is damaged; copy it again");
  }

  std::optional<std::span<const std::uint8_t>> stored_view(std::size_t i) const override {
    const ZipEntry& e = entry(i);
    if (e.method != 0 || e.encrypted || e.compressed_size != e.size) return std::nullopt;
    return src_->view(data_offset(i), static_cast<std::size_t>(e.size));
  }

  std::optional<std::uint64_t> stored_offset(std::size_t i) const override {
    const ZipEntry& e = entry(i);
    if (e.method != 0 || e.encrypted || e.compressed_size != e.size) return std::nullopt;
    return data_offset(i);
  }

 private:
  const ZipEntry& entry(std::size_t i) const {
    if (i >= idx_.entries.size())
      fail(ErrorKind::usage, display_, "an entry index below " + std::to_string(idx_.entries.size()), std::to_string(i),
           "");
    return idx_.entries[i];
  }

  [[noreturn]] void bad(const ZipEntry& e, ErrorKind kind, const std::string& expected, const std::string& found,
                        const std::string& hint) const {
    src_->check_intact();  // bytes that vanished under the mapping explain any mismatch
    fail(kind, display_ + ":" + e.name, expected, found, hint);
  }

  // Checks the local header and returns where the data starts; the data must end below the next
  // entry (or the central directory), which refuses overlapping entries. When the header and data
  // lie in one mapped piece, *data_view points at the data: the random-read path then costs no
  // copy and no allocation before inflation (the local extra field's length is only known here,
  // so the view reaches to the entry's limit rather than to a size computed from the central one).
  std::uint64_t data_offset(std::size_t i, const std::uint8_t** data_view = nullptr) const {
    const ZipEntry& e = idx_.entries[i];
    const std::uint64_t limit = idx_.data_limit[i];
    if (limit - e.local_header_offset < kLocalSize)
      bad(e, ErrorKind::invalid, "a local header", "no room for one", "the archive is damaged");
    const auto whole = src_->view(e.local_header_offset, static_cast<std::size_t>(limit - e.local_header_offset));
    std::uint8_t copy[kLocalSize];
    const std::uint8_t* h = whole ? whole->data() : copy;
    if (!whole) src_->read_at(e.local_header_offset, copy, sizeof copy);
    if (le32(h) != kLocalSig)
      bad(e, ErrorKind::invalid, "a local header signature at offset " + std::to_string(e.local_header_offset),
          "other bytes", "the archive is damaged or has junk inserted; copy it again");
    const std::uint64_t nlen = le16(h + 26), xlen = le16(h + 28);
    const std::uint64_t data = e.local_header_offset + kLocalSize + nlen + xlen;
    if (nlen != e.raw_name.size() || data > limit || e.compressed_size > limit - data)
      bad(e, ErrorKind::invalid, "a local header and data that end before the next entry",
          "a header of " + std::to_string(kLocalSize + nlen + xlen) + " bytes and " +
              std::to_string(e.compressed_size) + " data bytes reaching past offset " + std::to_string(limit),
          "the archive is damaged or crafted (overlapping entries); do not use it");
    // In a split set the limit may lie in the next part while the entry itself does not.
    const std::uint8_t* p = whole ? whole->data() : nullptr;
    const auto extent = static_cast<std::size_t>(data + e.compressed_size - e.local_header_offset);
    if (!p)
      if (auto v = src_->view(e.local_header_offset, extent)) p = v->data();
    if (p) {
      if (std::memcmp(p + kLocalSize, e.raw_name.data(), nlen) != 0)
        bad_local_name(e, std::string(reinterpret_cast<const char*>(p + kLocalSize), nlen));
      if (data_view) *data_view = p + (data - e.local_header_offset);
      return data;
    }
    std::string local_name(nlen, '\0');
    src_->read_at(e.local_header_offset + kLocalSize, local_name.data(), nlen);
    if (local_name != e.raw_name) bad_local_name(e, local_name);
    return data;
  }

  [[noreturn]] void bad_local_name(const ZipEntry& e, const std::string& local_name) const {
    bad(e, ErrorKind::invalid, "the same name in the local header", "'" + local_name + "'",
        "the archive is damaged or crafted; do not use it");
  }

  // `in`: the compressed bytes when data_offset() found them mapped, else null (copied here).
  //
  // Memory follows what inflation produces, not what the header declares (a header may claim
  // ~1000x its data and still pass the ratio check in read()): the first buffer holds
  // kInitialRatio x the compressed size (images barely deflate; this fits nearly every entry), and
  // only an entry whose data really inflates further gets a 4x larger buffer, inflated again from
  // the start (libdeflate has no streaming API): at most a third more inflation work for honest
  // high-ratio entries, and a lying header costs kInitialRatio x what was read. A larger buffer
  // rather than uninitialised memory: std::vector zero-fills, and `out` is the public type.
  // Slack past the declared size: libdeflate's fast loop stops ~300 bytes short of the buffer's
  // end, so without it the last tenth of a 3 KB entry decodes in its slow loop (4% of a read,
  // measured). Output is still capped, at the declared size plus the slack.
  void inflate(const ZipEntry& e, std::uint64_t data, const std::uint8_t* in, std::vector<std::uint8_t>& out) const {
    thread_local std::vector<std::uint8_t> copy;
    if (!in) {
      copy.resize(static_cast<std::size_t>(e.compressed_size));
      src_->read_at(data, copy.data(), copy.size());
      in = copy.data();
    }
    const std::uint64_t want = e.size + kInflateSlack;  // e.size <= 1032 x compressed_size (read())
    std::uint64_t cap = std::min(want, e.compressed_size * kInitialRatio + kMinBuffer);
    std::size_t got = 0;
    libdeflate_result rc;
    out.resize(static_cast<std::size_t>(cap));  // a reused buffer zero-fills only what it grows by
    for (;;) {
      rc = libdeflate_deflate_decompress(thread_decompressor(), in, static_cast<std::size_t>(e.compressed_size),
                                         out.data(), out.size(), &got);
      if (rc != LIBDEFLATE_INSUFFICIENT_SPACE || cap == want) break;
      cap = std::min(want, cap * 4);
      out.clear();  // the partial output is not kept: no copy when the buffer is reallocated
      out.resize(static_cast<std::size_t>(cap));
    }
    if (rc == LIBDEFLATE_INSUFFICIENT_SPACE || (rc == LIBDEFLATE_SUCCESS && got > e.size))
      bad(e, ErrorKind::invalid, std::to_string(e.size) + " bytes (the declared size)", "more when inflated",
          "the header lies; inflation was stopped at the declared size");
    if (rc != LIBDEFLATE_SUCCESS)
      bad(e, ErrorKind::invalid, "valid deflate data", "corrupt data", "the archive is damaged; copy it again");
    if (got != e.size)
      bad(e, ErrorKind::invalid, std::to_string(e.size) + " bytes (the declared size)", std::to_string(got) + " bytes",
          "the archive is damaged; copy it again");
    out.resize(got);
  }

  // read_to's inflation of a large entry, in pieces of at most kChunk through zlib's streaming
  // inflate (libdeflate has none): memory stays two chunks whatever the entry declares or really
  // inflates to (a labels.csv that inflates to one 1 GiB line was read whole). Output past the
  // declared size stops it, as in inflate().
  void inflate_to(const ZipEntry& e, std::uint64_t data,
                  const std::function<void(std::span<const std::uint8_t>)>& sink) const {
    std::uint64_t bound = 0;
    if (__builtin_mul_overflow(e.compressed_size, kMaxDeflateRatio, &bound) ||
        __builtin_add_overflow(bound, 64, &bound) || e.size > bound)
      bad(e, ErrorKind::invalid, "a size deflate can reach from " + std::to_string(e.compressed_size) + " bytes",
          std::to_string(e.size) + " bytes declared", "the header lies; the archive is damaged or crafted");
    z_stream z{};
    if (inflateInit2(&z, -15) != Z_OK)
      fail(ErrorKind::io, "zlib", "an inflate stream", "out of memory", "free some memory");
    struct End {
      z_stream* z;
      ~End() { inflateEnd(z); }
    } end{&z};
    constexpr std::size_t kIn = std::size_t{1} << 20;
    std::vector<std::uint8_t> in(static_cast<std::size_t>(std::min<std::uint64_t>(kIn, e.compressed_size)) + 1);
    std::vector<std::uint8_t> out(kChunk);
    std::uint64_t consumed = 0, produced = 0;
    std::uint32_t crc = 0;
    for (int rc = Z_OK; rc != Z_STREAM_END;) {
      if (z.avail_in == 0) {
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(in.size() - 1, e.compressed_size - consumed));
        if (n == 0)
          bad(e, ErrorKind::invalid, "valid deflate data", "data that ends early",
              "the archive is damaged; copy it again");
        src_->read_at(data + consumed, in.data(), n);
        consumed += n;
        z.next_in = in.data();
        z.avail_in = static_cast<uInt>(n);
      }
      // One byte of room past the declared size, so that more output is seen, never kept.
      z.next_out = out.data();
      z.avail_out = static_cast<uInt>(std::min<std::uint64_t>(out.size(), e.size - produced + 1));
      rc = ::inflate(&z, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
        bad(e, ErrorKind::invalid, "valid deflate data", "corrupt data", "the archive is damaged; copy it again");
      const std::size_t got = static_cast<std::size_t>(z.next_out - out.data());
      if (produced + got > e.size)
        bad(e, ErrorKind::invalid, std::to_string(e.size) + " bytes (the declared size)", "more when inflated",
            "the header lies; inflation was stopped at the declared size");
      produced += got;
      if (got) {
        crc = crc32(crc, out.data(), got);
        sink(std::span<const std::uint8_t>(out.data(), got));
      }
    }
    if (produced != e.size)
      bad(e, ErrorKind::invalid, std::to_string(e.size) + " bytes (the declared size)",
          std::to_string(produced) + " bytes", "the archive is damaged; copy it again");
    src_->check_intact();
    if (crc != e.crc32)
      bad(e, ErrorKind::invalid, "CRC-32 " + hex32(e.crc32), "CRC-32 " + hex32(crc),
          "the archive is damaged; copy it again");
  }

  std::unique_ptr<ByteSource> src_;
  std::string display_;
  ZipIndex idx_;
};

}  // namespace

std::string entry_problem(const ZipEntry& e) {
  if (auto p = name_problem(e.raw_name); !p.empty()) return p;
  if (e.name != e.raw_name)
    if (auto p = name_problem(e.name); !p.empty()) return p + " (as decoded)";
  if (!e.is_dir && normalize_relative(e.name).empty()) return "a name that names no file ('.')";
  if (e.is_symlink) return "symlink entry (frugal never creates links)";
  switch (e.special) {
    case SpecialMember::none:
      break;
    case SpecialMember::hard_link:
      return "hard link entry (frugal never creates links)";
    case SpecialMember::device:
      return "device entry";
    case SpecialMember::fifo:
      return "FIFO entry";
    case SpecialMember::sparse:
      return "sparse file entry (read it with tar)";
    case SpecialMember::other:
      return "entry of a kind frugal does not read";
  }
  if (e.duplicate_name) return "duplicate name";
  if (e.encrypted) return "encrypted entry";
  if (e.method != 0 && e.method != 8) return "unsupported compression method " + method_name(e.method);
  return "";
}

std::string entry_problem(const Archive& archive, std::size_t i) {
  const auto& entries = archive.entries();
  std::string p = entry_problem(entries.at(i));
  if (entries[i].duplicate_name && p == "duplicate name")
    p += " (the same path as '" + entries.at(entries[i].duplicate_of).name + "')";
  return p;
}

namespace {
// For names that collide only as shown: the fix is their encoding, not a repack.
std::string not_utf8_advice(const Archive& archive) {
  std::vector<std::string> raw;
  for (const ZipEntry& e : archive.entries())
    if (!is_valid_utf8(e.raw_name)) raw.push_back(e.raw_name);
  const std::vector<std::string> guess = guess_name_encodings(raw);
  std::string advice =
      "their names are not UTF-8, and differ only in bytes shown as U+FFFD: give the encoding they "
      "were written in with {name_encoding}";
  if (guess.empty()) return advice + " (e.g. cp437, gbk, shift_jis)";
  advice += " (they look like " + guess[0];
  for (std::size_t i = 1; i < guess.size(); ++i) advice += (i + 1 == guess.size() ? " or " : ", ") + guess[i];
  return advice + ": e.g. {name_encoding} " + guess[0] + ")";
}
}  // namespace

void refuse_duplicate_names(const Archive& archive) {
  std::string list;
  std::size_t n = 0;
  bool only_shown_alike = true;  // every pair differs in its bytes: only the shown names collide
  for (const ZipEntry& e : archive.entries()) {
    if (!e.duplicate_name) continue;
    const ZipEntry& other = archive.entries()[e.duplicate_of];
    only_shown_alike = only_shown_alike && !e.name_is_utf8 && !other.name_is_utf8 && e.raw_name != other.raw_name;
    if (++n <= 5) list += (list.empty() ? "'" : ", '") + e.name + "' and '" + other.name + "'";
  }
  if (n == 0) return;
  if (n > 5) list += ", and " + std::to_string(n - 5) + " more";
  fail(ErrorKind::invalid, archive.display_name(), "one entry per path",
       std::to_string(n) + " entr" + (n == 1 ? "y" : "ies") + " naming the same path as another: " + list,
       only_shown_alike
           ? not_utf8_advice(archive)
           : "it is unclear which one is meant; repack the archive without the duplicates ('frugal ls' marks them)");
}

std::unique_ptr<Archive> open_zip_archive(std::unique_ptr<ByteSource> source, std::string display,
                                          const ArchiveOptions& options) {
  return std::make_unique<ZipArchive>(std::move(source), std::move(display), options);
}

}  // namespace frugal

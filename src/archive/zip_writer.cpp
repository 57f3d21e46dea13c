#include "archive/zip_writer.h"

#include <libdeflate.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>

#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/hash.h"

namespace frugal {
namespace {
constexpr std::uint32_t kMax32 = 0xFFFFFFFFu;
constexpr std::uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;  // 1980-01-01
constexpr std::uint16_t kDosTime = 0;
constexpr std::uint16_t kFlagUtf8 = 1u << 11;
constexpr std::uint16_t kMadeByUnix = 3u << 8;
constexpr std::uint32_t kRegularFileMode = 0100644u << 16;

class Bytes {
 public:
  void u16(std::uint16_t v) { b_.push_back(static_cast<char>(v)), b_.push_back(static_cast<char>(v >> 8)); }
  void u32(std::uint32_t v) { u16(static_cast<std::uint16_t>(v)), u16(static_cast<std::uint16_t>(v >> 16)); }
  void u64(std::uint64_t v) { u32(static_cast<std::uint32_t>(v)), u32(static_cast<std::uint32_t>(v >> 32)); }
  void str(const std::string& s) { b_ += s; }
  const std::string& data() const { return b_; }

 private:
  std::string b_;
};

std::uint32_t clamp32(std::uint64_t v) { return v >= kMax32 ? kMax32 : static_cast<std::uint32_t>(v); }
std::uint16_t version_needed(bool zip64, std::uint16_t method) { return zip64 ? 45 : method == 8 ? 20 : 10; }

// One central directory record; `Central` is ZipWriter::Central, private to it.
template <class Central>
void append_central_header(Bytes& cd, const Central& c) {
  Bytes extra;  // Zip64 fields in the order the spec fixes, only those that overflow
  if (c.size >= kMax32) extra.u64(c.size);
  if (c.compressed_size >= kMax32) extra.u64(c.compressed_size);
  if (c.offset >= kMax32) extra.u64(c.offset);
  const bool z = !extra.data().empty();
  cd.u32(0x02014b50);
  cd.u16(kMadeByUnix | version_needed(z, c.method));
  cd.u16(version_needed(z, c.method));
  cd.u16(kFlagUtf8);
  cd.u16(c.method);
  cd.u16(kDosTime);
  cd.u16(kDosDate);
  cd.u32(c.crc32);
  cd.u32(clamp32(c.compressed_size));
  cd.u32(clamp32(c.size));
  cd.u16(static_cast<std::uint16_t>(c.name.size()));
  cd.u16(z ? static_cast<std::uint16_t>(4 + extra.data().size()) : 0);
  cd.u16(0);  // comment
  cd.u16(0);  // disk
  cd.u16(0);  // internal attributes
  cd.u32(kRegularFileMode);
  cd.u32(clamp32(c.offset));
  cd.str(c.name);
  if (z) {
    cd.u16(0x0001);
    cd.u16(static_cast<std::uint16_t>(extra.data().size()));
    cd.str(extra.data());
  }
}

// The Zip64 end of central directory record, written at `z64_end`, and its locator.
void append_zip64_end(Bytes& end, std::uint64_t count, std::uint64_t cd_size, std::uint64_t cd_start,
                      std::uint64_t z64_end) {
  end.u32(0x06064b50);
  end.u64(44);  // size of the rest of this record
  end.u16(kMadeByUnix | 45);
  end.u16(45);
  end.u32(0);
  end.u32(0);
  end.u64(count);
  end.u64(count);
  end.u64(cd_size);
  end.u64(cd_start);
  end.u32(0x07064b50);  // locator
  end.u32(0);
  end.u64(z64_end);
  end.u32(1);
}
// Reads `path` from the start in pieces of at most 1 MiB, giving each to `use`; returns the bytes
// read. Stops after `limit` bytes (a file that grew is then told by one byte more).
std::uint64_t read_pieces(const std::filesystem::path& path, std::uint64_t limit,
                          const std::function<void(const std::uint8_t*, std::size_t)>& use) {
  const UniqueFd fd = open_regular(path);
  std::vector<std::uint8_t> piece(std::size_t{1} << 20);
  std::uint64_t done = 0;
  while (done < limit) {
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(piece.size(), limit - done));
    const ssize_t r = ::read(fd.get(), piece.data(), want);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail_errno("read", path.string(), errno);
    if (r == 0) break;
    use(piece.data(), static_cast<std::size_t>(r));
    done += static_cast<std::uint64_t>(r);
  }
  return done;
}
}  // namespace

bool is_precompressed_image(std::span<const std::uint8_t> d) {
  auto starts = [&](std::initializer_list<int> sig, std::size_t at = 0) {
    if (d.size() < at + sig.size()) return false;
    std::size_t i = at;
    for (int c : sig)
      if (d[i++] != c) return false;
    return true;
  };
  return starts({0xFF, 0xD8, 0xFF}) ||                                         // JPEG
         starts({0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A}) ||              // PNG
         (starts({'R', 'I', 'F', 'F'}) && starts({'W', 'E', 'B', 'P'}, 8)) ||  // WebP
         starts({'G', 'I', 'F', '8', '7', 'a'}) || starts({'G', 'I', 'F', '8', '9', 'a'});
}

PreparedEntry prepare_entry(std::string name, std::vector<std::uint8_t> data, int level) {
  PreparedEntry e;
  e.name = std::move(name);
  e.size = data.size();
  e.crc32 = crc32(0, data.data(), data.size());
  if (!data.empty() && !is_precompressed_image(data)) {
    std::unique_ptr<libdeflate_compressor, void (*)(libdeflate_compressor*)> c(libdeflate_alloc_compressor(level),
                                                                               libdeflate_free_compressor);
    if (!c) throw Error(ErrorKind::io, "libdeflate: cannot allocate a compressor (out of memory?)");
    std::vector<std::uint8_t> out(libdeflate_deflate_compress_bound(c.get(), data.size()));
    std::size_t n = libdeflate_deflate_compress(c.get(), data.data(), data.size(), out.data(), out.size());
    if (n > 0 && n < data.size()) {
      out.resize(n);
      e.method = 8;
      e.data = std::move(out);
      return e;
    }
  }
  e.method = 0;
  e.data = std::move(data);
  return e;
}

PreparedEntry prepare_file_entry(std::string name, const std::filesystem::path& file, int level) {
  struct stat st {};
  {
    const UniqueFd fd = open_regular(file);
    if (::fstat(fd.get(), &st) != 0) fail_errno("stat", file.string(), errno);
  }
  if (static_cast<std::uint64_t>(st.st_size) <= kStreamedEntryBytes) {
    const std::string bytes = read_file(file);
    return prepare_entry(std::move(name), {bytes.begin(), bytes.end()}, level);
  }
  PreparedEntry e;
  e.name = std::move(name);
  e.source = file;
  e.size = read_pieces(file, UINT64_MAX, [&](const std::uint8_t* p, std::size_t n) { e.crc32 = crc32(e.crc32, p, n); });
  return e;
}

// The streamed entry's bytes, copied piece by piece; exactly e.size of them with e.crc32, else the
// file changed between its two reads and the archive would be wrong.
void ZipWriter::copy_source(const PreparedEntry& e) {
  std::uint32_t crc = 0;
  const std::uint64_t copied = read_pieces(e.source, e.size + 1, [&](const std::uint8_t* p, std::size_t n) {
    crc = crc32(crc, p, n);
    sink_.write(p, n);
  });
  if (copied != e.size || crc != e.crc32)
    fail(ErrorKind::io, e.source.string(),
         std::to_string(e.size) + " unchanged bytes (as first read for the archive's checksum)",
         copied != e.size ? std::to_string(copied) + " bytes" : "other bytes",
         "the file changed while it was packed; pack again once nothing writes to it");
}

void ZipWriter::add(const PreparedEntry& e) {
  if (finished_) throw Error(ErrorKind::io, "internal error: zip entry added after finish()");
  if (e.name.size() > 0xFFFF)
    fail(ErrorKind::invalid, e.name.substr(0, 80) + "...", "an entry name under 65,536 bytes",
         std::to_string(e.name.size()) + " bytes", "shorten the file's path");
  const std::uint64_t offset = sink_.offset();
  const std::uint64_t csize = e.source.empty() ? e.data.size() : e.size;
  // Local Zip64 extra only where a size needs it: readers take the local sizes from it.
  const bool big = e.size >= kMax32 || csize >= kMax32;
  Bytes h;
  h.u32(0x04034b50);
  h.u16(version_needed(big, e.method));
  h.u16(kFlagUtf8);
  h.u16(e.method);
  h.u16(kDosTime);
  h.u16(kDosDate);
  h.u32(e.crc32);
  h.u32(big ? kMax32 : static_cast<std::uint32_t>(csize));
  h.u32(big ? kMax32 : static_cast<std::uint32_t>(e.size));
  h.u16(static_cast<std::uint16_t>(e.name.size()));
  h.u16(big ? 20 : 0);
  h.str(e.name);
  if (big) {
    h.u16(0x0001);
    h.u16(16);
    h.u64(e.size);
    h.u64(csize);
  }
  sink_.write(h.data().data(), h.data().size());
  if (e.source.empty()) {
    sink_.write(e.data.data(), e.data.size());
  } else {
    copy_source(e);
  }
  central_.push_back({e.name, e.method, e.crc32, e.size, csize, offset});
  if (big || offset >= kMax32) zip64_ = true;
}

void ZipWriter::finish() {
  const std::uint64_t cd_start = sink_.offset();
  Bytes cd;
  for (const auto& c : central_) append_central_header(cd, c);
  sink_.write(cd.data().data(), cd.data().size());
  const std::uint64_t cd_size = cd.data().size();
  const std::uint64_t count = central_.size();
  Bytes end;
  if (count > 0xFFFF || cd_start >= kMax32 || cd_size >= kMax32 || zip64_) {
    zip64_ = true;
    append_zip64_end(end, count, cd_size, cd_start, sink_.offset());
  }
  end.u32(0x06054b50);
  end.u16(0);
  end.u16(0);
  end.u16(count > 0xFFFF ? 0xFFFF : static_cast<std::uint16_t>(count));
  end.u16(count > 0xFFFF ? 0xFFFF : static_cast<std::uint16_t>(count));
  end.u32(clamp32(cd_size));
  end.u32(clamp32(cd_start));
  end.u16(0);
  sink_.write(end.data().data(), end.data().size());
  finished_ = true;
}

}  // namespace frugal

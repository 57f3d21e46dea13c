#include "archive/parquet_index_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "frugal/util/fs.h"
#include "frugal/util/hash.h"

namespace frugal {
namespace fs = std::filesystem;

namespace {

constexpr CacheMagic kMagic = {'F', 'R', 'U', 'G', 'A', 'L', '-', 'P', 'Q', '-', 'I', 'D', 'X', '\n', '\0', '\0'};
constexpr std::uint32_t kVersion = 2;  // 1: an unkeyed xxh3 checksum
static_assert(static_cast<int>(ImageFormat::jpeg2000) == 11,
              "rows store ImageFormat's values (docs/formats.md): another order or format is a new kVersion");
constexpr std::uint64_t kFooterBytes = 64 << 10;
constexpr std::uint64_t kSampleBlocks = 64, kSampleBlock = 4 << 10;
constexpr std::uint64_t kRowBytes = 1 + 1 + 8, kLabelBytes = 1 + 8;
// A shape of more rows is never cached: what the archive refuses anyway (kMaxRows there).
constexpr std::uint64_t kMaxCachedRows = std::uint64_t{1} << 31;
constexpr std::uint32_t kNoField = 0xffffffff;
// Arrow's memory for one row group's read is capped at 1 GiB (plugin/arrow_parquet.cpp): no row's
// image is larger, and sums of sizes cannot wrap.
constexpr std::uint64_t kMaxRowBytes = std::uint64_t{1} << 30;

// Reads the bytes that are hashed. For a source that is one whole file: pread on a descriptor of
// its own, told POSIX_FADV_RANDOM. A page fault in the source's mapping reads the disk's whole
// read-ahead window around it (8 MiB on the development machine's disk: 64 sampled blocks read
// every byte of a 200 MB file when it is cold), a pread of 4 KiB only the block. Else through the source.
class HashReader {
 public:
  HashReader(const ByteSource& src, const SourceIdentity& id, std::uint64_t base) : src_(src) {
    if (base != 0 || id.files.size() != 1 || id.files[0].size != src.size()) return;
    fd_ = UniqueFd(::open(id.files[0].path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (fd_) ::posix_fadvise(fd_.get(), 0, 0, POSIX_FADV_RANDOM);
  }

  void read(std::uint64_t offset, char* out, std::uint64_t n) const {
    std::uint64_t done = 0;
    while (fd_ && done < n) {
      const ssize_t k = ::pread(fd_.get(), out + done, n - done, static_cast<off_t>(offset + done));
      if (k > 0)
        done += static_cast<std::uint64_t>(k);
      else if (k == 0 || errno != EINTR)
        break;
    }
    if (done != n) src_.read_at(offset, out, n);  // the source says what went wrong, if anything did
  }

  std::uint64_t hash(std::uint64_t offset, std::uint64_t n) const {
    std::string bytes(static_cast<std::size_t>(n), '\0');
    read(offset, bytes.data(), n);
    return xxh3_64(bytes.data(), bytes.size());
  }

  // 64 blocks of 4 KiB, the first at 0 and the last at the end, evenly between; all of a small source.
  std::uint64_t hash_samples() const {
    const std::uint64_t size = src_.size();
    if (size <= kSampleBlocks * kSampleBlock) return hash(0, size);
    std::string bytes(static_cast<std::size_t>(kSampleBlocks * kSampleBlock), '\0');
    for (std::uint64_t k = 0; k < kSampleBlocks; ++k)
      read(k * ((size - kSampleBlock) / (kSampleBlocks - 1)), bytes.data() + k * kSampleBlock, kSampleBlock);
    return xxh3_64(bytes.data(), bytes.size());
  }

 private:
  const ByteSource& src_;
  UniqueFd fd_;
};

std::uint32_t field_code(int field) { return field < 0 ? kNoField : static_cast<std::uint32_t>(field); }

// The bytes a genuine cache file of `shape` has after its identity: what it may be at most.
std::uint64_t body_after_identity(const ParquetShape& shape) {
  const std::uint64_t n = shape.rows();
  return 8 + 8 + 4 + 4 + 4 + 8 * shape.group_rows.size() + 8 + n * kRowBytes + 1 +
         (shape.label_field >= 0 ? n * kLabelBytes : 0);
}

// The rows part of a body, checked row by row against what open_file() can have recorded.
bool read_rows(LeReader& in, std::uint64_t n, ParquetRowIndex& out) {
  out.rows.resize(static_cast<std::size_t>(n));
  for (ParquetRow& r : out.rows) {
    const std::uint64_t image = in.get(1), format = in.get(1);
    r.size = in.get();
    if (image > static_cast<std::uint64_t>(ParquetImage::empty) ||
        format > static_cast<std::uint64_t>(ImageFormat::jpeg2000))
      return false;
    r.image = static_cast<ParquetImage>(image);
    r.format = static_cast<ImageFormat>(format);
    const bool bytes = r.image == ParquetImage::bytes;
    if (bytes ? (r.size == 0 || r.size > kMaxRowBytes) : (r.size != 0 || r.format != ImageFormat::unknown))
      return false;
  }
  return in.ok;
}

bool read_labels(LeReader& in, std::uint64_t n, ParquetRowIndex& out) {
  out.labels.resize(static_cast<std::size_t>(n));
  for (auto& l : out.labels) {
    const std::uint64_t present = in.get(1), value = in.get();
    if (present > 1 || (!present && value != 0)) return false;
    if (present) l = static_cast<std::int64_t>(value);
  }
  return in.ok;
}

}  // namespace

std::uint64_t ParquetShape::rows() const {
  std::uint64_t n = 0;
  for (std::int64_t g : group_rows)  // saturating: a hostile footer's counts cannot wrap the sum
    n = std::min(n + (g < 0 ? kMaxCachedRows : std::min(static_cast<std::uint64_t>(g), kMaxCachedRows)),
                 kMaxCachedRows);
  return n;
}

std::optional<ParquetCacheIdentity> parquet_cache_identity(const ByteSource& src, std::uint64_t base) {
  auto source = source_identity(src, base, 0, src.size());
  if (!source) return std::nullopt;
  ParquetCacheIdentity id;
  id.source = std::move(*source);
  const HashReader reader(src, id.source, base);
  const std::uint64_t footer = std::min(src.size(), kFooterBytes);
  id.footer_xxh3 = reader.hash(src.size() - footer, footer);
  id.sample_xxh3 = reader.hash_samples();
  return id;
}

fs::path parquet_cache_file(const fs::path& dir, const ParquetCacheIdentity& id) {
  return cache_file_path(dir, "parquet-index", id.source, ".pqindex");
}

std::string parquet_cache_bytes(const ParquetCacheIdentity& id, const ParquetShape& shape, const ParquetRowIndex& index,
                                const CacheKey& key) {
  std::string s;
  put_identity(s, id.source);
  put_le(s, id.footer_xxh3);
  put_le(s, id.sample_xxh3);
  put_le(s, field_code(shape.image_field), 4);
  put_le(s, field_code(shape.label_field), 4);
  put_le(s, shape.group_rows.size(), 4);
  for (std::int64_t g : shape.group_rows) put_le(s, static_cast<std::uint64_t>(g));
  put_le(s, index.rows.size());
  for (const ParquetRow& r : index.rows) {
    put_le(s, static_cast<std::uint64_t>(r.image), 1);
    put_le(s, static_cast<std::uint64_t>(r.format), 1);
    put_le(s, r.size);
  }
  put_le(s, index.labels.empty() ? 0 : 1, 1);
  for (const auto& l : index.labels) {
    put_le(s, l ? 1 : 0, 1);
    put_le(s, l ? static_cast<std::uint64_t>(*l) : 0);
  }
  return frame_cache(kMagic, kVersion, s, key);
}

std::optional<ParquetRowIndex> parse_parquet_cache(std::string_view data, const ParquetCacheIdentity& id,
                                                   const ParquetShape& shape, const CacheKey& key, bool* forged) {
  const std::optional<std::string_view> body = unframe_cache(data, kMagic, kVersion, key, forged);
  if (!body) return std::nullopt;
  LeReader in{*body};
  std::string expected;
  put_identity(expected, id.source);
  if (in.bytes(expected.size()) != expected || in.get() != id.footer_xxh3 || in.get() != id.sample_xxh3)
    return std::nullopt;
  if (in.get(4) != field_code(shape.image_field) || in.get(4) != field_code(shape.label_field)) return std::nullopt;
  if (in.get(4) != shape.group_rows.size()) return std::nullopt;
  for (std::int64_t g : shape.group_rows)
    if (g < 0 || in.get() != static_cast<std::uint64_t>(g)) return std::nullopt;
  // The row count is the footer's, checked before anything is allocated for it.
  const std::uint64_t n = in.get();
  const bool labelled = shape.label_field >= 0;
  if (!in.ok || n != shape.rows() || n >= kMaxCachedRows ||
      in.left() != n * kRowBytes + 1 + (labelled ? n * kLabelBytes : 0))
    return std::nullopt;
  ParquetRowIndex index;
  if (!read_rows(in, n, index)) return std::nullopt;
  if (in.get(1) != (labelled ? 1u : 0u)) return std::nullopt;
  if (labelled && !read_labels(in, n, index)) return std::nullopt;
  if (!in.ok || in.left() != 0) return std::nullopt;
  return index;
}

std::optional<ParquetRowIndex> load_parquet_cache(const fs::path& file, const ParquetCacheIdentity& id,
                                                  const ParquetShape& shape) {
  if (shape.rows() >= kMaxCachedRows) return std::nullopt;
  std::string identity;
  put_identity(identity, id.source);
  // A genuine cache is exactly this long: nothing larger is read.
  const std::uint64_t bound = sizeof(CacheMagic) + 4 + identity.size() + body_after_identity(shape) + kCacheMacBytes;
  const std::optional<CacheKey> key = user_cache_key();
  if (!key) return std::nullopt;
  const std::optional<std::string> data = read_cache_file(file, bound);
  if (!data) return std::nullopt;
  bool forged = false;
  auto index = parse_parquet_cache(*data, id, shape, *key, &forged);
  if (forged) note_forged_cache(file);
  return index;
}

void save_parquet_cache(const fs::path& file, const ParquetCacheIdentity& id, const ParquetShape& shape,
                        const ParquetRowIndex& index) {
  if (const std::optional<CacheKey> key = user_cache_key())
    write_cache_file(file, parquet_cache_bytes(id, shape, index, *key));
}

}  // namespace frugal

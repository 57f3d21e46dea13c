// Magic bytes, and for a compressed stream its first decompressed block (is it a tar?).
#include "frugal/archive/file_type.h"

#include <bzlib.h>
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>
#include <string_view>
#include <vector>

#include "archive/name_encoding.h"
#include "archive/tar_format.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"

namespace frugal {
namespace {

bool starts(std::span<const std::uint8_t> b, std::string_view magic, std::size_t at = 0) {
  return b.size() >= at + magic.size() && std::memcmp(b.data() + at, magic.data(), magic.size()) == 0;
}

// Up to one tar block of the decompressed stream: as much as the head gives (bounded work: the
// head is at most 64 KiB and the output one block).
std::vector<std::uint8_t> first_block(FileType type, std::span<const std::uint8_t> in) {
  std::vector<std::uint8_t> out(tar::kBlock);
  std::size_t got = 0;
  if (type == FileType::gzip) {
    z_stream z{};
    if (inflateInit2(&z, 16 + 15) != Z_OK) return {};
    z.next_in = const_cast<Bytef*>(in.data());
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    inflate(&z, Z_SYNC_FLUSH);
    got = out.size() - z.avail_out;
    inflateEnd(&z);
  } else if (type == FileType::zstd) {
    ZSTD_DStream* d = ZSTD_createDStream();
    if (!d) return {};
    ZSTD_inBuffer ib{in.data(), in.size(), 0};
    ZSTD_outBuffer ob{out.data(), out.size(), 0};
    while (ob.pos < ob.size && ib.pos < ib.size)
      if (ZSTD_isError(ZSTD_decompressStream(d, &ob, &ib))) break;
    got = ob.pos;
    ZSTD_freeDStream(d);
  } else if (type == FileType::xz) {
    lzma_stream s = LZMA_STREAM_INIT;
    if (lzma_stream_decoder(&s, 64 << 20, 0) != LZMA_OK) return {};
    s.next_in = in.data();
    s.avail_in = in.size();
    s.next_out = out.data();
    s.avail_out = out.size();
    while (s.avail_out > 0 && s.avail_in > 0)
      if (lzma_code(&s, LZMA_RUN) != LZMA_OK) break;
    got = out.size() - s.avail_out;
    lzma_end(&s);
  } else if (type == FileType::bzip2) {
    bz_stream s{};
    if (BZ2_bzDecompressInit(&s, 0, 0) != BZ_OK) return {};
    s.next_in = const_cast<char*>(reinterpret_cast<const char*>(in.data()));
    s.avail_in = static_cast<unsigned>(in.size());
    s.next_out = reinterpret_cast<char*>(out.data());
    s.avail_out = static_cast<unsigned>(out.size());
    while (s.avail_out > 0 && s.avail_in > 0)
      if (BZ2_bzDecompress(&s) != BZ_OK) break;
    got = out.size() - s.avail_out;
    BZ2_bzDecompressEnd(&s);
  }
  out.resize(got);
  return out;
}

bool looks_like_text(std::span<const std::uint8_t> b) {
  if (b.empty()) return false;
  for (std::uint8_t c : b)
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return false;
  // A head cut inside a multi-byte character is still text.
  std::string_view s(reinterpret_cast<const char*>(b.data()), b.size());
  for (std::size_t cut = 0; cut < 4 && cut < s.size(); ++cut)
    if (is_valid_utf8(s.substr(0, s.size() - cut))) return true;
  return false;
}

// An Arrow IPC stream as pyarrow and datasets write it: the continuation marker 0xFFFFFFFF, the
// metadata's length (at most 16 MiB, the reader's bound), then a flatbuffer Message whose header is a
// Schema (type 1), walked within `b`.
bool looks_like_arrow_stream(std::span<const std::uint8_t> b) {
  if (b.size() < 16 || !starts(b, "\xff\xff\xff\xff")) return false;
  auto u32 = [&](std::size_t at) -> std::uint64_t {
    return at + 4 > b.size() ? 0
                             : std::uint64_t{b[at]} | std::uint64_t{b[at + 1]} << 8 | std::uint64_t{b[at + 2]} << 16 |
                                   std::uint64_t{b[at + 3]} << 24;
  };
  auto u16 = [&](std::uint64_t at) -> std::uint64_t { return at + 2 > b.size() ? 0 : b[at] | b[at + 1] << 8; };
  const std::uint64_t length = u32(4);
  if (length < 8 || length > (std::uint64_t{16} << 20)) return false;
  // A flatbuffer too damaged to walk is still Arrow's to refuse (its verifier names the damage); one
  // that walks to another message type is not an Arrow stream.
  const std::uint64_t table = 8 + u32(8);
  const std::int64_t vtable = static_cast<std::int64_t>(table) - static_cast<std::int32_t>(u32(table));
  if (table + 4 > b.size() || vtable < 8 || static_cast<std::uint64_t>(vtable) + 8 > b.size()) return true;
  const std::uint64_t vt = static_cast<std::uint64_t>(vtable);
  if (u16(vt) < 8) return true;             // no room for field 1 (the header's type)
  const std::uint64_t field = u16(vt + 6);  // Message: version, header_type, header, bodyLength, ...
  return field == 0 || table + field >= b.size() || b[table + field] == 1;
}

}  // namespace

FileTypeInfo sniff_file_type(std::span<const std::uint8_t> b) {
  FileTypeInfo info;
  auto is = [&](FileType t) {
    info.type = t;
    return info;
  };
  if (b.empty()) return is(FileType::empty);
  if (starts(b, "PK\x03\x04") || starts(b, "PK\x05\x06") || starts(b, "PK\x07\x08")) return is(FileType::zip);
  // ustar magic alone says tar: a damaged first header is then named by the tar parser, not taken
  // for a zip. Without magic (v7), only a valid checksum does.
  if (b.size() >= tar::kBlock &&
      (tar::is_posix_ustar(b.data()) || tar::is_gnu(b.data()) || tar::looks_like_tar_header(b.data())))
    return is(FileType::tar);
  FileType compressed = FileType::unknown;
  if (starts(b, "\x1f\x8b"))
    compressed = FileType::gzip;
  else if (starts(b, "\x28\xb5\x2f\xfd"))
    compressed = FileType::zstd;
  else if (starts(b, std::string_view("\xfd"
                                      "7zXZ\0",
                                      6)))
    compressed = FileType::xz;
  else if (starts(b, "BZh") && b.size() > 3 && b[3] >= '1' && b[3] <= '9')
    compressed = FileType::bzip2;
  if (compressed != FileType::unknown) {
    info.type = compressed;
    const auto block = first_block(compressed, b);
    if (block.size() == tar::kBlock && tar::looks_like_tar_header(block.data())) info.inner = FileType::tar;
    return info;
  }
  if (starts(b, "PAR1")) return is(FileType::parquet);
  if (starts(b, std::string_view("ARROW1\0\0", 8)) || looks_like_arrow_stream(b)) return is(FileType::arrow);
  if (starts(b, "7z\xbc\xaf\x27\x1c")) return is(FileType::seven_zip);
  if (starts(b, "Rar!\x1a\x07")) return is(FileType::rar);
  if (starts(b, "\xff\xd8\xff")) return is(FileType::jpeg);
  if (starts(b, "\x89PNG\r\n\x1a\n")) return is(FileType::png);
  if (starts(b, "RIFF") && starts(b, "WEBP", 8)) return is(FileType::webp);
  if (starts(b, "GIF87a") || starts(b, "GIF89a")) return is(FileType::gif);
  if (starts(b, "BM") && b.size() >= 14) return is(FileType::bmp);
  if (starts(b, std::string_view("II*\0", 4)) || starts(b, std::string_view("MM\0*", 4))) return is(FileType::tiff);
  if (looks_like_text(b.first(std::min<std::size_t>(b.size(), 4096)))) return is(FileType::text);
  return info;
}

namespace {

// The first `bytes` of the open file (fewer when it is shorter).
std::vector<std::uint8_t> read_head(int fd, std::size_t bytes, const std::filesystem::path& path) {
  std::vector<std::uint8_t> head(bytes);
  std::size_t got = 0;
  while (got < head.size()) {
    const ssize_t n = ::pread(fd, head.data() + got, head.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail_errno("read", path.string(), errno);
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  head.resize(got);
  return head;
}

}  // namespace

FileTypeInfo file_type(const std::filesystem::path& path) {
  UniqueFd fd = open_regular(path);
  std::vector<std::uint8_t> head = read_head(fd.get(), kSniffBytes, path);
  FileTypeInfo info = sniff_file_type(head);
  // A bzip2 block is sniffed whole (up to 1 MiB) to tell a compressed tar from another file.
  if (info.type == FileType::bzip2 && info.inner == FileType::unknown && head.size() == kSniffBytes)
    info = sniff_file_type(read_head(fd.get(), kSniffBzip2Bytes, path));
  return info;
}

std::string describe(const FileTypeInfo& info) {
  const bool tar = info.inner == FileType::tar;
  switch (info.type) {
    case FileType::unknown:
      return "bytes of no format frugal knows";
    case FileType::empty:
      return "an empty file";
    case FileType::zip:
      return "a zip archive";
    case FileType::tar:
      return "a tar archive";
    case FileType::gzip:
      return tar ? "a gzip-compressed tar (.tar.gz, .tgz)" : "a gzip-compressed file";
    case FileType::zstd:
      return tar ? "a zstd-compressed tar (.tar.zst)" : "a zstd-compressed file";
    case FileType::xz:
      return tar ? "an xz-compressed tar (.tar.xz)" : "an xz-compressed file";
    case FileType::bzip2:
      return tar ? "a bzip2-compressed tar (.tar.bz2)" : "a bzip2-compressed file";
    case FileType::parquet:
      return "a Parquet file";
    case FileType::arrow:
      return "an Arrow file";
    case FileType::seven_zip:
      return "a 7-Zip archive";
    case FileType::rar:
      return "a RAR archive";
    case FileType::jpeg:
      return "a JPEG image";
    case FileType::png:
      return "a PNG image";
    case FileType::webp:
      return "a WebP image";
    case FileType::gif:
      return "a GIF image";
    case FileType::bmp:
      return "a BMP image";
    case FileType::tiff:
      return "a TIFF image";
    case FileType::text:
      return "a text file";
  }
  return "a file";
}

bool is_compressed_tar(const FileTypeInfo& info) {
  return (info.type == FileType::gzip || info.type == FileType::zstd || info.type == FileType::xz ||
          info.type == FileType::bzip2) &&
         info.inner == FileType::tar;
}

namespace {

// The command that decompresses `type`, keeping the original.
std::string decompress_command(FileType type, const std::string& file) {
  switch (type) {
    case FileType::gzip:
      return "gunzip -k " + file;
    case FileType::zstd:
      return "zstd -d " + file;
    case FileType::xz:
      return "xz -dk " + file;
    case FileType::bzip2:
      return "bunzip2 -k " + file;
    default:
      return "";
  }
}

}  // namespace

std::string not_an_archive_message(const std::string& where, const FileTypeInfo& info) {
  const std::string expected = "an archive frugal reads (a zip, a tar or a folder)";
  std::string hint;
  switch (info.type) {
    case FileType::unknown:
    case FileType::zip:
    case FileType::tar:
    case FileType::empty:
      return "";
    case FileType::gzip:
    case FileType::zstd:
    case FileType::xz:
    case FileType::bzip2:
      if (info.inner == FileType::tar)
        hint =
            "a compressed tar cannot be read at random without decompressing all of it before each member: "
            "run the same command with {cache_decompressed} (decompresses it once into the cache folder, "
            "within the disk budget), or decompress it yourself ('" +
            decompress_command(info.type, where) + "') and give the .tar";
      else
        hint = "decompress it ('" + decompress_command(info.type, where) + "') and give what it holds";
      break;
    case FileType::parquet:
      hint =
          "Hugging Face parquet files are read as DATA by the commands that train, evaluate and predict, "
          "not as an archive";
      break;
    case FileType::arrow:
      hint =
          "Hugging Face .arrow files (and save_to_disk folders) are read as DATA by the commands that train, "
          "evaluate and predict, not as an archive";
      break;
    case FileType::seven_zip:
      hint = "frugal does not read 7z: extract it ('7z x " + where + "', Debian's p7zip-full) and give the folder";
      break;
    case FileType::rar:
      hint = "frugal does not read RAR: extract it ('unrar x " + where + "' or 'unar') and give the folder";
      break;
    case FileType::jpeg:
    case FileType::png:
    case FileType::webp:
    case FileType::gif:
    case FileType::bmp:
    case FileType::tiff:
      hint = "give the folder or archive that holds the images (one image is predicted with 'frugal predict')";
      break;
    case FileType::text:
      hint = "give the folder or archive that holds the images; a labels file goes inside it or beside it";
      break;
  }
  std::string found = describe(info);
  // Tried as a zip first (a zip may start with any stub): say what the zip parser found too.
  if (info.type == FileType::text || (info.type >= FileType::jpeg && info.type <= FileType::tiff))
    found += " (and no zip end-of-central-directory record at its end)";
  return message(where, expected, found, hint);
}

}  // namespace frugal

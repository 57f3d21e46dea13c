// Test helper: builds zip archives byte by byte, so that tests can craft every field (lying sizes,
// overlaps, fake end records). Independent reference writers (Info-ZIP zip, Python's zipfile) are
// exercised by the CLI tests in tests/cli/archive_read_*.sh.
#pragma once

#include <libdeflate.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "byte_strings.h"
#include "frugal/util/hash.h"
#include "test_files.h"

namespace frugal::testing {

struct TestEntry {
  std::string name;
  std::string data;
  bool deflate = false;
  std::uint16_t flags = 0;
  std::uint16_t method_override = 0xffff;  // else 0 or 8 from `deflate`
  std::uint32_t external_attr = 0100644u << 16;
  std::optional<std::uint32_t> crc;     // lie about the CRC
  std::optional<std::uint64_t> size;    // lie about the uncompressed size (above 4 GiB: zip64 only)
  std::optional<std::uint32_t> offset;  // lie about the local header offset
  std::string local_extra;              // extra field bytes in the local header only
  bool zip64 = false;                   // sizes and offset in a Zip64 extra field
};

struct ZipBuild {
  std::string prefix;  // junk before the archive (self-extractor stub)
  std::string comment;
  bool zip64_end = false;  // write Zip64 end records
};

inline void put16(std::string& s, std::uint32_t v) {
  s += static_cast<char>(v & 0xff);
  s += static_cast<char>((v >> 8) & 0xff);
}
inline void put32(std::string& s, std::uint32_t v) {
  put16(s, v & 0xffff);
  put16(s, v >> 16);
}
inline void put64(std::string& s, std::uint64_t v) {
  put32(s, static_cast<std::uint32_t>(v));
  put32(s, static_cast<std::uint32_t>(v >> 32));
}

inline std::string deflate_bytes(const std::string& data) {
  libdeflate_compressor* c = libdeflate_alloc_compressor(6);
  std::string out(libdeflate_deflate_compress_bound(c, data.size()), '\0');
  out.resize(libdeflate_deflate_compress(c, data.data(), data.size(), out.data(), out.size()));
  libdeflate_free_compressor(c);
  return out;
}

inline std::string build_zip(const std::vector<TestEntry>& entries, const ZipBuild& b = {}) {
  std::string body, cd;
  for (const auto& e : entries) {
    const std::string payload = e.deflate ? deflate_bytes(e.data) : e.data;
    const std::uint16_t method = e.method_override != 0xffff ? e.method_override : (e.deflate ? 8 : 0);
    const std::uint32_t crc = e.crc ? *e.crc : crc32(0, e.data.data(), e.data.size());
    const std::uint64_t size = e.size ? *e.size : e.data.size();
    const std::uint64_t offset = e.offset ? *e.offset : body.size();
    std::string zip64_extra;
    if (e.zip64) {
      put16(zip64_extra, 1);
      put16(zip64_extra, 24);
      put64(zip64_extra, size);
      put64(zip64_extra, payload.size());
      put64(zip64_extra, offset);
    }
    std::string local;
    put32(local, 0x04034b50);
    put16(local, 20);
    put16(local, e.flags);
    put16(local, method);
    put32(local, 0);
    put32(local, crc);
    put32(local, static_cast<std::uint32_t>(payload.size()));
    put32(local, static_cast<std::uint32_t>(size));
    put16(local, static_cast<std::uint32_t>(e.name.size()));
    put16(local, static_cast<std::uint32_t>(e.local_extra.size()));
    local += e.name + e.local_extra;
    body += local + payload;

    put32(cd, 0x02014b50);
    put16(cd, 0x031e);
    put16(cd, e.zip64 ? 45 : 20);
    put16(cd, e.flags);
    put16(cd, method);
    put32(cd, 0);
    put32(cd, crc);
    put32(cd, e.zip64 ? 0xffffffffu : static_cast<std::uint32_t>(payload.size()));
    put32(cd, e.zip64 ? 0xffffffffu : static_cast<std::uint32_t>(size));
    put16(cd, static_cast<std::uint32_t>(e.name.size()));
    put16(cd, static_cast<std::uint32_t>(zip64_extra.size()));
    put16(cd, 0);
    put16(cd, 0);
    put16(cd, 0);
    put32(cd, e.external_attr);
    put32(cd, e.zip64 ? 0xffffffffu : static_cast<std::uint32_t>(offset));
    cd += e.name + zip64_extra;
  }
  std::string out = body + cd;
  const std::uint64_t cd_offset = body.size();
  if (b.zip64_end) {
    const std::uint64_t z64 = out.size();
    put32(out, 0x06064b50);
    put64(out, 44);
    put16(out, 45);
    put16(out, 45);
    put32(out, 0);
    put32(out, 0);
    put64(out, entries.size());
    put64(out, entries.size());
    put64(out, cd.size());
    put64(out, cd_offset);
    put32(out, 0x07064b50);
    put32(out, 0);
    put64(out, z64);
    put32(out, 1);
  }
  put32(out, 0x06054b50);
  put16(out, 0);
  put16(out, 0);
  put16(out, b.zip64_end ? 0xffff : static_cast<std::uint32_t>(entries.size()));
  put16(out, b.zip64_end ? 0xffff : static_cast<std::uint32_t>(entries.size()));
  put32(out, b.zip64_end ? 0xffffffffu : static_cast<std::uint32_t>(cd.size()));
  put32(out, b.zip64_end ? 0xffffffffu : static_cast<std::uint32_t>(cd_offset));
  put16(out, static_cast<std::uint32_t>(b.comment.size()));
  out += b.comment;
  return b.prefix + out;
}

inline std::filesystem::path temp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("frugal-aread-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace frugal::testing

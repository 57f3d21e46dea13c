// The writer is checked against independent readers: Info-ZIP's unzip and Python's zipfile.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "archive/zip_writer.h"
#include "frugal/util/fs.h"
#include "frugal/util/hash.h"
#include "byte_strings.h"
#include "reference_python.h"
#include "string_sink.h"

namespace fs = std::filesystem;
using namespace frugal;
using namespace std::string_literals;

namespace {
using frugal::testing::bytes;
using frugal::testing::StringSink;
using frugal::testing::venv_python_or_python3;

fs::path tmp(const std::string& name) {
  fs::path d = fs::path(FRUGAL_BINARY_DIR) / "test-tmp" / "zip_writer";
  fs::create_directories(d);
  return d / name;
}

int run(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

// zipfile.testzip() returns the first bad name or None; also checks the entry count.
bool python_accepts(const fs::path& zip, std::size_t entries) {
  std::string code =
      "import zipfile,sys; z=zipfile.ZipFile(sys.argv[1]); "
      "sys.exit(0 if z.testzip() is None and len(z.infolist())==int(sys.argv[2]) else 1)";
  return run(venv_python_or_python3() + " -c '" + code + "' " + zip.string() + " " + std::to_string(entries)) == 0;
}

bool unzip_accepts(const fs::path& zip) { return run("unzip -tq " + zip.string()) == 0; }

std::string write_sample(const fs::path& path) {
  StringSink sink;
  ZipWriter zip(sink);
  zip.add(prepare_entry("cats/a.txt", bytes(std::string(5000, 'a') + "tail")));
  zip.add(prepare_entry("cats/empty", {}));
  zip.add(prepare_entry("dogs/\xc3\xa9t\xc3\xa9.bin", bytes("\x89PNG\r\n\x1a\n not really a png")));
  zip.add(prepare_entry("dogs/random", bytes("xq\x01\xfe")));
  zip.finish();
  std::ofstream(path, std::ios::binary) << sink.s;
  return sink.s;
}
}  // namespace

TEST(ZipWriter, UnzipAndPythonAcceptWhatItWrites) {
  auto path = tmp("sample.zip");
  write_sample(path);
  EXPECT_TRUE(unzip_accepts(path));
  EXPECT_TRUE(python_accepts(path, 4));
  std::string code =
      "import zipfile,sys; z=zipfile.ZipFile(sys.argv[1]); "
      "m={i.filename:i.compress_type for i in z.infolist()}; "
      "sys.exit(0 if m=={'cats/a.txt':8,'cats/empty':0,'dogs/\\u00e9t\\u00e9.bin':0,"
      "'dogs/random':0} and z.read('cats/a.txt')==b'a'*5000+b'tail' else 1)";
  EXPECT_EQ(run(venv_python_or_python3() + " -c \"" + code + "\" " + path.string()), 0);
}

TEST(ZipWriter, SameEntriesGiveTheSameBytes) {
  EXPECT_EQ(sha256_hex(write_sample(tmp("d1.zip"))), sha256_hex(write_sample(tmp("d2.zip"))));
}

TEST(ZipWriter, MoreThan65535EntriesUseZip64) {
  auto path = tmp("many.zip");
  StringSink sink;
  ZipWriter zip(sink);
  const std::size_t n = 70000;
  for (std::size_t i = 0; i < n; ++i) zip.add(prepare_entry("d/" + std::to_string(i), bytes(std::to_string(i))));
  zip.finish();
  EXPECT_TRUE(zip.zip64());
  std::ofstream(path, std::ios::binary) << sink.s;
  EXPECT_TRUE(unzip_accepts(path));
  EXPECT_TRUE(python_accepts(path, n));
}

TEST(ZipWriter, SmallArchiveHasNoZip64Records) {
  StringSink sink;
  ZipWriter zip(sink);
  zip.add(prepare_entry("a", bytes("abc")));
  zip.finish();
  EXPECT_FALSE(zip.zip64());
  EXPECT_EQ(sink.s.find("PK\x06\x06"), std::string::npos);
}

// An offset past 4 GiB (the sink claims to start there) needs the Zip64 extra in the central
// header and the Zip64 end records; the bytes are checked by hand since no real file exists.
TEST(ZipWriter, OffsetsPast4GiBAreWrittenAsZip64) {
  const std::uint64_t start = 5ull << 30;
  StringSink sink(start);
  ZipWriter zip(sink);
  zip.add(prepare_entry("far", bytes("payload")));
  zip.finish();
  EXPECT_TRUE(zip.zip64());
  auto le = [&](std::size_t at, int n) {
    std::uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(sink.s[at + i]);
    return v;
  };
  std::size_t cd = sink.s.find("PK\x01\x02");
  ASSERT_NE(cd, std::string::npos);
  EXPECT_EQ(le(cd + 42, 4), 0xFFFFFFFFu);  // local header offset moved to the extra field
  EXPECT_EQ(le(cd + 30, 2), 12u);          // extra: header (4) + offset (8)
  EXPECT_EQ(le(cd + 46 + 3, 2), 1u);       // Zip64 extra id
  EXPECT_EQ(le(cd + 46 + 3 + 4, 8), start);
  std::size_t z64 = sink.s.find("PK\x06\x06");
  ASSERT_NE(z64, std::string::npos);
  EXPECT_EQ(le(z64 + 48, 8), start + cd);  // central directory offset
  std::size_t loc = sink.s.find("PK\x06\x07");
  ASSERT_NE(loc, std::string::npos);
  EXPECT_EQ(le(loc + 8, 8), start + z64);
}

TEST(ZipWriter, ImagesAreStoredByTheirMagicBytes) {
  EXPECT_TRUE(is_precompressed_image(bytes("\xff\xd8\xff\xe0 jfif")));
  EXPECT_TRUE(is_precompressed_image(bytes("\x89PNG\r\n\x1a\n....")));
  EXPECT_TRUE(is_precompressed_image(bytes("RIFF\x10\0\0\0WEBPVP8 "s)));
  EXPECT_TRUE(is_precompressed_image(bytes("GIF89a....")));
  EXPECT_FALSE(is_precompressed_image(bytes("RIFF\x10\0\0\0WAVEfmt "s)));
  EXPECT_FALSE(is_precompressed_image(bytes("BM6\0\0\0"s)));  // BMP: deflate helps
  auto png = prepare_entry("x.png", bytes("\x89PNG\r\n\x1a\n" + std::string(1000, '\0')));
  EXPECT_EQ(png.method, 0);
  auto bmp = prepare_entry("x.bmp", bytes("BM" + std::string(1000, '\0')));
  EXPECT_EQ(bmp.method, 8);
  EXPECT_LT(bmp.data.size(), 100u);
  EXPECT_EQ(bmp.crc32, crc32(0, ("BM" + std::string(1000, '\0')).data(), 1002));
}

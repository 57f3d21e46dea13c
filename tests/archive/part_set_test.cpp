#include <gtest/gtest.h>

#include "archive/manifest.h"
#include "archive/part_set.h"
#include "frugal/archive/archive.h"
#include "frugal/util/error.h"
#include "frugal/util/hash.h"
#include "zip_read_fixture.h"

namespace frugal {
namespace {

namespace fs = std::filesystem;
using testing::build_zip;
using testing::bytes;

std::string test_zip() {
  std::vector<testing::TestEntry> e;
  for (int i = 0; i < 30; ++i)
    e.push_back({"f" + std::to_string(i), std::string(700 + i, static_cast<char>('a' + i % 26)), i % 3 == 0});
  return build_zip(e);
}

// Cuts `data` into parts of `size` bytes named by `name(i)`.
std::vector<fs::path> cut(const fs::path& dir, const std::string& data, std::size_t size,
                          const std::function<std::string(std::size_t)>& name) {
  std::vector<fs::path> out;
  for (std::size_t i = 0, off = 0; off < data.size(); ++i, off += size) {
    out.push_back(dir / name(i));
    testing::write(out.back(), data.substr(off, size));
  }
  return out;
}

void expect_reads_like(const Archive& ar, const std::string& zip) {
  auto ref = Archive::open(memory_byte_source(zip), "ref");
  ASSERT_EQ(ar.entries().size(), ref->entries().size());
  for (std::size_t i = 0; i < ar.entries().size(); ++i) {
    EXPECT_EQ(ar.entries()[i].name, ref->entries()[i].name);
    EXPECT_EQ(ar.read(i), ref->read(i));
  }
}

TEST(PartSet, PlainSplitLetterSuffixesAreReadInPlace) {
  const auto dir = testing::temp_dir("split-aa");
  const std::string zip = test_zip();
  auto parts = cut(dir, zip, 1000, [](std::size_t i) {
    return std::string("data.zip_") + static_cast<char>('a' + i / 26) + static_cast<char>('a' + i % 26);
  });
  ASSERT_GT(parts.size(), 3u);
  auto set = find_part_set(parts[0]);
  EXPECT_EQ(set.files, parts);
  expect_reads_like(*Archive::open(parts[0]), zip);
  fs::remove_all(dir);
}

TEST(PartSet, PlainSplitNumericSuffixesAreReadInPlace) {
  const auto dir = testing::temp_dir("split-000");
  const std::string zip = test_zip();
  auto parts = cut(dir, zip, 777, [](std::size_t i) {
    char b[16];
    std::snprintf(b, sizeof b, "d.zip.%03zu", i);
    return std::string(b);
  });
  expect_reads_like(*Archive::open(parts[0]), zip);
  fs::remove_all(dir);
}

TEST(PartSet, FrugalPartsWithoutManifestAreReadInPlace) {
  const auto dir = testing::temp_dir("part0000");
  const std::string zip = test_zip();
  auto parts = cut(dir, zip, 4096, [](std::size_t i) {
    char b[32];
    std::snprintf(b, sizeof b, "d.zip.part%04zu", i);
    return std::string(b);
  });
  EXPECT_EQ(find_part_set(parts[0]).kind, PartSet::Kind::numbered);
  expect_reads_like(*Archive::open(parts[0]), zip);
  EXPECT_THROW(find_part_set(parts[1]), Error);  // not the first part
  fs::remove_all(dir);
}

TEST(PartSet, ManifestSetIsReadAndResizedPartIsRefused) {
  const auto dir = testing::temp_dir("manifest");
  const std::string zip = test_zip();
  auto parts = cut(dir, zip, 5000, [](std::size_t i) {
    char b[32];
    std::snprintf(b, sizeof b, "d.zip.part%04zu", i);
    return std::string(b);
  });
  SplitManifest m;
  m.name = "d.zip";
  m.size = zip.size();
  m.sha256 = sha256_hex(zip);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string p = zip.substr(i * 5000, 5000);
    m.parts.push_back({parts[i].filename().string(), p.size(), sha256_hex(p)});
  }
  m.save(dir / "d.zip.manifest.json");
  expect_reads_like(*Archive::open(dir / "d.zip.manifest.json"), zip);
  EXPECT_EQ(find_part_set(parts[0]).kind, PartSet::Kind::manifest);  // first part finds its manifest
  testing::write(parts[1], "short");
  EXPECT_THROW(Archive::open(dir / "d.zip.manifest.json"), Error);
  fs::remove_all(dir);
}

TEST(PartSet, MissingMiddlePartIsNamed) {
  const auto dir = testing::temp_dir("gap");
  const std::string zip = test_zip();
  auto letters = cut(dir, zip, 3000, [](std::size_t i) { return std::string("g.zip_a") + static_cast<char>('a' + i); });
  auto digits = cut(dir, zip, 3000, [](std::size_t i) { return "g.zip.part000" + std::to_string(i); });
  fs::remove(letters[1]);
  fs::remove(digits[1]);
  for (const auto& first : {letters[0], digits[0]}) {
    try {
      Archive::open(first);
      FAIL() << first;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
    }
  }
  fs::remove_all(dir);
}

TEST(PartSet, ZipSpannedSetNeedsItsLastPart) {
  const auto dir = testing::temp_dir("zs");
  testing::write(dir / "x.z01", "PK\x07\x08");
  try {
    find_part_set(dir / "x.z01");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x.zip"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(PartSet, MissingFileIsReportedByName) {
  try {
    Archive::open("/nonexistent/nothing.zip");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nothing.zip"), std::string::npos);
  }
}

}  // namespace
}  // namespace frugal

#include <gtest/gtest.h>

#include "archive/manifest.h"
#include "frugal/archive/archive.h"
#include "frugal/util/hash.h"
#include "zip_read_fixture.h"

namespace frugal {
namespace {

namespace fs = std::filesystem;
using testing::build_zip;
using testing::TestEntry;

TEST(Verify, ListsEveryBadEntryNotJustTheFirst) {
  const auto dir = testing::temp_dir("verify");
  std::vector<TestEntry> entries;
  for (int i = 0; i < 300; ++i) entries.push_back({"e" + std::to_string(i), std::string(100 + i, 'q'), i % 2 == 1});
  entries[17].crc = 1;
  entries[250].crc = 2;
  entries.push_back({"../up", "x"});
  testing::write(dir / "v.zip", build_zip(entries));
  const VerifyReport r = verify_archive(dir / "v.zip", {}, 2);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.entries_checked, 301u);
  ASSERT_EQ(r.bad.size(), 3u);
  EXPECT_EQ(r.bad[0].name, "e17");
  EXPECT_NE(r.bad[0].problem.find("CRC-32"), std::string::npos) << r.bad[0].problem;
  EXPECT_EQ(r.bad[1].name, "e250");
  EXPECT_EQ(r.bad[2].name, "../up");
  fs::remove_all(dir);
}

TEST(Verify, GoodArchiveIsOk) {
  const auto dir = testing::temp_dir("verify-ok");
  testing::write(dir / "g.zip", build_zip({{"a", "aa"}, {"b", std::string(5000, 'b'), true}}));
  const VerifyReport r = verify_archive(dir / "g.zip");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.bytes_checked, 5002u);
  fs::remove_all(dir);
}

TEST(Verify, StructuralDamageIsOneBadItemNamedAfterTheArchive) {
  const auto dir = testing::temp_dir("verify-struct");
  testing::write(dir / "t.zip", std::string(100, 'x'));
  const VerifyReport r = verify_archive(dir / "t.zip");
  ASSERT_EQ(r.bad.size(), 1u);
  EXPECT_NE(r.bad[0].problem.find("end-of-central-directory"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Verify, ManifestReportsBadPartsAndThenEntries) {
  const auto dir = testing::temp_dir("verify-manifest");
  const std::string zip = build_zip({{"a", std::string(3000, 'a')}, {"b", std::string(3000, 'b')}});
  SplitManifest m;
  m.name = "s.zip";
  m.size = zip.size();
  m.sha256 = sha256_hex(zip);
  for (std::size_t i = 0, off = 0; off < zip.size(); ++i, off += 2000) {
    const std::string p = zip.substr(off, 2000);
    m.parts.push_back({"s.zip.part000" + std::to_string(i), p.size(), sha256_hex(p)});
    testing::write(dir / m.parts.back().file, p);
  }
  m.save(dir / "s.zip.manifest.json");
  EXPECT_TRUE(verify_archive(dir / "s.zip.manifest.json").ok());
  std::string p0 = zip.substr(0, 2000);
  p0[100] ^= 1;  // inside entry "a"
  testing::write(dir / "s.zip.part0000", p0);
  const VerifyReport r = verify_archive(dir / "s.zip.manifest.json");
  ASSERT_EQ(r.bad.size(), 2u);
  EXPECT_EQ(r.bad[0].name, "s.zip.part0000");
  EXPECT_NE(r.bad[0].problem.find("SHA-256"), std::string::npos);
  EXPECT_EQ(r.bad[1].name, "a");
  fs::remove(dir / "s.zip.part0001");
  const VerifyReport missing = verify_archive(dir / "s.zip.manifest.json");
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(missing.bad.back().problem, "missing");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace frugal

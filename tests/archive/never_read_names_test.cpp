// Members that are listed but never read (issue 47): absolute and ".." names in a WebDataset shard
// are no samples; a PAX path holding a NUL is shown escaped, whole, in names and messages (it cut
// them short); "a.tar::b.tar" is a shard list even when a.tar exists.
#include <gtest/gtest.h>

#include <algorithm>

#include "frugal/archive/archive.h"
#include "frugal/archive/data_source.h"
#include "frugal/archive/name_encoding.h"
#include "frugal/archive/webdataset.h"
#include "frugal/util/error.h"
#include "tar_fixture.h"
#include "zip_read_fixture.h"

namespace frugal {
namespace {

namespace fs = std::filesystem;

TEST(UnsafeNames, AbsoluteDriveAndDotDotNamesAreUnsafeOthersAreNot) {
  for (const char* name :
       {"/tmp/x.jpg", "\\x.jpg", "C:\\x.jpg", "c:x.jpg", "../x.jpg", "a/../../x.jpg", "a\\..\\x.jpg", ".."})
    EXPECT_TRUE(is_unsafe_name(name)) << name;
  EXPECT_TRUE(is_unsafe_name(std::string("a\0b.jpg", 7)));
  for (const char* name : {"x.jpg", "cat/x.jpg", "..x/y.jpg", "a..b.jpg", "cat\\x.jpg", "./x.jpg", "ab:c.jpg"})
    EXPECT_FALSE(is_unsafe_name(name)) << name;
}

TEST(UnsafeNames, WebDatasetMembersWithAbsoluteOrDotDotNamesAreNoSamples) {
  const fs::path d = testing::temp_dir("wds-unsafe");
  testing::write(d / "s-0.tar", testing::tar_file("/tmp/k.jpg", "img") + testing::tar_file("/tmp/k.cls", "1") +
                                    testing::tar_file("../up.jpg", "img") + testing::tar_file("../up.cls", "0") +
                                    testing::tar_file("ok.jpg", "img") + testing::tar_file("ok.cls", "0") +
                                    testing::tar_end());
  auto a = Archive::open(d / "s-{0..0}.tar");
  const WebDatasetSamples g = group_webdataset(*a);
  ASSERT_EQ(g.samples.size(), 1u);
  EXPECT_EQ(g.samples[0].key, "ok");
  EXPECT_EQ(g.skipped.at(kUnsafeNameSkip), 4u);
  EXPECT_EQ(g.examples.at(kUnsafeNameSkip), (d / "s-0.tar").string() + ":/tmp/k.jpg");
  fs::remove_all(d);
}

TEST(UnsafeNames, APaxPathWithANulIsShownEscapedAndWholeAndRefused) {
  const fs::path d = testing::temp_dir("pax-nul");
  const std::string path("cls/a\0b.png", 11);
  testing::write(d / "t.tar", testing::tar_member({"PaxHeaders/a", 'x'}, testing::pax_record("path", path)) +
                                  testing::tar_file("placeholder", "data") + testing::tar_file("cls/ok.png", "ok") +
                                  testing::tar_end());
  ArchiveOptions o;
  o.index_cache_dir = fs::path();
  auto a = Archive::open(d / "t.tar", o);
  const ZipEntry& e = a->entries().at(0);
  EXPECT_EQ(e.raw_name, path);  // the bytes as stored
  EXPECT_EQ(e.name, "cls/a\\x00b.png");
  EXPECT_FALSE(e.name_is_utf8);
  EXPECT_EQ(entry_problem(e), "NUL byte in name");
  ExtractOptions x;
  x.dir = d / "out";
  try {
    extract(*a, x);
    ADD_FAILURE() << "extracted a name with a NUL";
  } catch (const Error& err) {
    // what() is a C string: a NUL in it ended the message at "cls/a".
    EXPECT_NE(std::string(err.what()).find("cls/a\\x00b.png"), std::string::npos) << err.what();
  }
  EXPECT_FALSE(fs::exists(d / "out" / "cls"));
  fs::remove_all(d);
}

TEST(ShardLists, TwoShardsJoinedByDoubleColonOpenWhenTheFirstExists) {
  const fs::path d = testing::temp_dir("shard-list");
  testing::write(d / "a.tar", testing::tar_file("x.jpg", "a") + testing::tar_file("x.cls", "0") + testing::tar_end());
  testing::write(d / "b.tar", testing::tar_file("y.jpg", "b") + testing::tar_file("y.cls", "1") + testing::tar_end());
  const std::string list = (d / "a.tar").string() + "::" + (d / "b.tar").string();
  EXPECT_EQ(parse_data_spec(list).base, list);
  EXPECT_TRUE(parse_data_spec(list).rest.empty());
  auto a = Archive::open(list);
  EXPECT_EQ(std::string(a->format()), "webdataset");
  std::vector<std::string> names;
  for (const auto& e : a->entries()) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"a.tar/x.jpg", "a.tar/x.cls", "b.tar/y.jpg", "b.tar/y.cls"}));
  // DATA:REST is unchanged: one colon still names an entry.
  EXPECT_EQ(parse_data_spec((d / "a.tar").string() + ":x.jpg").rest, "x.jpg");
  fs::remove_all(d);
}

}  // namespace
}  // namespace frugal

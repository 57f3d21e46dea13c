#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "frugal/archive.h"
#include "frugal/error.h"
#include "zip_read_fixture.h"

namespace frugal {
namespace {

namespace fs = std::filesystem;
using testing::build_zip;
using testing::TestEntry;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::size_t count_files(const fs::path& dir) {
  std::size_t n = 0;
  for (auto& e : fs::recursive_directory_iterator(dir)) n += e.is_regular_file();
  return n;
}

std::unique_ptr<Archive> open_memory(const std::string& zip) {
  return Archive::open(memory_byte_source(zip, "x.zip"), "x.zip");
}

TEST(Extract, WritesSelectedEntriesInsideTheFolder) {
  const auto dir = testing::temp_dir("extract");
  auto ar = open_memory(build_zip({{"cats/", ""}, {"cats/1.jpg", "c1"}, {"cats/2.jpg", "c2", true},
                                   {"dogs/1.jpg", "d1"}, {"labels.csv", "x,y"}}));
  ExtractOptions o;
  o.dir = dir / "out";
  o.patterns = {"cats/*", "*.csv"};
  auto r = extract(*ar, o);
  EXPECT_EQ(r.files, 3u);
  EXPECT_EQ(r.dirs, 1u);
  EXPECT_EQ(slurp(dir / "out/cats/2.jpg"), "c2");
  EXPECT_EQ(slurp(dir / "out/labels.csv"), "x,y");
  EXPECT_FALSE(fs::exists(dir / "out/dogs"));
  fs::remove_all(dir);
}

TEST(Extract, LimitCountsFiles) {
  const auto dir = testing::temp_dir("limit");
  auto ar = open_memory(build_zip({{"d/", ""}, {"d/a", "1"}, {"d/b", "2"}, {"d/c", "3"}}));
  ExtractOptions o;
  o.dir = dir;
  o.limit = 2;
  EXPECT_EQ(extract(*ar, o).files, 2u);
  EXPECT_EQ(count_files(dir), 2u);
  fs::remove_all(dir);
}

TEST(Extract, UnsafeEntryRefusesEverythingAndWritesNothing) {
  const auto dir = testing::temp_dir("unsafe");
  auto ar = open_memory(build_zip({{"a", "fine"}, {"../escape", "bad"}}));
  ExtractOptions o;
  o.dir = dir / "out";
  try {
    extract(*ar, o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid);
    EXPECT_NE(std::string(e.what()).find("../escape"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "out"));
  EXPECT_FALSE(fs::exists(dir / "escape"));
  o.patterns = {"a"};  // the safe entry alone may be taken
  EXPECT_EQ(extract(*ar, o).files, 1u);
  fs::remove_all(dir);
}

TEST(Extract, MaxBytesAndDiskBudgetAreCheckedBeforeWriting) {
  const auto dir = testing::temp_dir("budget");
  TestEntry bomb{"bomb", std::string(10, 'x'), true};
  bomb.size = 2000000000u;  // declared 2 GB
  auto ar = open_memory(build_zip({{"small", "s"}, bomb}));
  ExtractOptions o;
  o.dir = dir / "out";
  o.max_bytes = 1000000;
  try {
    extract(*ar, o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::budget) << e.what();
  }
  o.max_bytes.reset();
  o.disk_budget = 1000000;
  EXPECT_THROW(extract(*ar, o), Error);
  EXPECT_FALSE(fs::exists(dir / "out"));
  fs::remove_all(dir);
}

TEST(Extract, SymlinkedFolderInTheTargetIsNotFollowed) {
  const auto dir = testing::temp_dir("symlink");
  fs::create_directories(dir / "out");
  fs::create_directories(dir / "elsewhere");
  fs::create_directory_symlink(dir / "elsewhere", dir / "out/sub");
  auto ar = open_memory(build_zip({{"sub/file", "x"}}));
  ExtractOptions o;
  o.dir = dir / "out";
  EXPECT_THROW(extract(*ar, o), Error);
  EXPECT_FALSE(fs::exists(dir / "elsewhere/file"));
  auto deep = open_memory(build_zip({{"sub/new/file", "x"}}));  // no folder created through it either
  EXPECT_THROW(extract(*deep, o), Error);
  EXPECT_FALSE(fs::exists(dir / "elsewhere/new"));
  fs::remove_all(dir);
}

TEST(Extract, CorruptEntryIsNotWrittenAndEarlierFilesAreKept) {
  const auto dir = testing::temp_dir("corrupt");
  TestEntry a{"a", "hello"};
  a.crc = 1;
  auto ar = open_memory(build_zip({{"first", "good"}, a, {"last", "never reached"}}));
  ExtractOptions o;
  o.dir = dir;
  EXPECT_THROW(extract(*ar, o), Error);
  EXPECT_EQ(count_files(dir), 1u);  // no temporary left either
  EXPECT_EQ(slurp(dir / "first"), "good");
  fs::remove_all(dir);
}

TEST(Extract, GlobMatchesLikeFnmatch) {
  EXPECT_TRUE(glob_match("*.jpg", "a/b/c.jpg"));
  EXPECT_TRUE(glob_match("cats/?.jpg", "cats/1.jpg"));
  EXPECT_TRUE(glob_match("[cd]*", "dogs/1"));
  EXPECT_FALSE(glob_match("*.png", "a.jpg"));
}

}  // namespace
}  // namespace frugal

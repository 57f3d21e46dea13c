#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

#include "archive/no_clobber.h"
#include "frugal/archive/archive.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
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
  auto ar = open_memory(build_zip(
      {{"cats/", ""}, {"cats/1.jpg", "c1"}, {"cats/2.jpg", "c2", true}, {"dogs/1.jpg", "d1"}, {"labels.csv", "x,y"}}));
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

ErrorKind extract_error(const Archive& ar, const ExtractOptions& o, std::string* what = nullptr) {
  try {
    extract(ar, o);
  } catch (const Error& e) {
    if (what) *what = e.what();
    return e.kind();
  }
  ADD_FAILURE() << "extract did not fail";
  return ErrorKind::io;
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (auto& e : fs::recursive_directory_iterator(dir)) out.push_back(e.path().lexically_relative(dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ExtractExisting, AnotherFileWhereAnEntryGoesRefusesTheWholeExtraction) {
  const auto dir = testing::temp_dir("conflict");
  testing::write(dir / "notes.txt", "the user's notes");
  auto ar = open_memory(build_zip({{"a.txt", "a"}, {"notes.txt", "from the archive"}, {"z/b.txt", "b"}}));
  ExtractOptions o;
  o.dir = dir;
  std::string what;
  EXPECT_EQ(extract_error(*ar, o, &what), ErrorKind::usage);
  EXPECT_EQ(exit_code(ErrorKind::usage), 2);
  EXPECT_NE(what.find("'notes.txt' (a different file)"), std::string::npos) << what;
  EXPECT_NE(what.find("--skip-existing"), std::string::npos) << what;
  EXPECT_EQ(slurp(dir / "notes.txt"), "the user's notes");
  EXPECT_EQ(names_in(dir), std::vector<std::string>{"notes.txt"});  // nothing else written either
  fs::remove_all(dir);
}

TEST(ExtractExisting, SkipExistingKeepsTheirsAndOverwriteReplacesThem) {
  const auto dir = testing::temp_dir("settle");
  testing::write(dir / "notes.txt", "the user's notes");
  auto ar = open_memory(build_zip({{"a.txt", "a"}, {"notes.txt", "from the archive"}}));
  ExtractOptions o;
  o.dir = dir;
  o.existing = ExistingFiles::skip;
  auto r = extract(*ar, o);
  EXPECT_EQ(r.files, 1u);
  EXPECT_EQ(r.kept, 1u);
  EXPECT_EQ(slurp(dir / "notes.txt"), "the user's notes");
  EXPECT_EQ(slurp(dir / "a.txt"), "a");
  o.existing = ExistingFiles::overwrite;
  r = extract(*ar, o);
  EXPECT_EQ(r.replaced, 1u);
  EXPECT_EQ(r.already_there, 1u);
  EXPECT_EQ(slurp(dir / "notes.txt"), "from the archive");
  EXPECT_EQ(names_in(dir), (std::vector<std::string>{"a.txt", "notes.txt"}));  // no temporary left
  fs::remove_all(dir);
}

TEST(ExtractExisting, ARerunCountsFilesOfTheEntrysSizeAndCrcAsAlreadyThere) {
  const auto dir = testing::temp_dir("rerun");
  auto ar = open_memory(build_zip({{"d/", ""}, {"d/a", "one"}, {"d/b", "two", true}}));
  ExtractOptions o;
  o.dir = dir;
  EXPECT_EQ(extract(*ar, o).files, 2u);
  testing::write(dir / "d/b", "twx");  // the same size, another CRC-32: not the entry
  auto r = extract_error(*ar, o);
  EXPECT_EQ(r, ErrorKind::usage);
  testing::write(dir / "d/b", "two");
  auto again = extract(*ar, o);
  EXPECT_EQ(again.files, 0u);
  EXPECT_EQ(again.already_there, 2u);
  fs::remove_all(dir);
}

TEST(ExtractExisting, TheArchiveBeingReadIsNeverReplacedEvenWithOverwrite) {
  const auto dir = testing::temp_dir("itself");
  const std::string zip = build_zip({{"data.zip", "not the archive"}, {"other", "x"}});
  testing::write(dir / "data.zip", zip);
  auto ar = Archive::open(dir / "data.zip");
  ExtractOptions o;
  o.dir = dir;
  o.existing = ExistingFiles::overwrite;
  std::string what;
  EXPECT_EQ(extract_error(*ar, o, &what), ErrorKind::usage);
  EXPECT_NE(what.find("the archive being read"), std::string::npos) << what;
  EXPECT_EQ(slurp(dir / "data.zip"), zip);
  EXPECT_FALSE(fs::exists(dir / "other"));
  o.existing = ExistingFiles::skip;
  EXPECT_EQ(extract(*ar, o).files, 1u);
  EXPECT_EQ(slurp(dir / "data.zip"), zip);
  fs::remove_all(dir);
}

TEST(ExtractExisting, ALinkWhereAFileGoesIsNeverWrittenThrough) {
  const auto dir = testing::temp_dir("link_target");
  fs::create_directories(dir / "out");
  testing::write(dir / "outside", "keep");
  fs::create_symlink(dir / "outside", dir / "out/f");
  auto ar = open_memory(build_zip({{"f", "from the archive"}}));
  ExtractOptions o;
  o.dir = dir / "out";
  EXPECT_EQ(extract_error(*ar, o), ErrorKind::usage);
  o.existing = ExistingFiles::overwrite;  // the link itself is replaced, never what it points to
  extract(*ar, o);
  EXPECT_EQ(slurp(dir / "outside"), "keep");
  EXPECT_FALSE(fs::is_symlink(dir / "out/f"));
  EXPECT_EQ(slurp(dir / "out/f"), "from the archive");
  fs::remove_all(dir);
}

TEST(ExtractExisting, AFileWhereAFolderGoesIsNamedBeforeAnythingIsWritten) {
  const auto dir = testing::temp_dir("file_for_dir");
  testing::write(dir / "cats", "a file");
  auto ar = open_memory(build_zip({{"a", "a"}, {"cats/1.png", "c"}}));
  ExtractOptions o;
  o.dir = dir;
  o.existing = ExistingFiles::overwrite;
  std::string what;
  EXPECT_EQ(extract_error(*ar, o, &what), ErrorKind::usage);
  EXPECT_NE(what.find("where a folder goes"), std::string::npos) << what;
  EXPECT_FALSE(fs::exists(dir / "a"));
  fs::remove_all(dir);
}

TEST(ExtractLock, ASecondExtractIntoTheSameFolderFailsAtOnce) {
  const auto dir = testing::temp_dir("locked");
  auto held = FileLock::try_lock(dir);  // as a running extract holds it
  ASSERT_TRUE(held);
  auto ar = open_memory(build_zip({{"a", "a"}}));
  ExtractOptions o;
  o.dir = dir;
  std::string what;
  EXPECT_EQ(extract_error(*ar, o, &what), ErrorKind::io);
  EXPECT_NE(what.find("in use by another frugal process"), std::string::npos) << what;
  EXPECT_FALSE(fs::exists(dir / "a"));
  held.reset();
  EXPECT_EQ(extract(*ar, o).files, 1u);
  fs::remove_all(dir);
}

TEST(ExtractLeftovers, AbandonedTemporariesInTheFoldersWrittenAreRemovedLiveOnesKept) {
  const auto dir = testing::temp_dir("leftovers");
  fs::create_directories(dir / "cats");
  testing::write(dir / "cats/1.png.frugal-tmp-0123456789ab", "left by a killed extract");
  UniqueFd live(create_owned_temp(dir / "cats/2.png.frugal-tmp-00000000beef"));  // a writer still running
  ASSERT_TRUE(live);
  fs::create_directories(dir / "elsewhere");
  testing::write(dir / "elsewhere/x.frugal-tmp-0123456789ab", "not in a folder this extract writes");
  auto ar = open_memory(build_zip({{"cats/1.png", "c1"}}));
  ExtractOptions o;
  o.dir = dir;
  auto r = extract(*ar, o);
  EXPECT_EQ(r.temporaries_removed, 1u);
  EXPECT_EQ(names_in(dir / "cats"), (std::vector<std::string>{"1.png", "2.png.frugal-tmp-00000000beef"}));
  EXPECT_TRUE(fs::exists(dir / "elsewhere/x.frugal-tmp-0123456789ab"));
  fs::remove_all(dir);
}

TEST(ExtractNames, NamesTheFileSystemWouldRefuseAreRefusedBeforeAnythingIsCreated) {
  const auto dir = testing::temp_dir("too_long");
  std::vector<TestEntry> entries;
  for (int i = 0; i < 30; ++i) entries.push_back({"d" + std::to_string(i) + "/ok", "x"});
  entries.push_back({"deep/" + std::string(300, 'n'), "x"});
  std::string deep;
  for (int i = 0; i < 30; ++i) deep += std::string(200, 'p') + "/";  // 30 x 201 bytes: past PATH_MAX
  entries.push_back({deep + "f", "x"});
  auto ar = open_memory(build_zip(entries));
  ExtractOptions o;
  o.dir = dir / "out";
  std::string what;
  EXPECT_EQ(extract_error(*ar, o, &what), ErrorKind::invalid);
  EXPECT_NE(what.find("2 too long"), std::string::npos) << what;
  EXPECT_NE(what.find("a name of 300 bytes"), std::string::npos) << what;
  EXPECT_FALSE(fs::exists(dir / "out"));
  fs::remove_all(dir);
}

TEST(ExtractNames, NamesNearNameMaxExtract) {
  const auto dir = testing::temp_dir("long_names");
  const std::string name(250, 'l');
  const std::string other = std::string(249, 'l') + "m";
  auto ar = open_memory(build_zip({{name + "/" + name, "inner"}, {other, "outer"}}));
  ExtractOptions o;
  o.dir = dir;
  extract(*ar, o);
  EXPECT_EQ(slurp(dir / name / name), "inner");
  EXPECT_EQ(slurp(dir / other), "outer");
  fs::remove_all(dir);
}

TEST(NoClobber, PublishingNeverReplacesAFileThatIsThere) {
  const auto dir = testing::temp_dir("no_clobber");
  testing::write(dir / "from", "new");
  testing::write(dir / "to", "theirs");
  EXPECT_FALSE(rename_no_replace(dir / "from", dir / "to"));
  EXPECT_EQ(slurp(dir / "to"), "theirs");
  EXPECT_TRUE(rename_no_replace(dir / "from", dir / "free"));
  EXPECT_EQ(slurp(dir / "free"), "new");
  UniqueFd fd = open_unnamed(dir);
  ASSERT_TRUE(fd) << "no O_TMPFILE on this file system";
  write_full(fd.get(), "unnamed", 7, "unnamed");
  EXPECT_EQ(names_in(dir), (std::vector<std::string>{"free", "to"}));  // invisible until linked
  EXPECT_FALSE(link_unnamed(fd.get(), dir / "to"));
  EXPECT_EQ(slurp(dir / "to"), "theirs");
  EXPECT_TRUE(link_unnamed(fd.get(), dir / "linked"));
  EXPECT_EQ(slurp(dir / "linked"), "unnamed");
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

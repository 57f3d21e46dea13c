// A folder read as an archive: names relative and sorted, bytes as on disk, nothing followed out of
// it, nothing but regular files opened (a FIFO must not block), a file that changes is an error.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include "frugal/archive/archive.h"
#include "frugal/util/error.h"
#include "tar_fixture.h"
#include "zip_read_fixture.h"

namespace frugal {
namespace {

namespace fs = std::filesystem;

class FolderRead : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = testing::temp_dir("folder-read");
    fs::create_directories(root_ / "data" / "cats");
    fs::create_directories(root_ / "data" / "dogs" / "deep");
    fs::create_directories(root_ / "data" / ".hidden");
    testing::write(root_ / "data" / "cats" / "a.jpg", "cat a");
    testing::write(root_ / "data" / "cats" / "b.jpg", "");
    testing::write(root_ / "data" / "dogs" / "deep" / "c.png", std::string(5 << 20, 'c'));  // read_to in pieces
    testing::write(root_ / "data" / ".hidden" / "x", "hidden");
    testing::write(root_ / "outside.jpg", "outside");
  }
  void TearDown() override { fs::remove_all(root_); }

  std::vector<std::string> names(const Archive& a) {
    std::vector<std::string> out;
    for (const auto& e : a.entries()) out.push_back(e.name);
    return out;
  }

  fs::path root_;
};

TEST_F(FolderRead, FilesAreEntriesNamedRelativeToTheFolderInSortedOrder) {
  auto a = Archive::open(root_ / "data");
  EXPECT_STREQ(a->format(), "folder");
  EXPECT_EQ(names(*a), (std::vector<std::string>{".hidden/", ".hidden/x", "cats/", "cats/a.jpg", "cats/b.jpg", "dogs/",
                                                 "dogs/deep/", "dogs/deep/c.png"}));
  const ZipEntry& e = a->entries()[*a->find("cats/a.jpg")];
  EXPECT_EQ(e.size, 5u);
  EXPECT_EQ(e.method, 0);
  EXPECT_FALSE(e.has_crc32);
  EXPECT_EQ(a->read(*a->find("cats/a.jpg")), testing::bytes("cat a"));
  EXPECT_TRUE(a->read(*a->find("cats/b.jpg")).empty());
  EXPECT_FALSE(a->stored_view(*a->find("cats/a.jpg")));
  std::string pieces;
  std::size_t calls = 0;
  a->read_to(*a->find("dogs/deep/c.png"), [&](std::span<const std::uint8_t> p) {
    pieces.append(reinterpret_cast<const char*>(p.data()), p.size());
    ++calls;
  });
  EXPECT_EQ(pieces, std::string(5 << 20, 'c'));
  EXPECT_GE(calls, 2u);
}

TEST_F(FolderRead, LinksAreFollowedOnlyToFilesInsideTheFolder) {
  fs::create_symlink("../cats/a.jpg", root_ / "data" / "dogs" / "inside.jpg");
  fs::create_symlink(root_ / "outside.jpg", root_ / "data" / "dogs" / "out.jpg");
  fs::create_symlink("../../outside.jpg", root_ / "data" / "dogs" / "out2.jpg");
  fs::create_symlink("nowhere", root_ / "data" / "dogs" / "dangling.jpg");
  fs::create_directory_symlink(root_, root_ / "data" / "dogs" / "loop");
  auto a = Archive::open(root_ / "data");
  const auto inside = *a->find("dogs/inside.jpg");
  EXPECT_FALSE(a->entries()[inside].is_symlink);
  EXPECT_EQ(a->read(inside), testing::bytes("cat a"));
  for (const char* name : {"dogs/out.jpg", "dogs/out2.jpg", "dogs/dangling.jpg", "dogs/loop"}) {
    SCOPED_TRACE(name);
    const auto i = a->find(name);
    ASSERT_TRUE(i);
    EXPECT_TRUE(a->entries()[*i].is_symlink);
    EXPECT_NE(entry_problem(*a, *i), "");
    EXPECT_THROW(a->read(*i), Error);
  }
  // The linked folder was not walked: nothing from the parent appears twice.
  for (const auto& n : names(*a)) EXPECT_EQ(n.find("loop/"), std::string::npos) << n;
}

// Issue 42: a class folder that is a link into the data is walked under the link's name; links to
// folders out of the data, to a folder the walk came through (a cycle), to files outside and to
// nothing are listed with where they lead and never followed.
TEST_F(FolderRead, ALinkToAFolderInsideIsWalkedUnderItsName) {
  fs::create_directory_symlink("cats", root_ / "data" / "kittens");
  fs::create_directory_symlink("../dogs", root_ / "data" / "cats" / "to_dogs");  // and back: a cycle
  fs::create_directory_symlink("../cats", root_ / "data" / "dogs" / "to_cats");
  fs::create_directory_symlink("..", root_ / "data" / "dogs" / "up");
  fs::create_directory_symlink(root_, root_ / "data" / "out");
  fs::create_symlink(root_ / "outside.jpg", root_ / "data" / "out.jpg");
  fs::create_symlink("nowhere", root_ / "data" / "gone");
  auto a = Archive::open(root_ / "data");
  const auto kitten = a->find("kittens/a.jpg");
  ASSERT_TRUE(kitten);
  EXPECT_FALSE(a->entries()[*kitten].is_symlink);
  EXPECT_EQ(a->read(*kitten), testing::bytes("cat a"));
  ASSERT_TRUE(a->find("kittens/"));
  EXPECT_TRUE(a->entries()[*a->find("kittens/")].is_dir);
  // cats/to_dogs is dogs, whose to_cats leads back to cats, which the walk came through.
  ASSERT_TRUE(a->find("cats/to_dogs/deep/c.png"));
  const std::pair<const char*, LinkTarget> links[] = {{"cats/to_dogs/to_cats", LinkTarget::folder_cycle},
                                                      {"dogs/up", LinkTarget::folder_cycle},
                                                      {"out", LinkTarget::folder_outside},
                                                      {"out.jpg", LinkTarget::file_outside},
                                                      {"gone", LinkTarget::dangling}};
  for (const auto& [name, target] : links) {
    SCOPED_TRACE(name);
    const auto i = a->find(name);
    ASSERT_TRUE(i);
    EXPECT_TRUE(a->entries()[*i].is_symlink);
    EXPECT_EQ(a->entries()[*i].link_target, target);
    EXPECT_THROW(a->read(*i), Error);
  }
  for (const auto& n : names(*a)) {
    EXPECT_EQ(n.find("up/"), std::string::npos) << n;
    EXPECT_EQ(n.find("out/"), std::string::npos) << n;
    EXPECT_EQ(n.find("to_cats/"), n.rfind("dogs/to_cats/", 0) == 0 ? 5 : std::string::npos) << n;
  }
}

TEST_F(FolderRead, ALinkPlantedAfterTheListingIsNotFollowed) {
  auto a = Archive::open(root_ / "data");
  const auto i = *a->find("cats/a.jpg");
  fs::remove(root_ / "data" / "cats" / "a.jpg");
  fs::create_symlink(root_ / "outside.jpg", root_ / "data" / "cats" / "a.jpg");
  try {
    a->read(i);
    FAIL() << "read through a link planted after the listing";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::invalid) << err.what();
  }
  // A folder on the way replaced by a link: not followed either.
  auto b = Archive::open(root_ / "data");
  const auto j = *b->find("dogs/deep/c.png");
  fs::rename(root_ / "data" / "dogs", root_ / "dogs-moved");
  fs::create_directory_symlink(root_ / "dogs-moved", root_ / "data" / "dogs");
  EXPECT_THROW(b->read(j), Error);
}

TEST_F(FolderRead, AFifoIsListedAndNeverOpened) {
  ASSERT_EQ(::mkfifo((root_ / "data" / "cats" / "pipe.jpg").c_str(), 0644), 0);
  auto a = Archive::open(root_ / "data");
  const auto i = *a->find("cats/pipe.jpg");
  EXPECT_EQ(a->entries()[i].special, SpecialMember::fifo);
  EXPECT_NE(entry_problem(*a, i).find("FIFO"), std::string::npos);
  // Would block for ever if opened for reading; it is refused at once.
  try {
    a->read(i);
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::unsupported) << err.what();
  }
  // And a FIFO put where a listed file was: opened without blocking, then refused.
  const auto j = *a->find("cats/a.jpg");
  fs::remove(root_ / "data" / "cats" / "a.jpg");
  ASSERT_EQ(::mkfifo((root_ / "data" / "cats" / "a.jpg").c_str(), 0644), 0);
  EXPECT_THROW(a->read(j), Error);
}

TEST_F(FolderRead, AFileThatChangesSizeAfterTheListingIsAnErrorNamingIt) {
  auto a = Archive::open(root_ / "data");
  const auto i = *a->find("cats/a.jpg");
  testing::write(root_ / "data" / "cats" / "a.jpg", "a longer cat");
  try {
    a->read(i);
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::invalid);
    EXPECT_NE(std::string(err.what()).find("cats/a.jpg"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("changed"), std::string::npos) << err.what();
  }
}

TEST_F(FolderRead, NamesThatAreNotUtf8AreDecodedAsInZips) {
  testing::write(root_ / "data" / "cats" / "caf\xe9.jpg", "latin-1");
  auto plain = Archive::open(root_ / "data");
  const auto i = *plain->find("cats/caf\xEF\xBF\xBD.jpg");
  EXPECT_FALSE(plain->entries()[i].name_is_utf8);
  EXPECT_EQ(plain->entries()[i].raw_name, "cats/caf\xe9.jpg");
  EXPECT_EQ(plain->read(i), testing::bytes("latin-1"));
  ArchiveOptions o;
  o.name_encoding = "latin1";
  auto decoded = Archive::open(root_ / "data", o);
  EXPECT_TRUE(decoded->find("cats/caf\xC3\xA9.jpg"));
}

TEST_F(FolderRead, VerifyReadsAFolderAndExtractHasNothingToDo) {
  const VerifyReport r = verify_archive(root_ / "data");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.entries_without_checksum, 8u);
  auto a = Archive::open(root_ / "data");
  ExtractOptions x;
  x.dir = root_ / "copy";
  try {
    extract(*a, x);
    FAIL() << "extracted a folder";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(err.what()).find("read in place"), std::string::npos) << err.what();
  }
  EXPECT_FALSE(fs::exists(root_ / "copy"));
}

}  // namespace
}  // namespace frugal

// Entries that are listed but never read (docs/data.md; issue 47) are no samples: a tar member
// "/tmp/x.png" and a zip entry "/etc/cron.d/x.png" trained as classes "tmp" and "etc"; sparse
// members (GNU 'S', PAX GNU.sparse.*) passed the listing and failed as undecodable when read. Each
// is skipped at open, counted with its reason, as ".." names are.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "archive/tar_fixture.h"
#include "archive/string_sink.h"
#include "archive/zip_writer.h"
#include "dataset/small_data.h"
#include "frugal/archive/name_encoding.h"
#include "frugal/dataset/dataset.h"
#include "frugal/image/image.h"

using namespace frugal;

namespace {

using frugal::testing::StringSink;
using frugal::testing::tiny_png;

std::string make_zip(const std::vector<std::pair<std::string, std::string>>& entries) {
  StringSink sink;
  ZipWriter w(sink);
  for (const auto& [name, data] : entries) w.add(prepare_entry(name, {data.begin(), data.end()}, 1));
  w.finish();
  return sink.s;
}

// Two classes of two images each.
std::string good_members() {
  std::string t;
  for (const char* cls : {"cat", "dog"})
    for (int i = 0; i < 2; ++i)
      t += frugal::testing::tar_file(std::string(cls) + "/" + std::to_string(i) + ".png",
                                     tiny_png(static_cast<std::uint8_t>(cls[0] + i)));
  return t;
}

class NeverRead : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("frugal-never-read-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path write(const std::string& name, const std::string& bytes) {
    const auto p = dir_ / name;
    testing_write(p, bytes);
    return p;
  }
  static void testing_write(const std::filesystem::path& p, const std::string& bytes) {
    std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  std::filesystem::path dir_;
};

TEST_F(NeverRead, AbsoluteAndDotDotNamesInATarAreNoClassesAndAreCounted) {
  const auto tar =
      write("t.tar", good_members() + frugal::testing::tar_file("/tmp/x.png", tiny_png(1)) +
                         frugal::testing::tar_file("/tmp/y.png", tiny_png(2)) +
                         frugal::testing::tar_file("../up/z.png", tiny_png(3)) + frugal::testing::tar_end());
  auto ds = Dataset::open(tar);
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(ds->size(), 4u);
  SkipReport r = ds->skipped();
  EXPECT_EQ(r.counts[kUnsafeNameSkip], 3u) << r.summary();
  EXPECT_EQ(r.total(), 3u) << r.summary();
  EXPECT_EQ(r.examples[kUnsafeNameSkip], "/tmp/x.png");
}

TEST_F(NeverRead, AbsoluteAndDriveLetterNamesInAZipAreNoClasses) {
  std::vector<std::pair<std::string, std::string>> entries;
  for (const char* cls : {"cat", "dog"})
    for (int i = 0; i < 2; ++i) entries.push_back({std::string(cls) + "/" + std::to_string(i) + ".png", tiny_png(9)});
  entries.push_back({"/etc/cron.d/x.png", tiny_png(1)});
  entries.push_back({"C:/evil/y.png", tiny_png(2)});
  auto ds = Dataset::open(write("z.zip", make_zip(entries)));
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(ds->size(), 4u);
  SkipReport r = ds->skipped();
  EXPECT_EQ(r.counts[kUnsafeNameSkip], 2u) << r.summary();
}

TEST_F(NeverRead, SparseMembersAreSkippedAtOpenWithTheirReason) {
  // GNU 'S' (old sparse, an empty map) and a PAX 1.0 sparse file (GNU.sparse.* records).
  const std::string pax = frugal::testing::pax_record("GNU.sparse.major", "1") +
                          frugal::testing::pax_record("GNU.sparse.minor", "0") +
                          frugal::testing::pax_record("GNU.sparse.name", "dog/p.png") +
                          frugal::testing::pax_record("GNU.sparse.realsize", "100");
  const auto tar = write("s.tar", good_members() + frugal::testing::tar_member({"cat/s.png", 'S'}, tiny_png(1)) +
                                      frugal::testing::tar_member({"PaxHeaders/p", 'x'}, pax) +
                                      frugal::testing::tar_member({"GNUSparseFile.0/p.png", '0'}, tiny_png(2)) +
                                      frugal::testing::tar_end());
  auto ds = Dataset::open(tar);
  EXPECT_EQ(ds->size(), 4u);
  SkipReport r = ds->skipped();
  EXPECT_EQ(r.counts["sparse file (never read; extract it with tar)"], 2u) << r.summary();
  EXPECT_EQ(r.total(), 2u) << r.summary();
}

TEST_F(NeverRead, LinksAreSkippedAtOpenToo) {
  const auto tar = write(
      "l.tar", good_members() + frugal::testing::tar_member({"cat/link.png", '2', 0, "cat/0.png"}, "") +
                   frugal::testing::tar_member({"dog/hard.png", '1', 0, "dog/0.png"}, "") + frugal::testing::tar_end());
  auto ds = Dataset::open(tar);
  EXPECT_EQ(ds->size(), 4u);
  SkipReport r = ds->skipped();
  EXPECT_EQ(r.counts["link, device or FIFO (never read)"], 2u) << r.summary();
}

TEST_F(NeverRead, UnsafeMembersOfAWebDatasetShardAreCountedOnce) {
  std::string t;
  for (int i = 0; i < 4; ++i) {
    const std::string key = "k" + std::to_string(i);
    t += frugal::testing::tar_file(key + ".png", tiny_png(static_cast<std::uint8_t>(i * 60))) +
         frugal::testing::tar_file(key + ".cls", std::to_string(i % 2));
  }
  t += frugal::testing::tar_file("/tmp/e.png", tiny_png(1)) + frugal::testing::tar_file("/tmp/e.cls", "1") +
       frugal::testing::tar_file("../u.png", tiny_png(1)) + frugal::testing::tar_file("../u.cls", "0");
  write("w-0.tar", t + frugal::testing::tar_end());
  auto ds = Dataset::open(dir_ / "w-{0..0}.tar");
  EXPECT_EQ(ds->size(), 4u);
  SkipReport r = ds->skipped();
  EXPECT_EQ(r.counts[kUnsafeNameSkip], 4u) << r.summary();
  EXPECT_EQ(r.total(), 4u) << r.summary();
}

}  // namespace

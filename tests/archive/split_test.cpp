#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "archive/manifest.h"
#include "archive/part_writer.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/hash.h"
#include "frugal/archive/split.h"
#include "test_files.h"

namespace fs = std::filesystem;
using namespace frugal;

namespace {
using frugal::testing::fresh_dir;
using frugal::testing::write;

std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

SplitOptions opts(std::uint64_t size, fs::path out = {}) {
  SplitOptions o;
  o.part_size = size;
  o.out_dir = std::move(out);
  o.sync = false;
  return o;
}
}  // namespace

TEST(Split, PartsHoldConsecutiveSlicesWithTheirSums) {
  auto dir = fresh_dir("split_slices");
  std::string data = random_bytes(25000, 1);
  write(dir / "data.bin", data);
  SplitResult r = split_file(dir / "data.bin", opts(10000, dir / "out"));
  ASSERT_EQ(r.parts.size(), 3u);
  EXPECT_EQ(r.manifest, dir / "out" / "data.bin.manifest.json");
  EXPECT_EQ(r.sha256, sha256_hex(data));
  for (std::size_t i = 0; i < 3; ++i) {
    std::string slice = data.substr(i * 10000, 10000);
    EXPECT_EQ(r.parts[i].file, "data.bin.part000" + std::to_string(i));
    EXPECT_EQ(r.parts[i].size, slice.size());
    EXPECT_EQ(r.parts[i].sha256, sha256_hex(slice));
    EXPECT_EQ(read_file(dir / "out" / r.parts[i].file), slice);
  }
  SplitManifest m = SplitManifest::load(r.manifest);
  EXPECT_EQ(m.size, data.size());
  EXPECT_EQ(m.sha256, r.sha256);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(check_part(m, i), "");
}

TEST(Split, PartsGoBesideTheFileByDefault) {
  auto dir = fresh_dir("split_beside");
  write(dir / "f", random_bytes(100, 2));
  SplitResult r = split_file(dir / "f", opts(1000));
  EXPECT_EQ(r.manifest, dir / "f.manifest.json");
  EXPECT_TRUE(fs::exists(dir / "f.part0000"));
  EXPECT_FALSE(fs::exists(dir / "f.part0001"));
}

TEST(Split, EmptyFileGetsOneEmptyPart) {
  auto dir = fresh_dir("split_empty");
  write(dir / "e", "");
  SplitResult r = split_file(dir / "e", opts(1000));
  ASSERT_EQ(r.parts.size(), 1u);
  EXPECT_EQ(r.parts[0].size, 0u);
  EXPECT_EQ(r.sha256, sha256_hex(""));
}

// Split asks for 4 digits and more when the count needs them; 10,001 real parts would make a slow
// test, so the writer is given 1 digit and 12 parts to show the widening.
TEST(Split, MorePartsThanTheDigitsAllowGetWiderNumbers) {
  auto dir = fresh_dir("split_digits");
  PartWriter w(dir, "f", 1, 1, false);
  w.write("abcdefghijkl", 12);
  SplitManifest m = w.finish(dir / "f.manifest.json");
  ASSERT_EQ(m.parts.size(), 12u);
  EXPECT_EQ(m.parts.front().file, "f.part00");
  EXPECT_EQ(m.parts.back().file, "f.part11");
  EXPECT_EQ(read_file(dir / "f.part11"), "l");
  EXPECT_FALSE(fs::exists(dir / "f.part0"));
  EXPECT_EQ(PartWriter::part_name("f", 12345, 4), "f.part12345");
}

TEST(Split, SplittingAgainRemovesPartsTheNewSetDoesNotUse) {
  auto dir = fresh_dir("split_again");
  write(dir / "f", random_bytes(3000, 4));
  split_file(dir / "f", opts(1000));
  ASSERT_TRUE(fs::exists(dir / "f.part0002"));
  split_file(dir / "f", opts(2000));
  EXPECT_TRUE(fs::exists(dir / "f.part0001"));
  EXPECT_FALSE(fs::exists(dir / "f.part0002"));
}

TEST(Split, NoTemporaryFilesRemain) {
  auto dir = fresh_dir("split_temps");
  write(dir / "f", random_bytes(5000, 5));
  split_file(dir / "f", opts(1000));
  for (const auto& e : fs::directory_iterator(dir)) EXPECT_FALSE(is_temp_path(e.path())) << e.path();
}

TEST(Split, ZeroSizeIsAUsageError) {
  auto dir = fresh_dir("split_zero");
  write(dir / "f", "abc");
  try {
    split_file(dir / "f", opts(0));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
  }
}

// 20 MiB in 7 MiB parts: parts straddle the writer's 8 MiB buffers, and the whole-file digest,
// computed on its own thread, must equal the plain one-pass digest.
TEST(Split, PartsAndDigestsHoldAcrossBufferBoundaries) {
  auto dir = fresh_dir("split_buffers");
  std::string data = random_bytes(20u << 20, 6);
  write(dir / "big", data);
  SplitResult r = split_file(dir / "big", opts(7u << 20));
  ASSERT_EQ(r.parts.size(), 3u);
  EXPECT_EQ(r.sha256, sha256_hex(data));
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_EQ(r.parts[i].sha256, sha256_hex(std::string_view(data).substr(i * (7u << 20), 7u << 20))) << i;

  JoinOptions j;
  j.output = dir / "joined";
  JoinResult jr = join_parts(r.manifest, j);
  EXPECT_EQ(jr.sha256, r.sha256);
  EXPECT_TRUE(read_file(dir / "joined") == data);
}

TEST(Split, UnfinishedPartWriterLeavesNothingBehind) {
  auto dir = fresh_dir("split_unfinished");
  {
    PartWriter w(dir, "x.zip", 1u << 20, 4, false);
    std::string data = random_bytes(1000, 8);
    w.write(data.data(), data.size());
    // space() flushes only when its buffer is full; force the parts out as a long pack would.
    std::string more = random_bytes((8u << 20) + 10, 9);  // 9 parts closed and renamed
    w.write(more.data(), more.size());
  }
  EXPECT_TRUE(fs::is_empty(dir));
}

// The part being written is a temporary that `frugal clean` and the trainer's disk budget may meet
// while `split`/`pack` runs: its writer's lock (fs.h) must mark it as owned, never abandoned.
TEST(Split, ThePartBeingWrittenIsOwnedNotSweepable) {
  auto dir = fresh_dir("split_owned");
  PartWriter w(dir, "x.zip", 32u << 20, 4, false);
  std::string data = random_bytes((9u << 20) + 7, 10);  // past the 8 MiB write buffer, inside part 0
  w.write(data.data(), data.size());
  std::vector<fs::path> temps;
  for (const auto& e : fs::directory_iterator(dir))
    if (is_temp_path(e.path())) temps.push_back(e.path());
  ASSERT_EQ(temps.size(), 1u);
  EXPECT_EQ(sweep_temp(temps[0], std::chrono::seconds(0), /*remove=*/true), TempState::owned);
  EXPECT_TRUE(fs::exists(temps[0]));
  w.finish(dir / "x.zip.manifest.json");
  EXPECT_EQ(read_file(dir / "x.zip.part0000"), data);
}

TEST(Split, AbandonedTemporariesOfAnInterruptedSplitOfTheFileAreRemoved) {
  auto dir = fresh_dir("split_leftovers");
  write(dir / "data.bin", random_bytes(2500, 5));
  write(dir / "data.bin.part0001.frugal-tmp-0123456789ab", std::string(1000, 'x'));  // its writer was killed
  write(dir / "data.bin.manifest.json.frugal-tmp-0123456789ab", "{");
  write(dir / "other.bin.part0000.frugal-tmp-0123456789ab", "not this file's");
  UniqueFd live(create_owned_temp(dir / "data.bin.part0000.frugal-tmp-00000000beef"));  // a split still running
  ASSERT_TRUE(live);
  SplitResult r = split_file(dir / "data.bin", opts(1000));
  EXPECT_EQ(r.temporaries_removed, 2u);
  EXPECT_FALSE(fs::exists(dir / "data.bin.part0001.frugal-tmp-0123456789ab"));
  EXPECT_FALSE(fs::exists(dir / "data.bin.manifest.json.frugal-tmp-0123456789ab"));
  EXPECT_TRUE(fs::exists(dir / "other.bin.part0000.frugal-tmp-0123456789ab"));
  EXPECT_TRUE(fs::exists(dir / "data.bin.part0000.frugal-tmp-00000000beef"));
}

TEST(Split, ANameTooLongForItsPartsIsRefusedBeforeAnythingIsWritten) {
  auto dir = fresh_dir("split_long_name");
  const std::string name(245, 'n');  // + ".manifest.json" = 259 bytes
  write(dir / name, "abc");
  try {
    split_file(dir / name, opts(2, dir / "out"));
    FAIL() << "split did not refuse";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported);
    EXPECT_NE(std::string(e.what()).find("at most 241"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "out"));
  const std::string fits(241, 'f');  // the longest that fits: its manifest name is 255 bytes
  write(dir / fits, "abc");
  SplitResult r = split_file(dir / fits, opts(2, dir / "out"));
  EXPECT_EQ(r.parts.size(), 2u);
  JoinOptions j;
  j.output = dir / "joined";
  join_parts(r.manifest, j);
  EXPECT_EQ(read_file(dir / "joined"), "abc");
}

// File names are bytes: a Latin-1 name is not UTF-8, and JSON holds only UTF-8.
TEST(Split, ANameThatIsNotUtf8SurvivesTheManifestExactly) {
  auto dir = fresh_dir("split_latin1");
  const std::string name = "d\xe9.zip";
  const std::string data = random_bytes(2500, 9);
  write(dir / name, data);
  SplitResult r = split_file(dir / name, opts(1000, dir / "out"));
  EXPECT_EQ(r.name, name);
  const std::string text = read_file(r.manifest);
  auto j = nlohmann::json::parse(text);  // valid UTF-8 JSON
  EXPECT_EQ(j["name"], "d\xef\xbf\xbd.zip");
  EXPECT_EQ(j["raw_name_hex"], "64e92e7a6970");
  EXPECT_EQ(j["parts"][0]["raw_file_hex"], to_hex((name + ".part0000").data(), name.size() + 9));
  SplitManifest m = SplitManifest::load(r.manifest);
  EXPECT_EQ(m.name, name);
  EXPECT_EQ(m.parts[2].file, name + ".part0002");
  JoinResult joined = join_parts(r.manifest, {});
  EXPECT_EQ(joined.output, dir / "out" / name);
  EXPECT_EQ(read_file(dir / "out" / name), data);
}

TEST(Manifest, RawNameBytesThatDoNotMatchTheNameAreRefused) {
  const std::string forged =
      R"({"format": "frugal-split", "version": 1, "name": "a.zip", "raw_name_hex": "2e2e2f782e7a6970", "size": 0,
          "sha256": "", "parts": []})";
  try {
    SplitManifest::parse(forged, ".", "m.json");
    FAIL() << "a forged raw name was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid);
    EXPECT_NE(std::string(e.what()).find("raw_name_hex"), std::string::npos) << e.what();
  }
}

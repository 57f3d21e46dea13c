// Entry names and labels.csv as a hostile or foreign archive holds them (issue 32): a label
// pattern over a 60 KB name (std::regex overflowed the stack), names that are not UTF-8 (class
// folders that differed only in such bytes were trained as one class; GBK names were refused as
// duplicates with the advice to repack), temporaries left by an interrupted write (trained on),
// and a labels.csv that inflates to one huge line (read whole before it was refused).
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <unistd.h>

#include "archive/string_sink.h"
#include "archive/zip_writer.h"
#include "dataset/small_data.h"
#include "dataset/labels_csv.h"
#include "frugal/archive/archive.h"
#include "frugal/dataset/dataset.h"
#include "frugal/util/error.h"
#include "frugal/util/hash.h"
#include "frugal/image/image.h"
#include "frugal/archive/name_encoding.h"
#include "image/fixtures.h"
#include "test_files.h"

using namespace frugal;

namespace {

using Bytes = std::vector<std::uint8_t>;
using frugal::testing::StringSink;
using frugal::testing::tiny_png_bytes;

std::uint16_t le16(const std::string& s, std::size_t at) {
  return static_cast<std::uint16_t>(static_cast<unsigned char>(s[at]) | static_cast<unsigned char>(s[at + 1]) << 8);
}
std::uint32_t le32(const std::string& s, std::size_t at) { return le16(s, at) | std::uint32_t{le16(s, at + 2)} << 16; }

// A zip of `entries` as given (deflated where it pays: prepare_entry). ZipWriter marks every name
// UTF-8 (bit 11); `legacy` clears the mark in every local and central header, as old Windows
// tools wrote names in their code page.
std::string make_zip(const std::vector<std::pair<std::string, Bytes>>& entries, bool legacy = false) {
  StringSink sink;
  ZipWriter w(sink);
  for (const auto& [name, data] : entries) w.add(prepare_entry(name, data, 1));
  w.finish();
  std::string z = std::move(sink.s);
  if (!legacy) return z;
  std::size_t at = 0;
  while (at + 30 <= z.size() && le32(z, at) == 0x04034b50) {
    z[at + 7] = static_cast<char>(z[at + 7] & ~0x08);
    at += 30 + le16(z, at + 26) + le16(z, at + 28) + le32(z, at + 18);
  }
  while (at + 46 <= z.size() && le32(z, at) == 0x02014b50) {
    z[at + 9] = static_cast<char>(z[at + 9] & ~0x08);
    at += 46 + le16(z, at + 28) + le16(z, at + 30) + le16(z, at + 32);
  }
  return z;
}

class UntrustedNames : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("frugal-names-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { frugal::testing::remove_tree(dir_); }
  std::filesystem::path write(const std::string& name, const std::string& bytes) {
    auto p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  std::filesystem::path dir_;
};

Error error_thrown_by(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error";
  return Error(ErrorKind::io, "none");
}

TEST_F(UntrustedNames, ALabelPatternSearchesA60KBNameWithoutCrashing) {
  // std::regex recursed once per character: SIGSEGV from about 36 KB on an 8 MB stack.
  const std::string long_name = std::string(60000, 'x') + "_cat.png";
  auto zip = write("long.zip", make_zip({{long_name, tiny_png_bytes(10)}, {"y_dog.png", tiny_png_bytes(200)}}));
  DatasetOptions o;
  o.label_pattern = ".*_([a-z]+)\\.png$";  // .* over 60 KB: libstdc++ recursed once per character
  auto ds = Dataset::open(zip, o);
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"cat", "dog"}));
  o.label_pattern = "^(x+)*y$";  // exponential for a backtracking engine: no match, at once
  EXPECT_EQ(error_thrown_by([&] { Dataset::open(zip, o); }).kind(), ErrorKind::invalid);  // nothing labelled
}

TEST_F(UntrustedNames, PatternsRe2RefusesOrWithoutOneGroupAreUsageErrors) {
  auto zip = write("p.zip", make_zip({{"a_cat.png", tiny_png_bytes(10)}}));
  DatasetOptions o;
  for (const char* pattern : {"(a)(b)", "abc", "(a)\\1", "(?=a)(b)", "(unclosed"}) {
    o.label_pattern = pattern;
    const Error e = error_thrown_by([&] { Dataset::open(zip, o); });
    EXPECT_EQ(e.kind(), ErrorKind::usage) << pattern << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find("--label-pattern"), std::string::npos) << e.what();
  }
  o.label_pattern = "(a)\\1";
  EXPECT_NE(std::string(error_thrown_by([&] { Dataset::open(zip, o); }).what()).find("RE2 syntax"), std::string::npos);
}

TEST_F(UntrustedNames, ClassFoldersDifferingOnlyInBytesThatAreNotUtf8AreTwoClasses) {
  auto zip = write("cls.zip", make_zip({{"cls\xff/a.png", tiny_png_bytes(10)},
                                        {"cls\xff/b.png", tiny_png_bytes(20)},
                                        {"cls\xfe/a.png", tiny_png_bytes(200)},
                                        {"cls\xfe/b.png", tiny_png_bytes(210)}}));
  auto ds = Dataset::open(zip);
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"cls\\xfe", "cls\\xff"}));
  ASSERT_EQ(ds->size(), 4u);
  for (std::size_t i = 0; i < ds->size(); ++i)
    EXPECT_EQ(ds->classes()[ds->label(i)], ds->name(i).substr(0, 7)) << ds->name(i);
}

// 鸟 and 狗 in GBK, as a Chinese Windows zip tool writes them (not valid UTF-8, unlike 猫's c3 a8).
const std::string kBirdGbk = "\xc4\xf1", kDogGbk = "\xb9\xb7";

TEST_F(UntrustedNames, GbkNamesWithoutAnEncodingAreDistinctAndTheEncodingIsGuessed) {
  auto zip = write("gbk.zip", make_zip({{kBirdGbk + "/1.png", tiny_png_bytes(10)},
                                        {kBirdGbk + "/2.png", tiny_png_bytes(20)},
                                        {kDogGbk + "/1.png", tiny_png_bytes(200)},
                                        {kDogGbk + "/2.png", tiny_png_bytes(210)}},
                                       /*legacy=*/true));
  // Shown with U+FFFD, "鸟/1.png" and "狗/1.png" read alike: once refused as duplicates ("repack").
  auto ds = Dataset::open(zip);
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"\\xb9\\xb7", "\\xc4\\xf1"}));
  EXPECT_EQ(ds->size(), 4u);
  const auto guess = guess_name_encodings({kBirdGbk + "/1.png", kDogGbk + "/2.png"});
  ASSERT_FALSE(guess.empty());
  EXPECT_EQ(guess[0], "gbk");
  DatasetOptions o;
  o.name_encoding = "gbk";
  EXPECT_EQ(Dataset::open(zip, o)->classes(), (std::vector<std::string>{"狗", "鸟"}));
}

TEST_F(UntrustedNames, NamesCollidingOnlyAsShownSuggestTheEncodingNotARepack) {
  auto zip =
      write("gbk.zip", make_zip({{kBirdGbk + ".png", tiny_png_bytes(10)}, {kDogGbk + ".png", tiny_png_bytes(200)}},
                                /*legacy=*/true));
  auto archive = Archive::open(zip);
  const Error e = error_thrown_by([&] { refuse_duplicate_names(*archive); });
  const std::string what = e.what();
  EXPECT_EQ(e.kind(), ErrorKind::invalid) << what;
  EXPECT_NE(what.find("not UTF-8"), std::string::npos) << what;
  EXPECT_NE(what.find("--name-encoding gbk"), std::string::npos) << what;
  EXPECT_EQ(what.find("repack"), std::string::npos) << what;
  // Real duplicates are still the archive's fault.
  auto dup = write("dup.zip", make_zip({{"a/x.png", tiny_png_bytes(1)}, {"a/./x.png", tiny_png_bytes(2)}}));
  EXPECT_NE(std::string(error_thrown_by([&] { Dataset::open(dup); }).what()).find("repack"), std::string::npos);
}

TEST(NameEncodingGuess, WesternCyrillicAndJapaneseNamesReadAsTheirCodePage) {
  EXPECT_EQ(guess_name_encodings({"M\xfcller/caf\xe9.png"})[0], "cp1252");      // Müller/café
  EXPECT_EQ(guess_name_encodings({"caf\x82/na\x8bve.png"})[0], "cp437");        // café/naïve (DOS)
  EXPECT_EQ(guess_name_encodings({"\xaa\xae\xe8\xaa\xa0/1.png"})[0], "cp866");  // кошка (DOS Russian)
  EXPECT_EQ(guess_name_encodings({"\x82\xcb\x82\xb1/1.png"})[0], "shift_jis");  // ねこ
  EXPECT_TRUE(guess_name_encodings({"\xff\xff\xff\xff"}).size() <= 7);
  EXPECT_TRUE(guess_name_encodings({}).empty());
}

TEST_F(UntrustedNames, TemporariesOfAnInterruptedWriteAreSkippedAndCounted) {
  // A killed extract leaves complete images under temporary names; packed again, they were trained on.
  auto zip = write("t.zip", make_zip({{"a/x.png", tiny_png_bytes(10)},
                                      {"a/y.png.frugal-tmp-0123456789abcdef", tiny_png_bytes(20)},
                                      {"b/z.png", tiny_png_bytes(200)},
                                      {"b/part.zip.frugal-join", tiny_png_bytes(210)}}));
  auto ds = Dataset::open(zip);
  EXPECT_EQ(ds->size(), 2u);
  EXPECT_EQ(ds->skipped().counts["left by an interrupted write (*.frugal-tmp-*, *.frugal-join)"], 2u)
      << ds->skipped().summary();
}

// Peak resident memory since reset_peak(), from /proc (VmHWM; clear_refs 5 resets it).
bool reset_peak() { return static_cast<bool>(std::ofstream("/proc/self/clear_refs") << "5"); }
std::uint64_t peak_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6));
  return 0;
}
std::uint64_t rss_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  return 0;
}

TEST_F(UntrustedNames, ALabelsCsvInflatingToOneHugeLineIsRefusedWithinSmallMemory) {
  // 96 MiB without a newline, deflated (it varies every 32 bytes: ~1/20 of that on disk).
  std::filesystem::path zip;
  {
    Bytes line(std::size_t{96} << 20);
    std::uint64_t x = 7;
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (i % 32 == 0) x = x * 6364136223846793005ull + 1442695040888963407ull;
      line[i] = static_cast<std::uint8_t>('a' + ((i % 32 == 0 ? x >> 60 : 0) & 15));
    }
    zip = write("csv.zip", make_zip({{"labels.csv", line}, {"a.png", tiny_png_bytes(10)}}));
  }
  if (!reset_peak()) GTEST_SKIP() << "no /proc/self/clear_refs to measure peak memory";
  const std::uint64_t before = rss_kib();
  const Error e = error_thrown_by([&] { Dataset::open(zip); });
  const std::uint64_t grown = peak_kib() - before;
  EXPECT_EQ(e.kind(), ErrorKind::invalid) << e.what();
  EXPECT_NE(std::string(e.what()).find("labels.csv:1"), std::string::npos) << e.what();
  EXPECT_LT(grown, 32u << 10) << "peak grew by " << grown << " KiB reading the labels";
}

TEST(LabelsCsvParser, PiecesOfAnySizeGiveTheSameTableAndALongLineStopsAtOnce) {
  const std::string text = "\xEF\xBB\xBFpath,label\r\n./d/a.jpg,cat\nd//b,with comma.jpg,\"dog\"\nc.jpg,eel";
  const auto whole = frugal::detail::parse_labels_csv(text, "l.csv");
  for (std::size_t piece : {1, 2, 3, 7}) {
    frugal::detail::LabelsCsvParser p("l.csv");
    for (std::size_t i = 0; i < text.size(); i += piece) p.feed(std::string_view(text).substr(i, piece));
    EXPECT_EQ(p.finish(), whole) << piece;
  }
  EXPECT_EQ(whole.size(), 3u);
  frugal::detail::LabelsCsvParser p("l.csv");
  p.feed("a.jpg,cat\n");
  const std::string chunk(64 << 10, 'x');
  p.feed(chunk);  // 64 KiB of a line: a long zip name, still allowed
  const Error e = error_thrown_by([&] { p.feed(chunk); });
  EXPECT_EQ(e.kind(), ErrorKind::invalid);
  EXPECT_NE(std::string(e.what()).find("l.csv:2"), std::string::npos) << e.what();
}

}  // namespace

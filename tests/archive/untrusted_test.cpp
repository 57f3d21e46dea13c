// Hostile and damaged archives: each case is refused with Error(invalid/unsupported) naming the
// problem, at open for structure and at read for data.
#include <gtest/gtest.h>

#include "frugal/archive/archive.h"
#include "frugal/util/error.h"
#include "zip_read_fixture.h"

namespace frugal {
namespace {

using testing::build_zip;
using testing::TestEntry;

std::unique_ptr<Archive> open_bad_zip(const std::string& zip) {
  return Archive::open(memory_byte_source(zip, "bad.zip"), "bad.zip");
}

// Runs f, expecting an Error of `kind` whose message contains `text`.
template <class F>
void expect_error(F f, ErrorKind kind, const std::string& text) {
  try {
    f();
    FAIL() << "expected an error containing '" << text << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

TEST(Untrusted, TruncatedArchiveIsRejected) {
  const std::string zip = build_zip({{"a", std::string(500, 'a')}, {"b", "bb"}});
  for (std::size_t cut : {zip.size() - 1, zip.size() - 30, std::size_t{100}, std::size_t{10}})
    expect_error([&] { open_bad_zip(zip.substr(0, cut)); }, ErrorKind::invalid, "bad.zip");
}

TEST(Untrusted, MissingEndRecordIsRejected) {
  expect_error([] { open_bad_zip(std::string(5000, 'z')); }, ErrorKind::invalid, "end-of-central-directory");
}

TEST(Untrusted, InconsistentEndRecordIsRejected) {
  std::string zip = build_zip({{"a", "hello"}});
  zip[zip.size() - 22 + 10] = 9;  // 9 entries claimed
  zip[zip.size() - 22 + 8] = 9;
  expect_error([&] { open_bad_zip(zip); }, ErrorKind::invalid, "bad.zip");
}

TEST(Untrusted, OverlappingEntriesAreRejectedAtOpen) {
  // The zip-bomb layout: two central headers share one local header and its data.
  TestEntry a{"a", std::string(1000, 'a'), true};
  TestEntry b = a;
  b.name = "b";
  b.offset = 0;
  expect_error([&] { open_bad_zip(build_zip({a, b})); }, ErrorKind::invalid, "overlap");
}

TEST(Untrusted, DataRunningIntoTheNextEntryIsRefusedOnRead) {
  std::string zip = build_zip({{"a", "aaaa"}, {"b", "bbbb"}});
  zip[28] = 40;  // a's local extra length: its data would start inside b's header
  auto ar = open_bad_zip(zip);
  EXPECT_EQ(ar->read(1), testing::bytes("bbbb"));
  expect_error([&] { ar->read(0); }, ErrorKind::invalid, "next entry");
}

TEST(Untrusted, CrcMismatchIsRefusedOnRead) {
  TestEntry a{"a", "hello", true};
  a.crc = 0x12345678;
  auto ar = open_bad_zip(build_zip({a}));
  expect_error([&] { ar->read(0); }, ErrorKind::invalid, "CRC-32 12345678");
}

TEST(Untrusted, LyingSmallSizeStopsInflationAtTheDeclaredSize) {
  TestEntry a{"a", std::string(100000, 'z'), true};
  a.size = 1000;
  auto ar = open_bad_zip(build_zip({a}));
  expect_error([&] { ar->read(0); }, ErrorKind::invalid, "more when inflated");
}

TEST(Untrusted, LyingLargeSizeIsASizeMismatch) {
  TestEntry a{"a", std::string(10000, 'z'), true};
  a.size = 20000;
  auto ar = open_bad_zip(build_zip({a}));
  expect_error([&] { ar->read(0); }, ErrorKind::invalid, "10000 bytes");
}

TEST(Untrusted, DeclaredSizeBeyondWhatDeflateCanReachIsRefusedBeforeAllocating) {
  TestEntry a{"a", "tiny", true};
  a.size = 0xfffffff0u;
  auto ar = open_bad_zip(build_zip({a}));
  expect_error([&] { ar->read(0); }, ErrorKind::invalid, "header lies");
}

TEST(Untrusted, EncryptedEntryIsListedButRefused) {
  TestEntry a{"secret", "xxxx"};
  a.flags = 1;
  auto ar = open_bad_zip(build_zip({a}));
  EXPECT_TRUE(ar->entries()[0].encrypted);
  EXPECT_EQ(entry_problem(ar->entries()[0]), "encrypted entry");
  expect_error([&] { ar->read(0); }, ErrorKind::unsupported, "encrypted");
}

TEST(Untrusted, OtherMethodsAreListedButRefusedOnRead) {
  TestEntry a{"b.bz2", "BZh9...."};
  a.method_override = 12;
  auto ar = open_bad_zip(build_zip({a}));
  EXPECT_EQ(method_name(ar->entries()[0].method), "bzip2");
  expect_error([&] { ar->read(0); }, ErrorKind::unsupported, "bzip2");
}

TEST(Untrusted, UnsafeNamesAreListedWithTheirProblem) {
  TestEntry link{"link", "/etc/passwd"};
  link.external_attr = 0120777u << 16;
  auto ar = open_bad_zip(build_zip({{"../evil", "x"},
                                    {"/abs", "x"},
                                    {"a\\b", "x"},
                                    {"C:x", "x"},
                                    {std::string("nul\0byte", 8), "x"},
                                    {"ok/../../up", "x"},
                                    link,
                                    {"fine/name.txt", "x"}}));
  const auto& e = ar->entries();
  ASSERT_EQ(e.size(), 8u);
  EXPECT_NE(entry_problem(e[0]).find(".."), std::string::npos);
  EXPECT_EQ(entry_problem(e[1]), "absolute path");
  EXPECT_NE(entry_problem(e[2]).find("backslash"), std::string::npos);
  EXPECT_EQ(entry_problem(e[3]), "drive letter in name");
  EXPECT_EQ(entry_problem(e[4]), "NUL byte in name");
  EXPECT_NE(entry_problem(e[5]).find(".."), std::string::npos);
  EXPECT_TRUE(e[6].is_symlink);
  EXPECT_NE(entry_problem(e[6]).find("symlink"), std::string::npos);
  EXPECT_EQ(entry_problem(e[7]), "");
}

TEST(Untrusted, LocalNameDifferentFromCentralNameIsRefused) {
  std::string zip = build_zip({{"good", "data"}});
  zip[30] = 'e';  // local header's name "good" -> "eood"
  auto ar = open_bad_zip(zip);
  expect_error([&] { ar->read(0); }, ErrorKind::invalid, "same name");
}

}  // namespace
}  // namespace frugal

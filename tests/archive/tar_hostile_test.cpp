// Hostile and damaged tars, crafted byte by byte: each is refused at open naming the problem and the
// offset (Error invalid), or listed with the problem entry_problem() names, as the hostile zips
// are (untrusted_test.cpp, hardening_test.cpp).
#include <gtest/gtest.h>

#include "frugal/archive/archive.h"
#include "frugal/util/error.h"
#include "tar_fixture.h"
#include "zip_read_fixture.h"

namespace frugal {
namespace {

using testing::pax_record;
using testing::tar_end;
using testing::tar_file;
using testing::tar_header;
using testing::tar_member;
using testing::TarHeader;

std::unique_ptr<Archive> open_tar(const std::string& bytes) {
  return Archive::open(memory_byte_source(bytes, "bad.tar"), "bad.tar");
}

template <class F>
void expect_bad_tar_error(F f, ErrorKind kind, const std::string& text) {
  try {
    f();
    FAIL() << "expected an error containing '" << text << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.tar"), std::string::npos) << e.what();
  }
}

void expect_refused(const std::string& bytes, const std::string& text) {
  expect_bad_tar_error([&] { open_tar(bytes); }, ErrorKind::invalid, text);
}

std::string read_string(const Archive& a, const std::string& name) {
  const auto b = a.read(*a.find(name));
  return {b.begin(), b.end()};
}

TEST(TarHostile, UnsafeNamesAreListedWithTheirProblemAndNeverExtracted) {
  auto a =
      open_tar(tar_file("../../etc/passwd", "x") + tar_file("/etc/shadow", "y") + tar_file("ok.txt", "z") + tar_end());
  ASSERT_EQ(a->entries().size(), 3u);
  EXPECT_NE(entry_problem(*a, 0).find(".."), std::string::npos);
  EXPECT_NE(entry_problem(*a, 1).find("absolute"), std::string::npos);
  EXPECT_EQ(entry_problem(*a, 2), "");
  ExtractOptions x;
  x.dir = testing::temp_dir("tar-hostile-extract");
  expect_bad_tar_error([&] { extract(*a, x); }, ErrorKind::invalid, "..");
  EXPECT_TRUE(std::filesystem::is_empty(x.dir));
  std::filesystem::remove_all(x.dir);
}

TEST(TarHostile, AChecksumMismatchRefusesTheTarNamingTheOffset) {
  TarHeader h{"b.txt", '0'};
  h.checksum_delta = 1;
  expect_refused(tar_file("a.txt", "aaa") + tar_member(h, "bbb") + tar_end(), "offset 1024");
  expect_refused(tar_file("a.txt", "aaa") + tar_member(h, "bbb") + tar_end(), "checksum");
  // The first header too (ustar magic says tar; the checksum says damaged).
  expect_refused(tar_member(h, "bbb") + tar_end(), "checksum");
}

TEST(TarHostile, SizesThatWrapOrRunPastTheFileAreRefused) {
  TarHeader wrap{"a", '0'};
  wrap.raw_size = std::string("\x80\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 12);  // base-256, 2^88 - 1
  expect_refused(tar_header(wrap) + tar_end(), "size field");
  TarHeader negative{"a", '0'};
  negative.raw_size = std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xf0", 12);
  expect_refused(tar_header(negative) + tar_end(), "size field");
  TarHeader junk{"a", '0'};
  junk.raw_size = "12x45";
  expect_refused(tar_header(junk) + tar_end(), "size field");
  TarHeader big{"a", '0'};
  big.size = 8ull << 30;
  expect_refused(tar_header(big) + std::string(4096, 'a') + tar_end(), "past its end");
  // Base-256 just below 2^63 added to the offset must not wrap around to a small offset.
  TarHeader huge{"a", '0'};
  huge.raw_size = std::string("\x80\x00\x00\x00\x7f\xff\xff\xff\xff\xff\xfe\x00", 12);
  expect_refused(tar_header(huge) + tar_end(), "past its end");
}

TEST(TarHostile, ATruncatedTarIsRefused) {
  const std::string t = tar_file("a.txt", std::string(2000, 'a')) + tar_file("b.txt", "b") + tar_end();
  expect_refused(t.substr(0, 2560 + 100), "truncated");  // inside b's header
  expect_refused(t.substr(0, 1000), "truncated");        // inside a's data
}

TEST(TarHostile, ATarWithoutEndBlocksOrLastPaddingIsRead) {
  // Python's tarfile and GNU tar read these too (some writers stop early).
  auto a = open_tar(tar_file("a.txt", "aaa") + tar_file("b.txt", "bb"));
  EXPECT_EQ(read_string(*a, "b.txt"), "bb");
  auto b = open_tar((tar_file("a.txt", "aaa") + tar_file("b.txt", "bb")).substr(0, 512 * 3 + 2));
  EXPECT_EQ(read_string(*b, "b.txt"), "bb");
}

TEST(TarHostile, LongNameRecordsThatLieAreRefused) {
  const std::string name(300, 'n');
  auto long_name = [](const std::string& n, std::uint64_t size) {
    TarHeader h{"././@LongLink", 'L'};
    h.size = size;
    return tar_header(h) + testing::tar_pad(n);
  };
  // Honest: the name and one NUL.
  auto ok = open_tar(long_name(name + '\0', name.size() + 1) + tar_file("short", "x") + tar_end());
  EXPECT_EQ(read_string(*ok, name), "x");
  // A size past the file.
  expect_refused(long_name(name + '\0', 1 << 20) + tar_end(), "past its end");
  // Bytes after the name's end: the record's size does not describe the name.
  expect_refused(long_name(name + std::string("\0zzz", 4), name.size() + 4) + tar_file("short", "x") + tar_end(),
                 "after the name");
  // Larger than a name can be.
  expect_refused(long_name(std::string(70000, 'n'), 70000) + tar_file("short", "x") + tar_end(), "long name");
  // Empty.
  expect_refused(long_name("", 0) + tar_file("short", "x") + tar_end(), "long name");
  // Two for one member.
  expect_refused(long_name(name, name.size()) + long_name(name, name.size()) + tar_file("short", "x") + tar_end(),
                 "two");
  // Nothing after it.
  expect_refused(long_name(name, name.size()) + tar_end(), "after its extended header");
  expect_refused(long_name(name, name.size()), "after its extended header");
  // A long name and a PAX path that differ.
  const std::string pax = pax_record("path", "other");
  TarHeader x{"pax", 'x'};
  expect_refused(long_name(name, name.size()) + tar_member(x, pax) + tar_file("short", "x") + tar_end(), "one name");
}

TEST(TarHostile, MalformedPaxHeadersAreRefused) {
  TarHeader x{"pax", 'x'};
  auto with_pax = [&](const std::string& records) {
    return tar_member(x, records) + tar_file("a", "aaaa") + tar_end();
  };
  auto ok = open_tar(with_pax(pax_record("path", "renamed.txt") + pax_record("mtime", "1.5")));
  EXPECT_EQ(read_string(*ok, "renamed.txt"), "aaaa");
  expect_refused(with_pax("99 path=x\n"), "PAX record");   // length past the header
  expect_refused(with_pax("10 path=xy\n"), "PAX record");  // length one short: no newline there
  expect_refused(with_pax("8 pathx\n"), "KEY=VALUE");      // no '='
  expect_refused(with_pax("7 =abc\n"), "KEY=VALUE");       // empty key
  expect_refused(with_pax("x path=y\n"), "PAX record");    // no length
  expect_refused(with_pax(pax_record("size", "12ab")), "decimal PAX size");
  expect_refused(with_pax(pax_record("size", "999999999999")), "past its end");
  expect_refused(with_pax(pax_record("path", std::string(70000, 'p'))), "PAX path");
  expect_refused(
      tar_member(x, pax_record("path", "a")) + tar_member(x, pax_record("path", "b")) + tar_file("a", "a") + tar_end(),
      "one PAX header");
  TarHeader huge{"pax", 'x'};
  huge.size = (1 << 20) + 1;
  expect_refused(tar_header(huge) + std::string((1 << 20) + 512, ' ') + tar_file("a", "a") + tar_end(), "PAX header");
}

TEST(TarHostile, PaxSizeSetsWhereTheNextHeaderIs) {
  TarHeader x{"pax", 'x'};
  TarHeader member{"big.bin", '0'};
  member.size = 0;  // the header says 0; PAX says 600 (how sizes past 8 GiB are written)
  const std::string data(600, 'd');
  auto a = open_tar(tar_member(x, pax_record("size", "600")) + tar_header(member) + testing::tar_pad(data) +
                    tar_file("next", "n") + tar_end());
  EXPECT_EQ(read_string(*a, "big.bin"), data);
  EXPECT_EQ(read_string(*a, "next"), "n");
}

TEST(TarHostile, GlobalPaxHeadersAreReadButMayNotRenameOrResize) {
  TarHeader g{"global", 'g'};
  auto ok = open_tar(tar_member(g, pax_record("comment", "made by git archive")) + tar_file("a", "a") + tar_end());
  EXPECT_EQ(ok->entries().size(), 1u);
  expect_refused(tar_member(g, pax_record("path", "same-for-all")) + tar_file("a", "a") + tar_end(), "global");
}

TEST(TarHostile, LinksFoldersAndDevicesThatDeclareDataAreRefused) {
  for (char type : {'1', '2', '3', '4', '5', '6'}) {
    SCOPED_TRACE(type);
    TarHeader h{"thing", type};
    h.size = 512;
    // Readers disagree whether these bytes are data or the next header: one hidden member is one
    // too many.
    expect_refused(tar_header(h) + tar_file("hidden", "h") + tar_end(), "no data");
  }
}

TEST(TarHostile, SparseAndUnknownMembersAreSkippedExactlyAndNotRead) {
  TarHeader sparse{"sparse.img", 'S', 700};
  sparse.gnu_magic = true;
  sparse.gnu_isextended = 1;
  std::string ext(512, '\0');
  ext[504] = 1;  // a second extension block follows
  const std::string ext2(512, '\0');
  TarHeader other{"volume", 'Z', 100};
  auto a = open_tar(tar_header(sparse) + ext + ext2 + testing::tar_pad(std::string(700, 's')) +
                    tar_member(other, std::string(100, 'z')) + tar_file("after", "ok") + tar_end());
  ASSERT_EQ(a->entries().size(), 3u);
  EXPECT_EQ(a->entries()[0].special, SpecialMember::sparse);
  EXPECT_EQ(a->entries()[1].special, SpecialMember::other);
  EXPECT_EQ(read_string(*a, "after"), "ok");
  expect_bad_tar_error([&] { a->read(0); }, ErrorKind::unsupported, "sparse");
  // PAX's GNU.sparse keys make a member sparse too.
  TarHeader x{"pax", 'x'};
  auto b = open_tar(tar_member(x, pax_record("GNU.sparse.major", "1") + pax_record("GNU.sparse.name", "real.img")) +
                    tar_file("GNUSparseFile.0/real.img", "map+data") + tar_end());
  ASSERT_EQ(b->entries().size(), 1u);
  EXPECT_EQ(b->entries()[0].name, "real.img");
  EXPECT_EQ(b->entries()[0].special, SpecialMember::sparse);
}

TEST(TarHostile, AnExtendedHeaderFollowedByTheEndIsRefused) {
  TarHeader x{"pax", 'x'};
  expect_refused(tar_member(x, pax_record("path", "a")) + tar_end(), "after its extended header");
}

TEST(TarHostile, V7TarsWithoutMagicAreRead) {
  TarHeader h{"old.txt", '\0'};
  h.v7 = true;
  TarHeader d{"folder/", '\0'};
  d.v7 = true;
  auto a = open_tar(tar_header(d) + tar_member(h, "v7") + tar_end());
  ASSERT_EQ(a->entries().size(), 2u);
  EXPECT_TRUE(a->entries()[0].is_dir);
  EXPECT_EQ(read_string(*a, "old.txt"), "v7");
}

TEST(TarHostile, UstarPrefixesAreJoinedAndNamesWithNulBytesEnd) {
  TarHeader h{"file.txt", '0'};
  h.prefix = "deep/folder";
  auto a = open_tar(tar_member(h, "p") + tar_end());
  EXPECT_EQ(read_string(*a, "deep/folder/file.txt"), "p");
}

TEST(TarHostile, DuplicateNamesAreMarkedAndRefusedForTraining) {
  auto a = open_tar(tar_file("a.txt", "old") + tar_file("./a.txt", "new") + tar_end());
  ASSERT_EQ(a->entries().size(), 2u);
  EXPECT_TRUE(a->entries()[1].duplicate_name);
  expect_bad_tar_error([&] { refuse_duplicate_names(*a); }, ErrorKind::invalid, "same path");
}

TEST(TarHostile, MemoryIsBoundedByTheFileNotByWhatHeadersDeclare) {
  // A member declaring 4 GiB in a file of a few KiB allocates nothing: refused at open.
  TarHeader h{"a", '0'};
  h.size = 4ull << 30;
  expect_refused(tar_header(h) + std::string(2048, 'x'), "past its end");
  // Many tiny members: the index costs per member, as a zip's does.
  std::string many;
  for (int i = 0; i < 3000; ++i) many += tar_file("m" + std::to_string(i), "");
  auto a = Archive::open(memory_byte_source(many + tar_end(), "many.tar"), "many.tar");
  EXPECT_EQ(a->entries().size(), 3000u);
}

}  // namespace
}  // namespace frugal

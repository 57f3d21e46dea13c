#include <gtest/gtest.h>

#include <thread>

#include "archive/manifest.h"
#include "frugal/archive/archive.h"
#include "frugal/util/error.h"
#include "frugal/util/hash.h"
#include "zip_read_fixture.h"

namespace frugal {
namespace {

using testing::build_zip;
using testing::bytes;
using testing::TestEntry;
using testing::ZipBuild;

std::unique_ptr<Archive> open_test_zip(const std::string& zip, const ArchiveOptions& o = {}) {
  return Archive::open(memory_byte_source(zip, "test.zip"), "test.zip", o);
}

std::string sample(std::size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 31 + seed * 7 + (i >> 5)) % 251);
  return s;
}

TEST(ZipRead, ReadsStoredAndDeflatedEntries) {
  const std::string a = sample(5000, 1), b(100000, 'x');
  auto ar = open_test_zip(build_zip({{"a.bin", a}, {"dir/b.txt", b, true}}));
  ASSERT_EQ(ar->entries().size(), 2u);
  EXPECT_EQ(ar->entries()[0].method, 0);
  EXPECT_EQ(ar->entries()[1].method, 8);
  EXPECT_LT(ar->entries()[1].compressed_size, 1000u);
  EXPECT_EQ(ar->read(0), bytes(a));
  EXPECT_EQ(ar->read(1), bytes(b));
  EXPECT_EQ(ar->find("dir/b.txt"), 1u);
  EXPECT_FALSE(ar->find("nope").has_value());
}

TEST(ZipRead, EmptyArchiveHasNoEntries) { EXPECT_TRUE(open_test_zip(build_zip({}))->entries().empty()); }

TEST(ZipRead, StoredViewPointsIntoTheSourceWithoutCopy) {
  const std::string a = sample(3000, 2);
  auto ar = open_test_zip(build_zip({{"a", a}, {"b", a, true}}));
  auto v = ar->stored_view(0);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(std::string(v->begin(), v->end()), a);
  EXPECT_FALSE(ar->stored_view(1).has_value());  // deflated
}

TEST(ZipRead, Zip64FieldsAreRead) {
  const std::string a = sample(700, 3);
  TestEntry e{"big.bin", a, true};
  e.zip64 = true;
  ZipBuild b;
  b.zip64_end = true;
  auto ar = open_test_zip(build_zip({e, {"small", "hi"}}, b));
  ASSERT_EQ(ar->entries().size(), 2u);
  EXPECT_EQ(ar->entries()[0].size, 700u);
  EXPECT_EQ(ar->read(0), bytes(a));
  EXPECT_EQ(ar->read(1), bytes("hi"));
}

TEST(ZipRead, JunkBeforeTheArchiveIsSkippedLikeUnzip) {
  ZipBuild b;
  b.prefix = "#!/bin/sh\necho self-extractor stub\nexit 0\n" + std::string(1000, '\x01');
  auto ar = open_test_zip(build_zip({{"a", "hello"}, {"b", sample(4000, 4), true}}, b));
  EXPECT_EQ(ar->read(0), bytes("hello"));
  EXPECT_EQ(ar->read(1), bytes(sample(4000, 4)));
}

TEST(ZipRead, JunkBeforeAZip64ArchiveIsSkipped) {
  ZipBuild b;
  b.prefix = std::string(333, 'j');
  b.zip64_end = true;
  auto ar = open_test_zip(build_zip({{"a", "hello"}}, b));
  EXPECT_EQ(ar->read(0), bytes("hello"));
}

TEST(ZipRead, FakeEndRecordInCommentIsSkipped) {
  // A comment ending in a well-formed EOCD whose comment length also reaches the end of the file.
  std::string fake;
  testing::put32(fake, 0x06054b50);
  for (int i = 0; i < 4; ++i) testing::put16(fake, 7);
  testing::put32(fake, 999999);
  testing::put32(fake, 123456);
  testing::put16(fake, 0);
  ZipBuild b;
  b.comment = "innocent comment " + fake;
  auto ar = open_test_zip(build_zip({{"a", "payload"}}, b));
  ASSERT_EQ(ar->entries().size(), 1u);
  EXPECT_EQ(ar->read(0), bytes("payload"));
}

TEST(ZipRead, DuplicateNamesAreMarkedAndFindReturnsTheFirst) {
  auto ar = open_test_zip(build_zip({{"x", "one"}, {"y", "mid"}, {"x", "two"}}));
  EXPECT_EQ(ar->find("x"), 0u);
  EXPECT_FALSE(ar->entries()[0].duplicate_name);
  EXPECT_TRUE(ar->entries()[2].duplicate_name);
  EXPECT_EQ(entry_problem(ar->entries()[2]), "duplicate name");
}

TEST(ZipRead, InvalidUtf8NamesAreRepairedAndKeepTheirBytes) {
  auto ar = open_test_zip(build_zip({{"caf\xe9.txt", "x"}}));
  const ZipEntry& e = ar->entries()[0];
  EXPECT_EQ(e.name, "caf\xef\xbf\xbd.txt");
  EXPECT_EQ(e.raw_name, "caf\xe9.txt");
  EXPECT_FALSE(e.name_is_utf8);
}

TEST(ZipRead, NameEncodingDecodesLegacyNames) {
  ArchiveOptions o;
  o.name_encoding = "cp437";
  auto ar = open_test_zip(build_zip({{"caf\x82.txt", "x"}}), o);  // cp437 0x82 = é
  EXPECT_EQ(ar->entries()[0].name, "caf\xc3\xa9.txt");
  EXPECT_EQ(ar->find("caf\xc3\xa9.txt"), 0u);
  o.name_encoding = "gbk";
  auto g = open_test_zip(build_zip({{"\xd6\xd0\xce\xc4", "x"}}), o);  // 中文
  EXPECT_EQ(g->entries()[0].name, "\xe4\xb8\xad\xe6\x96\x87");
}

TEST(ZipRead, UnknownNameEncodingIsAUsageError) {
  ArchiveOptions o;
  o.name_encoding = "no-such-encoding";
  try {
    open_test_zip(build_zip({{"a", "x"}}), o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
  }
}

TEST(ZipRead, ManyThreadsReadTheSameArchiveAtOnce) {
  std::vector<TestEntry> entries;
  std::vector<std::string> data;
  for (int i = 0; i < 200; ++i) {
    data.push_back(sample(1000 + i * 13, i));
    entries.push_back({"e" + std::to_string(i), data.back(), i % 2 == 0});
  }
  auto ar = open_test_zip(build_zip(entries));
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::vector<std::uint8_t> buf;
      for (int k = 0; k < 400; ++k) {
        const int i = (k * 7 + t * 31) % 200;
        ar->read(i, buf);
        if (std::string(buf.begin(), buf.end()) != data[i]) ++mismatches;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(ZipRead, LargeStoredEntryIsReadInPiecesWithItsCrcChecked) {
  const std::string big = sample(9 << 20, 5);
  TestEntry bad{"bad", big};
  bad.crc = 7;
  auto ar = open_test_zip(build_zip({{"big", big}, bad}));
  std::string got;
  std::size_t pieces = 0;
  ar->read_to(0, [&](std::span<const std::uint8_t> p) {
    got.append(p.begin(), p.end());
    ++pieces;
  });
  EXPECT_EQ(pieces, 3u);
  EXPECT_TRUE(got == big);
  EXPECT_THROW(ar->read_to(1, [](std::span<const std::uint8_t>) {}), Error);
}

// A source that can only copy (no view()), as a split set is where an entry crosses two parts:
// read() must take its copying path and agree with the mapped one.
class CopyOnlySource final : public ByteSource {
 public:
  explicit CopyOnlySource(std::string data) : inner_(memory_byte_source(std::move(data), "copy.zip")) {}
  std::uint64_t size() const override { return inner_->size(); }
  void read_at(std::uint64_t offset, void* buf, std::size_t n) const override { inner_->read_at(offset, buf, n); }
  std::vector<std::filesystem::path> files() const override { return inner_->files(); }

 private:
  std::unique_ptr<ByteSource> inner_;
};

TEST(ZipRead, CopyingAndMappedReadsAgreeWithTheData) {
  std::vector<TestEntry> entries;
  std::vector<std::string> data;
  for (int i = 0; i < 12; ++i) {
    data.push_back(sample(i == 0 ? 0 : 300 * i + 7, 10 + i));
    TestEntry e{"d/e" + std::to_string(i), data.back(), i % 2 == 1};
    if (i % 3 == 0)
      e.local_extra = std::string(
          "\xfe\xca\x03\x00"
          "abc",
          7);  // local extra unlike the central one
    entries.push_back(e);
  }
  const std::string zip = build_zip(entries);
  auto mapped = open_test_zip(zip);
  auto copying = Archive::open(std::make_unique<CopyOnlySource>(zip), "copy.zip");
  std::vector<std::uint8_t> buf;
  for (std::size_t i = 0; i < data.size(); ++i) {
    mapped->read(i, buf);
    EXPECT_EQ(buf, bytes(data[i])) << i;
    copying->read(i, buf);  // reuses a buffer that held a longer entry: no stale bytes may remain
    EXPECT_EQ(buf, bytes(data[i])) << i;
  }
}

TEST(ZipRead, LocalNameUnlikeTheCentralOneIsRefusedOnBothReadPaths) {
  std::string zip = build_zip({{"good", sample(500, 3), true}});
  zip[30] ^= 0x20;  // first byte of the local header's name: 'g' -> 'G'
  auto mapped = open_test_zip(zip);
  auto copying = Archive::open(std::make_unique<CopyOnlySource>(zip), "copy.zip");
  for (const Archive* ar : {mapped.get(), copying.get()}) {
    try {
      ar->read(0);
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid);
      EXPECT_NE(std::string(e.what()).find("'Good'"), std::string::npos) << e.what();
    }
  }
}

TEST(ZipRead, DeflatedSizeOffByAFewBytesIsRefusedEitherWay) {
  // Inflation runs with some slack past the declared size; a lie smaller than that slack must
  // still be caught, in both directions.
  const std::string data = sample(3000, 9);
  for (const int delta : {-1, -7, 1, 7}) {
    TestEntry e{"e", data, true};
    e.size = static_cast<std::uint32_t>(static_cast<int>(data.size()) + delta);
    auto ar = open_test_zip(build_zip({e}));
    std::vector<std::uint8_t> buf;
    try {
      ar->read(0, buf);
      FAIL() << "expected an error for a size off by " << delta;
    } catch (const Error& err) {
      EXPECT_EQ(err.kind(), ErrorKind::invalid);
      const std::string want = delta < 0 ? "more when inflated" : "3000 bytes";
      EXPECT_NE(std::string(err.what()).find(want), std::string::npos) << err.what();
    }
  }
}

TEST(ZipRead, MethodNamesCoverCommonMethods) {
  EXPECT_EQ(method_name(0), "stored");
  EXPECT_EQ(method_name(8), "deflate");
  EXPECT_EQ(method_name(12), "bzip2");
  EXPECT_EQ(method_name(77), "method-77");
}

}  // namespace
}  // namespace frugal

// Hostile and damaged training data (issue 14): .npy headers whose numbers wrap or overflow, 0-d
// arrays, and stored entries whose bytes no longer match their CRC-32. Each is a bad sample,
// counted against --max-bad-fraction, or Error(invalid); never a crash or another exception.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <unistd.h>

#include "archive/string_sink.h"
#include "archive/zip_writer.h"
#include "dataset/labels_csv.h"
#include "dataset/npy.h"
#include "frugal/loader/loader.h"
#include "frugal/util/error.h"
#include "frugal/util/hash.h"
#include "image/fixtures.h"
#include "test_files.h"

using namespace frugal;

namespace {

using Bytes = std::vector<std::uint8_t>;
using frugal::testing::StringSink;

// A version-1 .npy file: the header dict as given, padded as numpy.save pads it.
Bytes npy(const std::string& dict, const Bytes& data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  Bytes b = {0x93,
             'N',
             'U',
             'M',
             'P',
             'Y',
             1,
             0,
             static_cast<std::uint8_t>(header.size() & 0xff),
             static_cast<std::uint8_t>(header.size() >> 8)};
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

Bytes u8_image(const std::string& shape, std::size_t n, std::uint8_t first) {
  Bytes data(n);
  for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<std::uint8_t>(first + i);
  return npy("{'descr': '|u1', 'fortran_order': False, 'shape': " + shape + ", }", data);
}

// A zip of stored entries (so that the loader reads them through a mapped view).
std::string stored_zip(const std::vector<std::pair<std::string, Bytes>>& entries) {
  StringSink sink;
  ZipWriter w(sink);
  for (const auto& [name, data] : entries) {
    PreparedEntry e;
    e.name = name;
    e.method = 0;
    e.crc32 = crc32(0, data.data(), data.size());
    e.size = data.size();
    e.data = data;
    w.add(e);
  }
  w.finish();
  return sink.s;
}

class HostileData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("frugal-hostile-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { frugal::testing::remove_tree(dir_); }
  std::filesystem::path write(const std::string& name, const std::string& bytes) {
    auto p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  // Every sample of one epoch through a Loader; returns {seen, bad}.
  std::pair<std::uint64_t, std::uint64_t> load_all(std::shared_ptr<const Dataset> ds) {
    LoaderOptions o;
    o.image_size = 4;
    o.batch_size = 2;
    o.train = false;
    o.workers = 1;
    Loader loader(std::move(ds), o);
    loader.start(0);
    while (loader.next()) {}
    return {loader.samples_seen(), loader.samples_bad()};
  }
  std::filesystem::path dir_;
};

void expect_invalid(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning \"" << needle << "\"";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "a " << typeid(e).name() << " escaped: " << e.what();
  }
}

TEST(NpyHeader, AnElementCountThatWrapsIsRefused) {
  // 3 * 6148914691236517206 = 2^64 + 2: wrapped, the two data bytes would pass the size check.
  auto b = npy("{'descr': '|u1', 'fortran_order': False, 'shape': (3, 6148914691236517206), }", {1, 2});
  expect_invalid([&] { frugal::detail::parse_npy(b, "x.npy"); }, "x.npy");
}

TEST(NpyHeader, AByteSizeThatWrapsIsRefused) {
  // 2^61 elements of 8 bytes = 2^64 bytes.
  auto b = npy("{'descr': '<i8', 'fortran_order': False, 'shape': (2305843009213693952,), }", {});
  expect_invalid([&] { frugal::detail::parse_npy(b, "x.npy"); }, "x.npy");
}

TEST(NpyHeader, NumbersOutOfRangeAreBadInputNotStdOutOfRange) {
  auto dims = npy("{'descr': '|u1', 'fortran_order': False, 'shape': (99999999999999999999999, 2), }", {});
  expect_invalid([&] { frugal::detail::parse_npy(dims, "dims.npy"); }, "dims.npy");
  auto item = npy("{'descr': '<u99999999999999', 'fortran_order': False, 'shape': (2,), }", {});
  expect_invalid([&] { frugal::detail::parse_npy(item, "item.npy"); }, "item.npy");
}

TEST(NpyHeader, NegativeDimensionsAndUnknownKeysAreRefused) {
  expect_invalid(
      [&] { frugal::detail::parse_npy(npy("{'descr': '|u1', 'fortran_order': False, 'shape': (-1, 2), }", {}), "n"); },
      "non-negative");
  expect_invalid(
      [&] {
        frugal::detail::parse_npy(npy("{'descr': '|u1', 'fortran_order': False, 'shape': (2,), 'x': 1}", {1, 2}), "k");
      },
      "'x'");
  expect_invalid(
      [&] {
        frugal::detail::parse_npy(npy("{'descr': '|u1', 'shape': (2,), }", {1, 2}), "m");
      },
      "fortran_order");
}

TEST(NpyHeader, WhatNumpyWritesStillParses) {
  auto h = frugal::detail::parse_npy(
      npy("{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }", {1, 0, 0xff, 0xff, 2, 0}), "ok.npy");
  EXPECT_EQ(h.shape, (std::vector<std::int64_t>{3}));
  EXPECT_EQ(frugal::detail::npy_int(
                h, npy("{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }", {1, 0, 0xff, 0xff, 2, 0}), 1),
            -1);
  auto py2 =
      frugal::detail::parse_npy(npy("{'descr': '|u1', 'fortran_order': False, 'shape': (2L, 1L), }", {7, 8}), "py2");
  EXPECT_EQ(py2.shape, (std::vector<std::int64_t>{2, 1}));
  auto scalar = frugal::detail::parse_npy(npy("{'descr': '|u1', 'fortran_order': False, 'shape': (), }", {7}), "0d");
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(scalar.count(), 1u);
}

TEST(NpyImage, SidesBeyondIntOrDataShorterThanTheShapeAreRefused) {
  Image out;
  Bytes four(4, 1);
  // int(2^32 + 2) would be 2: a 2x2 image "fitting" four bytes.
  expect_invalid([&] { frugal::detail::npy_image(four, {(1LL << 32) + 2, 2}, "big.npy", out); }, "big.npy");
  expect_invalid([&] { frugal::detail::npy_image(four, {3, 3}, "short.npy", out); }, "short.npy");
  frugal::detail::npy_image(four, {2, 2}, "ok.npy", out);
  EXPECT_EQ(out.width, 2);
}

TEST_F(HostileData, AZeroDimensionalArrayIsABadSampleNotACrash) {
  auto zip = write("d.zip", stored_zip({{"a/one.npy", u8_image("(4, 4)", 16, 0)},
                                        {"a/two.npy", u8_image("(4, 4)", 16, 1)},
                                        {"b/scalar.npy", u8_image("()", 1, 7)}}));
  DatasetOptions opt;
  opt.max_bad_fraction = 0.5;
  auto ds = Dataset::open(zip, opt);
  ASSERT_EQ(ds->size(), 3u);
  EXPECT_EQ(load_all(ds), (std::pair<std::uint64_t, std::uint64_t>{3, 1}));
}

TEST_F(HostileData, AnNpyFileWithNumbersOutOfRangeIsSkippedAndCounted) {
  auto hostile = npy("{'descr': '|u1', 'fortran_order': False, 'shape': (99999999999999999999999, 4), }", {});
  auto zip = write("d.zip", stored_zip({{"a/one.npy", u8_image("(4, 4)", 16, 0)},
                                        {"a/two.npy", u8_image("(4, 4)", 16, 1)},
                                        {"b/three.npy", u8_image("(4, 4)", 16, 2)},
                                        {"b/hostile.npy", hostile}}));
  DatasetOptions opt;
  opt.max_bad_fraction = 0.5;
  auto ds = Dataset::open(zip, opt);
  ASSERT_EQ(ds->size(), 4u);
  EXPECT_EQ(load_all(ds), (std::pair<std::uint64_t, std::uint64_t>{4, 1}));
  auto strict = Dataset::open(zip);  // --max-bad-fraction 0.01
  expect_invalid([&] { load_all(strict); }, "b/hostile.npy");
}

// Flips one byte of `entry`'s data in the zip file, found by its unique content.
void damage(const std::filesystem::path& zip, const Bytes& content) {
  std::string z;
  {
    std::ifstream in(zip, std::ios::binary);
    z.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto at = z.find(std::string(content.begin(), content.end()));
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(z.find(std::string(content.begin(), content.end()), at + 1), std::string::npos);
  z[at + content.size() - 1] ^= 0x40;  // the last pixel: the file still parses and decodes
  std::ofstream(zip, std::ios::binary | std::ios::trunc) << z;
}

TEST_F(HostileData, AStoredFileSampleFailingItsCrcIsABadSampleNamingTheEntry) {
  Bytes victim = u8_image("(4, 4)", 16, 100);
  auto zip = write("d.zip", stored_zip({{"a/one.npy", u8_image("(4, 4)", 16, 0)},
                                        {"a/two.npy", u8_image("(4, 4)", 16, 30)},
                                        {"b/three.npy", u8_image("(4, 4)", 16, 60)},
                                        {"b/victim.npy", victim}}));
  damage(zip, victim);
  DatasetOptions opt;
  opt.max_bad_fraction = 0.5;
  auto ds = Dataset::open(zip, opt);
  ASSERT_EQ(ds->size(), 4u);
  EXPECT_EQ(load_all(ds), (std::pair<std::uint64_t, std::uint64_t>{4, 1}));
  EXPECT_NE(ds->skipped().summary().find("b/victim.npy"), std::string::npos) << ds->skipped().summary();
  EXPECT_NE(ds->skipped().summary().find("CRC-32"), std::string::npos) << ds->skipped().summary();
  auto strict = Dataset::open(zip);
  expect_invalid([&] { load_all(strict); }, "b/victim.npy");
}

// The GPU path reads a sample's bytes through Dataset::file_bytes: damaged ones are refused there
// as load() refuses them, before nvJPEG could decode them.
TEST_F(HostileData, FileBytesOfAStoredSampleFailingItsCrcAreRefused) {
  Bytes victim = u8_image("(4, 4)", 16, 100);
  auto zip = write("d.zip", stored_zip({{"a/one.npy", u8_image("(4, 4)", 16, 0)}, {"b/victim.npy", victim}}));
  damage(zip, victim);
  auto ds = Dataset::open(zip);
  ASSERT_EQ(ds->size(), 2u);
  std::vector<std::uint8_t> buffer;
  for (std::size_t i = 0; i < ds->size(); ++i) {
    if (ds->name(i) == "b/victim.npy")
      expect_invalid([&] { ds->file_bytes(i, buffer); }, "b/victim.npy");
    else
      EXPECT_EQ(ds->file_bytes(i, buffer)->size(), u8_image("(4, 4)", 16, 0).size());
  }
}

TEST_F(HostileData, AStoredArrayFailingItsCrcMakesEachOfItsSamplesBad) {
  Bytes x = u8_image("(3, 2, 2)", 12, 50);
  Bytes y = npy("{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }", {0, 1, 0});
  auto zip = write("d.zip", stored_zip({{"x.npy", x}, {"y.npy", y}}));
  DatasetOptions opt;
  opt.max_bad_fraction = 1;
  EXPECT_EQ(load_all(Dataset::open(zip, opt)), (std::pair<std::uint64_t, std::uint64_t>{3, 0}));
  damage(zip, x);
  auto ds = Dataset::open(zip, opt);
  EXPECT_EQ(load_all(ds), (std::pair<std::uint64_t, std::uint64_t>{3, 3}));
  EXPECT_NE(ds->skipped().summary().find("CRC-32"), std::string::npos) << ds->skipped().summary();
}

TEST(LabelsCsv, PathsAreNormalisedAndConflictsAndEscapesRefused) {
  auto t = frugal::detail::parse_labels_csv("\xEF\xBB\xBFpath,label\r\n./d/a.jpg,cat\nd//b,with comma.jpg,\"dog\"\n",
                                            "l.csv");
  EXPECT_EQ(t, (std::map<std::string, std::string>{{"d/a.jpg", "cat"}, {"d/b,with comma.jpg", "dog"}}));
  expect_invalid([] { frugal::detail::parse_labels_csv("a.jpg,cat\nb.jpg\n", "l.csv"); }, "l.csv:2");
  expect_invalid([] { frugal::detail::parse_labels_csv("a.jpg,cat\n./a.jpg,dog\n", "l.csv"); }, "l.csv:2");
  expect_invalid([] { frugal::detail::parse_labels_csv("../a.jpg,cat\n", "l.csv"); }, "l.csv:1");
  expect_invalid([] { frugal::detail::parse_labels_csv(std::string_view("a\0b,cat\n", 8), "l.csv"); }, "l.csv:1");
}

}  // namespace

// Memory follows the bytes, not a file's size (issue 47; read_limit.h): an image or array larger
// than the cap is refused from the size its folder, zip or tar lists, before anything is
// allocated; a .npy header is read by its size. The large files here are sparse: no disk.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "archive/tar_fixture.h"
#include "archive/string_sink.h"
#include "archive/zip_writer.h"
#include "dataset/small_data.h"
#include "dataset/npy.h"
#include "frugal/archive/read_limit.h"
#include "frugal/dataset/dataset.h"
#include "frugal/dataset/predict_inputs.h"
#include "frugal/image/image.h"
#include "frugal/util/error.h"

using namespace frugal;

namespace {

using frugal::testing::StringSink;
using frugal::testing::tiny_png;

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

// A .npy header (version 1) for a uint8 array of `shape`, padded to 128 bytes as NumPy pads it.
std::string npy_header(const std::string& shape) {
  std::string dict = "{'descr': '|u1', 'fortran_order': False, 'shape': " + shape + ", }";
  dict += std::string(127 - 10 - dict.size(), ' ') + "\n";
  return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(dict.size()) + '\0' + dict;
}

class FileSizeCap : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("frugal-size-cap-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // `head`, then a hole up to `size` bytes (sparse: no disk).
  std::filesystem::path write(const std::string& name, const std::string& head, std::uint64_t size = 0) {
    const auto p = dir_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary).write(head.data(), static_cast<std::streamsize>(head.size()));
    if (size > head.size()) std::filesystem::resize_file(p, size);
    return p;
  }
  void two_classes() {
    for (const char* cls : {"cat", "dog"})
      for (int i = 0; i < 2; ++i)
        write(std::string("data/") + cls + "/" + std::to_string(i) + ".png", tiny_png(static_cast<std::uint8_t>(i)));
  }
  std::filesystem::path dir_;
};

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST_F(FileSizeCap, AZipEntryOverTheCapIsRefusedBeforeAnythingIsAllocated) {
  StringSink sink;
  ZipWriter w(sink);
  w.add(prepare_entry("a/big.png", std::vector<std::uint8_t>(3 * kMiB, 7), 6));
  w.add(prepare_entry("a/small.png", std::vector<std::uint8_t>(100, 7), 6));
  w.finish();
  auto a = Archive::open(memory_byte_source(sink.s, "m.zip"), "m.zip");
  std::vector<std::uint8_t> out;
  const std::string what = message_of([&] { read_entry_capped(*a, *a->find("a/big.png"), out, 2 * kMiB); });
  EXPECT_NE(what.find("m.zip:a/big.png: expected a file of at most 2.00 MiB (--max-file-bytes), found 3.00 MiB"),
            std::string::npos)
      << what;
  EXPECT_NE(what.find("raise --max-file-bytes"), std::string::npos) << what;
  EXPECT_EQ(out.capacity(), 0u);  // refused from the central directory's size
  read_entry_capped(*a, *a->find("a/small.png"), out, 2 * kMiB);
  EXPECT_EQ(out.size(), 100u);
}

TEST_F(FileSizeCap, ATarMemberOverTheCapIsRefusedFromItsHeader) {
  const auto tar =
      write("t.tar", frugal::testing::tar_file("big.png", std::string(5 * kMiB, 'x')) + frugal::testing::tar_end());
  auto a = Archive::open(tar);
  std::vector<std::uint8_t> out;
  const std::string what = message_of([&] { read_entry_capped(*a, 0, out, kMiB); });
  EXPECT_NE(what.find("t.tar:big.png: expected a file of at most 1.00 MiB"), std::string::npos) << what;
  EXPECT_EQ(out.capacity(), 0u);
}

TEST_F(FileSizeCap, AFileOnDiskIsRefusedByItsSizeAndNeverReadWhole) {
  const auto big = write("big.jpg", tiny_png(1), std::uint64_t{4} << 30);  // 4 GiB, sparse
  const auto t0 = std::chrono::steady_clock::now();
  const std::string what = message_of([&] { read_file_capped(big, kDefaultMaxFileBytes); });
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_NE(what.find("expected a file of at most 256 MiB (--max-file-bytes), found 4.00 GiB (4294967296 bytes)"),
            std::string::npos)
      << what;
  const auto small = write("small.png", tiny_png(2));
  EXPECT_EQ(read_file_capped(small, kDefaultMaxFileBytes).size(), tiny_png(2).size());
  EXPECT_EQ(read_file_capped(small, tiny_png(2).size()).size(), tiny_png(2).size());  // the cap itself is allowed
  message_of([&] { read_file_capped(small, tiny_png(2).size() - 1); });
}

TEST_F(FileSizeCap, PredictRefusesAFileAndAnArchiveMemberOverTheCap) {
  write("in/big.png", tiny_png(1), 3 * kMiB);
  write("in/ok.png", tiny_png(2));
  const auto p = PredictInputs::expand({(dir_ / "in").string(), (dir_ / "in/big.png").string()});
  ASSERT_EQ(p.images().size(), 3u);
  std::vector<std::uint8_t> out;
  for (const PredictImage& image : p.images()) {
    if (image.name.ends_with("ok.png")) {
      p.read(image, out, 2 * kMiB);
      EXPECT_EQ(out.size(), tiny_png(2).size());
    } else {
      const std::string what = message_of([&] { p.read(image, out, 2 * kMiB); });
      EXPECT_NE(what.find("big.png: expected a file of at most 2.00 MiB (--max-file-bytes)"), std::string::npos)
          << what;
    }
  }
}

TEST_F(FileSizeCap, TrainingSkipsAndCountsAFileOverTheCapByItsListedSize) {
  two_classes();
  write("data/cat/big.png", tiny_png(3), 5 * kMiB);
  DatasetOptions o;
  o.max_file_bytes = 4 * kMiB;
  auto ds = Dataset::open(dir_ / "data", o);
  EXPECT_EQ(ds->size(), 4u);
  const SkipReport r = ds->skipped();
  EXPECT_EQ(r.counts.at("larger than --max-file-bytes (4.00 MiB)"), 1u) << r.summary();
  EXPECT_EQ(r.examples.at("larger than --max-file-bytes (4.00 MiB)"), "cat/big.png, 5.00 MiB");
  o.max_file_bytes = 8 * kMiB;  // raised: it is a sample again
  EXPECT_EQ(Dataset::open(dir_ / "data", o)->size(), 5u);
}

TEST_F(FileSizeCap, ANpyHeaderIsReadByItsSizeNotTheWholeFile) {
  two_classes();
  // A 2 GB (H, W) image array: its 128-byte header, then a hole. Read whole it took 2.3 GB and 11 s.
  write("data/dog/big.npy", npy_header("(44721, 44721)"), 128 + std::uint64_t{44721} * 44721);
  const auto t0 = std::chrono::steady_clock::now();
  auto ds = Dataset::open(dir_ / "data");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_EQ(ds->size(), 4u);
  EXPECT_EQ(ds->skipped().counts.at("larger than --max-file-bytes (256 MiB)"), 1u) << ds->skipped().summary();
}

TEST_F(FileSizeCap, AnArrayOfSamplesReadIntoMemoryIsCappedToo) {
  // (N, 5, 5) uint8 images and their (N,) labels, in a folder: read whole, so held to the cap.
  const std::string x = npy_header("(64, 5, 5)") + std::string(64 * 25, '\x10');
  std::string y = npy_header("(64,)");
  for (int i = 0; i < 64; ++i) y += static_cast<char>(i % 2);
  write("arr/x.npy", x);
  write("arr/y.npy", y);
  DatasetOptions o;
  EXPECT_EQ(Dataset::open(dir_ / "arr", o)->size(), 64u);
  o.max_file_bytes = 512;
  const std::string what = message_of([&] { Dataset::open(dir_ / "arr", o); });
  EXPECT_NE(what.find("larger than --max-file-bytes (512 B)"), std::string::npos) << what;
}

TEST_F(FileSizeCap, NpyHeadersParseFromTheirOwnBytes) {
  const std::string h = npy_header("(3, 5)");
  const std::vector<std::uint8_t> head(h.begin(), h.end());
  EXPECT_EQ(detail::npy_header_size(head, "h"), 128u);
  const detail::NpyHeader parsed = detail::parse_npy_header(head, 128 + 15, "h");
  EXPECT_EQ(parsed.shape, (std::vector<std::int64_t>{3, 5}));
  EXPECT_EQ(parsed.data_offset, 128u);
  EXPECT_THROW(detail::parse_npy_header(head, 128 + 14, "h"), Error);  // less data than the shape
  EXPECT_THROW(detail::parse_npy_header(std::span<const std::uint8_t>(head.data(), 100), 1000, "h"),
               Error);  // a truncated header
}

TEST_F(FileSizeCap, AnEntrysHeadIsReadWithoutTheRest) {
  const auto big = write("f/big.bin", "0123456789", std::uint64_t{3} << 30);  // 3 GiB, sparse
  auto a = Archive::open(dir_ / "f");
  const auto t0 = std::chrono::steady_clock::now();
  const auto head = read_entry_head(*a, 0, 10);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_EQ(std::string(head.begin(), head.end()), "0123456789");
  EXPECT_EQ(read_entry_head(*a, 0, 4).size(), 4u);
  (void)big;
  // Stored in a zip (a mapped view) and deflated (inflated a piece at a time): the same bytes.
  for (int level : {0, 6}) {
    StringSink sink;
    ZipWriter w(sink);
    std::vector<std::uint8_t> data(5 * kMiB, 1);
    std::copy_n("0123456789", 10, data.begin());
    w.add(prepare_entry("x.bin", data, level));
    w.finish();
    auto z = Archive::open(memory_byte_source(sink.s, "h.zip"), "h.zip");
    const auto h = read_entry_head(*z, 0, 10);
    EXPECT_EQ(std::string(h.begin(), h.end()), "0123456789") << level;
  }
}

}  // namespace

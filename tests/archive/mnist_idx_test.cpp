#include <gtest/gtest.h>

#include <fstream>

#include "archive/mnist_idx.h"
#include "byte_strings.h"
#include "frugal/util/error.h"
#include "frugal/image/image.h"
#include "test_files.h"

namespace fs = std::filesystem;
using namespace frugal;

namespace {
using frugal::testing::be32;
using frugal::testing::fresh_dir;
using frugal::testing::write;

// 3 images of 2x3 pixels, pixel value = 10 * image + position; labels 2, 0, 1.
void write_tiny_set(const fs::path& dir, const std::string& set) {
  std::string img = be32(0x803) + be32(3) + be32(2) + be32(3);
  for (int i = 0; i < 3; ++i)
    for (int p = 0; p < 6; ++p) img += char(10 * i + p);
  write(dir / (set + "-images-idx3-ubyte"), img);
  write(dir / (set + "-labels-idx1-ubyte"), be32(0x801) + be32(3) + std::string("\x02\x00\x01", 3));
}
}  // namespace

TEST(Idx, ReadsImagesAndLabels) {
  auto dir = fresh_dir("idx_read");
  write_tiny_set(dir, "train");
  IdxImages img = read_idx_images(dir / "train-images-idx3-ubyte");
  EXPECT_EQ(img.count, 3u);
  EXPECT_EQ(img.rows, 2u);
  EXPECT_EQ(img.cols, 3u);
  ASSERT_EQ(img.pixels.size(), 18u);
  EXPECT_EQ(img.pixels[6 + 5], 15);
  EXPECT_EQ(read_idx_labels(dir / "train-labels-idx1-ubyte"), (std::vector<std::uint8_t>{2, 0, 1}));
}

TEST(Idx, GzippedFilesReadLikeRawOnes) {
  auto dir = fresh_dir("idx_gz");
  write_tiny_set(dir, "t10k");
  auto raw = read_idx_images(dir / "t10k-images-idx3-ubyte").pixels;
  ASSERT_EQ(std::system(("gzip -kn " + (dir / "t10k-images-idx3-ubyte").string()).c_str()), 0);
  EXPECT_EQ(read_idx_images(dir / "t10k-images-idx3-ubyte.gz").pixels, raw);
}

TEST(Idx, TruncatedFileIsRejected) {
  auto dir = fresh_dir("idx_trunc");
  write(dir / "x-images-idx3-ubyte", be32(0x803) + be32(3) + be32(2) + be32(3) + "short");
  EXPECT_THROW(read_idx_images(dir / "x-images-idx3-ubyte"), Error);
  write(dir / "y-images-idx3-ubyte", "PK\x03\x04 not idx at all");
  EXPECT_THROW(read_idx_images(dir / "y-images-idx3-ubyte"), Error);
}

TEST(Idx, LabelsAreFoundBesideTheImagesFile) {
  auto dir = fresh_dir("idx_find");
  write_tiny_set(dir, "train");
  IdxSet s = find_idx_set(dir / "train-images-idx3-ubyte", "");
  EXPECT_EQ(s.name, "train");
  EXPECT_EQ(s.labels, dir / "train-labels-idx1-ubyte");
}

TEST(Idx, FolderWithTwoSetsNeedsAChoice) {
  auto dir = fresh_dir("idx_two");
  write_tiny_set(dir, "train");
  write_tiny_set(dir, "t10k");
  try {
    find_idx_set(dir, "");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("--idx-set"), std::string::npos);
  }
  EXPECT_EQ(find_idx_set(dir, "t10k").images, dir / "t10k-images-idx3-ubyte");
}

TEST(Idx, FashionNamesOnlyForFashionMnistWithTenClasses) {
  auto fashion = default_class_names("/data/fashion-mnist/train-images-idx3-ubyte.gz", 10);
  EXPECT_EQ(fashion.front(), "0_T-shirt_top");
  EXPECT_EQ(fashion.back(), "9_Ankle_boot");
  EXPECT_EQ(default_class_names("/data/mnist/train-images-idx3-ubyte.gz", 10).front(), "0");
  auto many = default_class_names("x", 12);
  EXPECT_EQ(many[2], "02");
  EXPECT_TRUE(std::is_sorted(many.begin(), many.end()));
}

TEST(Idx, PngEncoderWritesAValidSignature) {
  std::uint8_t px[6] = {0, 50, 100, 150, 200, 250};
  auto png = encode_png(px, 3, 2, 1);
  ASSERT_GT(png.size(), 8u);
  EXPECT_EQ(std::string(png.begin() + 1, png.begin() + 4), "PNG");
}

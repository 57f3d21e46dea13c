// Images as they come, through the data layer: WebP, GIF, BMP and TIFF are samples like JPEG and
// PNG; every file that is not is counted by its reason, and a class whose every file was skipped
// is named (tests/dataset/make_archives.py: formats.zip, one_readable_class.zip).
#include <gtest/gtest.h>

#include "dataset/data_fixtures.h"
#include "frugal/dataset/dataset.h"
#include "frugal/util/error.h"
#include "frugal/image/image.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

class DatasetFormats : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = data_fixtures();
    if (dir_.empty()) GTEST_SKIP() << "no Python with PIL to make the archives";
  }
  std::filesystem::path dir_;
};

// Stored (formats known by their bytes) and deflated (by their names) alike.
TEST_F(DatasetFormats, AClassOfWebpFilesIsAClassAndEverySkippedFileHasItsReason) {
  for (const char* zip : {"formats.zip", "formats_deflated.zip"}) {
    auto ds = Dataset::open(dir_ / zip);
    EXPECT_EQ(ds->classes(), (std::vector<std::string>{"mixed", "webp_only"})) << zip;
    EXPECT_EQ(ds->size(), 6u + 6u) << zip;
    const SkipReport r = ds->skipped();
    EXPECT_EQ(r.counts.at("unsupported format (HEIC)"), 4u) << r.summary();
    EXPECT_EQ(r.counts.at("unsupported format (AVIF)"), 1u) << r.summary();
    EXPECT_EQ(r.counts.at("empty file"), 2u) << r.summary();
    EXPECT_EQ(r.counts.at("not an image"), 1u) << r.summary();
    EXPECT_EQ(r.total(), 8u) << r.summary();
    EXPECT_NE(r.summary().find("4 unsupported format (HEIC) (e.g. shapes/phone/IMG_"), std::string::npos)
        << r.summary();
    // The phone's class is named, with why it is not one.
    ASSERT_EQ(r.empty_classes.size(), 1u) << zip;
    EXPECT_EQ(r.empty_classes.begin()->first, "phone");
    EXPECT_NE(r.empty_classes.begin()->second.find("4 unsupported format (HEIC)"), std::string::npos)
        << r.empty_classes.begin()->second;
    // Every sample decodes through the loader's path, each format.
    TransformOptions t;
    t.image_size = 24;
    for (std::size_t i = 0; i < ds->size(); ++i) {
      Image scratch, out;
      ds->load(i, t, i, scratch, out);
      EXPECT_EQ(out.width, 24) << ds->name(i);
      EXPECT_EQ(ds->classes()[ds->label(i)], ds->name(i).substr(7, ds->name(i).find('/', 7) - 7)) << ds->name(i);
    }
    EXPECT_EQ(ds->skipped().counts.count("undecodable"), 0u) << ds->skipped().summary();
  }
}

TEST_F(DatasetFormats, AClassWhoseFilesAreAllSkippedIsNamedWithTheReason) {
  auto ds = Dataset::open(dir_ / "one_readable_class.zip");
  EXPECT_EQ(ds->classes(), std::vector<std::string>{"a"});
  const SkipReport r = ds->skipped();
  ASSERT_EQ(r.empty_classes.count("b"), 1u) << r.summary();
  EXPECT_EQ(r.empty_classes.at("b").rfind("3 unsupported format (HEIC) (e.g. set/b/", 0), 0u)
      << r.empty_classes.at("b");
}

// A phone photo stored sideways (EXIF orientation 6, 48 x 30 as stored) is trained on upright
// unless the option says otherwise; the probe's typical side is the same either way.
TEST_F(DatasetFormats, ExifOrientationIsAppliedUnlessTheOptionIgnoresIt) {
  DatasetOptions turned, stored;
  stored.exif_orientation = ExifOrientation::ignore;
  auto a = Dataset::open(dir_ / "formats.zip", turned);
  auto b = Dataset::open(dir_ / "formats.zip", stored);
  std::size_t i = 0;
  while (i < a->size() && a->name(i) != "shapes/mixed/turned.jpg") ++i;
  ASSERT_LT(i, a->size());
  TransformOptions t;
  t.image_size = 16;
  t.train = false;
  Image scratch, up, sideways, want;
  a->load(i, t, 0, scratch, up);
  b->load(i, t, 0, scratch, sideways);
  EXPECT_NE(up.pixels, sideways.pixels);
  std::vector<std::uint8_t> buffer;
  const auto bytes = a->file_bytes(i, buffer);
  ASSERT_TRUE(bytes);
  const ImageInfo info = read_image_info(*bytes, "turned.jpg");
  EXPECT_EQ(info.orientation, 6);
  EXPECT_EQ(info.width, 30);
  t.channels = a->channels();
  decode_transform(*bytes, t, 1 << 30, 0, "turned.jpg", scratch, want);
  EXPECT_EQ(up.pixels, want.pixels);
  EXPECT_EQ(a->native_size(), b->native_size());
}

}  // namespace

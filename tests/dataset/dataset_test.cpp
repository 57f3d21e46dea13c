#include <gtest/gtest.h>

#include <set>

#include "dataset/data_fixtures.h"
#include "frugal/archive/archive.h"
#include "frugal/dataset/dataset.h"
#include "frugal/util/error.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

class DatasetLayouts : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = data_fixtures();
    if (dir_.empty()) GTEST_SKIP() << "no Python with PIL to make the archives";
  }
  std::filesystem::path dir_;
};

TEST_F(DatasetLayouts, ClassFoldersUnderACommonRootSkipJunkAndCountIt) {
  for (const char* zip : {"folders.zip", "folders_deflated.zip"}) {
    auto ds = Dataset::open(dir_ / zip);
    EXPECT_EQ(ds->classes(), (std::vector<std::string>{"cat", "dog", "eel"})) << zip;
    EXPECT_EQ(ds->size(), 36u + 2u) << zip;  // upper-case .JPG and the PNG named .jpg count
    SkipReport r = ds->skipped();
    EXPECT_EQ(r.counts["junk (__MACOSX)"], 1u) << r.summary();
    EXPECT_EQ(r.counts["junk (AppleDouble ._ file)"], 1u) << r.summary();
    EXPECT_EQ(r.counts["junk (.DS_Store)"], 1u) << r.summary();
    EXPECT_EQ(r.counts["junk (Thumbs.db)"], 1u) << r.summary();
    EXPECT_EQ(r.counts["hidden"], 1u) << r.summary();
    EXPECT_EQ(r.counts["not an image"], 1u) << r.summary();
    EXPECT_EQ(r.total(), 6u);
    EXPECT_EQ(ds->channels(), 3);
    EXPECT_EQ(ds->native_size(), 30);
    for (std::size_t i = 0; i < ds->size(); ++i)
      EXPECT_EQ(ds->classes()[ds->label(i)], ds->name(i).substr(10, 3)) << ds->name(i);
  }
}

TEST_F(DatasetLayouts, LabelsCsvNamesTheClassOfEachFile) {
  auto ds = Dataset::open(dir_ / "csv.zip");
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(ds->size(), 9u);  // img9.png is not listed
  EXPECT_EQ(ds->skipped().counts["no label (not in labels.csv)"], 1u);
  for (std::size_t i = 0; i < ds->size(); ++i) {
    int n = ds->name(i)[8] - '0';
    EXPECT_EQ(ds->classes()[ds->label(i)], n % 2 ? "a" : "b") << ds->name(i);
  }
}

TEST_F(DatasetLayouts, LabelPatternTakesTheCaptureGroup) {
  DatasetOptions o;
  o.label_pattern = R"(^([a-z]+)\.\d+\.jpg$)";
  auto ds = Dataset::open(dir_ / "pattern.zip", o);
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(ds->size(), 10u);
  EXPECT_EQ(ds->skipped().counts["no label (--label-pattern did not match)"], 1u);
  o.label_pattern = "(a)(b)";
  EXPECT_THROW(Dataset::open(dir_ / "pattern.zip", o), Error);
}

TEST_F(DatasetLayouts, NpyArrayWithLabelsArrayIsReadFromTheArchive) {
  auto ds = Dataset::open(dir_ / "npy_arrays.zip");
  ASSERT_EQ(ds->size(), 30u);
  EXPECT_EQ(ds->classes().size(), 11u);
  EXPECT_EQ(ds->classes()[10], "10");  // numeric class names sort as numbers
  EXPECT_EQ(ds->channels(), 1);
  EXPECT_EQ(ds->native_size(), 28);
  EXPECT_EQ(ds->label(13), 2);
  // Eval at native size is the identity: the sample comes back as stored.
  auto expected = read_bytes(dir_ / "npy_x.npy");
  TransformOptions t;
  t.image_size = 28;
  t.train = false;
  t.small = true;
  Image scratch, out;
  ds->load(13, t, 0, scratch, out);
  std::size_t header = expected.size() - 30 * 28 * 28;
  EXPECT_TRUE(std::equal(out.pixels.begin(), out.pixels.end(), expected.begin() + header + 13 * 28 * 28));
}

// What the GPU path decodes: each file sample's bytes as the archive holds them, stored (a view)
// or deflated (inflated into the caller's buffer); none for the samples of an array member.
TEST_F(DatasetLayouts, FileBytesAreTheEntryAsStoredOrInflated) {
  for (const char* zip : {"folders.zip", "folders_deflated.zip"}) {
    auto ds = Dataset::open(dir_ / zip);
    auto archive = Archive::open(dir_ / zip);
    std::vector<std::uint8_t> buffer;
    for (std::size_t i = 0; i < ds->size(); ++i) {
      auto bytes = ds->file_bytes(i, buffer);
      ASSERT_TRUE(bytes.has_value()) << ds->name(i);
      auto want = archive->read(*archive->find(ds->name(i)));
      EXPECT_TRUE(std::equal(bytes->begin(), bytes->end(), want.begin(), want.end())) << zip << " " << ds->name(i);
    }
  }
  auto arrays = Dataset::open(dir_ / "npy_arrays.zip");
  std::vector<std::uint8_t> buffer;
  EXPECT_FALSE(arrays->file_bytes(13, buffer).has_value());
}

TEST_F(DatasetLayouts, NpyFilesAreOneSampleEach) {
  auto ds = Dataset::open(dir_ / "npy_files.zip");
  EXPECT_EQ(ds->size(), 8u);
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(ds->channels(), 3);
  TransformOptions t;
  t.image_size = 16;
  Image scratch, out;
  ds->load(0, t, 1, scratch, out);
  EXPECT_EQ(out.width, 16);
  EXPECT_EQ(out.channels, 3);
}

TEST_F(DatasetLayouts, GrayscaleDataHasOneChannelUnlessThreeAreAsked) {
  EXPECT_EQ(Dataset::open(dir_ / "gray28.zip")->channels(), 1);
  DatasetOptions o;
  o.channels = 3;
  EXPECT_EQ(Dataset::open(dir_ / "gray28.zip", o)->channels(), 3);
}

TEST_F(DatasetLayouts, ValidationSplitIsStableAndDoesNotMoveWhenFilesAreAdded) {
  auto a = Dataset::open(dir_ / "folders.zip")->split_val(0.3);
  auto b = Dataset::open(dir_ / "folders_more.zip")->split_val(0.3);
  std::set<std::string> val_a, val_b, train_a;
  for (std::size_t i = 0; i < a.second->size(); ++i) val_a.insert(a.second->name(i));
  for (std::size_t i = 0; i < a.first->size(); ++i) train_a.insert(a.first->name(i));
  for (std::size_t i = 0; i < b.second->size(); ++i) val_b.insert(b.second->name(i));
  EXPECT_EQ(val_a.size() + train_a.size(), 38u);
  EXPECT_GT(val_a.size(), 3u);
  EXPECT_LT(val_a.size(), 25u);
  for (const auto& n : val_a) {
    EXPECT_TRUE(val_b.count(n)) << n << " moved out of validation";
    EXPECT_FALSE(train_a.count(n)) << n;
  }
  for (const auto& n : val_b)
    if (n.find("/new") == std::string::npos) EXPECT_TRUE(val_a.count(n)) << n << " moved into validation";
}

TEST_F(DatasetLayouts, SubsetKeepsNamesAndLabels) {
  auto ds = Dataset::open(dir_ / "folders.zip");
  auto sub = ds->subset({5, 2});
  ASSERT_EQ(sub->size(), 2u);
  EXPECT_EQ(sub->name(0), ds->name(5));
  EXPECT_EQ(sub->label(1), ds->label(2));
  EXPECT_EQ(sub->classes(), ds->classes());
}

TEST_F(DatasetLayouts, AnArchiveWithoutImagesSaysWhatWasSkipped) {
  try {
    DatasetOptions o;
    o.label_pattern = "^(zzz)";
    Dataset::open(dir_ / "pattern.zip", o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid);
    EXPECT_NE(std::string(e.what()).find("--label-pattern did not match"), std::string::npos) << e.what();
  }
}

}  // namespace

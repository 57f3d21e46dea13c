// Issue 42 item 3: files are recognised by their bytes when their name says nothing (an
// extensionless JPEG or PNG trained as "not an image" while predict read it), links to folders
// inside the data are walked and the others skipped by what they are; item 4: --exclude leaves
// files out unread, counted as "excluded"; validation labelled by its own file (--val-labels).
#include <gtest/gtest.h>

#include "archive/zip_read_fixture.h"
#include "dataset/small_data.h"
#include "frugal/dataset/dataset.h"
#include "frugal/dataset/train_val.h"
#include "frugal/image/image.h"
#include "frugal/util/error.h"

using namespace frugal;
namespace fs = std::filesystem;

namespace {

using frugal::testing::png;

std::vector<std::string> names(const Dataset& d) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < d.size(); ++i) out.push_back(d.name(i));
  std::sort(out.begin(), out.end());
  return out;
}

class FilesByBytes : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = frugal::testing::temp_dir(std::string("by-bytes-") +
                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override { fs::remove_all(dir_); }
  void put(const std::string& name, const std::string& bytes) {
    fs::create_directories((dir_ / name).parent_path());
    frugal::testing::write(dir_ / name, bytes);
  }
  fs::path dir_;
};

TEST_F(FilesByBytes, AFileWhoseNameSaysNothingIsAnImageByItsBytes) {
  put("data/a/0", png(10));
  put("data/a/1.dat", png(20));
  put("data/b/0.png", png(200));
  put("data/b/1", png(210));
  put("data/b/notes.txt", png(220));  // a name that says text: not opened
  put("data/b/README", "plain text, no extension");
  auto d = Dataset::open(dir_ / "data");
  EXPECT_EQ(names(*d), (std::vector<std::string>{"a/0", "a/1.dat", "b/0.png", "b/1"}));
  EXPECT_EQ(d->classes(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(d->skipped().counts.at("not an image"), 2u);
  EXPECT_EQ(d->taken_by_bytes(), "3 files whose name does not say image (e.g. a/0) are images by their bytes");
  // Loaded by their bytes too.
  Image scratch, out;
  TransformOptions t;
  t.image_size = 8;
  for (std::size_t i = 0; i < d->size(); ++i) EXPECT_NO_THROW(d->load(i, t, 0, scratch, out)) << d->name(i);
}

TEST_F(FilesByBytes, ExcludedFilesAreNeverReadAndCounted) {
  put("data/train/a/0.png", png(10));
  put("data/train/a/1.png", png(20));
  put("data/train/a/2.png", "not a png: would be undecodable");
  put("data/train/b/0.png", png(200));
  put("data/train/b/1.png", png(210));
  put("data/train/b/x.tmp", png(220));
  put("data/val/a/0.png", png(11));
  put("data/val/a/1.png", png(12));
  put("data/val/b/0.png", png(201));
  DatasetOptions o;
  o.exclude = {"train/a/2.png", "*.tmp", "b/1.png"};  // from the data's top, a name, from the split folder
  auto d = Dataset::open(dir_ / "data", o);
  EXPECT_EQ(names(*d), (std::vector<std::string>{"a/0.png", "a/1.png", "b/0.png"}));
  EXPECT_EQ(d->skipped().counts.at("excluded"), 3u);
  o.exclude = {"val/**/0.png"};
  o.split = SplitFolder::validation;
  auto v = Dataset::open(dir_ / "data", o);
  EXPECT_EQ(names(*v), (std::vector<std::string>{"a/1.png"}));
  EXPECT_EQ(v->skipped().counts.at("excluded"), 2u);
}

TEST_F(FilesByBytes, LinksToFoldersInsideAreClassesAndOthersAreSkippedByWhatTheyAre) {
  put("data/a/0.png", png(10));
  put("data/a/1.png", png(20));
  put("data/pool/b/0.png", png(200));
  put("data/pool/b/1.png", png(210));
  put("elsewhere/c/0.png", png(100));
  fs::create_directory_symlink("pool/b", dir_ / "data" / "b");
  fs::create_directory_symlink("../elsewhere/c", dir_ / "data" / "c");
  fs::create_directory_symlink("..", dir_ / "data" / "a" / "up");
  DatasetOptions o;
  o.exclude = {"pool/**"};
  auto d = Dataset::open(dir_ / "data", o);
  EXPECT_EQ(names(*d), (std::vector<std::string>{"a/0.png", "a/1.png", "b/0.png", "b/1.png"}));
  const auto counts = d->skipped().counts;
  EXPECT_EQ(counts.at("link to a folder outside the data (never followed)"), 1u);
  EXPECT_EQ(counts.at("link to a folder holding it (a cycle; never followed)"), 1u);
  EXPECT_EQ(counts.at("excluded"), 2u);
}

class ValLabels : public FilesByBytes {
 protected:
  // Tiny-ImageNet's layout: train/<wnid>/images/*, val/images/* labelled by val/val_annotations.txt.
  void SetUp() override {
    FilesByBytes::SetUp();
    for (const char* wnid : {"n01", "n02"})
      for (int i = 0; i < 2; ++i) {
        put(std::string("tiny/train/") + wnid + "/images/" + wnid + "_" + std::to_string(i) + ".JPEG",
            png(static_cast<std::uint8_t>(wnid[2] * 40 + i)));
        put(std::string("tiny/train/") + wnid + "/" + wnid + "_boxes.txt", "x\t0\t0\t8\t8\n");
      }
    for (int i = 0; i < 4; ++i)
      put("tiny/val/images/val_" + std::to_string(i) + ".JPEG", png(static_cast<std::uint8_t>(i)));
    put("tiny/wnids.txt", "n01\nn02\n");
  }
  TrainValOptions options(const std::string& annotations) {
    put("tiny/val/val_annotations.txt", annotations);
    TrainValOptions o;
    o.data = (dir_ / "tiny").string();
    o.val_labels.labels = "val/val_annotations.txt";
    o.val_labels.images_dir = "val/images";
    o.dataset.labels_header = "no";
    return o;
  }
};

TEST_F(ValLabels, TheValidationFolderIsLabelledByItsOwnFile) {
  auto tv =
      open_train_val(options("val_0.JPEG\tn01\t0\t0\t8\t8\nval_1.JPEG\tn02\t0\t0\t8\t8\n"
                             "val_2.JPEG\tn01\t0\t0\t8\t8\nval_3.JPEG\tn02\t0\t0\t8\t8\n"));
  EXPECT_EQ(tv.classes, (std::vector<std::string>{"n01", "n02"}));
  EXPECT_EQ(tv.train->size(), 4u);
  ASSERT_TRUE(tv.val);
  EXPECT_EQ(tv.val->size(), 4u);
  EXPECT_EQ(tv.val->classes(), tv.classes);
  for (std::size_t i = 0; i < tv.val->size(); ++i)
    EXPECT_EQ(tv.val->label(i),
              tv.val->name(i) == "images/val_0.JPEG" || tv.val->name(i) == "images/val_2.JPEG" ? 0 : 1)
        << tv.val->name(i);
  EXPECT_NE(tv.decided.value("val_labels", "").find("val/val_annotations.txt"), std::string::npos);
}

TEST_F(ValLabels, AValidationLabelThatIsNoTrainingClassIsRefusedNamingIt) {
  try {
    open_train_val(options("val_0.JPEG\tn01\nval_1.JPEG\tn02\nval_2.JPEG\tn09\nval_3.JPEG\tn02\n"));
    FAIL() << "a validation label of no training class was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid);
    EXPECT_NE(std::string(e.what()).find("\"n09\""), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("val/val_annotations.txt"), std::string::npos) << e.what();
  }
}

TEST_F(ValLabels, ATrainingClassNoValidationImageHasIsRefusedNamingIt) {
  try {
    open_train_val(options("val_0.JPEG\tn01\nval_1.JPEG\tn01\n"));
    FAIL() << "validation without class n02 was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid);
    EXPECT_NE(std::string(e.what()).find("\"n02\""), std::string::npos) << e.what();
  }
}

TEST_F(ValLabels, WithoutValidationDataOfItsOwnTheyAreAUsageError) {
  TrainValOptions o = options("val_0.JPEG\tn01\n");
  o.data = (dir_ / "tiny" / "train").string();  // no split folders: validation would be split off
  try {
    open_train_val(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage) << e.what();
  }
}

}  // namespace

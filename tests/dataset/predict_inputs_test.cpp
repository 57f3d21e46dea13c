// predict's INPUTs (issue 28 item 5): folders, archives and ARCHIVE:GLOB expanded to images in
// sorted order, what is not an image skipped by reason, ids for a submission, duplicate ids refused.
#include "frugal/dataset/predict_inputs.h"

#include <gtest/gtest.h>

#include "archive/zip_read_fixture.h"
#include "dataset/small_data.h"
#include "frugal/dataset/submission_csv.h"
#include "frugal/image/image.h"
#include "frugal/util/error.h"

using namespace frugal;
namespace fs = std::filesystem;

namespace {

using frugal::testing::png;

std::vector<std::string> names(const PredictInputs& p) {
  std::vector<std::string> out;
  for (const auto& i : p.images()) out.push_back(i.name);
  return out;
}

std::vector<std::string> ids(const PredictInputs& p) {
  std::vector<std::string> out;
  for (const auto& i : p.images()) out.push_back(i.id);
  return out;
}

struct PredictInputsTest : ::testing::Test {
  fs::path dir = frugal::testing::temp_dir("predict-inputs");
  fs::path zip = dir / "test.zip";
  void SetUp() override {
    // Out of order on purpose: images come sorted by name whatever the archive's order.
    frugal::testing::write(zip, frugal::testing::build_zip({{"test/b.png", png(1)},
                                                            {"test/a.png", png(2)},
                                                            {"test/sub/c.png", png(3)},
                                                            {"test/labels.csv", "id,label\n"},
                                                            {"__MACOSX/test/._a.png", "junk"},
                                                            {"other/d.png", png(4)}}));
    fs::create_directories(dir / "folder" / "sub");
    frugal::testing::write(dir / "folder" / "z.png", png(5));
    frugal::testing::write(dir / "folder" / "sub" / "y.png", png(6));
    frugal::testing::write(dir / "folder" / "notes.txt", "not an image");
  }
  void TearDown() override { fs::remove_all(dir); }
};

TEST_F(PredictInputsTest, AFolderIsEveryImageUnderItSortedWithTheRestCountedByReason) {
  const auto p = PredictInputs::expand({(dir / "folder").string()});
  const std::string f = (dir / "folder").string();
  EXPECT_EQ(names(p), (std::vector<std::string>{f + "/sub/y.png", f + "/z.png"}));
  EXPECT_EQ(ids(p), (std::vector<std::string>{"y", "z"}));
  ASSERT_EQ(p.skipped().size(), 1u);
  EXPECT_EQ(p.skipped()[0].second.counts.at("not an image"), 1u);
  std::vector<std::uint8_t> bytes;
  p.read(p.images()[1], bytes);
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), png(5));
}

TEST_F(PredictInputsTest, AnArchiveIsEveryImageInItSorted) {
  const auto p = PredictInputs::expand({zip.string()});
  const std::string z = zip.string();
  EXPECT_EQ(names(p), (std::vector<std::string>{z + ":other/d.png", z + ":test/a.png", z + ":test/b.png",
                                                z + ":test/sub/c.png"}));
  ASSERT_EQ(p.skipped().size(), 1u);
  EXPECT_EQ(p.skipped()[0].second.counts.at("not an image"), 1u);
  EXPECT_EQ(p.skipped()[0].second.counts.at("junk (__MACOSX)"), 1u);
  EXPECT_TRUE(p.problems().empty());
}

TEST_F(PredictInputsTest, AGlobStaysInItsFolderAndTwoStarsCrossFolders) {
  const std::string z = zip.string();
  EXPECT_EQ(names(PredictInputs::expand({z + ":test/*.png"})),
            (std::vector<std::string>{z + ":test/a.png", z + ":test/b.png"}));
  EXPECT_EQ(names(PredictInputs::expand({z + ":test/**/*.png"})),
            (std::vector<std::string>{z + ":test/a.png", z + ":test/b.png", z + ":test/sub/c.png"}));
  EXPECT_EQ(names(PredictInputs::expand({(dir / "folder").string() + ":*.png"})),
            (std::vector<std::string>{(dir / "folder" / "z.png").string()}));
}

TEST_F(PredictInputsTest, EntrySubFolderAndProblemsEachOnTheirOwn) {
  const std::string z = zip.string();
  const auto p = PredictInputs::expand(
      {z + ":test/a.png", z + ":test/sub/", (dir / "gone.png").string(), z + ":test/*.jpg", z + ":nope.png"});
  EXPECT_EQ(names(p), (std::vector<std::string>{z + ":test/a.png", z + ":test/sub:c.png"}));
  ASSERT_EQ(p.problems().size(), 3u);
  EXPECT_EQ(p.problems()[0].kind, ErrorKind::usage);
  EXPECT_NE(p.problems()[0].what.find("gone.png: expected a file, found no such file"), std::string::npos);
  EXPECT_NE(p.problems()[1].what.find("expected entries matching 'test/*.jpg', found"), std::string::npos);
  EXPECT_NE(p.problems()[2].what.find("an entry named 'nope.png'"), std::string::npos);
}

TEST_F(PredictInputsTest, AnImageFileIsOneImageWhateverItsBytes) {
  frugal::testing::write(dir / "broken.png", "not a png at all");
  frugal::testing::write(dir / "noext", png(7));
  const auto p = PredictInputs::expand({(dir / "broken.png").string(), (dir / "noext").string()});
  EXPECT_EQ(ids(p), (std::vector<std::string>{"broken", "noext"}));
  EXPECT_TRUE(p.problems().empty());
}

TEST(EntryGlob, StarsQuestionMarksAndSets) {
  EXPECT_TRUE(entry_glob_match("*.jpg", "a.jpg"));
  EXPECT_FALSE(entry_glob_match("*.jpg", "d/a.jpg"));
  EXPECT_TRUE(entry_glob_match("**.jpg", "d/a.jpg"));
  EXPECT_TRUE(entry_glob_match("**/*.jpg", "a.jpg"));
  EXPECT_TRUE(entry_glob_match("d/**/a.jpg", "d/x/y/a.jpg"));
  EXPECT_TRUE(entry_glob_match("d/**/a.jpg", "d/a.jpg"));
  EXPECT_FALSE(entry_glob_match("d/**/a.jpg", "e/a.jpg"));
  EXPECT_TRUE(entry_glob_match("img_??.png", "img_07.png"));
  EXPECT_FALSE(entry_glob_match("img_??.png", "img_7.png"));
  EXPECT_TRUE(entry_glob_match("[a-c]*.png", "b1.png"));
  EXPECT_FALSE(entry_glob_match("[!a-c]*.png", "b1.png"));
  EXPECT_TRUE(entry_glob_match("a\\*.png", "a*.png"));
  EXPECT_FALSE(entry_glob_match("a\\*.png", "ab.png"));
  EXPECT_TRUE(entry_glob_match("[x.png", "[x.png"));  // no ']': an ordinary '['
  // Many stars on a long name stay fast (memoised).
  EXPECT_FALSE(entry_glob_match("*a*a*a*a*a*a*a*a*b", std::string(2000, 'a')));
}

TEST(ImageId, FileNameWithoutItsLastExtension) {
  EXPECT_EQ(image_id("test/1a2b.jpg"), "1a2b");
  EXPECT_EQ(image_id("a.b.png"), "a.b");
  EXPECT_EQ(image_id("d.x/noext"), "noext");
  EXPECT_EQ(image_id(".hidden"), ".hidden");
}

TEST(SubmissionCsv, DuplicateIdsAreRefusedNamingBothImages) {
  std::vector<PredictImage> images = {
      {"t/a.jpg", "a", nullptr, 0}, {"t/b.jpg", "b", nullptr, 0}, {"t/a.png", "a", nullptr, 0}};
  try {
    refuse_duplicate_ids(images, "sub.csv");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid);
    EXPECT_NE(std::string(e.what()).find("'a' (t/a.jpg and t/a.png)"), std::string::npos) << e.what();
  }
  images.pop_back();
  EXPECT_NO_THROW(refuse_duplicate_ids(images, "sub.csv"));
}

TEST(SubmissionCsv, HeaderRowsQuotingAndColumns) {
  EXPECT_EQ(submission_header({}, nullptr), "id,label\n");
  const auto columns = parse_submission_columns("image_id,label", "--csv-columns");
  EXPECT_EQ(submission_header(columns, nullptr), "image_id,label\n");
  const std::vector<std::string> classes = {"affenpinscher", "a,b"};
  EXPECT_EQ(submission_header({"id", "breed"}, &classes), "id,affenpinscher,\"a,b\"\n");
  EXPECT_EQ(submission_row("x\"y", "cat"), "\"x\"\"y\",cat\n");
  const float p[] = {0.25f, 0.75f};
  EXPECT_EQ(submission_row("a", std::span<const float>(p, 2)), "a,0.25,0.75\n");
  EXPECT_THROW(parse_submission_columns("id", "--csv-columns"), Error);
  EXPECT_THROW(parse_submission_columns("id,", "--csv-columns"), Error);
  EXPECT_THROW(parse_submission_columns("a,b,c", "--csv-columns"), Error);
}

}  // namespace

// check_input: one answer (Error(usage), one message shape) for a missing path, a folder where a
// file belongs, a manifest beside the name and a typo, whichever command asks.
#include "frugal/util/input_path.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "frugal/util/error.h"
#include "frugal/util/units.h"

namespace frugal {
namespace {
namespace fs = std::filesystem;

class InputPath : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("frugal-input-path-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "photos" / "cats");
    touch("photos.zip");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void touch(const std::string& name) { std::ofstream(dir_ / name) << "x"; }
  // The message of the usage error check_input throws, or "" when it returns.
  std::string refusal(const fs::path& p, InputKind kind) {
    try {
      check_input(p, kind);
      return "";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage) << e.what();
      return e.what();
    }
  }
  fs::path dir_;
};

TEST_F(InputPath, AnExistingFileOfTheRightKindPasses) {
  EXPECT_EQ(check_input(dir_ / "photos.zip", InputKind::archive), dir_ / "photos.zip");
  EXPECT_EQ(check_input(dir_ / "photos", InputKind::checkpoint), dir_ / "photos");
  EXPECT_EQ(check_input(dir_ / "photos", InputKind::folder), dir_ / "photos");
  EXPECT_EQ(check_input(dir_ / "photos", InputKind::pack_source), dir_ / "photos");
}

TEST_F(InputPath, MissingSaysSoOnceWithTheSameWordsForEveryKind) {
  for (InputKind k :
       {InputKind::archive, InputKind::file, InputKind::manifest, InputKind::checkpoint, InputKind::pack_source}) {
    const std::string m = refusal(dir_ / "nothing-like-it", k);
    EXPECT_EQ(m, (dir_ / "nothing-like-it").string() + ": expected " + input_kind_name(k) +
                     ", found no such file or folder; check the path");
  }
}

TEST_F(InputPath, AFolderWhereAFileBelongsSaysItIsAFolder) {
  EXPECT_EQ(check_input(dir_ / "photos/", InputKind::archive), dir_ / "photos/");  // data, read in place
  EXPECT_NE(refusal(dir_ / "photos", InputKind::file).find("found a folder"), std::string::npos);
  EXPECT_NE(refusal(dir_ / "photos.zip", InputKind::folder).find("found a file"), std::string::npos);
}

TEST_F(InputPath, AFolderIsData) {
  fs::create_directories(dir_ / "holder");
  touch("holder/data.zip");
  EXPECT_EQ(check_input(dir_ / "holder", InputKind::archive), dir_ / "holder");
}

TEST_F(InputPath, AManifestBesideTheNameIsReadThrough) {
  touch("set.zip.manifest.json");
  EXPECT_EQ(check_input(dir_ / "set.zip", InputKind::archive),
            fs::path((dir_ / "set.zip").string() + ".manifest.json"));
}

TEST_F(InputPath, ATypoGetsTheNearName) {
  EXPECT_NE(
      refusal(dir_ / "photo.zip", InputKind::archive).find("did you mean '" + (dir_ / "photos.zip").string() + "'?"),
      std::string::npos);
  EXPECT_EQ(near_name(dir_ / "PHOTOS.ZIP"), dir_ / "photos.zip");
  EXPECT_EQ(near_name(dir_ / "photso.zip"), dir_ / "photos.zip");  // a swap is one edit
  EXPECT_EQ(near_name(dir_ / "labels.csv"), fs::path());           // nothing near
}

TEST_F(InputPath, AZipNotYetPackedPointsToTheFolder) {
  fs::remove(dir_ / "photos.zip");
  const std::string m = refusal(dir_ / "photos.zip", InputKind::archive);
  EXPECT_NE(m.find("photos/ is a folder, read as it is: give " + (dir_ / "photos").string() + "/"), std::string::npos)
      << m;
}

TEST_F(InputPath, TheDataGivenForItsManifestNamesTheManifest) {
  touch("photos.zip.manifest.json");
  const std::string m = refusal(dir_ / "photos.zip", InputKind::manifest);
  EXPECT_NE(m.find("found a file that is not JSON; give its manifest: " + (dir_ / "photos.zip.manifest.json").string()),
            std::string::npos)
      << m;
  std::ofstream(dir_ / "renamed.json") << " {\"format\": \"frugal-split\"}";
  EXPECT_EQ(check_input(dir_ / "renamed.json", InputKind::manifest), dir_ / "renamed.json");  // JSON: join reads it
}

TEST_F(InputPath, AMissingFolderIsSaid) {
  EXPECT_NE(refusal(dir_ / "nodir" / "x.zip", InputKind::archive).find("there is no folder"), std::string::npos);
}

TEST(CountOf, SingularAndPlural) {
  EXPECT_EQ(count_of(1, "step"), "1 step");
  EXPECT_EQ(count_of(0, "step"), "0 steps");
  EXPECT_EQ(count_of(1, "class"), "1 class");
  EXPECT_EQ(count_of(10, "class"), "10 classes");
  EXPECT_EQ(count_of(2, "entry"), "2 entries");
  EXPECT_EQ(count_of(2, "day"), "2 days");
  EXPECT_EQ(count_of(3, "child", "children"), "3 children");
}

TEST(FormatPercent, TwoDecimalsAtMost) {
  EXPECT_EQ(format_percent(0.8638), "86.38%");
  EXPECT_EQ(format_percent(1.0), "100%");
  EXPECT_EQ(format_percent(0.125), "12.5%");
  EXPECT_EQ(format_percent(0.0), "0%");
}

}  // namespace
}  // namespace frugal

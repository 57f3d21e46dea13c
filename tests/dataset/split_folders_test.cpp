// Data whose top level is split folders (train/ val/ test/) is read one split at a time and the
// split names are never classes (issue 28 item 3: such a zip trained a 3-class classifier of the
// split names, exit 0).
#include <gtest/gtest.h>

#include "archive/zip_read_fixture.h"
#include "dataset/small_data.h"
#include "frugal/dataset/dataset.h"
#include "frugal/image/image.h"
#include "frugal/util/error.h"

using namespace frugal;
namespace fs = std::filesystem;

namespace {

using frugal::testing::png;

// A zip of `folders` (each "prefix/split/class/") with two images in each.
fs::path zip_of(const std::string& name, const std::vector<std::string>& folders) {
  std::vector<frugal::testing::TestEntry> entries;
  std::uint8_t level = 0;
  for (const auto& f : folders)
    for (int i = 0; i < 2; ++i) entries.push_back({f + std::to_string(i) + ".png", png(level += 9)});
  const fs::path dir = frugal::testing::temp_dir("splits-" + name);
  frugal::testing::write(dir / (name + ".zip"), frugal::testing::build_zip(entries));
  return dir / (name + ".zip");
}

TEST(SplitFolders, TrainValTestAtTheTopAreSplitsNotClasses) {
  const fs::path z = zip_of("tvt", {"train/cat/", "train/dog/", "val/cat/", "val/dog/", "test/cat/", "test/dog/"});
  auto train = Dataset::open(z);
  EXPECT_EQ(train->classes(), (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(train->size(), 4u);
  EXPECT_EQ(train->split_folder(), "train/");
  EXPECT_EQ(train->validation_folder(), "val/");
  DatasetOptions o;
  o.split = SplitFolder::validation;
  auto val = Dataset::open(z, o);
  EXPECT_EQ(val->classes(), train->classes());
  EXPECT_EQ(val->size(), 4u);
  EXPECT_EQ(val->split_folder(), "val/");
  for (std::size_t i = 0; i < val->size(); ++i) EXPECT_EQ(val->name(i).rfind("val/", 0), std::string::npos);
  fs::remove_all(z.parent_path());
}

TEST(SplitFolders, AnyCaseAndSpellingUnderOneWrappingFolderWithJunkBeside) {
  const fs::path z = zip_of("wrapped", {"ds/Train/a/", "ds/Train/b/", "ds/VALID/a/", "ds/VALID/b/", "__MACOSX/ds/"});
  auto train = Dataset::open(z);
  EXPECT_EQ(train->classes(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(train->split_folder(), "ds/Train/");
  EXPECT_EQ(train->validation_folder(), "ds/VALID/");
  fs::remove_all(z.parent_path());
}

TEST(SplitFolders, WithoutAValidationFolderEvaluationReadsTest) {
  const fs::path z = zip_of("tt", {"train/a/", "train/b/", "test/a/", "test/b/"});
  EXPECT_EQ(Dataset::open(z)->validation_folder(), "");
  DatasetOptions o;
  o.split = SplitFolder::validation;
  EXPECT_EQ(Dataset::open(z, o)->split_folder(), "test/");
  fs::remove_all(z.parent_path());
}

TEST(SplitFolders, AClassNamedTrainAmongOthersIsAClass) {
  const fs::path z = zip_of("classes", {"train/", "plane/", "car/"});
  auto ds = Dataset::open(z);
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"car", "plane", "train"}));
  EXPECT_EQ(ds->split_folder(), "");
  fs::remove_all(z.parent_path());
}

TEST(SplitFolders, AGivenRootIsTakenAsItIs) {
  const fs::path z = zip_of("root", {"train/a/", "train/b/", "val/a/", "val/b/"});
  DatasetOptions o;
  o.root = "val/";
  auto ds = Dataset::open(z, o);
  EXPECT_EQ(ds->split_folder(), "");
  EXPECT_EQ(ds->size(), 4u);
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"a", "b"}));
  fs::remove_all(z.parent_path());
}

TEST(SplitFolders, ALoneTrainFolderIsACommonRootOfClassesAsBefore) {
  const fs::path z = zip_of("alone", {"set/train/a/", "set/train/b/"});
  DatasetOptions o;
  o.split = SplitFolder::validation;
  for (const auto& ds : {Dataset::open(z), Dataset::open(z, o)}) {
    EXPECT_EQ(ds->split_folder(), "");
    EXPECT_EQ(ds->classes(), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(ds->name(0).rfind("set/train/", 0), 0u) << ds->name(0);
  }
  fs::remove_all(z.parent_path());
}

}  // namespace

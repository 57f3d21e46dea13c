// Issue 47 item 8: one limit for a class name whatever file gives it. Before, a name from
// labels.csv or a --labels CSV could be 80 KiB (a line's limit) while a --class-names line stopped
// at 4096 bytes; now every label source refuses a name past kMaxClassNameBytes, naming FILE:line.
// And a class name that is not a string is said to be one ({"0": 1} was "JSON nested deeper").
#include <gtest/gtest.h>

#include "dataset/label_sources.h"
#include "archive/zip_read_fixture.h"
#include "dataset/labels_csv.h"
#include "frugal/dataset/dataset.h"
#include "frugal/image/image.h"
#include "frugal/util/error.h"
#include "error_message.h"

using namespace frugal;
using frugal::detail::kMaxClassNameBytes;

namespace {

using frugal::testing::error_of;
using frugal::testing::has;

const std::string kLimit = "expected a class name of at most 4096 bytes, found one of 4097 bytes";

}  // namespace

TEST(ClassNameLimit, LabelsCsvRefusesALongerNameNamingItsLine) {
  const std::string ok(kMaxClassNameBytes, 'a'), long_name(kMaxClassNameBytes + 1, 'b');
  EXPECT_EQ(detail::parse_labels_csv("x/1.png," + ok + "\n", "d.zip:labels.csv").at("x/1.png"), ok);
  ErrorKind kind{};
  const std::string e = error_of(
      [&] { detail::parse_labels_csv("path,label\nx/1.png,a\nx/2.png," + long_name + "\n", "d.zip:labels.csv"); },
      &kind);
  EXPECT_TRUE(has(e, "d.zip:labels.csv:3: " + kLimit)) << e;
  EXPECT_EQ(kind, ErrorKind::invalid);
}

TEST(ClassNameLimit, LabelsOptionCsvRefusesALongerNameNamingItsLine) {
  const std::string long_name(kMaxClassNameBytes + 1, 'b');
  detail::CsvLabelTable t("train.csv", ',', "");
  const std::string e = error_of([&] {
    t.feed("id,label\n1,cat\n2,\"" + long_name + "\"\n");
    t.finish();
  });
  EXPECT_TRUE(has(e, "train.csv:3: " + kLimit)) << e;
  detail::CsvLabelTable fine("train.csv", ',', "");
  fine.feed("id,label\n1," + std::string(kMaxClassNameBytes, 'c') + "\n");
  fine.finish();
  EXPECT_EQ(fine.labels().size(), 1u);
}

TEST(ClassNameLimit, ClassNamesFileRefusesALongerNameNamingItsLineOrClass) {
  const std::string long_name(kMaxClassNameBytes + 1, 'b');
  std::string e = error_of([&] { detail::parse_class_names("cat\n" + long_name + "\n", "names.txt"); });
  EXPECT_TRUE(has(e, "names.txt:2: " + kLimit)) << e;
  e = error_of([&] { detail::parse_class_names(R"({"0": "cat", "1": ")" + long_name + "\"}", "map.json"); });
  EXPECT_TRUE(has(e, "map.json (class 1): " + kLimit)) << e;
  e = error_of([&] { detail::parse_class_names("cat\n\ndog\n", "names.txt"); });
  EXPECT_TRUE(has(e, "names.txt:2: expected a name for class 1, found an empty one")) << e;
  EXPECT_EQ(detail::parse_class_names(std::string(kMaxClassNameBytes, 'n') + "\n", "names.txt").at(0).size(),
            kMaxClassNameBytes);
}

TEST(ClassNameLimit, ANameThatIsNotAStringIsSaidToBeOne) {
  ErrorKind kind{};
  std::string e = error_of([&] { detail::parse_class_names(R"({"0":1})", "names.json"); }, &kind);
  EXPECT_TRUE(has(e, "names.json (class 0): expected a class name, which must be a string")) << e;
  EXPECT_TRUE(has(e, "found number 1")) << e;
  EXPECT_FALSE(has(e, "nested")) << e;
  EXPECT_EQ(kind, ErrorKind::invalid);
  e = error_of([&] { detail::parse_class_names(R"({"0": {"name": "cat"}})", "names.json"); });
  EXPECT_TRUE(has(e, "a class name must be a string, found a list or an object where a name goes")) << e;
  e = error_of([&] { detail::parse_class_names(R"([["cat"]])", "names.json"); });
  EXPECT_TRUE(has(e, "a class name must be a string")) << e;
}

// The other sources (class folders, --label-pattern groups, a reader's labels) keep the same limit:
// a zip's folder name may be 64 KiB.
TEST(ClassNameLimit, AClassFolderPastTheLimitIsRefusedNamingAnImageOfIt) {
  std::vector<std::uint8_t> pixels(8 * 8, 100);
  const auto png = encode_png(pixels, 8, 8, 1);
  const std::string image(png.begin(), png.end());
  const std::string long_name(kMaxClassNameBytes + 1, 'f'), ok_name(kMaxClassNameBytes, 'g');
  const auto dir = frugal::testing::temp_dir("class-name-limit");
  const auto zip = dir / "folders.zip";
  frugal::testing::write(zip, frugal::testing::build_zip({{ok_name + "/a.png", image}, {"cat/b.png", image}}));
  EXPECT_EQ(Dataset::open(zip, {})->classes().size(), 2u);
  frugal::testing::write(zip, frugal::testing::build_zip({{long_name + "/a.png", image}, {"cat/b.png", image}}));
  ErrorKind kind{};
  const std::string e = error_of([&] { Dataset::open(zip, {}); }, &kind);
  EXPECT_TRUE(has(e, long_name + "/a.png: " + kLimit)) << e.substr(0, 200);
  EXPECT_EQ(kind, ErrorKind::invalid);
  std::filesystem::remove_all(dir);
}

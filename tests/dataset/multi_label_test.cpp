// Multi-label data (issue 42 item 2) and header-less label files (item 3): a planet-style CSV of
// space-separated tags read with --label-separator, one 0/1 column per tag (--label-columns ID,*
// or ID,A,B), and --labels-header yes|no|auto. Before, tag lists were refused or trained as one
// class per combination, and the first row of a header-less file was dropped as its header.
#include <gtest/gtest.h>

#include "dataset/label_sources.h"
#include "frugal/dataset/dataset.h"
#include "frugal/image/image.h"
#include "frugal/util/error.h"
#include "error_message.h"
#include "dataset/small_data.h"

using namespace frugal;
namespace fs = std::filesystem;

namespace {

using frugal::testing::error_of;
using frugal::testing::zip_of;

// name -> its tags by name, space-separated.
std::map<std::string, std::string> tags_by_name(const Dataset& ds) {
  std::map<std::string, std::string> m;
  for (std::size_t i = 0; i < ds.size(); ++i) {
    std::string s;
    for (const std::uint32_t t : ds.tags(i)) s += (s.empty() ? "" : " ") + ds.classes().at(t);
    m[ds.name(i)] = s;
  }
  return m;
}

const char* kPlanet =
    "image_name,tags\n"
    "train_0,haze primary\n"
    "train_1,agriculture clear primary water\n"
    "train_2,clear primary\n"
    "train_3,  clear   primary  road \n"
    "train_4,\n"
    "train_5,clear primary\n";

std::vector<std::string> planet_images() {
  return {"train-jpg/train_0.png", "train-jpg/train_1.png", "train-jpg/train_2.png",
          "train-jpg/train_3.png", "train-jpg/train_4.png", "train-jpg/train_5.png"};
}

}  // namespace

TEST(MultiLabel, TagsSplitOnTheSeparatorTrimmedAndEmptyOnesDropped) {
  auto v = [](std::string_view label, std::string_view sep) {
    std::vector<std::string> out;
    for (auto t : detail::split_tags(label, sep)) out.emplace_back(t);
    return out;
  };
  using L = std::vector<std::string>;
  EXPECT_EQ(v("clear  primary   road ", " "), (L{"clear", "primary", "road"}));
  EXPECT_EQ(v("a| b |c||", "|"), (L{"a", "b", "c"}));
  EXPECT_EQ(v("golden retriever; cat", ";"), (L{"golden retriever", "cat"}));
  EXPECT_EQ(v("", " "), L{});
  EXPECT_EQ(v("   ", " "), L{});
}

TEST(MultiLabel, PlanetTagListsWithASeparatorAreTagsOfEachImage) {
  auto d = zip_of("multi-label-", "planet", {{"train_v2.csv", kPlanet}}, planet_images());
  DatasetOptions o;
  o.labels = "train_v2.csv";
  o.images_dir = "train-jpg";
  o.label_separator = " ";
  auto ds = Dataset::open(d->zip, o);
  ASSERT_TRUE(ds->multi_label());
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"agriculture", "clear", "haze", "primary", "road", "water"}));
  EXPECT_EQ(tags_by_name(*ds),
            (std::map<std::string, std::string>{{"train-jpg/train_0.png", "haze primary"},
                                                {"train-jpg/train_1.png", "agriculture clear primary water"},
                                                {"train-jpg/train_2.png", "clear primary"},
                                                {"train-jpg/train_3.png", "clear primary road"},
                                                {"train-jpg/train_4.png", ""},  // no tag: a negative sample, kept
                                                {"train-jpg/train_5.png", "clear primary"}}));
  for (std::size_t i = 0; i < ds->size(); ++i) {
    EXPECT_EQ(ds->label(i), -1);
    EXPECT_TRUE(std::is_sorted(ds->tags(i).begin(), ds->tags(i).end()));
  }
}

TEST(MultiLabel, TagListsWithoutTheSeparatorAreRefusedNamingBothOptions) {
  // Every combination of two or more of four tags: 11 distinct labels of 4 distinct tags.
  const char* kTags[] = {"clear", "haze", "primary", "road"};
  std::string csv = "image_name,tags\n";
  std::vector<std::string> images;
  for (int mask = 0; mask < 16; ++mask) {
    if (__builtin_popcount(mask) < 2) continue;
    std::string label;
    for (int t = 0; t < 4; ++t)
      if (mask & (1 << t)) label += (label.empty() ? "" : " ") + std::string(kTags[t]);
    csv += "train_" + std::to_string(mask) + "," + label + "\n";
    images.push_back("train_" + std::to_string(mask) + ".png");
  }
  auto d = zip_of("multi-label-", "planet-refused", {{"train.csv", csv}}, images);
  DatasetOptions o;
  o.labels = "train.csv";
  ErrorKind kind{};
  const std::string e = error_of([&] { Dataset::open(d->zip, o); }, &kind);
  EXPECT_EQ(kind, ErrorKind::usage) << e;
  EXPECT_NE(e.find("--label-separator ' '"), std::string::npos) << e;
  EXPECT_NE(e.find("--labels-are-classes"), std::string::npos) << e;
  o.label_separator = " ";
  EXPECT_TRUE(Dataset::open(d->zip, o)->multi_label());
  o.labels_are_classes = true;  // both readings at once
  EXPECT_EQ(error_of([&] { Dataset::open(d->zip, o); }, &kind).empty(), false);
  EXPECT_EQ(kind, ErrorKind::usage);
}

TEST(MultiLabel, SingleLabelDataHasNoTags) {
  auto d = zip_of("multi-label-", "single", {{"t.csv", "id,label\na.png,cat\nb.png,dog\n"}}, {"a.png", "b.png"});
  DatasetOptions o;
  o.labels = "t.csv";
  auto ds = Dataset::open(d->zip, o);
  EXPECT_FALSE(ds->multi_label());
  EXPECT_TRUE(ds->tags(0).empty());
  EXPECT_EQ(ds->classes()[ds->label(0)], "cat");
}

TEST(MultiLabel, ZeroOneColumnsAfterTheIdOrNamedAreTags) {
  const char* csv =
      "image_name,haze,clear,road\n"
      "a,1,0,1\n"
      "b,0,1.0,0\n"
      "c,false,TRUE,true\n"
      "d,0,0,0\n";
  auto d = zip_of("multi-label-", "columns", {{"t.csv", csv}}, {"a.png", "b.png", "c.png", "d.png"});
  DatasetOptions o;
  o.labels = "t.csv";
  o.label_columns = "image_name,*";
  auto ds = Dataset::open(d->zip, o);
  ASSERT_TRUE(ds->multi_label());
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"clear", "haze", "road"}));  // the header's names, sorted
  EXPECT_EQ(tags_by_name(*ds),
            (std::map<std::string, std::string>{
                {"a.png", "haze road"}, {"b.png", "clear"}, {"c.png", "clear road"}, {"d.png", ""}}));
  o.label_columns = "image_name,road,haze";  // the columns named, only those
  ds = Dataset::open(d->zip, o);
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"haze", "road"}));
  EXPECT_EQ(tags_by_name(*ds), (std::map<std::string, std::string>{
                                   {"a.png", "haze road"}, {"b.png", ""}, {"c.png", "road"}, {"d.png", ""}}));
  o.label_columns = "image_name,road";  // one label column: its values are classes, single-label
  EXPECT_FALSE(Dataset::open(d->zip, o)->multi_label());
}

TEST(MultiLabel, AValueOtherThanZeroOrOneIsRefusedNamingTheLineColumnAndValue) {
  auto d = zip_of("multi-label-", "bad-value", {{"t.csv", "id,a,b\nx.png,1,0\ny.png,0,-1\n"}}, {"x.png", "y.png"});
  DatasetOptions o;
  o.labels = "t.csv";
  o.label_columns = "id,*";
  ErrorKind kind{};
  const std::string e = error_of([&] { Dataset::open(d->zip, o); }, &kind);
  EXPECT_EQ(kind, ErrorKind::invalid) << e;
  EXPECT_NE(e.find("t.csv:3"), std::string::npos) << e;
  EXPECT_NE(e.find("\"b\""), std::string::npos) << e;
  EXPECT_NE(e.find("\"-1\""), std::string::npos) << e;
  // A separator and 0/1 columns at once, or a name in the columns of a file without a header.
  o.label_separator = " ";
  EXPECT_FALSE(error_of([&] { Dataset::open(d->zip, o); }, &kind).empty());
  EXPECT_EQ(kind, ErrorKind::usage);
}

TEST(MultiLabel, SubsetsAndTheValidationSplitKeepEachImagesTags) {
  std::string csv = "id,tags\n";
  std::vector<std::string> images;
  for (int i = 0; i < 60; ++i) {
    csv += "img" + std::to_string(i) + ".png," + (i % 2 ? "odd" : "even") + (i % 3 ? "" : " three") + "\n";
    images.push_back("img" + std::to_string(i) + ".png");
  }
  auto d = zip_of("multi-label-", "split", {{"t.csv", csv}}, images);
  DatasetOptions o;
  o.labels = "t.csv";
  o.label_separator = " ";
  auto ds = Dataset::open(d->zip, o);
  const auto all = tags_by_name(*ds);
  EXPECT_EQ(all.at("img3.png"), "odd three");
  auto [train, val] = ds->split_val(0.3);
  ASSERT_GT(val->size(), 0u);
  for (const auto* part : {train.get(), val.get()}) {
    EXPECT_TRUE(part->multi_label());
    EXPECT_EQ(part->classes(), ds->classes());
    for (const auto& [name, tags] : tags_by_name(*part)) EXPECT_EQ(tags, all.at(name)) << name;
  }
  auto some = ds->subset({5, 0});
  EXPECT_EQ(some->tags(0), ds->tags(5));
  EXPECT_EQ(some->tags(1), ds->tags(0));
  EXPECT_EQ(some->label(0), -1);
}

// Tiny-ImageNet's val/val_annotations.txt: tab-separated, no header.
const char* kTinyVal =
    "val_0.JPEG\tn03444034\t0\t32\t44\t62\n"
    "val_1.JPEG\tn04067472\t52\t55\t57\t59\n"
    "val_2.JPEG\tn04070727\t4\t0\t60\t55\n"
    "val_3.JPEG\tn03444034\t3\t3\t63\t63\n";

std::vector<std::string> tiny_images() {
  return {"val/images/val_0.JPEG", "val/images/val_1.JPEG", "val/images/val_2.JPEG", "val/images/val_3.JPEG"};
}

TEST(LabelsHeader, AutoRefusesAHeaderlessFileNamingTheOptionAndNoReadsItsFirstRow) {
  auto d = zip_of("multi-label-", "tiny", {{"val/val_annotations.txt", kTinyVal}}, tiny_images());
  DatasetOptions o;
  o.labels = "val/val_annotations.txt";
  o.images_dir = "val/images";
  ErrorKind kind{};
  std::string e = error_of([&] { Dataset::open(d->zip, o); }, &kind);
  EXPECT_EQ(kind, ErrorKind::usage) << e;
  EXPECT_NE(e.find("--labels-header"), std::string::npos) << e;
  EXPECT_NE(e.find("val_annotations.txt:1"), std::string::npos) << e;
  o.label_columns = "0,1";  // columns by index do not make it a header
  EXPECT_NE(error_of([&] { Dataset::open(d->zip, o); }).find("--labels-header"), std::string::npos);
  o.labels_header = "no";
  auto ds = Dataset::open(d->zip, o);
  ASSERT_EQ(ds->size(), 4u);  // val_0 is not lost to a header
  std::map<std::string, std::string> labels;
  for (std::size_t i = 0; i < ds->size(); ++i) labels[ds->name(i)] = ds->classes()[ds->label(i)];
  EXPECT_EQ(labels.at("val/images/val_0.JPEG"), "n03444034");
  EXPECT_EQ(labels.at("val/images/val_2.JPEG"), "n04070727");
  o.label_columns = "image,label";  // names with no header to name them
  e = error_of([&] { Dataset::open(d->zip, o); }, &kind);
  EXPECT_EQ(kind, ErrorKind::usage) << e;
  EXPECT_NE(e.find("--labels-header no"), std::string::npos) << e;
}

TEST(LabelsHeader, AutoTakesAHeaderAndYesTakesTheFirstRowWhatever) {
  auto d = zip_of("multi-label-", "header", {{"t.csv", "file,class\na.png,cat\nb.png,dog\nc.png,cat\n"}},
                  {"a.png", "b.png", "c.png"});
  DatasetOptions o;
  o.labels = "t.csv";
  EXPECT_EQ(Dataset::open(d->zip, o)->size(), 3u);
  // Header-less without an image extension: the first row's label is a label of later rows.
  auto bare = zip_of("multi-label-", "bare", {{"t.csv", "a,cat\nb,dog\nc,cat\n"}}, {"a.png", "b.png", "c.png"});
  EXPECT_NE(error_of([&] { Dataset::open(bare->zip, o); }).find("\"cat\""), std::string::npos);
  // ... and an id that names a file of the data, the label unique.
  auto named = zip_of("multi-label-", "named", {{"t.csv", "a,cow\nb,dog\nc,cat\nd,cat\n"}},
                      {"a.png", "b.png", "c.png", "d.png"});
  EXPECT_NE(error_of([&] { Dataset::open(named->zip, o); }).find("a file of the data"), std::string::npos);
  o.labels_header = "no";
  EXPECT_EQ(Dataset::open(named->zip, o)->size(), 4u);
  o.labels_header = "yes";  // said: the first row is the header, even one that looks like data
  EXPECT_EQ(Dataset::open(named->zip, o)->size(), 3u);
  o.labels_header = "maybe";
  ErrorKind kind{};
  EXPECT_NE(error_of([&] { Dataset::open(named->zip, o); }, &kind).find("yes, no or auto"), std::string::npos);
  EXPECT_EQ(kind, ErrorKind::usage);
  // Multi-label: 0/1 values in the first row, or a tag of later rows.
  auto ones = zip_of("multi-label-", "ones", {{"t.csv", "a.png,1,0\nb.png,0,1\n"}}, {"a.png", "b.png"});
  o = DatasetOptions{};
  o.labels = "t.csv";
  o.label_columns = "0,*";
  o.labels_header = "no";
  auto ds = Dataset::open(ones->zip, o);
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"1", "2"}));  // column indices name the tags
  EXPECT_EQ(tags_by_name(*ds), (std::map<std::string, std::string>{{"a.png", "1"}, {"b.png", "2"}}));
  o.labels_header = "auto";
  EXPECT_NE(error_of([&] { Dataset::open(ones->zip, o); }).find("--labels-header"), std::string::npos);
}

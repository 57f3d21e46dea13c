// Multi-label data (issue 42 item 2) and header-less label files (item 3): a planet-style CSV of
// space-separated tags read with --label-separator, one 0/1 column per tag (--label-columns ID,*
// or ID,A,B), and --labels-header yes|no|auto. Before, tag lists were refused or trained as one
// class per combination, and the first row of a header-less file was dropped as its header.
#include <gtest/gtest.h>

#include "archive/zip_read_fixture.h"
#include "dataset/label_sources.h"
#include "frugal/dataset/dataset.h"
#include "frugal/image/image.h"
#include "frugal/util/error.h"

using namespace frugal;
namespace fs = std::filesystem;

namespace {

std::string png(std::uint8_t level) {
  std::vector<std::uint8_t> pixels(8 * 8, level);
  auto b = encode_png(pixels, 8, 8, 1);
  return std::string(b.begin(), b.end());
}

struct Data {
  fs::path dir, zip;
  ~Data() { fs::remove_all(dir); }
};

// A zip of text files (name, text) and PNG images (names without text).
std::unique_ptr<Data> zip_of(const std::string& name, const std::vector<std::pair<std::string, std::string>>& texts,
                             const std::vector<std::string>& images) {
  std::vector<frugal::testing::TestEntry> entries;
  for (const auto& [n, t] : texts) entries.push_back({n, t});
  std::uint8_t level = 0;
  for (const auto& n : images) entries.push_back({n, png(level += 7)});
  auto d = std::make_unique<Data>();
  d->dir = frugal::testing::temp_dir("multi-label-" + name);
  d->zip = d->dir / (name + ".zip");
  frugal::testing::write(d->zip, frugal::testing::build_zip(entries));
  return d;
}

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

std::string error_of(const std::function<void()>& f, ErrorKind* kind = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (kind) *kind = e.kind();
    return e.what();
  }
  return "";
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
  auto d = zip_of("planet", {{"train_v2.csv", kPlanet}}, planet_images());
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
  auto d = zip_of("planet-refused", {{"train.csv", csv}}, images);
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
  auto d = zip_of("single", {{"t.csv", "id,label\na.png,cat\nb.png,dog\n"}}, {"a.png", "b.png"});
  DatasetOptions o;
  o.labels = "t.csv";
  auto ds = Dataset::open(d->zip, o);
  EXPECT_FALSE(ds->multi_label());
  EXPECT_TRUE(ds->tags(0).empty());
  EXPECT_EQ(ds->classes()[ds->label(0)], "cat");
}

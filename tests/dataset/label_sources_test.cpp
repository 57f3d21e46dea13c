// Labels the way datasets ship them (issue 28 item 2): Cassava's train.csv beside train_images/ with
// label_num_to_disease_map.json, dog-breed's labels.csv of ids without .jpg under train/, TSV,
// columns by name or index, class names in three forms, label patterns over the path, and ids
// that try to leave the data. Before, a CSV not named labels.csv was ignored ("found only class
// train_images") and a pattern saw only the file name.
#include <gtest/gtest.h>

#include "dataset/label_sources.h"
#include "frugal/dataset/dataset.h"
#include "frugal/image/image.h"
#include "frugal/util/error.h"
#include "error_message.h"
#include "dataset/small_data.h"
#include "test_files.h"

using namespace frugal;
namespace fs = std::filesystem;

namespace {

using frugal::testing::error_of;
using frugal::testing::zip_of;

std::map<std::string, std::string> labels_by_name(const Dataset& ds) {
  std::map<std::string, std::string> m;
  for (std::size_t i = 0; i < ds.size(); ++i) m[ds.name(i)] = ds.classes()[ds.label(i)];
  return m;
}

const char* kDiseaseMap =
    R"json({"0": "Cassava Bacterial Blight (CBB)", "1": "Cassava Brown Streak Disease (CBSD)",
            "2": "Cassava Green Mottle (CGM)", "3": "Cassava Mosaic Disease (CMD)", "4": "Healthy"})json";

}  // namespace

TEST(LabelSources, CassavaTrainCsvBesideTrainImagesNamedByTheDiseaseMap) {
  auto d = zip_of("labels-", "cassava",
                  {{"train.csv",
                    "image_id,label\n100.jpg,0\n101.jpg,3\n102.jpg,4\n103.jpg,3\n104.jpg,1\n105.jpg,2\n"
                    "999.jpg,3\n"},
                   {"label_num_to_disease_map.json", kDiseaseMap},
                   {"sample_submission.csv", "image_id,label\n200.jpg,4\n"}},
                  {"train_images/100.jpg", "train_images/101.jpg", "train_images/102.jpg", "train_images/103.jpg",
                   "train_images/104.jpg", "train_images/105.jpg", "test_images/200.jpg"});
  DatasetOptions o;
  o.labels = "train.csv";
  o.images_dir = "train_images";
  o.class_names = "label_num_to_disease_map.json";
  auto ds = Dataset::open(d->zip, o);
  EXPECT_EQ(ds->classes(),
            (std::vector<std::string>{"Cassava Bacterial Blight (CBB)", "Cassava Brown Streak Disease (CBSD)",
                                      "Cassava Green Mottle (CGM)", "Cassava Mosaic Disease (CMD)",
                                      "Healthy"}));  // class i is label i
  ASSERT_EQ(ds->size(), 6u);
  const auto labels = labels_by_name(*ds);
  EXPECT_EQ(labels.at("train_images/101.jpg"), "Cassava Mosaic Disease (CMD)");
  EXPECT_EQ(labels.at("train_images/102.jpg"), "Healthy");
  const SkipReport skipped = ds->skipped();
  EXPECT_EQ(skipped.counts.at("no label (not in train.csv)"), 1u);  // test_images/200.jpg
  EXPECT_EQ(skipped.examples.at("no label (not in train.csv)"), "test_images/200.jpg");
  EXPECT_EQ(skipped.counts.at("no image (an id of train.csv)"), 1u);
  EXPECT_EQ(skipped.examples.at("no image (an id of train.csv)"), "999.jpg");
  // The label files are not samples; the other CSV is a file that is not an image, as before.
  EXPECT_EQ(skipped.counts.at("not an image"), 1u);
  EXPECT_EQ(skipped.examples.at("not an image"), "sample_submission.csv");

  // Without the map, the classes are the integers in their order.
  o.class_names.clear();
  EXPECT_EQ(Dataset::open(d->zip, o)->classes(), (std::vector<std::string>{"0", "1", "2", "3", "4"}));
  // Without --images-dir no id names a file relative to the CSV's folder: nothing is labelled.
  o.images_dir.clear();
  EXPECT_NE(error_of([&] { Dataset::open(d->zip, o); }).find("7 no label (not in train.csv)"), std::string::npos);
}

TEST(LabelSources, DogBreedLabelsCsvIdsWithoutExtensionUnderTrainBesideTest) {
  auto d = zip_of("labels-", "dogs",
                  {{"labels.csv", "id,breed\n000bec,boston_bull\n001513,dingo\n001cdf,pekinese\n00214f,dingo\n"},
                   {"sample_submission.csv", "id,affenpinscher,dingo\nfff43b,0.5,0.5\n"}},
                  {"train/000bec.jpg", "train/001513.jpg", "train/001cdf.jpg", "train/00214f.jpg", "test/fff43b.jpg",
                   "test/ffe2ca.jpg"});
  DatasetOptions o;
  o.labels = "labels.csv";
  o.images_dir = "train/";
  auto ds = Dataset::open(d->zip, o);
  EXPECT_EQ(ds->split_folder(), "train/");  // train/ and test/ are splits, read one at a time
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"boston_bull", "dingo", "pekinese"}));
  ASSERT_EQ(ds->size(), 4u);
  EXPECT_EQ(labels_by_name(*ds).at("001cdf.jpg"), "pekinese");
  EXPECT_EQ(ds->skipped().total(), 0u);
  // The same CSV with its columns by name, in the other order of the file's header.
  o.label_columns = "id,breed";
  EXPECT_EQ(Dataset::open(d->zip, o)->size(), 4u);
  o.label_columns = "breed,id";  // the columns swapped: "dingo" would be labelled twice
  EXPECT_NE(error_of([&] { Dataset::open(d->zip, o); }).find("one label per id"), std::string::npos);
  // Without --images-dir no id names a file: nothing labelled, and said as such.
  o.label_columns.clear();
  o.images_dir.clear();
  EXPECT_NE(error_of([&] { Dataset::open(d->zip, o); }).find("4 no label (not in labels.csv)"), std::string::npos);
}

TEST(LabelSources, TsvWithColumnsByIndexQuotedFieldsBomAndCrlf) {
  auto d = zip_of("labels-", "tsv",
                  {{"meta/labels.tsv",
                    "\xEF\xBB\xBF"
                    "split\tclass\tfile\r\ntrain\t\"tabby, cat\"\ta.png\r\ntrain\tdog\tsub/b\r\n\r\ntrain\t\"say "
                    "\"\"hi\"\"\"\tc.png\r\n"}},
                  {"meta/a.png", "meta/sub/b.png", "meta/c.png", "other/d.png"});
  DatasetOptions o;
  o.labels = "meta/labels.tsv";
  o.label_columns = "2,1";
  auto ds = Dataset::open(d->zip, o);
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"dog", "say \"hi\"", "tabby, cat"}));
  const auto labels = labels_by_name(*ds);
  EXPECT_EQ(labels.at("meta/sub/b.png"), "dog");  // relative to the CSV's folder, without extension
  EXPECT_EQ(ds->skipped().counts.at("no label (not in labels.tsv)"), 1u);
  // A header name with the columns given by index: the first row is the header all the same.
  o.label_columns = "file,class";
  EXPECT_EQ(Dataset::open(d->zip, o)->size(), 3u);
}

TEST(LabelSources, AColumnTheCsvLacksIsAUsageErrorNamingItsColumns) {
  auto d = zip_of("labels-", "columns", {{"train.csv", "image_id,label\na.png,x\n"}}, {"a.png", "b.png"});
  DatasetOptions o;
  o.labels = "train.csv";
  o.label_columns = "image,label";
  ErrorKind kind{};
  const std::string what = error_of([&] { Dataset::open(d->zip, o); }, &kind);
  EXPECT_EQ(kind, ErrorKind::usage);
  EXPECT_NE(what.find("\"image\""), std::string::npos) << what;
  EXPECT_NE(what.find("0: \"image_id\", 1: \"label\""), std::string::npos) << what;
  EXPECT_NE(what.find("--label-columns"), std::string::npos) << what;
  o.label_columns = "0,2";
  EXPECT_NE(error_of([&] { Dataset::open(d->zip, o); }).find("2 columns"), std::string::npos);
  o.label_columns = "label";
  EXPECT_EQ(error_of([&] { Dataset::open(d->zip, o); }, &kind).empty(), false);
  EXPECT_EQ(kind, ErrorKind::usage);
  // One column only: the default (the first two) does not exist either.
  auto one = zip_of("labels-", "one-column", {{"ids.csv", "image_id\na.png\n"}}, {"a.png"});
  o.labels = "ids.csv";
  o.label_columns.clear();
  EXPECT_NE(error_of([&] { Dataset::open(one->zip, o); }).find("1 column: 0: \"image_id\""), std::string::npos);
}

TEST(LabelSources, ClassNamesAsJsonMapJsonListOrOneNameALine) {
  auto d = zip_of("labels-", "names",
                  {{"labels.csv", "file,label\na.png,0\nb.png,1\nc.png,2\n"},
                   {"map.json", R"({"2": "two", "0": "zero", "1": "one"})"},
                   {"list.json", R"(["zero", "one", "two"])"},
                   {"names.txt", "zero\r\none\ntwo\n"},
                   {"short.txt", "zero\none\n"},
                   {"twice.txt", "zero\nzero\ntwo\n"},
                   {"deep.json", R"({"0": ["zero"]})"},
                   {"number.json", R"({"0": "zero", "1": 1, "2": "two"})"},
                   {"again.json", R"({"0": "zero", "1": "one", "01": "uno", "2": "two"})"},
                   {"two-ways.csv", "file,label\na.png,0\nb.png,1\nc.png,01\n"}},
                  {"a.png", "b.png", "c.png"});
  DatasetOptions o;
  o.labels = "labels.csv";
  for (const char* file : {"map.json", "list.json", "names.txt"}) {
    o.class_names = file;
    auto ds = Dataset::open(d->zip, o);
    EXPECT_EQ(ds->classes(), (std::vector<std::string>{"zero", "one", "two"})) << file;
    EXPECT_EQ(labels_by_name(*ds).at("c.png"), "two") << file;
  }
  o.class_names = "short.txt";
  EXPECT_NE(error_of([&] { Dataset::open(d->zip, o); }).find("none for class 2"), std::string::npos);
  o.class_names = "twice.txt";
  EXPECT_NE(error_of([&] { Dataset::open(d->zip, o); }).find("one name per class"), std::string::npos);
  o.class_names = "deep.json";  // said for what it is (issue 47: it was "JSON nested deeper")
  EXPECT_NE(
      error_of([&] { Dataset::open(d->zip, o); }).find("a class name must be a string, found a list or an object"),
      std::string::npos);
  o.class_names = "number.json";
  EXPECT_NE(error_of([&] { Dataset::open(d->zip, o); })
                .find("number.json (class 1): expected a class name, which must be a string (\"0\": \"cat\"), "
                      "found number 1"),
            std::string::npos);
  o.class_names = "again.json";  // "1" and "01" name one class
  EXPECT_NE(error_of([&] { Dataset::open(d->zip, o); }).find("two for class 1"), std::string::npos);
  o.class_names = "absent.json";
  ErrorKind kind{};
  EXPECT_NE(error_of([&] { Dataset::open(d->zip, o); }, &kind).find("absent.json"), std::string::npos);
  EXPECT_EQ(kind, ErrorKind::usage);
  o.labels = "two-ways.csv";  // classes "1" and "01" would both be "one"
  o.class_names = "names.txt";
  EXPECT_NE(error_of([&] { Dataset::open(d->zip, o); }).find("one class per name"), std::string::npos);
  // Class folders of integers are named too; folders of names are not integers to name.
  auto folders =
      zip_of("labels-", "named-folders", {{"names.txt", "zero\none\n"}}, {"0/a.png", "1/b.png", "cat/c.png"});
  o.labels.clear();
  o.class_names = "names.txt";
  EXPECT_NE(error_of([&] { Dataset::open(folders->zip, o); }, &kind).find("class \"cat\""), std::string::npos);
  EXPECT_EQ(kind, ErrorKind::usage);
}

TEST(LabelSources, CsvAndClassNamesBesideTheDataOnDisk) {
  auto d = zip_of("labels-", "beside", {}, {"x/a.png", "x/b.png", "y/c.png"});
  frugal::testing::write(d->dir / "train.csv", "image,label\nx/a.png,1\nx/b.png,0\ny/c,1\n");
  frugal::testing::write(d->dir / "names.txt", "cat\ndog\n");
  DatasetOptions o;
  o.labels = "train.csv";  // not inside the data, not in the working folder: beside the zip
  o.class_names = (d->dir / "names.txt").string();
  auto ds = Dataset::open(d->zip, o);
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(labels_by_name(*ds).at("y/c.png"), "dog");
  o.labels = "nowhere.csv";
  ErrorKind kind{};
  const std::string what = error_of([&] { Dataset::open(d->zip, o); }, &kind);
  EXPECT_EQ(kind, ErrorKind::usage);
  EXPECT_NE(what.find("--labels"), std::string::npos) << what;
  EXPECT_NE(what.find((d->dir / "nowhere.csv").string()), std::string::npos) << what;
}

TEST(LabelSources, IdsThatLeaveTheDataAreRefusedNamingTheLine) {
  for (const char* id : {"../a.png", "/etc/passwd", "x/../../a.png", ""}) {
    auto d = zip_of("labels-", "hostile", {{"train.csv", std::string("id,label\na.png,x\n") + id + ",y\n"}}, {"a.png"});
    DatasetOptions o;
    o.labels = "train.csv";
    ErrorKind kind{};
    const std::string what = error_of([&] { Dataset::open(d->zip, o); }, &kind);
    EXPECT_EQ(kind, ErrorKind::invalid) << id;
    EXPECT_NE(what.find("train.csv:3"), std::string::npos) << what;
  }
  auto d = zip_of("labels-", "hostile-dir", {{"train.csv", "id,label\na.png,x\n"}}, {"a.png"});
  DatasetOptions o;
  o.labels = "train.csv";
  o.images_dir = "../";
  ErrorKind kind{};
  EXPECT_NE(error_of([&] { Dataset::open(d->zip, o); }, &kind).find("--images-dir"), std::string::npos);
  EXPECT_EQ(kind, ErrorKind::usage);
  o.images_dir.clear();
  o.labels.clear();
  o.label_columns = "0,1";  // without --labels: said, not ignored
  EXPECT_NE(error_of([&] { Dataset::open(d->zip, o); }, &kind).find("--labels"), std::string::npos);
  EXPECT_EQ(kind, ErrorKind::usage);
}

TEST(LabelSources, OneIdTwoLabelsAndAnUnclosedQuoteAreRefused) {
  auto twice = zip_of("labels-", "twice", {{"t.csv", "id,label\na.png,x\nb.png,y\na.png,z\n"}}, {"a.png", "b.png"});
  DatasetOptions o;
  o.labels = "t.csv";
  EXPECT_NE(error_of([&] { Dataset::open(twice->zip, o); }).find("t.csv:4"), std::string::npos);
  auto open = zip_of("labels-", "quote", {{"t.csv", "id,label\na.png,\"x\nb.png,y\n"}}, {"a.png", "b.png"});
  EXPECT_NE(error_of([&] { Dataset::open(open->zip, o); }).find("closing quote"), std::string::npos);
}

TEST(LabelSources, TheCsvInPiecesOfAnySizeReadsAsAWhole) {
  const std::string text = "\xEF\xBB\xBFid,label\r\n\"a,1.png\",\"x \"\"y\"\"\"\nb.png,z\n\nc/d,w";
  auto table_of = [&](std::size_t piece) {
    detail::CsvLabelTable t("t.csv", ',', "");
    for (std::size_t i = 0; i < text.size(); i += piece) t.feed(std::string_view(text).substr(i, piece));
    t.finish();
    std::map<std::string, std::string> m;
    for (const auto& [id, row] : t.rows()) m[id] = t.labels()[row.label];
    return m;
  };
  const auto whole = table_of(text.size());
  EXPECT_EQ(whole, (std::map<std::string, std::string>{{"a,1.png", "x \"y\""}, {"b.png", "z"}, {"c/d", "w"}}));
  for (std::size_t piece = 1; piece < 8; ++piece) EXPECT_EQ(table_of(piece), whole) << piece;
  EXPECT_EQ(detail::csv_delimiter("x.TSV", "a,b"), '\t');
  EXPECT_EQ(detail::csv_delimiter("x.txt", "a\tb\n1,2"), '\t');
  EXPECT_EQ(detail::csv_delimiter("x.csv", "a\tb,c"), ',');
}

TEST(LabelSources, ALongRowIsRefusedWhenSeen) {
  detail::CsvLabelTable t("t.csv", ',', "");
  t.feed("id,label\n");
  const std::string piece(4096, 'a');
  EXPECT_THROW(
      {
        for (int i = 0; i < 1000; ++i) t.feed(piece);
      },
      Error);
}

TEST(LabelPattern, SearchesTheNameThenThePathInsideTheData) {
  auto d = zip_of("labels-", "pattern", {},
                  {"train/cat.0.jpg", "train/dog.1.jpg", "images/Abyssinian_1.png", "images/boxer_2.png",
                   "by_folder/tabby/x.png", "by_folder/siamese/y.png"});
  DatasetOptions o;
  // The dogs-vs-cats example of --help: the name matches, as before.
  o.label_pattern = R"(([a-z]+)\.[0-9]+\.jpg$)";
  EXPECT_EQ(Dataset::open(d->zip, o)->classes(), (std::vector<std::string>{"cat", "dog"}));
  // fastai's from_name_re pattern, anchored at the name's start: the name, never "images/Abyssinian".
  o.label_pattern = R"(^(.+)_\d+\.png$)";
  EXPECT_EQ(Dataset::open(d->zip, o)->classes(), (std::vector<std::string>{"Abyssinian", "boxer"}));
  // A pattern that needs the folders finds nothing in a name: the path.
  o.label_pattern = R"(^by_folder/([a-z]+)/)";
  auto ds = Dataset::open(d->zip, o);
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"siamese", "tabby"}));
  EXPECT_EQ(ds->skipped().counts.at("no label (--label-pattern did not match)"), 4u);
  o.label_pattern = R"(^([a-z]+)/[a-z]+\.\d+\.jpg$)";  // the folder of train/cat.0.jpg
  EXPECT_EQ(Dataset::open(d->zip, o)->classes(), (std::vector<std::string>{"train"}));
}

// Issue 42 case 3: Kaggle planet's tags ("clear agriculture primary road") trained one class per
// combination of tags, exit 0. Tag lists are told from class names of several words by how many
// distinct words there are against distinct labels.
TEST(TagLists, PlanetsTagsAreSeenAndSaid) {
  const std::vector<std::string> planet = {"clear primary",
                                           "haze primary",
                                           "clear agriculture primary road",
                                           "clear primary water",
                                           "haze",
                                           "clear agriculture primary",
                                           "cloudy",
                                           "haze primary road",
                                           "clear primary road",
                                           "partly_cloudy primary",
                                           "clear agriculture primary water",
                                           "haze agriculture primary",
                                           "partly_cloudy primary road",
                                           "clear road",
                                           "haze primary water",
                                           "partly_cloudy"};
  EXPECT_EQ(detail::tag_lists_seen(planet),
            "'clear agriculture primary road' looks like 4 tags: 13 of 16 distinct labels are lists separated by "
            "' ', of 8 distinct tags");
  EXPECT_NE(detail::tag_lists_seen({"a|b", "b|c", "a|c", "a|b|c", "c", "b"}), "");
  EXPECT_NE(detail::tag_lists_seen({"x;y", "y; z", "x; z", "x;y;z", "x", "y"}), "");
}

TEST(TagLists, ClassNamesOfSeveralWordsAreNoTags) {
  EXPECT_EQ(detail::tag_lists_seen({"golden retriever", "german shepherd", "great dane", "pug"}), "");
  EXPECT_EQ(detail::tag_lists_seen({"Black footed Albatross", "Laysan Albatross", "Sooty Albatross"}), "");
  EXPECT_EQ(detail::tag_lists_seen({"cat", "dog"}), "");
  EXPECT_EQ(detail::tag_lists_seen({}), "");
}

// WebDataset shard sets held to the Python libraries they come from: shard patterns to braceexpand,
// keys and suffixes to webdataset's base_plus_ext and metadata rule, samples and labels to
// webdataset's own tarfile_samples over the same shards.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "frugal/archive/archive.h"
#include "frugal/util/error.h"
#include "frugal/archive/webdataset.h"
#include "tar_fixture.h"
#include "zip_read_fixture.h"

namespace frugal {
namespace {

namespace fs = std::filesystem;
using testing::run_python;

class WebDataset : public ::testing::Test {
 protected:
  void SetUp() override { d_ = testing::temp_dir("webdataset"); }
  void TearDown() override { fs::remove_all(d_); }
  fs::path d_;
};

TEST_F(WebDataset, BraceExpansionIsBraceexpands) {
  FRUGAL_NEED_PYTHON_MODULE("braceexpand");
  const std::vector<std::string> patterns = {"shards-{000000..000009}.tar",
                                             "a{1..3}b{x,y}",
                                             "{07..10}",
                                             "{a..g..2}",
                                             "{4..1}",
                                             "{2..-1}",
                                             "{-01..2}",
                                             "python{2.{5..7},3.{2,3}}",
                                             "index.html{,.backup}",
                                             "{1\\{2,3}",
                                             "x{}y",
                                             "x{a}y",
                                             "{a,b}{c,{d,e}}",
                                             "{Z..a}",
                                             "{z..A..3}",
                                             "{0..0}",
                                             "{-0..3}",
                                             "{00..3}",
                                             "a\\,b{1,2}",
                                             "{1..10..3}",
                                             "{10..1..3}",
                                             "{1..3..0}",
                                             "{a..c..-1}",
                                             "plain.tar",
                                             "{x..1}",
                                             "{1..2..}",
                                             "{,}",
                                             "a{b,c{d}}e",
                                             "{{1..2},{a,b}}",
                                             "x\\\\y{1,2}",
                                             "}{",
                                             "{1..3}{1..3}"};
  const char* code = R"PY(
import json, sys
from braceexpand import braceexpand
print(json.dumps([list(braceexpand(p)) for p in json.loads(sys.argv[1])]))
)PY";
  auto out = run_python(code, {nlohmann::json(patterns).dump()}, d_);
  ASSERT_TRUE(out);
  const auto expected = nlohmann::json::parse(*out);
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    SCOPED_TRACE(patterns[i]);
    EXPECT_EQ(expand_braces(patterns[i]), expected[i].get<std::vector<std::string>>());
  }
  // "::" joins patterns, as webdataset's expand_urls splits them.
  EXPECT_EQ(expand_braces("a{1,2}::b{3..4}"), (std::vector<std::string>{"a1", "a2", "b3", "b4"}));
  for (const char* unbalanced : {"{1{2,3}", "shards-{0..9.tar"}) {
    SCOPED_TRACE(unbalanced);
    EXPECT_THROW(expand_braces(unbalanced), Error);
  }
  EXPECT_THROW(expand_braces("{0..99999999}"), Error);  // more names than any set has
}

// Two shards with the cases webdataset's grouping decides: compound and upper-case suffixes, keys
// in folders, a key met again after another, metadata, members without a dot, folders and links,
// a sample without an image, labels from .cls, .txt and .json, and a key repeated in the next shard.
//
// One Python run answers both reference tests (importing webdataset takes seconds): argv[2] holds
// names whose key, suffix and metadata status it prints too.
const char* kWriteShards = R"PY(
import io, json, re, sys, tarfile
d = sys.argv[1]
def add(t, name, data=b"", kind=tarfile.REGTYPE, link=""):
    ti = tarfile.TarInfo(name); ti.type = kind; ti.linkname = link
    if kind == tarfile.REGTYPE:
        ti.size = len(data); t.addfile(ti, io.BytesIO(data))
    else:
        t.addfile(ti)
with tarfile.open(d + "/shard-000000.tar", "w") as t:
    add(t, "__meta__", b"{}")
    add(t, "k1.jpg", b"jpeg-1"); add(t, "k1.cls", b"3\n")
    add(t, "sub/k2.png", b"png-2"); add(t, "sub/k2.txt", b" tabby cat \n"); add(t, "sub/k2.seg.png", b"mask")
    add(t, "K3.JPG", b"jpeg-3"); add(t, "K3.json", json.dumps({"label": 7, "w": 3}).encode())
    add(t, "k4.jpg", b"jpeg-4"); add(t, "k5.webp", b"webp-5"); add(t, "k4.cls", b"1")
    add(t, "README", b"no dot"); add(t, "folder", kind=tarfile.DIRTYPE)
    add(t, "k6.jpg", kind=tarfile.SYMTYPE, link="k1.jpg")
    add(t, "k7.cls", b"2")
    add(t, "k8.jpg", b"jpeg-8"); add(t, "k8.json", json.dumps({"label": "dog"}).encode())
    add(t, "k9.jpg", b"jpeg-9"); add(t, "k9.cls", b"not a number")
with tarfile.open(d + "/shard-000001.tar", "w") as t:
    add(t, "k1.jpg", b"jpeg-1b"); add(t, "k1.cls", b"0")
    add(t, "k10.png", b"png-10")
import webdataset as wds
from webdataset.tariterators import tarfile_samples
urls = [d + "/shard-000000.tar", d + "/shard-000001.tar"]
out = []
for s in tarfile_samples([{"url": u} for u in urls]):
    suffixes = sorted(k for k in s if not k.startswith("__"))
    label = None
    if "cls" in s:
        try: label = int(s["cls"])
        except ValueError: label = "bad"
    elif "json" in s:
        label = json.loads(s["json"])["label"]
    elif "txt" in s:
        label = s["txt"].decode().strip()
    out.append({"key": s["__key__"], "shard": urls.index(s["__url__"]), "suffixes": suffixes, "label": label})
from webdataset.tariterators import base_plus_ext, meta_prefix, meta_suffix
names = json.load(open(sys.argv[2]))
skip_meta = r"__[^/]*__($|/)"
keys = []
for n in names:
    k, sx = base_plus_ext(n)
    meta = ("/" not in n and n.startswith(meta_prefix) and n.endswith(meta_suffix)) or re.match(skip_meta, n) is not None
    keys.append([k, sx, meta])
print(json.dumps({"samples": out, "keys": keys}))
)PY";

std::vector<std::string> tricky_names() {
  // Names from an alphabet that exercises every branch of the expression (dots, slashes, newlines,
  // underscores), and hand-picked ones.
  std::vector<std::string> names = {
      "a.jpg",       "dir/a.b.c",   "dir.x/a", ".hidden", "dir/.hidden.jpg", "a/b/.c.jpg", "x\n/a.jpg",
      "x\n.d/a.jpg", "a.b/c.d/e.f", "noext",   "dir/",    "a/b.c/d",         "a..b",       "a.",
      ".",           "/a.jpg",      "a/.",     "x.jpg\n", "a/b\n.c/d.e",     "\n.a/b.c",   "__meta__",
      "__m__/x.jpg", "__x__\n",     "___",     "__",      "a/__m__/b.jpg",   "__a/b__.c",  "k.SEG.PNG"};
  std::mt19937 rng(5);
  const std::string alphabet = "ab./\n_";
  for (int i = 0; i < 3000; ++i) {
    std::string s(rng() % 12, ' ');
    for (char& c : s) c = alphabet[rng() % alphabet.size()];
    names.push_back(s);
  }
  return names;
}

// The shards above and webdataset's answers, made once for the suite.
class WebDatasetReference : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(testing::temp_dir("webdataset-ref"));
    names_ = new std::vector<std::string>(tricky_names());
    std::ofstream(*dir_ / "names.json") << nlohmann::json(*names_).dump();
    if (auto out = run_python(kWriteShards, {dir_->string(), (*dir_ / "names.json").string()}, *dir_))
      reference_ = new nlohmann::json(nlohmann::json::parse(*out));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
    delete names_;
    delete reference_;
  }
  void SetUp() override {
    FRUGAL_NEED_PYTHON_MODULE("webdataset");
    ASSERT_TRUE(reference_);
  }
  static fs::path* dir_;
  static std::vector<std::string>* names_;
  static nlohmann::json* reference_;
};
fs::path* WebDatasetReference::dir_ = nullptr;
std::vector<std::string>* WebDatasetReference::names_ = nullptr;
nlohmann::json* WebDatasetReference::reference_ = nullptr;

TEST_F(WebDatasetReference, KeysSuffixesAndMetadataAreWebdatasets) {
  const auto& expected = (*reference_)["keys"];
  const auto& names = *names_;
  ASSERT_EQ(expected.size(), names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    SCOPED_TRACE(nlohmann::json(names[i]).dump());
    const auto got = detail::base_plus_ext(names[i]);
    if (expected[i][0].is_null()) {
      EXPECT_FALSE(got);
    } else {
      ASSERT_TRUE(got);
      EXPECT_EQ(got->first, expected[i][0].get<std::string>());
      EXPECT_EQ(got->second, expected[i][1].get<std::string>());
    }
    EXPECT_EQ(detail::is_webdataset_meta(names[i]), expected[i][2].get<bool>());
  }
}

TEST_F(WebDatasetReference, SamplesAndLabelsAreTheOnesWebdatasetYields) {
  const auto& expected = (*reference_)["samples"];
  auto a = Archive::open(*dir_ / "shard-{000000..000001}.tar");
  EXPECT_STREQ(a->format(), "webdataset");
  EXPECT_TRUE(a->find("shard-000001.tar/k1.jpg"));
  const WebDatasetSamples got = group_webdataset(*a);
  std::size_t k = 0, without_image = 0;
  for (const auto& e : expected) {
    std::vector<std::string> suffixes = e["suffixes"];
    const bool has_image = std::any_of(suffixes.begin(), suffixes.end(), [](const std::string& s) {
      return std::find(std::begin(kWebDatasetImageSuffixes), std::end(kWebDatasetImageSuffixes), s) !=
             std::end(kWebDatasetImageSuffixes);
    });
    if (!has_image) {
      ++without_image;
      continue;
    }
    SCOPED_TRACE(e.dump());
    ASSERT_LT(k, got.samples.size());
    const WebDatasetSample& s = got.samples[k++];
    EXPECT_EQ(s.key, e["key"].get<std::string>());
    EXPECT_EQ(s.shard, e["shard"].get<std::uint32_t>());
    std::vector<std::string> mine;
    for (const auto& [sx, entry] : s.members) mine.push_back(sx);
    std::sort(mine.begin(), mine.end());
    EXPECT_EQ(mine, suffixes);
    const auto& label = e["label"];
    if (label.is_null()) {
      EXPECT_EQ(s.label_suffix, "");
    } else if (label.is_number()) {
      ASSERT_TRUE(s.class_index);
      EXPECT_EQ(*s.class_index, label.get<std::int64_t>());
    } else if (label == "bad") {
      EXPECT_NE(s.label_problem.find("not a class index"), std::string::npos) << s.label_problem;
    } else {
      EXPECT_EQ(s.class_name, label.get<std::string>());
    }
    std::string image_name = a->entries()[s.image].name;
    for (char& c : image_name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_TRUE(image_name.ends_with("." + s.image_suffix)) << image_name;
    EXPECT_FALSE(a->read(s.image).empty());
  }
  EXPECT_EQ(k, got.samples.size());
  EXPECT_EQ(without_image, 2u);  // k4's .cls after k5, and k7
  EXPECT_EQ(got.skipped.at("no image member (.jpg, .png, .webp, ...)"), without_image);
  EXPECT_EQ(got.skipped.at("metadata (__...__)"), 1u);
  EXPECT_EQ(got.skipped.at("not part of a sample (no '.' in its base name)"), 1u);
  EXPECT_EQ(got.skipped.at("not a file (a folder, link or device)"), 2u);
}

TEST_F(WebDataset, ADuplicateSuffixInOneSampleIsRefusedAsWebdatasetRefusesIt) {
  testing::write(d_ / "dup.tar",
                 testing::tar_file("k.jpg", "a") + testing::tar_file("k.JPG", "b") + testing::tar_end());
  auto a = Archive::open(d_ / "dup.tar");
  try {
    group_webdataset(*a);
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::invalid);
    EXPECT_NE(std::string(err.what()).find("dup.tar:k.JPG"), std::string::npos) << err.what();
  }
}

TEST_F(WebDataset, LabelMembersThatAreTooLargeOrTooDeepAreProblemsNotCrashes) {
  const std::string deep = std::string(30000, '[') + std::string(30000, ']');
  testing::write(d_ / "l.tar",
                 testing::tar_file("a.jpg", "x") + testing::tar_file("a.json", deep) + testing::tar_file("b.jpg", "x") +
                     testing::tar_file("b.txt", std::string(70000, 't')) + testing::tar_file("c.jpg", "x") +
                     testing::tar_file("c.json", "{\"label\": -1}") + testing::tar_file("d.jpg", "x") +
                     testing::tar_file("d.json", "{\"cls\": 4}") + testing::tar_end());
  const auto got = group_webdataset(*Archive::open(d_ / "l.tar"));
  ASSERT_EQ(got.samples.size(), 4u);
  EXPECT_NE(got.samples[0].label_problem.find("nests deeper"), std::string::npos);
  EXPECT_NE(got.samples[1].label_problem.find("larger than"), std::string::npos);
  EXPECT_NE(got.samples[2].label_problem.find("neither"), std::string::npos);
  EXPECT_EQ(got.samples[3].class_index.value_or(-1), 4);
}

TEST_F(WebDataset, PatternsNameEveryShardOrSayWhichAreMissing) {
  for (int i : {0, 1, 3})
    testing::write(d_ / ("s-" + std::to_string(i) + ".tar"),
                   testing::tar_file("k" + std::to_string(i) + ".jpg", "x") + testing::tar_end());
  try {
    Archive::open(d_ / "s-{0..3}.tar");
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(err.what()).find("s-2.tar"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("names 4"), std::string::npos) << err.what();
  }
  auto glob = Archive::open(d_ / "s-*.tar");
  EXPECT_EQ(glob->entries().size(), 3u);
  EXPECT_EQ(glob->entries()[2].name, "s-3.tar/k3.jpg");
  const auto samples = group_webdataset(*glob);
  ASSERT_EQ(samples.samples.size(), 3u);
  EXPECT_EQ(samples.samples[2].shard, 2u);
  EXPECT_THROW(Archive::open(d_ / "none-*.tar"), Error);
  testing::write(d_ / "s-9.tar", "not a tar, a note");
  try {
    Archive::open(d_ / "s-{3,9}.tar");
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::unsupported);
    EXPECT_NE(std::string(err.what()).find("s-9.tar: expected a tar shard"), std::string::npos) << err.what();
  }
}

}  // namespace
}  // namespace frugal

// Hugging Face parquet as DATA: files written by pyarrow (.venv) in the test, as `datasets` writes
// them (an image column of {bytes, path} structs, an int label column, class names in the schema's
// huggingface metadata), read through Archive::open and Dataset::open.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <set>
#include <thread>

#include "archive/tar_fixture.h"
#include "archive/zip_read_fixture.h"
#include "frugal/archive/archive.h"
#include "frugal/dataset/dataset.h"
#include "frugal/dataset/sampler.h"
#include "frugal/util/error.h"

namespace frugal {
namespace {

using testing::run_python;

// Writes the tables the tests read; args: the folder. PNGs of 8x8, so the images decode.
constexpr const char* kWrite = R"PY(
import io, json, sys, os
import pyarrow as pa, pyarrow.parquet as pq
from PIL import Image
d = sys.argv[1]
def png(v):
    b = io.BytesIO(); Image.new("RGB", (8, 8), (v, v, v)).save(b, format="PNG"); return b.getvalue()
img_t = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
def table(rows, names=None, label_type=pa.int64()):
    imgs = pa.array([None if b is None else {"bytes": b, "path": p} for b, p, _ in rows], type=img_t)
    labels = pa.array([l for _, _, l in rows], type=label_type)
    t = pa.table({"image": imgs, "label": labels})
    if names is not None:
        feat = {"image": {"_type": "Image"}, "label": {"_type": "ClassLabel", "names": names}}
        t = t.replace_schema_metadata({"huggingface": json.dumps({"info": {"features": feat}})})
    return t
rows = [(png(10 * i), f"img_{i}.png", i % 3) for i in range(12)]
pq.write_table(table(rows, ["cat", "dog", "fox"]), f"{d}/named.parquet", row_group_size=4)
pq.write_table(table(rows), f"{d}/ints.parquet", row_group_size=5)
os.makedirs(f"{d}/set/data", exist_ok=True)
pq.write_table(table(rows[:7], ["cat", "dog", "fox"]), f"{d}/set/data/train-00000-of-00002.parquet", row_group_size=3)
pq.write_table(table(rows[7:], ["cat", "dog", "fox"]), f"{d}/set/data/train-00001-of-00002.parquet", row_group_size=3)
bad = rows[:4] + [(None, None, 1), (b"", "empty.png", 2), (png(1), "x.png", -1), (b"not an image", "t.png", 0)]
pq.write_table(table(bad, ["cat", "dog", "fox"]), f"{d}/holes.parquet")
pq.write_table(pa.table({"a": [1, 2], "b": ["x", "y"]}), f"{d}/notimages.parquet")
with open(f"{d}/names.txt", "w") as f: f.write("zero\none\ntwo\n")
)PY";

class ParquetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(testing::temp_dir("parquet"));
    made_ = run_python(kWrite, {dir_->string()}, *dir_).has_value();
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override {
    FRUGAL_NEED_PYTHON_MODULE("pyarrow");
    ASSERT_TRUE(made_);
  }
  static std::string at(const std::string& name) { return (*dir_ / name).string(); }

  static std::filesystem::path* dir_;
  static bool made_;
};
std::filesystem::path* ParquetTest::dir_ = nullptr;
bool ParquetTest::made_ = false;

TEST_F(ParquetTest, ClassesFromHuggingfaceMetadata) {
  auto a = Archive::open(at("named.parquet"));
  EXPECT_STREQ(a->format(), "parquet");
  ASSERT_EQ(a->entries().size(), 12u);
  EXPECT_EQ(a->entries()[5].name, "named.parquet/5.png");
  const auto bytes = a->read(5);
  EXPECT_EQ(bytes.size(), a->entries()[5].size);
  EXPECT_EQ(bytes[1], 'P');  // a PNG's signature
  auto ds = Dataset::open(at("named.parquet"));
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"cat", "dog", "fox"}));
  ASSERT_EQ(ds->size(), 12u);
  for (std::size_t i = 0; i < ds->size(); ++i) EXPECT_EQ(ds->label(i), static_cast<int>(i % 3)) << i;
  EXPECT_EQ(ds->skipped().total(), 0u);
  Image scratch, out;
  TransformOptions t;
  t.image_size = 8;
  t.train = false;
  ds->load(4, t, 0, scratch, out);
  EXPECT_EQ(out.width, 8);
}

TEST_F(ParquetTest, IntegerClassesWithoutMetadataAndNamedByClassNames) {
  auto ds = Dataset::open(at("ints.parquet"));
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"0", "1", "2"}));
  DatasetOptions o;
  o.class_names = at("names.txt");
  auto named = Dataset::open(at("ints.parquet"), o);
  EXPECT_EQ(named->classes(), (std::vector<std::string>{"zero", "one", "two"}));
  // --class-names wins over the file's own metadata.
  EXPECT_EQ(Dataset::open(at("named.parquet"), o)->classes(), (std::vector<std::string>{"zero", "one", "two"}));
}

TEST_F(ParquetTest, FolderAndGlobReadEveryFileInOrder) {
  for (const std::string data : {at("set/data"), at("set/data/train-*.parquet")}) {
    auto a = Archive::open(data);
    ASSERT_EQ(a->entries().size(), 12u) << data;
    EXPECT_EQ(a->entries()[0].name, "train-00000-of-00002.parquet/0.png");
    EXPECT_EQ(a->entries()[7].name, "train-00001-of-00002.parquet/0.png");
    auto ds = Dataset::open(data);
    EXPECT_EQ(ds->classes(), (std::vector<std::string>{"cat", "dog", "fox"}));
    EXPECT_EQ(ds->size(), 12u);
    const IoGroups g = ds->io_groups();
    ASSERT_EQ(g.group.size(), 12u);
    EXPECT_EQ(g.bytes.size(), 5u);  // 3 + 2 row groups of 3 rows
    EXPECT_EQ(g.group[7], 3u);      // the second file's first row group
  }
}

// The loader's threads read rows of the same and of other row groups at once, through the cache.
TEST_F(ParquetTest, RowsReadFromManyThreadsAreTheRowsBytes) {
  auto a = Archive::open(at("set/data/train-*.parquet"));
  std::vector<std::vector<std::uint8_t>> want;
  for (std::size_t i = 0; i < a->entries().size(); ++i) want.push_back(a->read(i));
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::vector<std::uint8_t> got;
      for (int round = 0; round < 50; ++round)
        for (std::size_t k = 0; k < want.size(); ++k) {
          const std::size_t i = (k * 7 + static_cast<std::size_t>(t + round)) % want.size();
          a->read(i, got);
          wrong[static_cast<std::size_t>(t)] += got != want[i];
        }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong, std::vector<int>(4, 0));
}

TEST_F(ParquetTest, RowsWithoutImageBytesOrLabelAreCountedByReason) {
  auto ds = Dataset::open(at("holes.parquet"));
  const SkipReport r = ds->skipped();
  EXPECT_EQ(r.counts.at("no image bytes (null)"), 1u);
  EXPECT_EQ(r.counts.at("empty image bytes"), 1u);
  EXPECT_EQ(r.counts.at("no label (null or negative in column label)"), 1u);
  EXPECT_EQ(r.counts.at("not an image"), 1u);
  EXPECT_EQ(r.examples.at("no image bytes (null)"), at("holes.parquet") + ":holes.parquet/4");
  EXPECT_EQ(ds->size(), 4u);
}

TEST_F(ParquetTest, TableWithoutImagesIsRefusedNamingTheFile) {
  try {
    Dataset::open(at("notimages.parquet"));
    FAIL() << "opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid);
    const std::string m = e.what();
    EXPECT_NE(m.find(at("notimages.parquet")), std::string::npos) << m;
    EXPECT_NE(m.find("an image column"), std::string::npos) << m;
    EXPECT_NE(m.find("a (int64)"), std::string::npos) << m;
  }
}

TEST_F(ParquetTest, DamagedBytesAreRefusedNamingTheFile) {
  std::string bytes = testing::read_all(at("named.parquet"));
  const std::string cut = at("cut.parquet");
  testing::write(cut, bytes.substr(0, 40) + bytes.substr(bytes.size() - 200));  // footer kept, data gone
  try {
    Archive::open(cut);
    FAIL() << "opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid);
    EXPECT_NE(std::string(e.what()).find(cut), std::string::npos) << e.what();
  }
}

// A file of 1,390 bytes (found by parquet_fuzz) whose pages declare 256 GiB: Arrow's reader asked
// for it (pyarrow's read_table reached 20 GB of memory). The reader's memory is capped instead.
TEST(ParquetHostile, DeclaredSizesBeyondTheCapAreRefusedWithoutTheMemory) {
  const std::string file = std::string(FRUGAL_SOURCE_DIR) + "/tests/parquet/data/declares_256g.parquet";
  rusage before{}, after{};
  ::getrusage(RUSAGE_SELF, &before);
  try {
    Archive::open(file);
    FAIL() << "opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid);
    const std::string m = e.what();
    EXPECT_NE(m.find(file + ": expected a parquet file Arrow reads"), std::string::npos) << m;
    EXPECT_NE(m.find("more than the 1 GiB one row group may take"), std::string::npos) << m;
  }
  ::getrusage(RUSAGE_SELF, &after);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 512 * 1024) << "KiB more at the peak";
}

TEST(ParquetOrder, WindowedShuffleIsAPermutationKeepingGroupsTogether) {
  IoGroups g;
  const std::size_t n = 5000;
  for (std::size_t i = 0; i < n; ++i) g.group.push_back(static_cast<std::uint32_t>(i / 100));
  g.bytes.assign(50, kShuffleWindowBytes / 4);  // windows of 4 groups
  const auto order = epoch_order(n, 7, 3, true, g);
  std::vector<std::size_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(sorted[i], i);
  EXPECT_EQ(order, epoch_order(n, 7, 3, true, g));
  EXPECT_NE(order, epoch_order(n, 7, 4, true, g));
  // Each window of 400 positions draws from 4 groups only, and is shuffled within.
  for (std::size_t w = 0; w < n / 400; ++w) {
    std::set<std::uint32_t> groups;
    for (std::size_t k = w * 400; k < (w + 1) * 400; ++k) groups.insert(g.group[order[k]]);
    EXPECT_EQ(groups.size(), 4u) << w;
  }
  EXPECT_FALSE(std::is_sorted(order.begin(), order.begin() + 400));
  // Resume by position replays exactly the rest of the same order.
  LoaderOptions o;
  o.batch_size = 64;
  o.seed = 7;
  auto whole = EpochPlan::make(n, o, 3, 0, "t", g);
  auto resumed = EpochPlan::make(n, o, 3, 640, "t", g);
  EXPECT_EQ(whole.order, order);
  EXPECT_EQ(resumed.samples(0), whole.samples(10));
  // Without groups, the order is the one it always was.
  EXPECT_EQ(epoch_order(n, 7, 3, true, IoGroups{}), epoch_order(n, 7, 3, true));
}

}  // namespace
}  // namespace frugal

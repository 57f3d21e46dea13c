// Hugging Face parquet as DATA: files written by pyarrow (.venv) in the test, as `datasets` writes
// them (an image column of {bytes, path} structs, an int label column, class names in the schema's
// huggingface metadata), read through Archive::open and Dataset::open.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "archive/cache_key.h"
#include "archive/parquet_footer.h"
#include "archive/parquet_index_cache.h"
#include "archive/readers.h"
#include "archive/tar_fixture.h"
#include "archive/zip_read_fixture.h"
#include "frugal/archive/archive.h"
#include "frugal/archive/data_source.h"
#include "frugal/dataset/dataset.h"
#include "frugal/dataset/sampler.h"
#include "frugal/util/error.h"

namespace frugal {
namespace {

using testing::run_python;

// Writes the tables the tests read; args: the folder. PNGs of 8x8, so the images decode.
constexpr const char* kWriteParquet = R"PY(
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
# Index cache: 1,200 rows in 12 row groups (PNG and JPEG magic padded to 100 bytes: listed, never
# decoded here), with null, empty and unlabelled rows; and the same table with the formats swapped,
# written so that only the image bytes differ (no compression, dictionary or statistics).
def fake(kind, i): return ((b"\x89PNG\r\n\x1a\n" if kind else b"\xff\xd8\xff\xe0") + bytes([i % 251]) * 100)[:100]
def big(swap):
    rows = []
    for i in range(1200):
        b = None if i % 97 == 5 else b"" if i % 89 == 7 else fake((i % 3 == 0) != swap, i)
        rows.append((b, f"{i}.img", None if i % 50 == 3 else -1 if i % 50 == 4 else i % 3))
    return table(rows, ["cat", "dog", "fox"])
# huggingface metadata of 5 MiB (class names and padding): a footer of 12 MiB with the Arrow
# schema's copy of it (base64), within the footer's 16.
t = table(rows, ["cat", "dog", "fox"])
hf = {"info": {"features": {"image": {"_type": "Image"}, "label": {"_type": "ClassLabel", "names": ["a", "b", "c"]}}},
      "pad": "x" * (5 << 20)}
pq.write_table(t.replace_schema_metadata({"huggingface": json.dumps(hf)}), f"{d}/hf_5m.parquet")
for name, swap in (("big", False), ("big_swapped", True)):
    pq.write_table(big(swap), f"{d}/{name}.parquet", row_group_size=100, compression="NONE", use_dictionary=False,
                   write_statistics=False)
)PY";

class ParquetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(testing::temp_dir("parquet"));
    made_ = run_python(kWriteParquet, {dir_->string()}, *dir_).has_value();
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

// What an open made of a parquet file, for comparing two opens.
struct Opened {
  std::vector<std::string> names;
  std::vector<std::uint64_t> sizes;
  std::vector<std::optional<std::int64_t>> labels;
  std::vector<std::string> class_names;
  std::map<std::string, std::uint64_t> skipped;
  std::map<std::string, std::string> examples;
  std::vector<std::uint32_t> io_group;
  std::vector<std::uint64_t> io_group_bytes;
  std::uint64_t row_groups_read = 0;  // while opening
  bool operator==(const Opened& o) const {
    return names == o.names && sizes == o.sizes && labels == o.labels && class_names == o.class_names &&
           skipped == o.skipped && examples == o.examples && io_group == o.io_group &&
           io_group_bytes == o.io_group_bytes;
  }
};

Opened open_with_cache(const std::filesystem::path& file, const std::filesystem::path& cache) {
  ArchiveOptions o;
  o.index_cache_dir = cache;
  const std::uint64_t before = detail::parquet_row_groups_read();
  auto a = Archive::open(file, o);
  Opened out;
  out.row_groups_read = detail::parquet_row_groups_read() - before;
  for (const auto& e : a->entries()) {
    out.names.push_back(e.name);
    out.sizes.push_back(e.size);
  }
  const EntryLabels& l = *a->entry_labels();
  out.labels = l.label;
  out.class_names = l.class_names;
  out.skipped = l.skipped;
  out.examples = l.examples;
  out.io_group = l.io_group;
  out.io_group_bytes = l.io_group_bytes;
  return out;
}

std::vector<std::filesystem::path> parquet_cache_files(const std::filesystem::path& cache) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(cache / "parquet-index", ec)) out.push_back(e.path());
  return out;
}

// Each test its own copy of big.parquet and its own cache folder.
class ParquetIndexCache : public ParquetTest {
 protected:
  void SetUp() override {
    ParquetTest::SetUp();
    d_ = testing::temp_dir("pq-cache");
    file_ = d_ / "big.parquet";
    cache_ = d_ / "cache";
    testing::write(file_, testing::read_all(at("big.parquet")));
  }
  void TearDown() override { std::filesystem::remove_all(d_); }
  std::filesystem::path d_, file_, cache_;
};

TEST_F(ParquetIndexCache, ASecondOpenReadsNoRowGroupAndListsTheSame) {
  const Opened first = open_with_cache(file_, cache_);
  EXPECT_EQ(first.row_groups_read, 12u);
  ASSERT_EQ(first.names.size(), 1200u - 13 - 14);  // 13 null rows, 14 empty ones
  EXPECT_EQ(first.names[0], "big.parquet/0.png");
  EXPECT_EQ(first.names[1], "big.parquet/1.jpg");
  EXPECT_EQ(first.skipped.at("no image bytes (null)"), 13u);
  EXPECT_EQ(first.class_names, (std::vector<std::string>{"cat", "dog", "fox"}));
  const auto files = parquet_cache_files(cache_);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(files[0].filename().string().find("big.parquet"), std::string::npos);
  const auto written = std::filesystem::last_write_time(files[0]);

  const Opened second = open_with_cache(file_, cache_);
  EXPECT_EQ(second.row_groups_read, 0u);
  EXPECT_TRUE(second == first);
  EXPECT_EQ(std::filesystem::last_write_time(files[0]), written);  // read, not written again
  // Rows read after a cached open are the file's bytes, and as large as listed.
  ArchiveOptions o;
  o.index_cache_dir = cache_;
  auto a = Archive::open(file_, o);
  for (std::size_t i : {std::size_t{0}, std::size_t{1}, std::size_t{600}, a->entries().size() - 1}) {
    const auto bytes = a->read(i);
    EXPECT_EQ(bytes.size(), a->entries()[i].size) << i;
    EXPECT_EQ(bytes[0], a->entries()[i].name.ends_with(".png") ? 0x89 : 0xff) << i;
  }
}

TEST_F(ParquetIndexCache, AFileRewrittenWithTheSameSizeAndStampsIsReadAgain) {
  const Opened first = open_with_cache(file_, cache_);
  const std::string swapped = testing::read_all(at("big_swapped.parquet"));
  ASSERT_EQ(swapped.size(), std::filesystem::file_size(file_));  // only image bytes differ
  struct stat before {};
  struct stat after {};
  ASSERT_EQ(::stat(file_.c_str(), &before), 0);
  const auto mtime = std::filesystem::last_write_time(file_);
  testing::write(file_, swapped);  // in place: the same inode
  std::filesystem::last_write_time(file_, mtime);
  ASSERT_EQ(::stat(file_.c_str(), &after), 0);
  ASSERT_EQ(after.st_ino, before.st_ino);
  ASSERT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);

  const Opened second = open_with_cache(file_, cache_);
  EXPECT_EQ(second.row_groups_read, 12u);
  EXPECT_EQ(second.names[0], "big.parquet/0.jpg");
  EXPECT_EQ(second.names[1], "big.parquet/1.png");
  EXPECT_EQ(second.names.size(), first.names.size());
  EXPECT_EQ(open_with_cache(file_, cache_).row_groups_read, 0u);  // cached again, for the new bytes
}

// One byte of an image far from the footer, the stamps kept: only the sampled blocks see it (the
// file is under 256 KiB, so all of it is sampled; a larger one is sampled in 64 blocks).
TEST_F(ParquetIndexCache, AByteChangedBeforeTheFooterIsCaughtByTheSampledBlocks) {
  const Opened first = open_with_cache(file_, cache_);
  std::string bytes = testing::read_all(file_);
  ASSERT_GT(bytes.size(), std::size_t{100} + (64 << 10));
  const auto mtime = std::filesystem::last_write_time(file_);
  bytes[100] = static_cast<char>(bytes[100] ^ 1);  // inside row 0's image, past the bytes sniffed
  testing::write(file_, bytes);
  std::filesystem::last_write_time(file_, mtime);
  const Opened second = open_with_cache(file_, cache_);
  EXPECT_EQ(second.row_groups_read, 12u);
  EXPECT_TRUE(second == first);
}

TEST_F(ParquetIndexCache, ADamagedCacheFileIsIgnoredAndReplaced) {
  const Opened first = open_with_cache(file_, cache_);
  const std::filesystem::path file = parquet_cache_files(cache_).at(0);
  const std::string bytes = testing::read_all(file);
  for (std::size_t at : {std::size_t{3}, std::size_t{20}, bytes.size() / 2, bytes.size() - 1}) {
    std::string bad = bytes;
    bad[at] = static_cast<char>(bad[at] ^ 0x20);
    testing::write(file, bad);
    const Opened again = open_with_cache(file_, cache_);
    EXPECT_EQ(again.row_groups_read, 12u) << at;
    EXPECT_TRUE(again == first) << at;
    EXPECT_EQ(testing::read_all(file), bytes) << at;  // written again
  }
  for (const std::string& cut : {bytes.substr(0, bytes.size() / 3), bytes.substr(0, 10), std::string(), bytes + "more",
                                 std::string(bytes.size(), '\0')}) {
    testing::write(file, cut);
    const Opened again = open_with_cache(file_, cache_);
    EXPECT_EQ(again.row_groups_read, 12u) << cut.size();
    EXPECT_TRUE(again == first) << cut.size();
  }
  // Not a regular file: a folder where the cache file goes is left alone (it cannot be replaced).
  std::filesystem::remove(file);
  std::filesystem::create_directory(file);
  EXPECT_TRUE(open_with_cache(file_, cache_) == first);
}

// Caches whose checksum is right but whose content cannot be what an open recorded: the checks of
// parse_parquet_cache, one at a time, each through a real open.
TEST_F(ParquetIndexCache, AHostileCacheWithARightChecksumIsIgnored) {
  const Opened first = open_with_cache(file_, cache_);
  const std::filesystem::path file = parquet_cache_files(cache_).at(0);
  const auto src = open_byte_source(file_.string());
  const auto id = parquet_cache_identity(*src, 0);
  ASSERT_TRUE(id);
  ParquetShape shape{0, 1, std::vector<std::int64_t>(12, 100)};
  std::string why;
  const std::optional<CacheKey> key = load_or_make_cache_key(cache_key_file(), why);  // the one opens use
  ASSERT_TRUE(key) << why;
  const auto genuine = parse_parquet_cache(testing::read_all(file), *id, shape, *key);
  ASSERT_TRUE(genuine);
  ASSERT_EQ(parquet_cache_bytes(*id, shape, *genuine, *key), testing::read_all(file));

  auto with = [&](auto change) {
    ParquetShape s = shape;
    ParquetRowIndex index = *genuine;
    change(s, index);
    return parquet_cache_bytes(*id, s, index, *key);
  };
  using Shape = ParquetShape&;
  using Index = ParquetRowIndex&;
  std::vector<std::pair<std::string, std::string>> hostile = {
      {"a row too few", with([](Shape, Index i) { i.rows.pop_back(); })},
      {"a row more", with([](Shape, Index i) { i.rows.push_back(i.rows.back()); })},
      {"other row groups", with([](Shape s, Index) { s.group_rows[3] = 99, s.group_rows[4] = 101; })},
      {"a row of 1 TiB", with([](Shape, Index i) { i.rows[8].size = std::uint64_t{1} << 40; })},
      {"a row of no bytes", with([](Shape, Index i) { i.rows[8].size = 0; })},
      {"a null row with bytes", with([](Shape, Index i) { i.rows[5].size = 3; })},
      {"a format past the last", with([](Shape, Index i) { i.rows[8].format = static_cast<ImageFormat>(200); })},
      {"a state past the last", with([](Shape, Index i) { i.rows[8].image = static_cast<ParquetImage>(3); })},
      {"labels missing", with([](Shape, Index i) { i.labels.clear(); })},
      {"a label too few", with([](Shape, Index i) { i.labels.pop_back(); })},
      {"another label column", with([](Shape s, Index) { s.label_field = 0; })},
  };
  ParquetCacheIdentity other = *id;
  other.source.files[0].mtime_ns += 1;
  hostile.emplace_back("other stamps", parquet_cache_bytes(other, shape, *genuine, *key));
  other = *id;
  other.sample_xxh3 += 1;
  hostile.emplace_back("other sampled bytes", parquet_cache_bytes(other, shape, *genuine, *key));
  for (const auto& [what, bytes] : hostile) {
    EXPECT_FALSE(parse_parquet_cache(bytes, *id, shape, *key)) << what;
    testing::write(file, bytes);
    const Opened again = open_with_cache(file_, cache_);
    EXPECT_EQ(again.row_groups_read, 12u) << what;
    EXPECT_TRUE(again == first) << what;
  }
}

TEST_F(ParquetIndexCache, ACacheFolderThatCannotBeWrittenCostsOnlyTheCache) {
  testing::write(cache_, "a file where the cache folder goes");
  const Opened first = open_with_cache(file_, cache_);
  EXPECT_EQ(first.names.size(), 1200u - 13 - 14);
  const Opened second = open_with_cache(file_, cache_);
  EXPECT_EQ(second.row_groups_read, 12u);
  EXPECT_TRUE(second == first);
}

TEST_F(ParquetIndexCache, FilesOfFewerRowsAndAnEmptyCacheFolderMakeNoCacheFile) {
  EXPECT_EQ(open_with_cache(at("named.parquet"), cache_).row_groups_read, 3u);
  EXPECT_EQ(open_with_cache(at("named.parquet"), cache_).row_groups_read, 3u);
  EXPECT_FALSE(std::filesystem::exists(cache_));
  EXPECT_EQ(open_with_cache(file_, std::filesystem::path()).row_groups_read, 12u);  // "": never cached
  EXPECT_EQ(open_with_cache(file_, std::filesystem::path()).row_groups_read, 12u);
  EXPECT_FALSE(std::filesystem::exists(cache_));
  static_assert(kParquetIndexCacheMin == 1000);
}

// The dataset (labels, classes, skipped rows) is the same from a cached open. Both opens also
// decode the row groups of the samples the dataset probes for channels and sizes.
TEST_F(ParquetIndexCache, TheDatasetOfACachedOpenIsTheSame) {
  ::setenv("FRUGAL_CACHE_DIR", cache_.c_str(), 1);
  std::uint64_t before = detail::parquet_row_groups_read();
  auto first = Dataset::open(file_.string());
  const std::uint64_t first_reads = detail::parquet_row_groups_read() - before;
  ASSERT_EQ(parquet_cache_files(cache_).size(), 1u);
  before = detail::parquet_row_groups_read();
  auto second = Dataset::open(file_.string());
  EXPECT_EQ(first_reads - (detail::parquet_row_groups_read() - before), 12u);
  ::unsetenv("FRUGAL_CACHE_DIR");
  EXPECT_EQ(second->classes(), first->classes());
  ASSERT_EQ(second->size(), first->size());
  for (std::size_t i = 0; i < first->size(); ++i) ASSERT_EQ(second->label(i), first->label(i)) << i;
  EXPECT_EQ(second->skipped().counts, first->skipped().counts);
  EXPECT_EQ(second->skipped().examples, first->skipped().examples);
}

// A file of 1,390 bytes (found by parquet_fuzz) whose pages declare 256 GiB: Arrow's reader asked
// for it (pyarrow's read_table reached 20 GB of memory). The reader's memory is capped, and the
// file is now refused earlier still, by the rows its footer declares.
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
    // Since the row-count check (parquet_footer_fuzz's 848-byte footer), refused before its pages
    // are read: its row group also declares 78,753,044,528 rows.
    EXPECT_NE(m.find("row group 0 declaring 78753044528 rows in a file of 1.36 KiB (more rows than bytes)"),
              std::string::npos)
        << m;
  }
  ::getrusage(RUSAGE_SELF, &after);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 512 * 1024) << "KiB more at the peak";
}

// ---- Footers that Thrift's reader expands (issue 47) --------------------------------------------

// Thrift's compact encoding, enough to write FileMetaData by hand.
std::string varint(std::uint64_t n) {
  std::string out;
  for (; n >= 0x80; n >>= 7) out += static_cast<char>((n & 0x7f) | 0x80);
  return out + static_cast<char>(n);
}
std::string field(int delta, int type) { return std::string(1, static_cast<char>(delta << 4 | type)); }
std::string list_of(std::uint64_t n, int type) {
  return n < 15 ? std::string(1, static_cast<char>(n << 4 | type)) : static_cast<char>(0xf0 | type) + varint(n);
}
constexpr int kI32 = 5, kI64 = 6, kBinary = 8, kList = 9, kStruct = 12;

// FileMetaData of `columns` int32 columns and `groups` row groups of a column chunk of 3 bytes each
// (file_offset 0 and nothing else); with `declared_only`, one row group whose list of column chunks
// declares `columns` and holds none (Thrift allocates for the count before it reads an element).
std::string crafted_footer(std::uint64_t groups, std::uint64_t columns, bool declared_only = false) {
  const std::uint64_t leaves = declared_only ? 1 : columns;
  std::string f = field(1, kI32) + varint(2);  // version 1
  f += field(1, kList) + list_of(leaves + 1, kStruct) + field(4, kBinary) + varint(6) + "schema" + field(1, kI32) +
       varint(2 * leaves) + '\0';
  for (std::uint64_t c = 0; c < leaves; ++c)
    f += field(1, kI32) + varint(2) + field(3, kBinary) + varint(1) + "c" + '\0';
  f += field(1, kI64) + varint(2 * groups);
  if (declared_only) return f + field(1, kList) + list_of(1, kStruct) + field(1, kList) + list_of(columns, kStruct);
  std::string group = field(1, kList) + list_of(columns, kStruct);
  for (std::uint64_t c = 0; c < columns; ++c) group += field(2, kI64) + varint(0) + '\0';
  group += field(1, kI64) + varint(0) + field(1, kI64) + varint(2) + '\0';
  f += field(1, kList) + list_of(groups, kStruct);
  for (std::uint64_t g = 0; g < groups; ++g) f += group;
  return f + '\0';
}

std::string parquet_of_footer(const std::string& footer) {
  std::string len(4, '\0');
  for (int k = 0; k < 4; ++k) len[k] = static_cast<char>(footer.size() >> (8 * k));
  return "PAR1" + footer + len + "PAR1";
}

// Archive::open(file)'s error, and how much the peak memory grew meanwhile (KiB).
std::pair<Error, long> open_refused(const std::string& file) {
  rusage before{}, after{};
  ::getrusage(RUSAGE_SELF, &before);
  try {
    Archive::open(file);
  } catch (const Error& e) {
    ::getrusage(RUSAGE_SELF, &after);
    return {e, after.ru_maxrss - before.ru_maxrss};
  }
  ADD_FAILURE() << file << " opened";
  return {Error(ErrorKind::io, "opened"), 0};
}

// 1,000 row groups of 1,000 column chunks in a footer of 3 MB took 725 MB in Arrow's Thrift reader
// (the 12 MB one 2.8 GB): refused before it is parsed, the peak memory the footer's bytes and a
// little more.
TEST_F(ParquetTest, AFooterOfAMillionColumnChunksIsRefusedBeforeArrowExpandsIt) {
  const std::string file = at("million_chunks.parquet");
  testing::write(file, parquet_of_footer(crafted_footer(1000, 1000)));
  const auto [e, grown] = open_refused(file);
  EXPECT_EQ(e.kind(), ErrorKind::budget) << e.what();
  const std::string m = e.what();
  EXPECT_NE(m.find(file + ": expected a parquet footer that takes at most 256 MiB to read"), std::string::npos) << m;
  EXPECT_NE(m.find("declaring 1000 row groups of "), std::string::npos) << m;
  EXPECT_LT(grown, 64 * 1024) << "KiB more at the peak";
}

// A footer of 32 bytes whose list declares a million column chunks: Thrift allocated 700 MB for
// them before finding none.
TEST_F(ParquetTest, AListDeclaringMoreElementsThanItsBytesIsRefusedBeforeItIsAllocated) {
  const std::string file = at("declared_chunks.parquet");
  testing::write(file, parquet_of_footer(crafted_footer(1, 1000000, true)));
  const auto [e, grown] = open_refused(file);
  EXPECT_EQ(e.kind(), ErrorKind::invalid) << e.what();
  const std::string m = e.what();
  EXPECT_NE(m.find(file + ": expected a parquet file"), std::string::npos) << m;
  EXPECT_NE(m.find("a list of 1000000 elements in 0 bytes"), std::string::npos) << m;
  // 64 MiB as above: in a process of its own (ctest runs each test so) the peak also holds the
  // Arrow plugin's first load, ~20 MB; the old way took 700 MB.
  EXPECT_LT(grown, 64 * 1024) << "KiB more at the peak";
}

// A footer of 848 bytes (found by parquet_footer_fuzz) declaring 2^28 rows: Arrow reserved 512 MiB
// for the label column's levels at once. Refused before any column is read: more rows than bytes.
TEST_F(ParquetTest, AFooterDeclaringMoreRowsThanTheFileHasBytesIsRefusedBeforeAColumnIsRead) {
  const std::string file = at("rows_over_bytes.parquet");
  const std::string footer =
      testing::read_all(std::string(FRUGAL_SOURCE_DIR) + "/fuzz/corpus/parquet_footer/rows_over_bytes.footer");
  ASSERT_EQ(footer.size(), 848u);
  testing::write(file, parquet_of_footer(footer));
  const auto [e, grown] = open_refused(file);
  EXPECT_EQ(e.kind(), ErrorKind::invalid) << e.what();
  const std::string m = e.what();
  EXPECT_NE(m.find(file + ": expected a parquet file Arrow reads"), std::string::npos) << m;
  EXPECT_NE(m.find("(more rows than bytes)"), std::string::npos) << m;
  EXPECT_LT(grown, 64 * 1024) << "KiB more at the peak";
}

TEST_F(ParquetTest, AFooterLongerThanTheCapIsRefusedByItsLength) {
  const std::string file = at("long_footer.parquet");
  testing::write(file, parquet_of_footer(std::string((std::size_t{16} << 20) + 1, '\0')));
  const auto [e, grown] = open_refused(file);
  EXPECT_EQ(e.kind(), ErrorKind::budget) << e.what();
  EXPECT_NE(std::string(e.what()).find(file + ": expected a parquet footer of at most 16"), std::string::npos)
      << e.what();
}

TEST_F(ParquetTest, FootersAsPyarrowWritesThemPassTheWalkCountedRight) {
  for (const auto& [name, groups] :
       {std::pair<std::string, std::uint64_t>{"named.parquet", 3}, {"big.parquet", 12}, {"hf_5m.parquet", 1}}) {
    std::unique_ptr<ByteSource> src = open_byte_source(at(name));
    const ParquetFooterCensus c = check_parquet_footer(*src, name);
    EXPECT_EQ(c.row_groups, groups) << name;
    EXPECT_EQ(c.column_chunks, 3 * groups) << name;  // image.bytes, image.path, label
    EXPECT_LT(c.memory, std::uint64_t{32} << 20) << name;
  }
}

// Class names in metadata beyond what is read for them were dropped silently: the classes became
// 0, 1, 2. Now refused naming the file and the size.
TEST_F(ParquetTest, HuggingfaceMetadataOverItsCapIsRefusedNotDropped) {
  const auto [e, grown] = open_refused(at("hf_5m.parquet"));
  EXPECT_EQ(e.kind(), ErrorKind::invalid) << e.what();
  const std::string m = e.what();
  EXPECT_NE(m.find(at("hf_5m.parquet") + ": expected huggingface metadata (its class names) of at most 4"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("found metadata of 5"), std::string::npos) << m;
}

// One image of 400 MB in its row group: Arrow's read of it passes the 1 GiB cap (the stored pages,
// the decoded bytes and their copy at once). pyarrow reads it (1.7 GB), so the refusal says the
// cap and the row group's sizes, exit 4, not "damaged or truncated (pyarrow shows the same)".
TEST(ParquetHostile, ARowGroupTooLargeForTheCapIsRefusedSayingSoNotDamaged) {
  FRUGAL_NEED_PYTHON_MODULE("pyarrow");
  const auto dir = testing::temp_dir("parquet-big");
  const std::string file = (dir / "one_image.parquet").string();
  ASSERT_TRUE(run_python(R"PY(
import os, sys, pyarrow as pa, pyarrow.parquet as pq
img_t = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
img = b"\xff\xd8\xff\xe0" + os.urandom(400 << 20)
t = pa.table({"image": pa.array([{"bytes": img, "path": "big.jpg"}], type=img_t), "label": pa.array([0])})
pq.write_table(t, sys.argv[1])
)PY",
                         {file}, dir));
  try {
    Archive::open(file)->read(0);
    FAIL() << "read";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::budget) << m;
    EXPECT_NE(m.find(file + ": expected row groups that frugal reads within its 1 GiB a read, found row group 0 "
                            "whose images take 400 MiB stored and 400 MiB decoded"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("row_group_size="), std::string::npos) << m;
    EXPECT_EQ(m.find("damaged"), std::string::npos) << m;
    EXPECT_EQ(m.find("shows the same"), std::string::npos) << m;
  }
  std::filesystem::remove_all(dir);
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

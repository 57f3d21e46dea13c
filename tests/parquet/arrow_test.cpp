// Hugging Face save_to_disk folders and .arrow files as DATA (issue 42): written by pyarrow (.venv)
// in the test as `datasets` writes them (Arrow IPC streams of {bytes, path} image structs and an
// int64 label, dataset_info.json's ClassLabel names, state.json's data files, dataset_dict.json's
// splits), plus an IPC file (ARROW1), a cut one and crafted ones, read through Archive::open and
// Dataset::open.
#include <gtest/gtest.h>

#include <algorithm>

#include "archive/tar_fixture.h"
#include "archive/zip_read_fixture.h"
#include "frugal/archive/archive.h"
#include "frugal/archive/data_source.h"
#include "frugal/archive/file_type.h"
#include "frugal/dataset/dataset.h"
#include "frugal/util/error.h"

namespace frugal {
namespace {

using testing::run_python;

constexpr const char* kWriteArrow = R"PY(
import io, json, os, struct, sys
import pyarrow as pa
from PIL import Image
d = sys.argv[1]
os.chdir(d)
def png(v):
    b = io.BytesIO(); Image.new("RGB", (8, 8), (v, v, v)).save(b, format="PNG"); return b.getvalue()
img_t = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
feat = {"image": {"_type": "Image"}, "label": {"names": ["cat", "dog", "fox"], "_type": "ClassLabel"}}
def table(n, first=0, meta=True):
    t = pa.table({"image": pa.array([{"bytes": png(first + i), "path": None} for i in range(n)], type=img_t),
                  "label": pa.array([(first + i) % 3 for i in range(n)], type=pa.int64())})
    if meta:
        t = t.replace_schema_metadata({"huggingface": json.dumps({"info": {"features": feat}})})
    return t
def stream(t, path, batch=4):
    with pa.OSFile(path, "wb") as f, pa.ipc.new_stream(f, t.schema) as w:
        w.write_table(t, max_chunksize=batch)
def saved(t, folder, split, shards=1):
    os.makedirs(folder)
    per = (t.num_rows + shards - 1) // shards
    files = []
    for s in range(shards):
        name = f"data-{s:05d}-of-{shards:05d}.arrow"
        stream(t.slice(s * per, per), f"{folder}/{name}")
        files.append({"filename": name})
    json.dump({"citation": "", "description": "", "features": feat, "homepage": "", "license": ""},
              open(f"{folder}/dataset_info.json", "w"), indent=2)
    json.dump({"_data_files": files, "_fingerprint": "6d0c0ba5e1cba1a3", "_format_columns": None, "_format_kwargs": {},
               "_format_type": None, "_output_all_columns": False, "_split": split}, open(f"{folder}/state.json", "w"))
# A DatasetDict: train of 12 rows in two shards (batches of 4: 2 + 2 batches), test of 5; the
# names in dataset_info.json only.
saved(table(12, meta=False), "dd/train", "train", shards=2)
saved(table(5, 100, meta=False), "dd/test", "test")
json.dump({"splits": ["train", "test"]}, open("dd/dataset_dict.json", "w"))
stream(table(12), "lone.arrow")
with pa.OSFile("file.arrow", "wb") as f, pa.ipc.new_file(f, table(12).schema) as w:
    w.write_table(table(12), max_chunksize=5)
os.makedirs("split")
stream(table(9), "split/train-00000-of-00001.arrow")
stream(table(3, 50), "split/test-00000-of-00001.arrow")
data = open("lone.arrow", "rb").read()
open("cut.arrow", "wb").write(data[: len(data) * 2 // 3])
# Flatbuffer fields of the message at `pos`: (table offset, vtable offset) in `b`.
def message(b, pos):
    n = struct.unpack_from("<i", b, pos + 4)[0]
    meta = pos + 8
    root = meta + struct.unpack_from("<I", b, meta)[0]
    return meta, n, root, root - struct.unpack_from("<i", b, root)[0]
b = bytearray(data)
meta, n, _, _ = message(b, 0)
batch = meta + n  # the first record batch's prefix (a schema has no body)
_, _, bt, bvt = message(b, batch)
off = struct.unpack_from("<H", b, bvt + 10)[0]  # Message.bodyLength (field 3)
# A batch declaring a body of 600 MiB, in a sparse file that long: refused before it is read.
huge = bytearray(b)
struct.pack_into("<q", huge, bt + off, 600 << 20)
open("huge.arrow", "wb").write(huge)
os.truncate("huge.arrow", len(huge) + (600 << 20))
# The first batch's header declaring 2^40 rows (RecordBatch.length, field 0 of Message.header):
# refused before anything is sized by it (the fuzz target's first find: a 1 TB reserve).
hfield = struct.unpack_from("<H", b, bvt + 8)[0]  # Message.header (field 2)
rb = bt + hfield + struct.unpack_from("<I", b, bt + hfield)[0]
rbvt = rb - struct.unpack_from("<i", b, rb)[0]
lots = bytearray(b)
struct.pack_into("<q", lots, rb + struct.unpack_from("<H", b, rbvt + 4)[0], 1 << 40)
open("lots.arrow", "wb").write(lots)
# The schema's root table pointing outside its metadata: Arrow's verifier must refuse it.
bad = bytearray(b)
struct.pack_into("<I", bad, meta, 0x7ffffff0)
open("unverified.arrow", "wb").write(bad)
# A dictionary-encoded column: a dictionary batch, refused.
stream(pa.table({"image": table(3).column("image"), "label": pa.array(["a", "b", "a"]).dictionary_encode()}),
       "dict.arrow")
)PY";

class ArrowTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(testing::temp_dir("arrow"));
    made_ = run_python(kWriteArrow, {dir_->string()}, *dir_).has_value();
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

  // The error opening `data` throws (none: a failure).
  static Error refusal(const std::string& data) {
    try {
      Archive::open(data);
    } catch (const Error& e) {
      return e;
    }
    ADD_FAILURE() << data << " opened";
    return Error(ErrorKind::io, "");
  }

  static std::filesystem::path* dir_;
  static bool made_;
};
std::filesystem::path* ArrowTest::dir_ = nullptr;
bool ArrowTest::made_ = false;

TEST_F(ArrowTest, StreamAndFileFormatAreSniffedAsArrow) {
  for (const char* f : {"lone.arrow", "file.arrow"}) {
    const FileTypeInfo info = file_type(at(f));
    EXPECT_EQ(info.type, FileType::arrow) << f;
    EXPECT_EQ(describe(info), "an Arrow file");
  }
  EXPECT_NE(file_type(at("dd/train/state.json")).type, FileType::arrow);
}

TEST_F(ArrowTest, LoneStreamAndIpcFileReadAlikeWithMetadataNames) {
  auto stream = Archive::open(at("lone.arrow"));
  auto file = Archive::open(at("file.arrow"));
  EXPECT_STREQ(stream->format(), "arrow");
  ASSERT_EQ(stream->entries().size(), 12u);
  ASSERT_EQ(file->entries().size(), 12u);
  EXPECT_EQ(stream->entries()[5].name, "lone.arrow/5.png");
  for (std::size_t i = 0; i < 12; ++i) EXPECT_EQ(stream->read(i), file->read(i)) << i;
  for (const char* f : {"lone.arrow", "file.arrow"}) {
    auto ds = Dataset::open(at(f));
    EXPECT_EQ(ds->classes(), (std::vector<std::string>{"cat", "dog", "fox"})) << f;
    ASSERT_EQ(ds->size(), 12u);
    for (std::size_t i = 0; i < ds->size(); ++i) EXPECT_EQ(ds->label(i), static_cast<int>(i % 3)) << f << i;
  }
  EXPECT_EQ(Dataset::open(at("lone.arrow"))->io_groups().bytes.size(), 3u);  // batches of 4
  EXPECT_EQ(Dataset::open(at("file.arrow"))->io_groups().bytes.size(), 3u);  // of 5, 5, 2
}

TEST_F(ArrowTest, SaveToDiskFolderTakesDatasetInfoNamesAndStateFiles) {
  EXPECT_EQ(hf_saved_files(at("dd/train")),
            (std::vector<std::string>{"data-00000-of-00002.arrow", "data-00001-of-00002.arrow"}));
  auto a = Archive::open(at("dd/train"));
  EXPECT_STREQ(a->format(), "arrow");
  ASSERT_EQ(a->entries().size(), 12u);
  EXPECT_EQ(a->entries()[6].name, "data-00001-of-00002.arrow/0.png");
  auto ds = Dataset::open(at("dd/train"));
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"cat", "dog", "fox"}));  // no schema metadata: the JSON's
  EXPECT_EQ(ds->size(), 12u);
  EXPECT_EQ(ds->io_groups().bytes.size(), 4u);
}

TEST_F(ArrowTest, DatasetDictTrainsOnTrainAndNamesEachSplit) {
  auto ds = Dataset::open(at("dd"));
  ASSERT_TRUE(ds->split_files());
  const SplitFiles& f = *ds->split_files();
  EXPECT_EQ(f.train, "train/data-00000-of-00002.arrow, train/data-00001-of-00002.arrow");
  EXPECT_EQ(f.test, "test/data-00000-of-00001.arrow");
  EXPECT_EQ(f.validation, "");
  EXPECT_EQ(f.test_data, at("dd") + ":test");
  EXPECT_EQ(ds->size(), 12u);  // the test rows never train
  for (std::size_t i = 0; i < ds->size(); ++i) EXPECT_EQ(ds->name(i).rfind("data-0000", 0), 0u) << ds->name(i);
  DatasetOptions val;
  val.split = SplitFolder::validation;  // eval's: the validation split, else test
  EXPECT_EQ(Dataset::open(at("dd"), val)->size(), 5u);
  auto test = Dataset::open(at("dd") + ":test");
  EXPECT_EQ(test->size(), 5u);
  EXPECT_EQ(test->classes(), (std::vector<std::string>{"cat", "dog", "fox"}));
  EXPECT_EQ(Archive::open(at("dd"))->entries().size(), 17u);  // ls: every split, each under its folder
  EXPECT_EQ(Archive::open(at("dd"))->entries()[12].name, "test/data-00000-of-00001.arrow/0.png");
}

TEST_F(ArrowTest, ArrowFilesNamedBySplitTrainOnTrainOnly) {
  auto ds = Dataset::open(at("split"));
  ASSERT_TRUE(ds->split_files());
  EXPECT_EQ(ds->split_files()->train, "train-00000-of-00001.arrow");
  EXPECT_EQ(ds->split_files()->test, "test-00000-of-00001.arrow");
  EXPECT_EQ(ds->split_files()->what, "Arrow files named by split");
  EXPECT_EQ(ds->size(), 9u);
}

TEST_F(ArrowTest, CutFileIsRefusedNamingItWithoutZipAdvice) {
  const Error e = refusal(at("cut.arrow"));
  EXPECT_EQ(e.kind(), ErrorKind::invalid);
  const std::string m = e.what();
  EXPECT_NE(m.find(at("cut.arrow")), std::string::npos) << m;
  EXPECT_NE(m.find("cut short"), std::string::npos) << m;
  EXPECT_EQ(m.find("zip"), std::string::npos) << m;
}

TEST_F(ArrowTest, BatchDeclaringMoreThanTheCapIsRefusedBeforeItIsRead) {
  const Error e = refusal(at("huge.arrow"));
  EXPECT_EQ(e.kind(), ErrorKind::budget);
  const std::string m = e.what();
  EXPECT_NE(m.find("record batch 0 declaring 600 MiB"), std::string::npos) << m;
}

TEST_F(ArrowTest, BatchDeclaringMoreRowsThanItsBodyHoldsIsRefused) {
  const Error e = refusal(at("lots.arrow"));
  EXPECT_EQ(e.kind(), ErrorKind::invalid);
  const std::string m = e.what();
  EXPECT_NE(m.find("a record batch of 1099511627776 rows in a body of"), std::string::npos) << m;
}

TEST_F(ArrowTest, MetadataFailingArrowsVerifierIsRefused) {
  const Error e = refusal(at("unverified.arrow"));
  EXPECT_EQ(e.kind(), ErrorKind::invalid);
  const std::string m = e.what();
  EXPECT_NE(m.find(at("unverified.arrow")), std::string::npos) << m;
  EXPECT_NE(m.find("flatbuffer"), std::string::npos) << m;
}

TEST_F(ArrowTest, DictionaryBatchIsRefused) {
  const Error e = refusal(at("dict.arrow"));
  EXPECT_EQ(e.kind(), ErrorKind::invalid);
  EXPECT_NE(std::string(e.what()).find("dictionary"), std::string::npos) << e.what();
}

}  // namespace
}  // namespace frugal

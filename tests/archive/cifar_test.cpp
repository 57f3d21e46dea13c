// CIFAR-10/100 read in place (archive/cifar.h): records and pickles built here byte by byte (Python
// 2's cPickle layout), and pickles written by the venv's Python with numpy (protocols 2 to 5) as
// the independent check: entry k's pixels are row k of the array numpy pickled.
#include <gtest/gtest.h>

#include <algorithm>

#include "archive/cifar.h"
#include "frugal/archive/archive.h"
#include "frugal/image/image.h"
#include "frugal/util/error.h"
#include "tar_fixture.h"
#include "zip_read_fixture.h"

namespace fs = std::filesystem;
using namespace frugal;
namespace ft = frugal::testing;

namespace {

// Pixel p of image r: a pattern that tells rows, planes and positions apart.
std::uint8_t pixel(std::size_t r, std::size_t p) { return static_cast<std::uint8_t>(r * 7 + p * 13 + p / 1024); }

std::string image(std::size_t r) {
  std::string s(cifar::kPixels, '\0');
  for (std::size_t p = 0; p < s.size(); ++p) s[p] = static_cast<char>(pixel(r, p));
  return s;
}

// The RGB pixels decoded from an entry, against the planar bytes of image r.
void expect_image(const std::vector<std::uint8_t>& bmp, const std::string& planar) {
  ASSERT_EQ(bmp.size(), cifar::kBmpBytes);
  DecodeOptions o;
  o.channels = 3;
  const Image img = decode_image(bmp, o, "entry");
  ASSERT_EQ(img.width, 32);
  ASSERT_EQ(img.height, 32);
  for (std::size_t y = 0; y < 32; ++y)
    for (std::size_t x = 0; x < 32; ++x)
      for (std::size_t c = 0; c < 3; ++c)
        ASSERT_EQ(img.pixels[(y * 32 + x) * 3 + c], static_cast<std::uint8_t>(planar[c * 1024 + y * 32 + x]))
            << "x " << x << " y " << y << " channel " << c;
}

std::string refusal(const std::function<void()>& f, ErrorKind kind = ErrorKind::invalid) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "not refused";
  return "";
}

// ---- a Python 2 cPickle (protocol 2) of a CIFAR batch, byte by byte ----
std::string le32(std::uint32_t v) { return {char(v), char(v >> 8), char(v >> 16), char(v >> 24)}; }
std::string py2_str(const std::string& s) {  // SHORT_BINSTRING or BINSTRING: Python 2's str
  return s.size() < 256 ? "U" + std::string(1, char(s.size())) + s
                        : "T" + le32(static_cast<std::uint32_t>(s.size())) + s;
}
std::string uint8_array(std::size_t rows, const std::string& bytes, std::size_t cols = cifar::kPixels) {
  using namespace std::string_literals;  // the opcodes hold NUL bytes
  return "cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85"s + py2_str("b") + "\x87R" + "(K\x01M" +
         std::string{char(rows), char(rows >> 8)} + "M" + std::string{char(cols), char(cols >> 8)} +
         "\x86"
         "cnumpy\ndtype\n" +
         py2_str("u1") + "K\x00K\x01\x87R"s + "(K\x03" + py2_str("|") +
         "NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb"s + "\x89" + py2_str(bytes) + "tb";
}
std::string int_list(const std::vector<int>& v) {
  std::string s = "](";
  for (int x : v) s += "K" + std::string(1, char(x));
  return s + "e";
}
// `rows` images (as many as labels when 0), an array that claims `rows_claimed` (0: as many).
std::string py2_batch(const std::vector<int>& labels, const std::string& label_key = "labels",
                      std::size_t rows_claimed = 0, std::size_t rows = 0) {
  if (rows == 0) rows = labels.size();
  std::string data;
  for (std::size_t r = 0; r < rows; ++r) data += image(r);
  return std::string("\x80\x02}(") + py2_str("data") + uint8_array(rows_claimed ? rows_claimed : rows, data) +
         py2_str(label_key) + int_list(labels) + py2_str("batch_label") + py2_str("training batch 1 of 5") + "u.";
}
std::string py2_meta(int n) {
  std::string s = std::string("\x80\x02}(") + py2_str("label_names") + "](";
  for (int k = 0; k < n; ++k) s += py2_str("class" + std::to_string(k));
  return s + "eu.";
}

std::string names(int n, const std::string& prefix = "class") {
  std::string s;
  for (int k = 0; k < n; ++k) s += prefix + std::to_string(k) + "\n";
  return s + "\n";
}

std::string records(const std::vector<int>& labels, const std::vector<int>& coarse = {}) {
  std::string s;
  for (std::size_t r = 0; r < labels.size(); ++r) {
    if (!coarse.empty()) s += char(coarse[r]);
    s += char(labels[r]) + image(r);
  }
  return s;
}

std::vector<std::int64_t> labels_of(const Archive& a) {
  std::vector<std::int64_t> out;
  for (const auto& l : a.entry_labels()->label) out.push_back(l.value_or(-1));
  return out;
}

TEST(Cifar, BinaryRecordsReadAsBmpEntriesWithSplitFoldersLabelsAndNames) {
  const fs::path d = ft::temp_dir("cifar-bin10") / "cifar-10-batches-bin";
  fs::create_directories(d);
  ft::write(d / "data_batch_1.bin", records({3, 1, 4}));
  ft::write(d / "data_batch_2.bin", records({9}));
  ft::write(d / "test_batch.bin", records({0, 2}));
  ft::write(d / "batches.meta.txt", names(10));
  ft::write(d / "readme.html", "<html>");
  for (const fs::path& data : {d, d.parent_path()}) {  // the folder, or the folder holding it
    const auto a = Archive::open(data);
    EXPECT_STREQ(a->format(), "cifar");
    ASSERT_EQ(a->entries().size(), 6u);
    EXPECT_EQ(a->entries()[0].name, "train/data_batch_1/00000.bmp");
    EXPECT_EQ(a->entries()[3].name, "train/data_batch_2/00000.bmp");
    EXPECT_EQ(a->entries()[5].name, "test/test_batch/00001.bmp");
    EXPECT_EQ(labels_of(*a), (std::vector<std::int64_t>{3, 1, 4, 9, 0, 2}));
    EXPECT_EQ(a->entry_labels()->class_names.size(), 10u);
    EXPECT_EQ(a->entry_labels()->class_names[9], "class9");
    expect_image(a->read(2), image(2));
    expect_image(a->read(5), image(1));
  }
  // DATA:test: the test batch alone, its labels kept.
  const auto test = Archive::open(d.string() + ":test");
  ASSERT_EQ(test->entries().size(), 2u);
  EXPECT_EQ(test->entries()[1].name, "test_batch/00001.bmp");
  ASSERT_NE(test->entry_labels(), nullptr);
  EXPECT_EQ(labels_of(*test), (std::vector<std::int64_t>{0, 2}));
  expect_image(test->read(1), image(1));
}

TEST(Cifar, Cifar100BinaryReadsFineLabelsByDefaultAndCoarseWhenAsked) {
  const fs::path d = ft::temp_dir("cifar-bin100") / "cifar-100-binary";
  fs::create_directories(d);
  ft::write(d / "train.bin", records({57, 99, 0}, {3, 19, 4}));
  ft::write(d / "test.bin", records({5}, {7}));
  ft::write(d / "fine_label_names.txt", names(100, "fine"));
  ft::write(d / "coarse_label_names.txt", names(20, "coarse"));
  const auto fine = Archive::open(d);
  EXPECT_EQ(fine->entries()[0].name, "train/train/00000.bmp");
  EXPECT_EQ(fine->entries()[3].name, "test/test/00000.bmp");
  EXPECT_EQ(labels_of(*fine), (std::vector<std::int64_t>{57, 99, 0, 5}));
  EXPECT_EQ(fine->entry_labels()->class_names.size(), 100u);
  expect_image(fine->read(1), image(1));
  ArchiveOptions o;
  o.label_kind = "coarse";
  const auto coarse = Archive::open(d, o);
  EXPECT_EQ(labels_of(*coarse), (std::vector<std::int64_t>{3, 19, 4, 7}));
  EXPECT_EQ(coarse->entry_labels()->class_names[19], "coarse19");
  o.label_kind = "superclass";
  EXPECT_NE(refusal([&] { Archive::open(d, o); }, ErrorKind::usage).find("--label-kind"), std::string::npos);
}

TEST(Cifar, Python2PickleReadsBytesKeysAndTheArrayRows) {
  const std::string pk = py2_batch({1, 0, 7});
  const cifar::Batch b =
      cifar::parse_pickle_batch({reinterpret_cast<const std::uint8_t*>(pk.data()), pk.size()}, "data_batch_1", false);
  ASSERT_EQ(b.rows, 3u);
  EXPECT_EQ(b.fine, (std::vector<std::int64_t>{1, 0, 7}));
  EXPECT_EQ(b.data.substr(2 * cifar::kPixels, cifar::kPixels), image(2));
  const std::string meta = py2_meta(10);
  EXPECT_EQ(cifar::parse_pickle_names({reinterpret_cast<const std::uint8_t*>(meta.data()), meta.size()}, "m",
                                      "label_names")[3],
            "class3");
}

TEST(Cifar, SizesThatDisagreeAreRefusedNamingTheFile) {
  const fs::path d = ft::temp_dir("cifar-bad") / "cifar-10-batches-py";
  fs::create_directories(d);
  ft::write(d / "batches.meta", py2_meta(10));
  auto refused_with = [&](const std::string& batch, const std::string& words) {
    ft::write(d / "data_batch_1", batch);
    const std::string m = refusal([&] { Archive::open(d); });
    EXPECT_NE(m.find("data_batch_1"), std::string::npos) << m;
    EXPECT_NE(m.find(words), std::string::npos) << m;
  };
  refused_with(py2_batch({1, 2}, "labels", 3), "an array of 9216 bytes (its shape)");  // shape vs bytes
  refused_with(py2_batch({1, 2}, "labels", 40000), "an array of 122880000 bytes (its shape), found 6144 bytes");
  refused_with(py2_batch({1, 2}, "labels", 0, 3), "a label in b'labels' for each of the 3 images");
  refused_with(py2_batch({1, 10}), "the label 10 of image 1");
  refused_with(py2_batch({1}, "fine_labels"), "the key b'labels'");
  std::string global = py2_batch({1});
  global.replace(global.find("cnumpy\ndtype\n"), 13, "cos\nsystem\n");
  refused_with(global, "refusing to load os.system");

  const fs::path b = ft::temp_dir("cifar-trunc") / "cifar-10-batches-bin";
  fs::create_directories(b);
  ft::write(b / "batches.meta.txt", names(10));
  ft::write(b / "data_batch_1.bin", records({1, 2}).substr(0, 5000));
  const std::string m = refusal([&] { Archive::open(b); });
  EXPECT_NE(m.find("data_batch_1.bin"), std::string::npos) << m;
  EXPECT_NE(m.find("records of 3073 bytes"), std::string::npos) << m;
}

// numpy's own pickles, Python 3, each protocol, in the .tar.gz torchvision downloads (protocol 3:
// in a plain .tar).
constexpr const char* kWriteNumpyCifar = R"PY(
import io, os, pickle, sys, tarfile
import numpy as np
out, proto = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(proto)
data = rng.integers(0, 256, size=(4, 3072), dtype=np.uint8)
labels = [int(x) for x in rng.integers(0, 10, size=4)]
files = {
    "data_batch_1": {b"batch_label": b"training batch 1 of 5", b"labels": labels[:3], b"data": data[:3],
                     b"filenames": [b"a.png", b"b.png", b"c.png"]},
    "test_batch": {b"batch_label": b"testing batch 1 of 1", b"labels": labels[3:], b"data": data[3:],
                   b"filenames": [b"d.png"]},
    "batches.meta": {b"label_names": [b"airplane", b"automobile", b"bird", b"cat", b"deer", b"dog", b"frog",
                                      b"horse", b"ship", b"truck"], b"num_cases_per_batch": 10000},
}
for tar, mode in (("cifar-10-python.tar.gz", "w:gz"), ("cifar-10-python.tar", "w")):
    with tarfile.open(os.path.join(out, tar), mode) as t:
        for name, d in files.items():
            b = pickle.dumps(d, protocol=proto)
            info = tarfile.TarInfo("cifar-10-batches-py/" + name)
            info.size = len(b)
            t.addfile(info, io.BytesIO(b))
np.save(os.path.join(out, "data.npy"), data)
print(" ".join(str(x) for x in labels))
)PY";

TEST(Cifar, NumpyPicklesOfEveryProtocolReadAsNumpyWroteThem) {
  FRUGAL_NEED_PYTHON_MODULE("numpy");
  for (const int proto : {2, 3, 4, 5}) {
    SCOPED_TRACE("protocol " + std::to_string(proto));
    const fs::path d = ft::temp_dir("cifar-np" + std::to_string(proto));
    const auto out = ft::run_python(kWriteNumpyCifar, {d.string(), std::to_string(proto)}, d);
    ASSERT_TRUE(out);
    const std::string npy = ft::read_all(d / "data.npy");
    const std::string pixels = npy.substr(npy.size() - 4 * cifar::kPixels);
    const auto a = Archive::open(d / (proto == 3 ? "cifar-10-python.tar" : "cifar-10-python.tar.gz"));
    ASSERT_EQ(a->entries().size(), 4u);
    EXPECT_EQ(a->entries()[3].name, "test/test_batch/00000.bmp");
    std::string labels;
    for (const auto l : labels_of(*a)) labels += (labels.empty() ? "" : " ") + std::to_string(l);
    EXPECT_EQ(labels + "\n", *out);
    EXPECT_EQ(a->entry_labels()->class_names[1], "automobile");
    for (std::size_t k = 0; k < 4; ++k) expect_image(a->read(k), pixels.substr(k * cifar::kPixels, cifar::kPixels));
  }
}

TEST(Cifar, AnyGlobalButNumpysArrayMakersIsRefusedBeforeItIsLookedUp) {
  FRUGAL_NEED_PYTHON_MODULE("numpy");
  const fs::path d = ft::temp_dir("cifar-evil");
  ASSERT_TRUE(ft::run_python(R"PY(
import os, pickle, sys
class Evil:
    def __reduce__(self):
        return (os.system, ("touch " + os.path.join(sys.argv[1], "ran"),))
open(os.path.join(sys.argv[1], "evil"), "wb").write(pickle.dumps({b"data": Evil(), b"labels": [1]}, protocol=2))
)PY",
                             {d.string()}, d));
  const std::string pk = ft::read_all(d / "evil");
  const std::string m = refusal([&] {
    cifar::parse_pickle_batch({reinterpret_cast<const std::uint8_t*>(pk.data()), pk.size()}, "data_batch_1", false);
  });
  EXPECT_NE(m.find("posix.system"), std::string::npos) << m;
  EXPECT_NE(m.find("nothing was run"), std::string::npos) << m;
  EXPECT_FALSE(fs::exists(d / "ran"));
}

TEST(Cifar, BmpEntryIsThePlanarRecordInRgbOrder) {
  std::vector<std::uint8_t> bmp;
  const std::string planar = image(5);
  cifar::bmp_of_record(reinterpret_cast<const std::uint8_t*>(planar.data()), bmp);
  expect_image(bmp, planar);
}

}  // namespace

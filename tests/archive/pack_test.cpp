#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "archive/mnist_idx.h"
#include "archive/manifest.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/hash.h"
#include "frugal/image/image.h"
#include "frugal/archive/pack.h"
#include "frugal/archive/split.h"
#include "reference_python.h"
#include "test_files.h"

namespace fs = std::filesystem;
using namespace frugal;

namespace {
using frugal::testing::fresh_dir;
using frugal::testing::venv_python_or_python3;

// `s` as the whole of file `p`, its folders made first.
void write_making_dirs(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << s;
}

// Runs a Python snippet with the zip as sys.argv[1]; 0 when it exits 0.
int py(const std::string& code, const fs::path& zip) {
  fs::path script = zip.string() + ".check.py";
  write_making_dirs(script,
                    "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nassert z.testzip() is None\n" + code);
  return std::system((venv_python_or_python3() + " " + script.string() + " " + zip.string()).c_str());
}

void make_folder_dataset(const fs::path& src) {
  std::uint8_t px[4] = {1, 2, 3, 4};
  auto png = encode_png(px, 2, 2, 1);
  write_making_dirs(src / "cat" / "b.png", std::string(png.begin(), png.end()));
  write_making_dirs(src / "cat" / "a.txt", std::string(4000, 'x'));
  write_making_dirs(src / "dog" / "c.jpg", "\xff\xd8\xff\xe0" + std::string(100, 'j'));
  write_making_dirs(src / "dog" / "sub" / "d.bmp", "BM" + std::string(3000, '\0'));
}
}  // namespace

TEST(Pack, FolderStoresImagesDeflatesTheRestInSortedOrder) {
  auto dir = fresh_dir("pack_folder");
  make_folder_dataset(dir / "src");
  PackOptions o;
  o.output = dir / "out.zip";
  PackResult r = pack(dir / "src", o);
  EXPECT_EQ(r.entries, 4u);
  EXPECT_EQ(r.stored, 2u);
  EXPECT_EQ(r.deflated, 2u);
  EXPECT_EQ(r.classes, (std::vector<std::pair<std::string, std::size_t>>{{"cat", 2}, {"dog", 2}}));
  EXPECT_EQ(py("names = [i.filename for i in z.infolist()]\n"
               "assert names == ['cat/a.txt', 'cat/b.png', 'dog/c.jpg', 'dog/sub/d.bmp'], names\n"
               "assert [i.compress_type for i in z.infolist()] == [8, 0, 0, 8]\n"
               "assert z.read('cat/a.txt') == b'x' * 4000\n",
               o.output),
            0);
  EXPECT_EQ(std::system(("unzip -tq " + o.output.string() + " >/dev/null").c_str()), 0);
}

TEST(Pack, SameFolderGivesTheSameZip) {
  auto dir = fresh_dir("pack_determinism");
  make_folder_dataset(dir / "src");
  PackOptions o;
  o.output = dir / "1.zip";
  pack(dir / "src", o);
  fs::last_write_time(dir / "src" / "cat" / "a.txt", fs::file_time_type::clock::now() - std::chrono::hours(30));
  o.output = dir / "2.zip";
  o.threads = 1;
  pack(dir / "src", o);
  EXPECT_EQ(sha256_hex(read_file(dir / "1.zip")), sha256_hex(read_file(dir / "2.zip")));
}

TEST(Pack, RootPrefixesEveryName) {
  auto dir = fresh_dir("pack_root");
  make_folder_dataset(dir / "src");
  PackOptions o;
  o.output = dir / "out.zip";
  o.root = "pets";
  pack(dir / "src", o);
  EXPECT_EQ(py("assert all(n.startswith('pets/') for n in z.namelist())\n", o.output), 0);
}

TEST(Pack, SplitWritesOnlyPartsAndAManifestOfTheSameZip) {
  auto dir = fresh_dir("pack_split");
  make_folder_dataset(dir / "src");
  PackOptions o;
  o.output = dir / "whole.zip";
  pack(dir / "src", o);
  o.output = dir / "set" / "data.zip";
  fs::create_directories(dir / "set");
  o.split_size = 200;
  PackResult r = pack(dir / "src", o);
  EXPECT_FALSE(fs::exists(dir / "set" / "data.zip"));
  EXPECT_EQ(r.output, dir / "set" / "data.zip.manifest.json");
  EXPECT_GE(r.parts, 3u);
  SplitManifest m = SplitManifest::load(r.output);
  for (std::size_t i = 0; i < m.parts.size(); ++i) EXPECT_EQ(check_part(m, i), "") << i;
  EXPECT_EQ(m.sha256, sha256_hex(read_file(dir / "whole.zip")));
  JoinOptions j;
  j.output = dir / "joined.zip";
  join_parts(r.output, j);
  EXPECT_EQ(std::system(("unzip -tq " + j.output.string() + " >/dev/null").c_str()), 0);
}

TEST(Pack, IdxBecomesPngsInClassFolders) {
  auto dir = fresh_dir("pack_idx");
  auto be32 = [](std::uint32_t v) { return std::string{char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; };
  std::string img = be32(0x803) + be32(5) + be32(2) + be32(3);
  for (int i = 0; i < 5; ++i)
    for (int p = 0; p < 6; ++p) img += char(40 * i + p);
  write_making_dirs(dir / "idx" / "train-images-idx3-ubyte", img);
  write_making_dirs(dir / "idx" / "train-labels-idx1-ubyte",
                    be32(0x801) + be32(5) + std::string("\x01\x00\x02\x01\x01", 5));
  PackOptions o;
  o.output = dir / "out.zip";
  o.class_names = {"zero", "one", "two"};
  PackResult r = pack(dir / "idx", o);
  EXPECT_EQ(r.source, "idx");
  EXPECT_EQ(r.entries, 5u);
  EXPECT_EQ(r.stored, 5u);
  EXPECT_EQ(r.classes, (std::vector<std::pair<std::string, std::size_t>>{{"zero", 1}, {"one", 3}, {"two", 1}}));
  // Pixels checked through Pillow, an independent PNG decoder.
  EXPECT_EQ(py("import io\nfrom PIL import Image\n"
               "names = z.namelist()\n"
               "assert names == ['one/train_00000.png', 'one/train_00003.png', 'one/train_00004.png',"
               " 'two/train_00002.png', 'zero/train_00001.png'], names\n"
               "im = Image.open(io.BytesIO(z.read('one/train_00003.png')))\n"
               "assert im.size == (3, 2) and im.mode == 'L', (im.size, im.mode)\n"
               "assert list(im.tobytes()) == [120, 121, 122, 123, 124, 125], list(im.tobytes())\n",
               o.output),
            0);
}

TEST(Pack, TooFewClassNamesIsAUsageError) {
  auto dir = fresh_dir("pack_names");
  auto be32 = [](std::uint32_t v) { return std::string{char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; };
  write_making_dirs(dir / "a-images-idx3-ubyte", be32(0x803) + be32(1) + be32(1) + be32(1) + "x");
  write_making_dirs(dir / "a-labels-idx1-ubyte", be32(0x801) + be32(1) + "\x03");
  PackOptions o;
  o.output = dir / "out.zip";
  o.class_names = {"a", "b"};
  try {
    pack(dir / "a-images-idx3-ubyte", o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
  }
  EXPECT_FALSE(fs::exists(o.output));
}

TEST(Pack, RootThatWouldEscapeTheTargetIsRefused) {
  auto dir = fresh_dir("pack_bad_root");
  make_folder_dataset(dir / "src");
  for (std::string root : {"../up", "/abs", "a/../../b"}) {
    PackOptions o;
    o.output = dir / "out.zip";
    o.root = root;
    try {
      pack(dir / "src", o);
      ADD_FAILURE() << root;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage) << root;
    }
    EXPECT_FALSE(fs::exists(o.output)) << root;
  }
}

TEST(Pack, UnfinishedFilesInTheFolderAreNeverPacked) {
  auto dir = fresh_dir("pack_unfinished");
  make_folder_dataset(dir / "src");
  write_making_dirs(dir / "src" / "cat" / "e.png.frugal-tmp-0123456789ab", "a killed extract's file");
  write_making_dirs(dir / "src" / "dog" / "big.zip.frugal-join", "an interrupted join");
  PackOptions o;
  o.output = dir / "out.zip";
  PackResult r = pack(dir / "src", o);
  EXPECT_EQ(r.entries, 4u);
  EXPECT_EQ(r.unfinished_skipped, 2u);
  EXPECT_EQ(py("assert not [n for n in z.namelist() if 'frugal' in n], z.namelist()", dir / "out.zip"), 0);
}

TEST(Pack, AbandonedTemporariesOfAnInterruptedPackOfTheOutputAreRemoved) {
  auto dir = fresh_dir("pack_leftovers");
  make_folder_dataset(dir / "src");
  write_making_dirs(dir / "out" / "data.zip.frugal-tmp-0123456789ab", std::string(5000, 'z'));  // pack killed
  write_making_dirs(dir / "out" / "set.zip.part0000.frugal-tmp-0123456789ab", std::string(5000, 'z'));
  write_making_dirs(dir / "out" / "notes.txt.frugal-tmp-0123456789ab", "someone else's");
  PackOptions o;
  o.output = dir / "out" / "data.zip";
  EXPECT_EQ(pack(dir / "src", o).temporaries_removed, 1u);
  o.output = dir / "out" / "set.zip";
  o.split_size = 3000;
  EXPECT_EQ(pack(dir / "src", o).temporaries_removed, 1u);
  std::vector<std::string> temps;
  for (auto& e : fs::directory_iterator(dir / "out"))
    if (is_temp_path(e.path())) temps.push_back(e.path().filename().string());
  EXPECT_EQ(temps, std::vector<std::string>{"notes.txt.frugal-tmp-0123456789ab"});
}

// DATA as Archive::open reads it: sub-folders (DATA:train/ and the root option), archives stored
// inside archives (read in place; a deflated one refused with the command), and files that are no
// archive named for what they are.
#include <gtest/gtest.h>

#include <zlib.h>
#include <zstd.h>

#include "archive/readers.h"
#include "frugal/archive/archive.h"
#include "frugal/archive/data_source.h"
#include "frugal/util/error.h"
#include "frugal/archive/file_type.h"
#include "tar_fixture.h"
#include "zip_read_fixture.h"

namespace frugal {
namespace {

namespace fs = std::filesystem;
using testing::build_zip;
using testing::TestEntry;

template <class F>
std::string error_of(F f, ErrorKind kind) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

std::vector<std::string> names(const Archive& a) {
  std::vector<std::string> out;
  for (const auto& e : a.entries()) out.push_back(e.name);
  return out;
}

std::string str(const std::vector<std::uint8_t>& b) { return {b.begin(), b.end()}; }

class DataSource : public ::testing::Test {
 protected:
  void SetUp() override {
    d_ = testing::temp_dir("data-source");
    splits_ = build_zip({{"train/cats/1.jpg", "t-c1"},
                         {"train/dogs/2.jpg", "t-d2", true},
                         {"val/cats/3.jpg", "v-c3"},
                         {"test/4.jpg", "t4"}});
    testing::write(d_ / "splits.zip", splits_);
  }
  void TearDown() override { fs::remove_all(d_); }
  fs::path d_;
  std::string splits_;
};

TEST_F(DataSource, ASubFolderIsSeenAloneWithNamesRelativeToIt) {
  auto a = Archive::open(d_ / "splits.zip:train/");
  EXPECT_EQ(names(*a), (std::vector<std::string>{"cats/1.jpg", "dogs/2.jpg"}));
  EXPECT_EQ(a->display_name(), (d_ / "splits.zip").string() + ":train");
  EXPECT_EQ(str(a->read(*a->find("dogs/2.jpg"))), "t-d2");
  EXPECT_EQ(a->entries()[*a->find("cats/1.jpg")].raw_name, "cats/1.jpg");
  // The same through the option, and without the trailing slash.
  ArchiveOptions o;
  o.root = "train";
  EXPECT_EQ(names(*Archive::open(d_ / "splits.zip", o)), names(*a));
  EXPECT_EQ(names(*Archive::open(d_ / "splits.zip:val")), (std::vector<std::string>{"cats/3.jpg"}));
}

TEST_F(DataSource, AMissingSubFolderNamesTheFoldersThereAre) {
  const std::string m = error_of([&] { Archive::open(d_ / "splits.zip:Train/"); }, ErrorKind::usage);
  EXPECT_NE(m.find("'Train/'"), std::string::npos) << m;
  EXPECT_NE(m.find("train/, val/"), std::string::npos) << m;
  ArchiveOptions o;
  o.root = "../x";
  error_of([&] { Archive::open(d_ / "splits.zip", o); }, ErrorKind::usage);
}

TEST_F(DataSource, AZipStoredInAZipIsReadInPlace) {
  testing::write(d_ / "comp.zip", build_zip({{"train.zip", splits_}, {"sample_submission.csv", "id,label\n"}}));
  auto a = Archive::open(d_ / "comp.zip:train.zip");
  EXPECT_STREQ(a->format(), "zip");
  EXPECT_EQ(a->display_name(), (d_ / "comp.zip").string() + ":train.zip");
  EXPECT_EQ(names(*a), names(*Archive::open(d_ / "splits.zip")));
  EXPECT_EQ(str(a->read(*a->find("train/dogs/2.jpg"))), "t-d2");
  // In place: a stored inner entry is a view of the outer file's mapping.
  auto outer = Archive::open(d_ / "comp.zip");
  const auto view = a->stored_view(*a->find("train/cats/1.jpg"));
  ASSERT_TRUE(view);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(view->data()), view->size()), "t-c1");
  EXPECT_EQ(a->source().files(), outer->source().files());
  // Chained with a sub-folder.
  EXPECT_EQ(names(*Archive::open(d_ / "comp.zip:train.zip:train/")),
            (std::vector<std::string>{"cats/1.jpg", "dogs/2.jpg"}));
  // A damaged inner entry is still caught by its own CRC.
  std::string bad = splits_;
  bad[bad.find("t-c1")] = 'X';
  testing::write(d_ / "comp2.zip", build_zip({{"train.zip", bad}}));
  auto b = Archive::open(d_ / "comp2.zip:train.zip");
  EXPECT_NE(error_of([&] { b->read(*b->find("train/cats/1.jpg")); }, ErrorKind::invalid).find("CRC-32"),
            std::string::npos);
}

TEST_F(DataSource, ADeflatedInnerZipIsRefusedWithTheCommandThatExtractsIt) {
  testing::write(d_ / "comp.zip", build_zip({{"train.zip", splits_, true}}));
  const std::string m = error_of([&] { Archive::open(d_ / "comp.zip:train.zip"); }, ErrorKind::unsupported);
  EXPECT_NE(m.find("deflate"), std::string::npos) << m;
  EXPECT_NE(m.find("frugal extract " + (d_ / "comp.zip").string() + " train.zip -C DIR"), std::string::npos) << m;
}

TEST_F(DataSource, TarsAndZipsNestInEachOther) {
  std::string tar = testing::tar_file("data/a.txt", "in a tar") + testing::tar_end();
  testing::write(d_ / "outer.zip", build_zip({{"inner.tar", tar}}));
  auto a = Archive::open(d_ / "outer.zip:inner.tar:data");
  EXPECT_STREQ(a->format(), "tar");
  EXPECT_EQ(str(a->read(*a->find("a.txt"))), "in a tar");
  testing::write(d_ / "outer.tar", testing::tar_file("x/splits.zip", splits_) + testing::tar_end());
  auto b = Archive::open(d_ / "outer.tar:x/splits.zip:val/");
  EXPECT_EQ(str(b->read(*b->find("cats/3.jpg"))), "v-c3");
  ASSERT_TRUE(b->stored_offset(*b->find("cats/3.jpg")));
}

TEST_F(DataSource, AFolderTakesTheSameSyntax) {
  fs::create_directories(d_ / "kaggle" / "input" / "train");
  testing::write(d_ / "kaggle" / "input" / "train" / "a.jpg", "a");
  fs::copy_file(d_ / "splits.zip", d_ / "kaggle" / "input" / "splits.zip");
  EXPECT_EQ(names(*Archive::open(d_ / "kaggle:input/train")), (std::vector<std::string>{"a.jpg"}));
  auto z = Archive::open(d_ / "kaggle:input/splits.zip:test");
  EXPECT_EQ(names(*z), (std::vector<std::string>{"4.jpg"}));
}

TEST_F(DataSource, AnExistingNameWithAColonIsTakenAsItIs) {
  testing::write(d_ / "odd:name.zip", splits_);
  EXPECT_EQ(Archive::open(d_ / "odd:name.zip")->entries().size(), 4u);
  EXPECT_EQ(parse_data_spec((d_ / "odd:name.zip:train").string()).base, d_ / "odd:name.zip");
  EXPECT_EQ(parse_data_spec((d_ / "odd:name.zip:train").string()).rest, "train");
  EXPECT_EQ(parse_data_spec("/no/such/file.zip").rest, "");
}

// ---- files that are no archive ----

std::string gzip_of(const std::string& data) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string zstd_of(const std::string& data) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3));
  return out;
}

TEST_F(DataSource, FilesThatAreNoArchiveAreNamedForWhatTheyAreWithWhatToDo) {
  const std::string tar = testing::tar_file("a.jpg", std::string(3000, 'a')) + testing::tar_end();
  struct Case {
    std::string name, bytes, found, hint;
  };
  const std::vector<Case> cases = {
      {"d.tar.gz", gzip_of(tar), "a gzip-compressed tar", "gunzip -k"},
      {"d.tgz", gzip_of(tar), "a gzip-compressed tar", "{cache_decompressed}"},
      {"d.tar.zst", zstd_of(tar), "a zstd-compressed tar", "zstd -d"},
      {"d.gz", gzip_of("just text"), "a gzip-compressed file", "gunzip -k"},
      {"d.7z", std::string("7z\xbc\xaf\x27\x1c", 6) + std::string(100, '\0'), "a 7-Zip archive", "7z x"},
      {"d.rar", std::string("Rar!\x1a\x07\x01\x00", 8) + std::string(100, '\0'), "a RAR archive", "unrar x"},
      {"d.jpg", std::string("\xff\xd8\xff\xe0", 4) + std::string(100, '\0'), "a JPEG image", "predict"},
      {"labels.csv", "id,label\n1,cat\n", "a text file", "labels"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    testing::write(d_ / c.name, c.bytes);
    const std::string m =
        error_of([&] { Archive::open(d_ / c.name); },
                 c.name == "d.jpg" || c.name == "labels.csv" ? ErrorKind::invalid : ErrorKind::unsupported);
    EXPECT_NE(m.find((d_ / c.name).string() + ": expected an archive frugal reads"), std::string::npos) << m;
    EXPECT_NE(m.find("found " + c.found), std::string::npos) << m;
    EXPECT_NE(m.find(spell_settings(c.hint)), std::string::npos) << m;
    EXPECT_EQ(m.find("copy it again"), std::string::npos) << m;  // the advice that sent users after good downloads
  }
  // Unknown bytes keep the zip parser's own message.
  testing::write(d_ / "junk.bin", std::string("\x01\x02\x03", 3) + std::string(100, '\x05'));
  EXPECT_NE(error_of([&] { Archive::open(d_ / "junk.bin"); }, ErrorKind::invalid).find("end-of-central-directory"),
            std::string::npos);
}

// Parquet is DATA now (tests/parquet/ reads real files): damaged bytes are refused naming the file (by
// frugal's walk of the footer, which runs before Arrow sees it), and a frugal built without Arrow says
// so rather than calling it something else.
TEST_F(DataSource, ParquetIsReadOrRefusedSayingFrugalWasBuiltWithoutIt) {
  testing::write(d_ / "d.parquet", "PAR1" + std::string(100, '\0') + "PAR1");
  const std::string where = (d_ / "d.parquet").string() + ": expected ";
  if (parquet_built()) {
    const std::string m = error_of([&] { Archive::open(d_ / "d.parquet"); }, ErrorKind::invalid);
    EXPECT_NE(m.find(where + "a parquet file"), std::string::npos) << m;
    EXPECT_NE(m.find("footer"), std::string::npos) << m;
  } else {
    const std::string m = error_of([&] { Archive::open(d_ / "d.parquet"); }, ErrorKind::unsupported);
    EXPECT_NE(m.find("FRUGAL_PARQUET=OFF"), std::string::npos) << m;
  }
}

TEST_F(DataSource, ASelfExtractingZipWithAScriptStubIsStillAZip) {
  testing::write(d_ / "sfx.sh", "#!/bin/sh\necho extracting\nexit 0\n" + splits_);
  EXPECT_EQ(Archive::open(d_ / "sfx.sh")->entries().size(), 4u);
}

TEST(FileType, SniffingTellsCompressedTarsFromOtherCompressedFiles) {
  const std::string tar = testing::tar_file("a", "a") + testing::tar_end();
  auto sniff = [](const std::string& b) {
    return sniff_file_type(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(b.data()), b.size()));
  };
  EXPECT_TRUE(is_compressed_tar(sniff(gzip_of(tar))));
  EXPECT_TRUE(is_compressed_tar(sniff(zstd_of(tar))));
  EXPECT_FALSE(is_compressed_tar(sniff(gzip_of(std::string(600, 'x')))));
  EXPECT_EQ(sniff(tar).type, FileType::tar);
  EXPECT_EQ(sniff("").type, FileType::empty);
  EXPECT_EQ(sniff(std::string(600, '\0')).type, FileType::unknown);
}

}  // namespace
}  // namespace frugal

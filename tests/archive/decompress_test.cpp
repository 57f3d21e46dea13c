// Compressed tars decompressed once: the bytes Python's tarfile compressed come back exactly, a
// second run reuses the file, and a budget, a full disk or damaged data leave nothing behind.
#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <thread>

#include "budget/fault_env.h"
#include "frugal/archive/archive.h"
#include "frugal/archive/decompress.h"
#include "frugal/util/error.h"
#include "tar_fixture.h"
#include "zip_read_fixture.h"

namespace frugal {
namespace {

namespace fs = std::filesystem;

// Writes d.tar and d.tar.gz / .tar.bz2 / .tar.xz of it with Python's tarfile.
const char* kWrite = R"PY(
import io, os, random, sys, tarfile
d = sys.argv[1]
rng = random.Random(3)
with tarfile.open(d + "/d.tar", "w", format=tarfile.PAX_FORMAT) as t:
    for i in range(12):  # 1.2 MB of random bytes: bzip2's first block (900 kB) compresses to more than 64 KiB
        b = rng.randbytes(100000 + i)
        ti = tarfile.TarInfo("c%d/f%03d.bin" % (i % 3, i)); ti.size = len(b); t.addfile(ti, io.BytesIO(b))
raw = open(d + "/d.tar", "rb").read()
import gzip, bz2, lzma
open(d + "/d.tar.gz", "wb").write(gzip.compress(raw))
open(d + "/d.tar.bz2", "wb").write(bz2.compress(raw))
open(d + "/d.tar.xz", "wb").write(lzma.compress(raw))
# Several streams, as pigz, pbzip2 and pixz may write them.
half = len(raw) // 2
open(d + "/two.tgz", "wb").write(gzip.compress(raw[:half]) + gzip.compress(raw[half:]))
open(d + "/two.tar.bz2", "wb").write(bz2.compress(raw[:half]) + bz2.compress(raw[half:]))
open(d + "/two.tar.xz", "wb").write(lzma.compress(raw[:half]) + lzma.compress(raw[half:]))
)PY";

std::string zstd_frames(const std::string& data, std::size_t frames) {
  std::string out;
  const std::size_t step = data.size() / frames + 1;
  for (std::size_t at = 0; at < data.size(); at += step) {
    const std::string piece = data.substr(at, step);
    std::string f(ZSTD_compressBound(piece.size()), '\0');
    f.resize(ZSTD_compress(f.data(), f.size(), piece.data(), piece.size(), 3));
    out += f;
  }
  return out;
}

class Decompress : public ::testing::Test {
 protected:
  void SetUp() override {
    d_ = testing::temp_dir("decompress");
    ASSERT_TRUE(testing::run_python(kWrite, {d_.string()}, d_));
    tar_ = testing::read_all(d_ / "d.tar");
    testing::write(d_ / "d.tar.zst", zstd_frames(tar_, 1));
    testing::write(d_ / "three.tar.zst", zstd_frames(tar_, 3));
  }
  void TearDown() override { fs::remove_all(d_); }

  std::vector<fs::path> files_in(const fs::path& dir) {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path());
    return out;
  }

  fs::path d_;
  std::string tar_;
};

TEST_F(Decompress, EveryFormatComesBackByteForByteAndReadsAsATar) {
  for (const char* name :
       {"d.tar.gz", "d.tar.bz2", "d.tar.xz", "d.tar.zst", "two.tgz", "two.tar.bz2", "two.tar.xz", "three.tar.zst"}) {
    SCOPED_TRACE(name);
    const fs::path cache = d_ / "cache" / name;
    const DecompressedTar r = decompress_tar(d_ / name, cache);
    EXPECT_FALSE(r.reused);
    EXPECT_EQ(r.bytes, tar_.size());
    EXPECT_EQ(r.tar.parent_path(), cache);
    EXPECT_EQ(testing::read_all(r.tar), tar_);
    EXPECT_EQ(Archive::open(r.tar)->entries().size(), 12u);
  }
}

TEST_F(Decompress, TheCompressedTarItselfIsRefusedNamingTheWayOut) {
  try {
    Archive::open(d_ / "d.tar.xz");
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::unsupported);
    EXPECT_NE(std::string(err.what()).find("an xz-compressed tar"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find(spell_settings("{cache_decompressed}")), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("xz -dk"), std::string::npos) << err.what();
  }
}

TEST_F(Decompress, ASecondRunReusesTheFileUntilTheSourceChanges) {
  const DecompressedTar first = decompress_tar(d_ / "d.tar.gz", d_ / "cache");
  const auto written = fs::last_write_time(first.tar);
  const DecompressedTar second = decompress_tar(d_ / "d.tar.gz", d_ / "cache");
  EXPECT_TRUE(second.reused);
  EXPECT_EQ(second.tar, first.tar);
  EXPECT_EQ(fs::last_write_time(second.tar), written);
  // A new download of the same name: made again.
  fs::last_write_time(d_ / "d.tar.gz", fs::last_write_time(d_ / "d.tar.gz") + std::chrono::seconds(5));
  EXPECT_FALSE(decompress_tar(d_ / "d.tar.gz", d_ / "cache").reused);
  // An output cut short (a disk that filled outside frugal): made again, not trusted.
  fs::resize_file(first.tar, 1000);
  const DecompressedTar again = decompress_tar(d_ / "d.tar.gz", d_ / "cache");
  EXPECT_FALSE(again.reused);
  EXPECT_EQ(testing::read_all(again.tar), tar_);
}

TEST_F(Decompress, ABudgetTooSmallStopsItAndLeavesNothing) {
  try {
    decompress_tar(d_ / "d.tar.zst", d_ / "cache", tar_.size() / 2);
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::budget);
    EXPECT_NE(std::string(err.what()).find(spell_settings("{disk_budget}")), std::string::npos) << err.what();
  }
  EXPECT_TRUE(files_in(d_ / "cache").empty());
  EXPECT_EQ(decompress_tar(d_ / "d.tar.zst", d_ / "cache", tar_.size()).bytes, tar_.size());
}

TEST_F(Decompress, ADiskWithoutRoomStopsItAndLeavesNothing) {
  testing::FaultEnv env;
  env.free_bytes = 10 << 20;
  try {
    decompress_tar(d_ / "d.tar.gz", d_ / "cache", std::nullopt, env);
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::budget) << err.what();
  }
  EXPECT_TRUE(files_in(d_ / "cache").empty());
  // A write that fails midway (ENOSPC from the kernel) leaves nothing either.
  testing::FaultEnv full;
  full.fail_append_at = 1;
  EXPECT_THROW(decompress_tar(d_ / "d.tar.gz", d_ / "cache2", std::nullopt, full), Error);
  EXPECT_TRUE(files_in(d_ / "cache2").empty());
}

TEST_F(Decompress, DamagedOrTruncatedDataIsAnErrorAndLeavesNothing) {
  const std::string gz = testing::read_all(d_ / "d.tar.gz");
  testing::write(d_ / "cut.tar.gz", gz.substr(0, gz.size() * 2 / 3));
  std::string flipped = gz;
  flipped[gz.size() / 2] ^= 0x55;
  testing::write(d_ / "flipped.tar.gz", flipped);
  const std::string zst = testing::read_all(d_ / "d.tar.zst");
  testing::write(d_ / "cut.tar.zst", zst.substr(0, zst.size() - 100));
  const std::string xz = testing::read_all(d_ / "d.tar.xz");
  testing::write(d_ / "cut.tar.xz", xz.substr(0, xz.size() - 10));
  const std::string bz = testing::read_all(d_ / "d.tar.bz2");
  testing::write(d_ / "cut.tar.bz2", bz.substr(0, bz.size() - 10));
  testing::write(d_ / "junk.tar.gz", gz + "trailing junk");
  for (const char* name : {"cut.tar.gz", "flipped.tar.gz", "cut.tar.zst", "cut.tar.xz", "cut.tar.bz2", "junk.tar.gz"}) {
    SCOPED_TRACE(name);
    try {
      decompress_tar(d_ / name, d_ / "cache");
      ADD_FAILURE() << "decompressed damaged data";
    } catch (const Error& err) {
      EXPECT_EQ(err.kind(), ErrorKind::invalid) << err.what();
      EXPECT_NE(std::string(err.what()).find(name), std::string::npos) << err.what();
    }
    EXPECT_TRUE(files_in(d_ / "cache").empty());
  }
}

TEST_F(Decompress, OnlyACompressedTarIsTaken) {
  EXPECT_THROW(decompress_tar(d_ / "d.tar", d_ / "cache"), Error);
  testing::write(d_ / "note.gz", testing::read_all(d_ / "d.tar.gz").substr(0, 10));
  EXPECT_THROW(decompress_tar(d_ / "note.gz", d_ / "cache"), Error);
}

TEST_F(Decompress, TwoProcessesAtOnceTakeTurnsAndShareTheFile) {
  // Threads stand in for two ranks: the lock is per open file, as between processes.
  DecompressedTar a, b;
  std::thread t1([&] { a = decompress_tar(d_ / "d.tar.xz", d_ / "cache"); });
  std::thread t2([&] { b = decompress_tar(d_ / "d.tar.xz", d_ / "cache"); });
  t1.join();
  t2.join();
  EXPECT_EQ(a.tar, b.tar);
  EXPECT_NE(a.reused, b.reused);
  EXPECT_EQ(testing::read_all(a.tar), tar_);
  EXPECT_EQ(files_in(d_ / "cache").size(), 2u);  // the tar and its .source
}

}  // namespace
}  // namespace frugal

// Compressed tars decompressed once: the bytes Python's tarfile compressed come back exactly, a
// second run reuses the file, and a budget, a full disk or damaged data leave nothing behind.
#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

#include "budget/fault_env.h"
#include "frugal/archive/archive.h"
#include "frugal/archive/decompress.h"
#include "frugal/util/error.h"
#include "frugal/util/progress.h"
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
# A second stream whose block header declares LZMA2's largest dictionary, 4 GiB - 1 (props byte
# 40; its CRC-32 made right): a decoder without a memory limit allocates that for it.
import struct, zlib
s = bytearray(lzma.compress(raw[half:], format=lzma.FORMAT_XZ, filters=[{"id": lzma.FILTER_LZMA2, "dict_size": 1 << 20}]))
size = (s[12] + 1) * 4
assert s[13:17] == bytes([0, 0x21, 1, 16]), s[12:12 + size].hex()  # one filter: LZMA2, 1 MiB
s[16] = 40
s[12 + size - 4:12 + size] = struct.pack("<I", zlib.crc32(bytes(s[12:12 + size - 4])))
open(d + "/huge.tar.xz", "wb").write(lzma.compress(raw[:half]) + bytes(s))
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

// A tar of one member of `bytes` zeros as one zstd frame that does not state its size (a stream,
// as `tar c | zstd` writes it).
std::string zstd_zeros(std::uint64_t bytes) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1);
  std::string out, buf(ZSTD_CStreamOutSize(), '\0');
  auto put = [&](const std::string& piece, ZSTD_EndDirective how) {
    ZSTD_inBuffer in{piece.data(), piece.size(), 0};
    std::size_t left = 0;
    do {
      ZSTD_outBuffer o{buf.data(), buf.size(), 0};
      left = ZSTD_compressStream2(c, &o, &in, how);
      out.append(buf.data(), o.pos);
    } while (how == ZSTD_e_end ? left != 0 : in.pos < in.size);
  };
  put(testing::tar_header({"zeros.bin", '0', bytes}), ZSTD_e_continue);
  const std::string zeros(1 << 20, '\0');
  for (std::uint64_t done = 0; done < bytes; done += zeros.size())
    put(zeros.substr(0, std::min<std::uint64_t>(zeros.size(), bytes - done)), ZSTD_e_continue);
  put("", ZSTD_e_end);
  ZSTD_freeCCtx(c);
  return out;
}

// Writes nothing to the disk: appends are counted, and the free space shrinks by what was written,
// as a real disk's does (FaultEnv's free_bytes at the start).
class CountingEnv : public testing::FaultEnv {
 public:
  std::uint64_t written = 0;
  std::vector<fs::path> created, removed;
  std::unique_ptr<WritableFile> new_writable_file(const fs::path& path) override {
    created.push_back(path);
    return std::make_unique<Counted>(*this);
  }
  std::uint64_t free_space(const fs::path&) override { return free_bytes - std::min(free_bytes, written); }
  bool remove_file(const fs::path& path) override {
    removed.push_back(path);
    return FaultEnv::remove_file(path);
  }

 private:
  struct Counted : WritableFile {
    explicit Counted(CountingEnv& env) : env(env) {}
    void append(const void*, std::size_t n) override { env.written += n; }
    void sync() override {}
    void close() override {}
    CountingEnv& env;
  };
};

class Decompress : public ::testing::Test {
 protected:
  void SetUp() override {
    d_ = testing::temp_dir("decompress");
    ASSERT_TRUE(testing::run_python(kWrite, {d_.string()}, d_));
    tar_ = testing::read_all(d_ / "d.tar");
    testing::write(d_ / "d.tar.zst", zstd_frames(tar_, 1));
    testing::write(d_ / "three.tar.zst", zstd_frames(tar_, 3));
    if (const char* x = std::getenv("XDG_CONFIG_HOME")) saved_xdg_ = x;
    ::setenv("XDG_CONFIG_HOME", (d_ / "config").c_str(), 1);  // a cache key of this test's own
  }
  void TearDown() override {
    if (saved_xdg_)
      ::setenv("XDG_CONFIG_HOME", saved_xdg_->c_str(), 1);
    else
      ::unsetenv("XDG_CONFIG_HOME");
    fs::remove_all(d_);
  }
  std::optional<std::string> saved_xdg_;

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
  env.disk_bytes = 600 << 20;
  env.free_bytes = 30 << 20;  // no more than the disk's last 5%, which decompressing never takes
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

// Issue 47: a 116 KB zstd bomb wrote 577 MiB to a 600 MB disk before it stopped (free space looked
// at every 64 MiB, against a fixed 64 MiB). Now it writes through a byte budget, the free space
// less the disk's last 5% (at most 1 GiB): it stops at that reserve, not past it, and keeps nothing.
TEST_F(Decompress, AZstdBombStopsAtTheDisksReserveAndKeepsNothing) {
  testing::write(d_ / "bomb.tar.zst", zstd_zeros(std::uint64_t{1} << 30));
  ASSERT_LT(fs::file_size(d_ / "bomb.tar.zst"), 200000u);
  CountingEnv env;
  env.disk_bytes = 600 << 20;
  env.free_bytes = 577 << 20;
  const std::uint64_t reserve = decompress_reserve(env.disk_bytes);
  EXPECT_EQ(reserve, 30u << 20);
  try {
    decompress_tar(d_ / "bomb.tar.zst", d_ / "cache", std::nullopt, env);
    FAIL() << "decompressed the bomb";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::budget) << err.what();
    for (const char* part : {"bomb.tar.zst", "needed so far", "FRUGAL_CACHE_DIR", "30.0 MiB"})
      EXPECT_NE(std::string(err.what()).find(part), std::string::npos) << part << " not in: " << err.what();
  }
  EXPECT_GE(env.free_space(d_), reserve) << env.written << " bytes written";  // before: 1 MiB left
  EXPECT_GT(env.written + (1 << 20), env.free_bytes - reserve);               // and it used the room it had
  ASSERT_EQ(env.created.size(), 1u);
  EXPECT_NE(std::find(env.removed.begin(), env.removed.end(), env.created[0]), env.removed.end());
}

// A size the file states that cannot fit is refused before anything is written.
TEST_F(Decompress, AStatedSizeThatCannotFitIsRefusedBeforeWriting) {
  CountingEnv env;
  try {
    decompress_tar(d_ / "d.tar.zst", d_ / "cache", tar_.size() - 1, env);
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::budget);
    EXPECT_NE(std::string(err.what()).find("its first zstd frame states"), std::string::npos) << err.what();
  }
  EXPECT_EQ(env.written, 0u);
}

// Issue 47: an 18 KB .tar.gz was refused whenever less than 64 MiB was free. What it needs is what
// it writes: a small tar fits on a nearly full disk, as long as the disk's last 5% stays free.
TEST_F(Decompress, ASmallTarFitsOnANearlyFullDisk) {
  testing::FaultEnv env;
  env.disk_bytes = 600 << 20;
  env.free_bytes = 40 << 20;  // 10 MiB above the reserve of 30 MiB
  const DecompressedTar r = decompress_tar(d_ / "d.tar.gz", d_ / "cache", std::nullopt, env);
  EXPECT_EQ(testing::read_all(r.tar), tar_);
  EXPECT_EQ(r.tar, decompressed_tar_path(d_ / "d.tar.gz", d_ / "cache"));  // what a budget counts
}

// A tar made earlier counts against the budget too: reused only when it fits in what is left.
TEST_F(Decompress, AReusedTarOverTheBudgetIsRefused) {
  ASSERT_FALSE(decompress_tar(d_ / "d.tar.gz", d_ / "cache").reused);
  try {
    decompress_tar(d_ / "d.tar.gz", d_ / "cache", tar_.size() / 2);
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::budget);
    EXPECT_NE(std::string(err.what()).find("decompressed earlier"), std::string::npos) << err.what();
  }
  EXPECT_TRUE(decompress_tar(d_ / "d.tar.gz", d_ / "cache", tar_.size()).reused);
}

// Issue 47: an xz file whose later stream declares a 4 GiB dictionary took 2.6 GB of memory. The
// memory limit holds for every stream: refused (invalid) naming the file and the limit.
TEST_F(Decompress, AnXzStreamAskingForMoreMemoryThanTheLimitIsRefused) {
  try {
    decompress_tar(d_ / "huge.tar.xz", d_ / "cache");
    FAIL() << "decoded a stream with a 4 GiB dictionary";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::invalid) << err.what();
    for (const char* part : {"huge.tar.xz", "at most 2.00 GiB", "would need 4.00 GiB"})
      EXPECT_NE(std::string(err.what()).find(part), std::string::npos) << part << " not in: " << err.what();
  }
  EXPECT_TRUE(files_in(d_ / "cache").empty());
}

// zstd's window had its cap already; a frame over it now says so, naming the limit.
TEST_F(Decompress, AZstdFrameOverTheWindowLimitIsRefusedNamingIt) {
  // After a frame of the tar, a frame header: magic, descriptor 0 (no size, no checksum), window
  // log 10 + 22 = 32; one empty raw block, the last.
  testing::write(d_ / "wide.tar.zst", zstd_frames(tar_, 1) + std::string("\x28\xb5\x2f\xfd\x00\xb0\x01\x00\x00", 9));
  try {
    decompress_tar(d_ / "wide.tar.zst", d_ / "cache");
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::invalid) << err.what();
    EXPECT_NE(std::string(err.what()).find("window is at most 2.00 GiB"), std::string::npos) << err.what();
  }
}

// Issue 47: a cache folder others can write (a team's shared cache). Whoever can write it planted a
// tar of other names beside a record that matched the compressed file, and frugal read their tar.
class DecompressTrust : public Decompress {
 protected:
  fs::path cache() const { return d_ / "cache"; }
  fs::path tar_path() const { return decompressed_tar_path(d_ / "d.tar.gz", cache()); }
  // A tar of one member, "planted/x.bin": what a hostile writer of the folder puts there.
  void plant_tar(const fs::path& at) const {
    std::string t = testing::tar_header({"planted/x.bin", '0', 3}) + "abc";
    t.resize(t.size() + (512 - t.size() % 512) % 512 + 1024, '\0');
    fs::create_directories(at.parent_path());
    testing::write(at, t);
  }
  nlohmann::json source_fields() const {
    struct stat st {};
    ::stat((d_ / "d.tar.gz").c_str(), &st);
    return {{"format", "frugal-decompressed"},
            {"source", fs::absolute(d_ / "d.tar.gz").lexically_normal().string()},
            {"source_size", static_cast<std::uint64_t>(st.st_size)},
            {"source_mtime_ns", static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec}};
  }
  bool reads_the_real_names(const DecompressedTar& r) const {
    return testing::read_all(r.tar) == tar_ && Archive::open(r.tar)->entries().front().name == "c0/f000.bin";
  }
};

// A record as version 1 wrote it, all of its fields right: the planted tar was used.
TEST_F(DecompressTrust, APlantedTarWithAnOldStyleRecordIsNotUsed) {
  plant_tar(tar_path());
  struct stat st {};
  ::stat(tar_path().c_str(), &st);
  nlohmann::json j = source_fields();
  j["version"] = 1;
  j["bytes"] = static_cast<std::uint64_t>(st.st_size);
  testing::write(tar_path().string() + ".source", j.dump());
  const DecompressedTar r = decompress_tar(d_ / "d.tar.gz", cache());
  EXPECT_FALSE(r.reused);
  EXPECT_TRUE(reads_the_real_names(r));
  EXPECT_TRUE(decompress_tar(d_ / "d.tar.gz", cache()).reused);  // its own record now
}

// A version 2 record whose every field matches the planted tar, but whose MAC is not the user's.
TEST_F(DecompressTrust, ARecordWithAWrongMacIsRebuiltWithANote) {
  const DecompressedTar first = decompress_tar(d_ / "d.tar.gz", cache());
  const fs::path record = first.tar.string() + ".source";
  nlohmann::json j = nlohmann::json::parse(testing::read_all(record));
  ASSERT_EQ(j.value("version", 0), 2);
  ASSERT_EQ(j.value("mac", "").size(), 64u);
  j["mac"] = std::string(64, '0');
  testing::write(record, j.dump());
  ::chmod(record.c_str(), 0644);
  std::vector<std::string> notes;
  DecompressedTar r;
  {
    NoteCapture capture(notes);
    r = decompress_tar(d_ / "d.tar.gz", cache());
  }
  std::string err;
  for (const auto& n : notes) err += n + "\n";
  EXPECT_FALSE(r.reused);
  EXPECT_TRUE(reads_the_real_names(r));
  EXPECT_NE(err.find("not one made with your cache key"), std::string::npos) << err;
  EXPECT_TRUE(decompress_tar(d_ / "d.tar.gz", cache()).reused);
}

// A tar another user owns is not used, even with a record of the user's that matches it.
TEST_F(DecompressTrust, ATarAnotherUserOwnsIsNotTrusted) {
  if (::geteuid() != 0) GTEST_SKIP() << "chown to another user needs root";
  const DecompressedTar first = decompress_tar(d_ / "d.tar.gz", cache());
  ASSERT_EQ(::chown(first.tar.c_str(), 65534, 65534), 0);
  std::vector<std::string> notes;
  DecompressedTar r;
  {
    NoteCapture capture(notes);
    r = decompress_tar(d_ / "d.tar.gz", cache());
  }
  std::string err;
  for (const auto& n : notes) err += n + "\n";
  EXPECT_FALSE(r.reused);
  EXPECT_NE(err.find("written by another user (uid 65534) is never trusted"), std::string::npos) << err;
  struct stat st {};
  ASSERT_EQ(::stat(r.tar.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ::geteuid());
  EXPECT_TRUE(reads_the_real_names(r));
}

// A tar others can write is not used; the one made is 0644 whatever the umask.
TEST_F(DecompressTrust, ATarOthersCanWriteIsNotTrusted) {
  const mode_t old = ::umask(002);
  const DecompressedTar first = decompress_tar(d_ / "d.tar.gz", cache());
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat(first.tar.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 022, 0u);
  ASSERT_EQ(::stat((first.tar.string() + ".source").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 022, 0u);
  ASSERT_TRUE(decompress_tar(d_ / "d.tar.gz", cache()).reused);
  ::chmod(first.tar.c_str(), 0666);
  EXPECT_FALSE(decompress_tar(d_ / "d.tar.gz", cache()).reused);
}

// What cannot be removed (here a folder at the tar's name) is not written over: another name is used.
TEST_F(DecompressTrust, ANameHeldByWhatCannotBeRemovedIsLeftAlone) {
  const fs::path held = tar_path();
  fs::create_directories(held / "x");
  const DecompressedTar r = decompress_tar(d_ / "d.tar.gz", cache());
  EXPECT_NE(r.tar, held);
  EXPECT_TRUE(fs::is_directory(held / "x"));
  EXPECT_TRUE(reads_the_real_names(r));
  EXPECT_TRUE(decompress_tar(d_ / "d.tar.gz", cache()).reused);
  EXPECT_EQ(decompressed_tar_path(d_ / "d.tar.gz", cache()), r.tar);  // what a budget counts
}

}  // namespace
}  // namespace frugal

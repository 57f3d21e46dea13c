// Issue 14, the archive side: hostile manifests, archives and IDX files, each refused as bad input
// (Error invalid/budget) with nothing written outside the target folder, no signal, and memory
// bounded by what was read. Every test here failed against the code before its fix.
#include <gtest/gtest.h>
#include <libdeflate.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <functional>
#include <random>
#include <span>

#include <nlohmann/json.hpp>

#include "archive/mnist_idx.h"
#include "frugal/archive/pack.h"
#include "frugal/archive/read_limit.h"
#include "archive/manifest.h"
#include "archive/part_set.h"
#include "frugal/archive/archive.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/archive/split.h"
#include "byte_strings.h"
#include "test_files.h"
#include "zip_read_fixture.h"

namespace frugal {
namespace {

namespace fs = std::filesystem;
using testing::be32;
using testing::build_zip;
using testing::fresh_dir;
using testing::TestEntry;
using testing::write;

template <class F>
std::string expect_error(F f, ErrorKind kind) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(static_cast<int>(e.kind()), static_cast<int>(kind)) << e.what();
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "a non-frugal exception escaped: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

// Runs f in a child process. Returns the wait status; *grew_kb gets the growth of the child's peak
// resident memory while f ran. f's frugal::Error ends the child with exit 3, anything else with 1.
int in_child(const std::function<void()>& f, long* grew_kb = nullptr) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    rusage before{};
    ::getrusage(RUSAGE_SELF, &before);
    int code = 0;
    try {
      f();
    } catch (const Error&) {
      code = 3;
    } catch (...) {
      code = 1;
    }
    rusage after{};
    ::getrusage(RUSAGE_SELF, &after);
    const long grew = after.ru_maxrss - before.ru_maxrss;
    (void)!::write(fds[1], &grew, sizeof grew);
    ::_exit(code);
  }
  ::close(fds[1]);
  long grew = -1;
  (void)!::read(fds[0], &grew, sizeof grew);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (grew_kb) *grew_kb = grew;
  return status;
}

// ---- 1. join confines the manifest's "name" ----

struct Set {
  fs::path dir, parts, manifest;
};

Set split_set(const std::string& name) {
  Set s;
  s.dir = fresh_dir("hardening_" + name);
  s.parts = s.dir / "parts";
  fs::create_directories(s.parts);
  write(s.dir / "orig.bin", std::string(2500, 'x'));
  SplitOptions o;
  o.part_size = 1000;
  o.out_dir = s.parts;
  o.sync = false;
  s.manifest = split_file(s.dir / "orig.bin", o).manifest;
  return s;
}

void set_name(const fs::path& manifest, const std::string& name) {
  auto j = nlohmann::json::parse(read_file(manifest));
  j["name"] = name;
  write(manifest, j.dump());
}

TEST(Hardening, JoinRefusesAManifestNameOutsideItsFolder) {
  Set s = split_set("join_escape");
  set_name(s.manifest, "../escaped");
  std::string what = expect_error([&] { join_parts(s.manifest, {}); }, ErrorKind::invalid);
  EXPECT_NE(what.find("escaped"), std::string::npos) << what;
  EXPECT_FALSE(fs::exists(s.dir / "escaped"));
  EXPECT_FALSE(fs::exists(s.dir / "escaped.frugal-join"));

  set_name(s.manifest, (s.dir / "absolute").string());
  expect_error([&] { join_parts(s.manifest, {}); }, ErrorKind::invalid);
  EXPECT_FALSE(fs::exists(s.dir / "absolute"));
  EXPECT_FALSE(fs::exists(s.dir / "absolute.frugal-join"));
}

TEST(Hardening, JoinFollowsNoSymlinkOutOfTheManifestsFolder) {
  Set s = split_set("join_symlink");
  fs::create_directories(s.dir / "elsewhere");
  fs::create_directory_symlink(s.dir / "elsewhere", s.parts / "link");
  set_name(s.manifest, "link/out.bin");
  expect_error([&] { join_parts(s.manifest, {}); }, ErrorKind::invalid);
  EXPECT_TRUE(fs::is_empty(s.dir / "elsewhere"));

  // A planted partial output that links elsewhere is not written through either.
  set_name(s.manifest, "out.bin");
  write(s.dir / "victim", "keep me");
  fs::create_symlink(s.dir / "victim", s.parts / "out.bin.frugal-join");
  expect_error([&] { join_parts(s.manifest, {}); }, ErrorKind::invalid);
  EXPECT_EQ(read_file(s.dir / "victim"), "keep me");
  EXPECT_FALSE(fs::exists(s.parts / "out.bin"));
}

// ---- 9 (manifest). Sizes are unsigned integers whose sum does not wrap ----

TEST(Hardening, ManifestWithWrappingOrNegativeSizesIsRefused) {
  Set s = split_set("manifest_sizes");
  auto j = nlohmann::json::parse(read_file(s.manifest));
  j["size"] = 1;
  j["parts"][0]["size"] = -1;  // read as 2^64-1 before the fix: with 2 below, the sum wraps to 1
  j["parts"][1]["size"] = 2;
  j["parts"].erase(2);
  write(s.manifest, j.dump());
  expect_error([&] { SplitManifest::load(s.manifest); }, ErrorKind::invalid);

  j["parts"][0]["size"] = std::numeric_limits<std::uint64_t>::max();
  write(s.manifest, j.dump());
  expect_error([&] { SplitManifest::load(s.manifest); }, ErrorKind::invalid);
}

TEST(Hardening, APartNumberTooLongForAnIntegerIsBadInputNotAnInternalError) {
  auto dir = fresh_dir("hardening_part_number");
  const fs::path p = dir / ("x.part" + std::string(30, '9'));
  write(p, "x");
  expect_error([&] { find_part_set(p); }, ErrorKind::invalid);
}

// ---- 2. extract: wrapping sums and block-rounded disk budgets ----

TEST(Hardening, ExtractSizesThatWrapAroundAreRefusedBeforeWriting) {
  auto dir = fresh_dir("hardening_extract_wrap");
  const std::string zeros(50000, '\0');
  TestEntry big{"big.bin", zeros, true};
  TestEntry liar{"liar.bin", std::string(100, 'z'), true};
  liar.zip64 = true;
  liar.size = std::numeric_limits<std::uint64_t>::max() - 50000 + 11;  // 50000 + this wraps to 10
  auto ar = Archive::open(memory_byte_source(build_zip({big, liar}), "wrap.zip"), "wrap.zip");
  ExtractOptions o;
  o.dir = dir / "out";
  o.max_bytes = 1024;
  expect_error([&] { extract(*ar, o); }, ErrorKind::invalid);
  EXPECT_FALSE(fs::exists(dir / "out" / "big.bin"));
}

TEST(Hardening, ExtractDiskBudgetCountsBlocksNotDeclaredBytes) {
  auto dir = fresh_dir("hardening_extract_blocks");
  std::vector<TestEntry> files;
  for (int i = 0; i < 300; ++i) files.push_back({"f/" + std::to_string(i), "x"});
  auto ar = Archive::open(memory_byte_source(build_zip(files), "small.zip"), "small.zip");
  ExtractOptions o;
  o.dir = dir / "out";
  o.disk_budget = 100 * 1024;  // 300 bytes declared, but 300 files take >= 300 blocks
  std::string what = expect_error([&] { extract(*ar, o); }, ErrorKind::budget);
  EXPECT_NE(what.find("disk-budget"), std::string::npos) << what;
  EXPECT_FALSE(fs::exists(dir / "out" / "f"));
}

// ---- 5. names that normalise to one path are duplicates ----

TEST(Hardening, NamesThatNormaliseToOnePathAreDuplicates) {
  auto dir = fresh_dir("hardening_dup_names");
  auto ar = Archive::open(
      memory_byte_source(build_zip({{"d/f", "one"}, {"d/./f", "two"}, {"d//f", "three"}}), "dup.zip"), "dup.zip");
  EXPECT_EQ(entry_problem(ar->entries()[0]), "");
  EXPECT_NE(entry_problem(ar->entries()[1]).find("duplicate"), std::string::npos);
  EXPECT_NE(entry_problem(ar->entries()[2]).find("duplicate"), std::string::npos);
  ExtractOptions o;
  o.dir = dir / "out";
  std::string what = expect_error([&] { extract(*ar, o); }, ErrorKind::invalid);
  EXPECT_NE(what.find("'d/./f'"), std::string::npos) << what;
  EXPECT_NE(what.find("'d/f'"), std::string::npos) << what;  // the name it collides with
  EXPECT_FALSE(fs::exists(dir / "out" / "d" / "f"));
}

// ---- 6. split removes only parts it wrote ----

TEST(Hardening, SplitDeletesNothingAStaleManifestNamesButItsOwnParts) {
  auto dir = fresh_dir("hardening_split_stale");
  write(dir / "data.bin", std::string(3000, 'd'));
  write(dir / "keep.txt", "the user's file");
  write(dir / "data.bin.part0007", "a part of an older split");  // 24 bytes, named as split names parts
  SplitManifest old;
  old.name = "data.bin";
  old.size = 3000 + 15 + 24;
  old.sha256 = std::string(64, '0');
  old.parts = {{"data.bin", 3000, std::string(64, '0')},
               {"keep.txt", 15, std::string(64, '0')},
               {"data.bin.part0007", 24, std::string(64, '0')}};
  old.save(dir / "data.bin.manifest.json");
  SplitOptions o;
  o.part_size = 1000;
  o.sync = false;
  split_file(dir / "data.bin", o);
  EXPECT_EQ(read_file(dir / "data.bin"), std::string(3000, 'd'));
  EXPECT_EQ(read_file(dir / "keep.txt"), "the user's file");
  EXPECT_FALSE(fs::exists(dir / "data.bin.part0007"));  // an older split's own part: removed
  EXPECT_TRUE(fs::exists(dir / "data.bin.part0002"));
}

// ---- 3. IDX: wrapping dimensions, gzip bombs ----

std::string gzip(const std::string& data) {
  libdeflate_compressor* c = libdeflate_alloc_compressor(9);
  std::string out(libdeflate_gzip_compress_bound(c, data.size()), '\0');
  out.resize(libdeflate_gzip_compress(c, data.data(), data.size(), out.data(), out.size()));
  libdeflate_free_compressor(c);
  return out;
}

TEST(Hardening, IdxDimensionsWhoseProductWrapsAreRefused) {
  auto dir = fresh_dir("hardening_idx_wrap");
  // 2^22 * 2^22 * 2^20 = 2^64, which wraps to 0: a header-only file "matched" its declared size.
  write(dir / "x-images-idx3-ubyte", be32(0x803) + be32(1u << 22) + be32(1u << 22) + be32(1u << 20));
  expect_error([&] { read_idx_images(dir / "x-images-idx3-ubyte"); }, ErrorKind::invalid);
}

TEST(Hardening, IdxGzipBombStopsAtTheDeclaredSize) {
  auto dir = fresh_dir("hardening_idx_bomb");
  // A valid one-image header and its pixels, then 256 members of 1 MiB of zeros each (~1 KiB
  // compressed): 256 MiB more than the header declares.
  std::string file = gzip(be32(0x803) + be32(1) + be32(28) + be32(28) + std::string(784, '\7'));
  const std::string bomb = gzip(std::string(1 << 20, '\0'));
  for (int i = 0; i < 256; ++i) file += bomb;
  write(dir / "x-images-idx3-ubyte.gz", file);
  long grew_kb = 0;
  const int status = in_child([&] { read_idx_images(dir / "x-images-idx3-ubyte.gz"); }, &grew_kb);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_LT(grew_kb, 32 * 1024) << "peak memory grew by " << grew_kb << " KiB";
  std::cerr << "gzip bomb: peak memory grew by " << grew_kb << " KiB\n";
}

// ---- 7. inflation allocates by what was read, not by what a header declares ----

TEST(Hardening, ALyingDeclaredSizeDoesNotAllocateIt) {
  std::mt19937 rng(1);
  std::string noise(256 * 1024, '\0');
  for (auto& c : noise) c = static_cast<char>(rng());
  TestEntry e{"noise.bin", noise, true};
  e.size = 1000u * noise.size();  // ~1000x its compressed size, below deflate's 1032:1 bound
  const std::string zip = build_zip({e});
  long grew_kb = 0;
  const int status = in_child(
      [&] {
        auto ar = Archive::open(memory_byte_source(zip, "lie.zip"), "lie.zip");
        ar->read(0);
      },
      &grew_kb);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_LT(grew_kb, 16 * 1024) << "peak memory grew by " << grew_kb << " KiB for a 256 KiB entry declaring 250 MiB";
  std::cerr << "read: peak memory grew by " << grew_kb << " KiB\n";

  // verify on every thread inherits the bound.
  auto dir = fresh_dir("hardening_lie_verify");
  std::vector<TestEntry> many;
  for (int i = 0; i < 8; ++i) {
    many.push_back(e);
    many.back().name = "noise" + std::to_string(i);
  }
  write(dir / "lie.zip", build_zip(many));
  VerifyReport report;
  const int vstatus = in_child([&] { report = verify_archive(dir / "lie.zip", {}, 8); }, &grew_kb);
  ASSERT_TRUE(WIFEXITED(vstatus)) << vstatus;
  EXPECT_EQ(WEXITSTATUS(vstatus), 0);
  EXPECT_LT(grew_kb, 64 * 1024) << "verify's peak memory grew by " << grew_kb << " KiB";
  std::cerr << "verify, 8 threads: peak memory grew by " << grew_kb << " KiB\n";
}

// ---- 8. a part truncated while mapped ----

TEST(Hardening, APartTruncatedWhileMappedIsAnErrorNotSIGBUS) {
  auto dir = fresh_dir("hardening_truncated_mapped");
  std::string data(1 << 20, '\0');
  std::mt19937 rng(2);
  for (auto& c : data) c = static_cast<char>(rng());
  write(dir / "a.zip", build_zip({{"big.bin", data}, {"small.bin", "s"}}));
  std::string what;
  const int status = in_child([&] {
    auto ar = Archive::open(dir / "a.zip");
    fs::resize_file(dir / "a.zip", 4096);  // the mapping now reaches past the end of the file
    try {
      ar->read(0);
    } catch (const Error& e) {
      // The message must say what happened, not only that the CRC-32 differs.
      if (std::string(e.what()).find("shrank") == std::string::npos) ::_exit(4);
      throw;
    }
  });
  EXPECT_FALSE(WIFSIGNALED(status)) << "killed by signal " << WTERMSIG(status);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
}

// ---- the new behaviour beside the fixes (new API: no run against the old code) ----

std::span<const std::uint8_t> span_of(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

TEST(Hardening, TrainingRefusesDuplicatePathsNamingBoth) {
  auto ar = Archive::open(
      memory_byte_source(
          build_zip({{"cat/1.png", "a"}, {"cat//1.png", "b"}, {"dog/", ""}, {"dog", "file named like the folder"}}),
          "dup.zip"),
      "dup.zip");
  EXPECT_EQ(entry_problem(*ar, 1), "duplicate name (the same path as 'cat/1.png')");
  EXPECT_EQ(entry_problem(*ar, 3), "duplicate name (the same path as 'dog/')");
  std::string what = expect_error([&] { refuse_duplicate_names(*ar); }, ErrorKind::invalid);
  EXPECT_NE(what.find("'cat//1.png' and 'cat/1.png'"), std::string::npos) << what;
  EXPECT_NE(what.find("'dog' and 'dog/'"), std::string::npos) << what;
  // find() still looks names up as written.
  EXPECT_EQ(ar->find("cat//1.png"), std::optional<std::size_t>(1));

  auto clean =
      Archive::open(memory_byte_source(build_zip({{"a/", ""}, {"a/x", "1"}, {"b/x", "2"}}), "ok.zip"), "ok.zip");
  refuse_duplicate_names(*clean);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(entry_problem(*clean, i), "");
}

TEST(Hardening, ALaterPlainNameCollidingWithAnEarlierOddOneIsTheDuplicate) {
  auto ar = Archive::open(memory_byte_source(build_zip({{"./d/f", "1"}, {"d/f", "2"}}), "late.zip"), "late.zip");
  EXPECT_EQ(entry_problem(*ar, 0), "");
  EXPECT_EQ(entry_problem(*ar, 1), "duplicate name (the same path as './d/f')");
}

TEST(Hardening, GzippedIdxInSeveralMembersWithZeroPaddingReads) {
  const std::string img = be32(0x803) + be32(2) + be32(2) + be32(2) + "abcdefgh";
  const std::string file = gzip(img.substr(0, 7)) + gzip(img.substr(7)) + std::string(16, '\0');
  IdxImages got = parse_idx_images(span_of(file), "x.gz");
  EXPECT_EQ(got.count, 2u);
  EXPECT_EQ(std::string(got.pixels.begin(), got.pixels.end()), "abcdefgh");
}

TEST(Hardening, DamagedGzippedIdxIsBadInput) {
  const std::string img = be32(0x803) + be32(1) + be32(2) + be32(2) + "abcd";
  const std::string gz = gzip(img);
  expect_error([&] { parse_idx_images(span_of(gz.substr(0, gz.size() - 6)), "cut.gz"); }, ErrorKind::invalid);
  std::string bad_crc = gz;
  bad_crc[bad_crc.size() - 6] ^= 1;  // the trailer's CRC-32
  expect_error([&] { parse_idx_images(span_of(bad_crc), "crc.gz"); }, ErrorKind::invalid);
  expect_error([&] { parse_idx_images(span_of(gz + "junk"), "junk.gz"); }, ErrorKind::invalid);
  const std::string zero_rows = be32(0x803) + be32(5) + be32(0) + be32(28);
  expect_error([&] { parse_idx_images(span_of(zero_rows), "rows.idx3"); }, ErrorKind::invalid);
  // A header promising more than deflate can produce from the file is refused before inflating.
  const std::string huge = gzip(be32(0x803) + be32(60000) + be32(28) + be32(28) + std::string(100, 'p'));
  std::string what = expect_error([&] { parse_idx_images(span_of(huge), "huge.gz"); }, ErrorKind::invalid);
  EXPECT_NE(what.find("declared"), std::string::npos) << what;
}

TEST(Hardening, AnHonestHighRatioEntryStillInflates) {
  // 8 MiB of zeros: ~8 KiB deflated, a ratio of ~1000:1, far past the first buffer's 8x guess.
  const std::string zeros(8 << 20, '\0');
  auto ar = Archive::open(memory_byte_source(build_zip({{"z", zeros, true}, {"small", "s", true}}), "z.zip"), "z.zip");
  std::vector<std::uint8_t> out;
  ar->read(0, out);
  EXPECT_EQ(out.size(), zeros.size());
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](std::uint8_t b) { return b == 0; }));
  ar->read(1, out);  // the same buffer, reused
  EXPECT_EQ(std::string(out.begin(), out.end()), "s");
}

// The estimate must be close to what an ext4-like file system really allocates (st_blocks of the
// files and folders written), within a quarter either way.
TEST(Hardening, ExtractDiskCostIsCloseToWhatTheFileSystemAllocates) {
  auto dir = fresh_dir("hardening_extract_du");
  std::vector<TestEntry> files;
  for (int i = 0; i < 500; ++i)
    files.push_back({"c" + std::to_string(i % 5) + "/img" + std::to_string(i) + ".bin", std::string(10 + i, 'q')});
  auto ar = Archive::open(memory_byte_source(build_zip(files), "du.zip"), "du.zip");
  ExtractOptions o;
  o.dir = dir / "measured";
  extract(*ar, o);
  std::uint64_t used = 0;
  struct stat st {};
  for (const auto& e : fs::recursive_directory_iterator(o.dir))
    if (::lstat(e.path().c_str(), &st) == 0) used += static_cast<std::uint64_t>(st.st_blocks) * 512;
  ASSERT_GT(used, 500u * 512);
  o.dir = dir / "over";
  o.disk_budget = used * 3 / 4;
  expect_error([&] { extract(*ar, o); }, ErrorKind::budget);
  o.disk_budget = used * 5 / 4;
  EXPECT_EQ(extract(*ar, o).files, 500u);
}

// ---- issue 47: an IDX header is checked against the file's size and the cap before reading; a
// large file is packed in pieces ----

fs::path sparse_file(const fs::path& p, const std::string& head, std::uint64_t size) {
  write(p, head);
  fs::resize_file(p, size);
  return p;
}

TEST(Hardening, IdxRawFileLongerThanItsHeaderSaysIsRefusedUnread) {
  auto dir = fresh_dir("hardening_idx_longer");
  // One 28x28 image declared; the file is 512 MiB (sparse): it was read whole and copied (1 GiB).
  sparse_file(dir / "x-images-idx3-ubyte", be32(0x803) + be32(1) + be32(28) + be32(28), std::uint64_t{512} << 20);
  long grew_kb = 0;
  const int status = in_child([&] { read_idx_images(dir / "x-images-idx3-ubyte"); }, &grew_kb);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_LT(grew_kb, 32 * 1024) << "peak memory grew by " << grew_kb << " KiB";
  std::cerr << "512 MiB IDX with a 1-image header: peak memory grew by " << grew_kb << " KiB\n";
}

TEST(Hardening, IdxHeaderDeclaringTwoBillionImagesInA1KBFileIsRefused) {
  auto dir = fresh_dir("hardening_idx_2g");
  sparse_file(dir / "x-images-idx3-ubyte", be32(0x803) + be32(1u << 31) + be32(28) + be32(28), 1024);
  long grew_kb = 0;
  const int status = in_child([&] { read_idx_images(dir / "x-images-idx3-ubyte"); }, &grew_kb);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_LT(grew_kb, 32 * 1024) << "peak memory grew by " << grew_kb << " KiB";
  std::string what = expect_error([&] { read_idx_images(dir / "x-images-idx3-ubyte"); }, ErrorKind::invalid);
  EXPECT_NE(what.find("max-file-bytes"), std::string::npos) << what;  // 1.5 TiB: over the cap first
}

TEST(Hardening, IdxDataAboveTheCapIsRefusedBeforeItIsRead) {
  auto dir = fresh_dir("hardening_idx_cap");
  // An honest header: 300 images of 1024x1024 in a file of exactly that size (300 MiB + 16, sparse).
  const auto path = sparse_file(dir / "x-images-idx3-ubyte", be32(0x803) + be32(300) + be32(1024) + be32(1024),
                                (std::uint64_t{300} << 20) + 16);
  long grew_kb = 0;
  const int status = in_child([&] { read_idx_images(path); }, &grew_kb);  // default cap: 256 MiB
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_LT(grew_kb, 32 * 1024) << "peak memory grew by " << grew_kb << " KiB";
  std::string what = expect_error([&] { read_idx_images(path, std::uint64_t{100} << 20); }, ErrorKind::invalid);
  EXPECT_NE(what.find("max-file-bytes"), std::string::npos) << what;
  EXPECT_NE(what.find("300 MiB"), std::string::npos) << what;
  // Gzipped: the declared size is checked against the cap once the header is inflated.
  const std::string gz = gzip(be32(0x803) + be32(1) + be32(28) + be32(28) + std::string(784, '\7'));
  EXPECT_EQ(parse_idx_images(span_of(gz), "x.gz", 800).pixels.size(), 784u);
  what = expect_error([&] { parse_idx_images(span_of(gz), "x.gz", 700); }, ErrorKind::invalid);
  EXPECT_NE(what.find("max-file-bytes"), std::string::npos) << what;
}

TEST(Hardening, PackCopiesALargeFileInPiecesNotWhole) {
  auto dir = fresh_dir("hardening_pack_large");
  fs::create_directories(dir / "src" / "a");
  write(dir / "src" / "a" / "small.txt", "hello");
  // 600 MiB (sparse): read whole, then deflated into a second buffer of the same bound (1.2 GB).
  sparse_file(dir / "src" / "a" / "big.bin", "HEAD", std::uint64_t{600} << 20);
  PackOptions o;
  o.output = dir / "out.zip";
  long grew_kb = 0;
  const int status = in_child([&] { pack(dir / "src", o); }, &grew_kb);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_LT(grew_kb, 64 * 1024) << "peak memory grew by " << grew_kb << " KiB";
  std::cerr << "pack of a 600 MiB file: peak memory grew by " << grew_kb << " KiB\n";
  auto ar = Archive::open(o.output);
  ASSERT_EQ(ar->entries().size(), 2u);
  const ZipEntry& big = ar->entries()[0];
  EXPECT_EQ(big.name, "a/big.bin");
  EXPECT_EQ(big.size, std::uint64_t{600} << 20);
  EXPECT_EQ(big.compressed_size, big.size);  // stored
  const auto head = read_entry_head(*ar, 0, 6);
  EXPECT_EQ(std::string(head.begin(), head.end()), std::string("HEAD\0\0", 6));
  std::uint64_t read = 0;
  ar->read_to(0, [&](std::span<const std::uint8_t> piece) { read += piece.size(); });  // checks the CRC-32
  EXPECT_EQ(read, big.size);
  std::vector<std::uint8_t> small;
  ar->read(1, small);
  EXPECT_EQ(std::string(small.begin(), small.end()), "hello");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace frugal

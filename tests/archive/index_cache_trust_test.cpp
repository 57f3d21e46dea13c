// The index caches against whoever else can write the cache folder (issue 47): a planted cache with
// the old unkeyed checksum that renames classes, one made with another key, a file another user
// owns, and the key file itself (made 0600, refused when others can read it); verify reads the
// tar, never its cache.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "archive/cache_key.h"
#include "archive/index_cache.h"
#include "archive/parquet_index_cache.h"
#include "archive/tar_index.h"
#include "archive/tar_index_cache.h"
#include "frugal/archive/archive.h"
#include "frugal/archive/data_source.h"
#include "frugal/util/hash.h"
#include "frugal/util/progress.h"
#include "tar_fixture.h"
#include "zip_read_fixture.h"

namespace frugal {
namespace {

namespace fs = std::filesystem;
using testing::names_of;

constexpr uid_t kNobody = 65534;

// cat/0000.bin ... and dog/0001.bin ..., alternating, each member's bytes its own name.
std::string class_tar(std::size_t n, const std::string& extra_name = "") {
  std::string t;
  for (std::size_t i = 0; i < n; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "%s/%04zu.bin", i % 2 ? "dog" : "cat", i);
    t += testing::tar_file(name, name);
  }
  if (!extra_name.empty()) t += testing::tar_file(extra_name, "extra");
  return t + testing::tar_end();
}

bool has_note(const std::vector<std::string>& notes, const std::string& part) {
  for (const auto& n : notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

class CacheTrust : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::temp_dir(std::string("trust-") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    if (const char* x = std::getenv("XDG_CONFIG_HOME")) saved_xdg_ = x;
    ::setenv("XDG_CONFIG_HOME", (dir_ / "config").c_str(), 1);  // a key of this test's own
    options_.index_cache_dir = dir_ / "cache";
  }
  void TearDown() override {
    if (saved_xdg_)
      ::setenv("XDG_CONFIG_HOME", saved_xdg_->c_str(), 1);
    else
      ::unsetenv("XDG_CONFIG_HOME");
    fs::remove_all(dir_);
  }

  // Writes t.tar; returns its identity and cache file.
  std::pair<TarCacheIdentity, fs::path> make_tar(const std::string& bytes) {
    testing::write(dir_ / "t.tar", bytes);
    auto id = tar_cache_identity(*open_byte_source(dir_ / "t.tar"), 0, 0, bytes.size());
    EXPECT_TRUE(id);
    return {*id, tar_cache_file(dir_ / "cache", *id)};
  }

  // The tar's records as its headers say, with every class swapped (cat <-> dog): a lying index.
  std::vector<TarRecord> relabeled() const {
    auto src = open_byte_source(dir_ / "t.tar");
    std::vector<TarRecord> records = parse_tar(*src, 0, src->size(), "t.tar");
    for (TarRecord& r : records) {
      if (r.name.starts_with("cat/"))
        r.name.replace(0, 3, "dog");
      else if (r.name.starts_with("dog/"))
        r.name.replace(0, 3, "cat");
    }
    return records;
  }

  CacheKey user_key() const {
    std::string why;
    auto key = load_or_make_cache_key(cache_key_file(), why);
    EXPECT_TRUE(key) << why;
    return key.value_or(CacheKey{});
  }

  fs::path dir_;
  std::optional<std::string> saved_xdg_;
  ArchiveOptions options_;
};

// The cache file as frugal wrote it before the key (version 1): an xxh3 anyone can compute.
std::string old_style_cache(const TarCacheIdentity& id, const std::vector<TarRecord>& records) {
  std::string s("FRUGAL-TAR-IDX\n\0", 16);
  put_le(s, 1, 4);
  put_identity(s, id);
  put_le(s, records.size());
  for (const TarRecord& r : records) {
    put_le(s, r.header_offset);
    put_le(s, r.data_offset);
    put_le(s, r.size);
    put_le(s, static_cast<std::uint64_t>(r.kind), 1);
    put_le(s, r.utf8 ? 1 : 0, 1);
    put_le(s, r.name.size(), 4);
    s += r.name;
  }
  put_le(s, xxh3_64(s.data(), s.size()));
  return s;
}

TEST_F(CacheTrust, APlantedCacheWithTheOldChecksumThatSwapsClassesIsNotUsed) {
  const auto [id, file] = make_tar(class_tar(kTarIndexCacheMin + 2));
  const auto truth = names_of(*Archive::open(dir_ / "t.tar", options_));
  ASSERT_EQ(truth[0], "cat/0000.bin");
  testing::write(file, old_style_cache(id, relabeled()));
  auto a = Archive::open(dir_ / "t.tar", options_);
  EXPECT_EQ(names_of(*a), truth);  // the classes the tar's headers give, not the planted ones
  const auto b = a->read(0);
  EXPECT_EQ(std::string(b.begin(), b.end()), "cat/0000.bin");
  // Replaced by a keyed cache that the next open uses.
  EXPECT_TRUE(load_tar_cache(file, id, *open_byte_source(dir_ / "t.tar"), 0));
}

TEST_F(CacheTrust, ACacheMadeWithAnotherKeyIsRebuiltWithANote) {
  const auto [id, file] = make_tar(class_tar(kTarIndexCacheMin + 2));
  const auto truth = names_of(*Archive::open(dir_ / "t.tar", options_));
  CacheKey other;
  other.bytes.fill(0x42);
  testing::write(file, tar_cache_bytes(id, relabeled(), 0, other));
  std::vector<std::string> notes;
  {
    NoteCapture capture(notes);
    EXPECT_EQ(names_of(*Archive::open(dir_ / "t.tar", options_)), truth);
  }
  EXPECT_TRUE(has_note(notes, "not one made with your cache key")) << ::testing::PrintToString(notes);
  const auto records = load_tar_cache(file, id, *open_byte_source(dir_ / "t.tar"), 0);
  ASSERT_TRUE(records);  // made again, with this user's key
  EXPECT_EQ(records->front().name, "cat/0000.bin");
}

TEST_F(CacheTrust, ACacheFileAnotherUserOwnsIsNeverRead) {
  if (::geteuid() != 0) GTEST_SKIP() << "chown to another user needs root";
  const auto [id, file] = make_tar(class_tar(kTarIndexCacheMin + 2));
  const auto truth = names_of(*Archive::open(dir_ / "t.tar", options_));
  // A lying index under this user's own key is used (only its owner could have made it) ...
  testing::write(file, tar_cache_bytes(id, relabeled(), 0, user_key()));
  EXPECT_EQ(names_of(*Archive::open(dir_ / "t.tar", options_))[0], "dog/0000.bin");
  // ... and the same bytes in a file that another user owns are not.
  ASSERT_EQ(::chown(file.c_str(), kNobody, kNobody), 0);
  std::vector<std::string> notes;
  {
    NoteCapture capture(notes);
    EXPECT_EQ(names_of(*Archive::open(dir_ / "t.tar", options_)), truth);
  }
  EXPECT_TRUE(has_note(notes, "written by another user (uid 65534)")) << ::testing::PrintToString(notes);
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ::geteuid());  // replaced by this user's
}

TEST_F(CacheTrust, TheKeyFileIsMadeOnceReadableByItsOwnerAlone) {
  const fs::path file = cache_key_file();
  ASSERT_EQ(file, dir_ / "config" / "frugal" / "cache-key");
  const mode_t old_umask = ::umask(0);  // the mode must not depend on the umask
  std::string why;
  const auto key = load_or_make_cache_key(file, why);
  ::umask(old_umask);
  ASSERT_TRUE(key) << why;
  struct stat st {};
  ASSERT_EQ(::lstat(file.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_size, 32);
  EXPECT_EQ(st.st_uid, ::geteuid());
  ASSERT_EQ(::stat(file.parent_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0077, 0u);  // its folder too
  const auto again = load_or_make_cache_key(file, why);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->bytes, key->bytes);
  EXPECT_EQ(testing::read_all(file), std::string(key->bytes.begin(), key->bytes.end()));
  EXPECT_EQ(std::distance(fs::directory_iterator(file.parent_path()), fs::directory_iterator()), 1);  // no temporary
}

TEST_F(CacheTrust, AKeyFileOthersCanReadIsRefusedAndNothingIsCached) {
  const fs::path file = cache_key_file();
  fs::create_directories(file.parent_path());
  testing::write(file, std::string(32, 'k'));
  ASSERT_EQ(::chmod(file.c_str(), 0644), 0);
  std::string why;
  EXPECT_FALSE(load_or_make_cache_key(file, why));
  EXPECT_NE(why.find("mode 0644"), std::string::npos) << why;
  make_tar(class_tar(kTarIndexCacheMin + 2));
  ::testing::internal::CaptureStderr();  // a warning: said even when quiet
  EXPECT_EQ(names_of(*Archive::open(dir_ / "t.tar", options_))[0], "cat/0000.bin");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("frugal: warning: " + file.string() + ": not used as the key of the index caches"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("Delete it"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir_ / "cache" / "tar-index"));    // nothing cached without a key
  EXPECT_EQ(testing::read_all(file), std::string(32, 'k'));  // left as it was, for its owner to judge
}

TEST_F(CacheTrust, KeyFilesThatAreNotTheUsersOwnAreRefused) {
  const fs::path file = dir_ / "k" / "cache-key";
  fs::create_directories(file.parent_path());
  std::string why;
  fs::create_symlink(dir_ / "elsewhere", file);
  testing::write(dir_ / "elsewhere", std::string(32, 'k'));
  ::chmod((dir_ / "elsewhere").c_str(), 0600);
  EXPECT_FALSE(load_or_make_cache_key(file, why));
  EXPECT_NE(why.find("symbolic link"), std::string::npos) << why;
  fs::remove(file);
  testing::write(file, std::string(31, 'k'));
  ::chmod(file.c_str(), 0600);
  why.clear();
  EXPECT_FALSE(load_or_make_cache_key(file, why));
  EXPECT_NE(why.find("31 bytes"), std::string::npos) << why;
  if (::geteuid() != 0) return;
  testing::write(file, std::string(32, 'k'));
  ASSERT_EQ(::chown(file.c_str(), kNobody, kNobody), 0);
  why.clear();
  EXPECT_FALSE(load_or_make_cache_key(file, why));
  EXPECT_NE(why.find("belongs to uid 65534"), std::string::npos) << why;
}

TEST_F(CacheTrust, VerifyReadsTheTarNotItsCache) {
  const auto [id, file] = make_tar(class_tar(kTarIndexCacheMin + 2, "../evil.bin"));
  Archive::open(dir_ / "t.tar", options_);
  // An index that hides the unsafe name, keyed as only this user could: open trusts it ...
  auto records = relabeled();
  ASSERT_EQ(records.back().name, "../evil.bin");
  records.back().name = "cat/evil.bin";
  testing::write(file, tar_cache_bytes(id, records, 0, user_key()));
  EXPECT_EQ(names_of(*Archive::open(dir_ / "t.tar", options_)).back(), "cat/evil.bin");
  // ... verify does not: it reads every header again.
  const VerifyReport r = verify_archive(dir_ / "t.tar", options_, 1);
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.bad.size(), 1u);
  EXPECT_EQ(r.bad[0].name, "../evil.bin");
  EXPECT_EQ(r.entries_checked, kTarIndexCacheMin + 3);
}

// ---- the parquet index cache's framing ----

ParquetCacheIdentity parquet_identity() {
  ParquetCacheIdentity id;
  id.source.files.push_back({"/data/train.parquet", 4096, 1, 2, 3});
  id.source.end = 4096;
  id.footer_xxh3 = 5;
  id.sample_xxh3 = 6;
  return id;
}

TEST(ParquetCacheTrust, LabelsFlippedUnderTheOldChecksumOrAnotherKeyAreRefused) {
  const ParquetCacheIdentity id = parquet_identity();
  ParquetShape shape;
  shape.image_field = 0;
  shape.label_field = 1;
  shape.group_rows = {3};
  ParquetRowIndex index;
  for (int i = 0; i < 3; ++i) {
    index.rows.push_back({ParquetImage::bytes, ImageFormat::png, 100});
    index.labels.push_back(i);
  }
  CacheKey key, other;
  key.bytes.fill(1);
  other.bytes.fill(2);
  const std::string genuine = parquet_cache_bytes(id, shape, index, key);
  ASSERT_TRUE(parse_parquet_cache(genuine, id, shape, key));
  // The labels flipped (0 <-> 2) in the body, framed as version 1 with its xxh3.
  ParquetRowIndex flipped = index;
  std::swap(flipped.labels[0], flipped.labels[2]);
  const std::string body = parquet_cache_bytes(id, shape, flipped, key).substr(20, genuine.size() - 20 - 32);
  std::string v1("FRUGAL-PQ-IDX\n\0\0", 16);
  put_le(v1, 1, 4);
  v1 += body;
  put_le(v1, xxh3_64(v1.data(), v1.size()));
  bool forged = true;
  EXPECT_FALSE(parse_parquet_cache(v1, id, shape, key, &forged));
  EXPECT_FALSE(forged);  // another version: replaced without a word
  EXPECT_FALSE(parse_parquet_cache(parquet_cache_bytes(id, shape, flipped, other), id, shape, key, &forged));
  EXPECT_TRUE(forged);
}

}  // namespace
}  // namespace frugal

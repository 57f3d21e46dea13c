// Tars as Python's tarfile writes them (GNU, PAX and ustar formats, long names, folders, links,
// devices, "./" names, split parts), read in place and held member by member to what tarfile reads
// from the same file; the index cache, used, refused when stale, and damaged.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <nlohmann/json.hpp>

#include "archive/tar_index_cache.h"
#include "frugal/archive/archive.h"
#include "frugal/archive/data_source.h"
#include "frugal/util/error.h"
#include "frugal/util/hash.h"
#include "tar_fixture.h"
#include "zip_read_fixture.h"

namespace frugal {
namespace {

namespace fs = std::filesystem;
using testing::names_of;
using testing::run_python;

// Writes gnu.tar, pax.tar, ustar.tar, dot.tar (names "./..."), then prints what tarfile reads back
// from each: {tar: [{name, type, size, sha256, link}]}.
const char* kWriteTars = R"PY(
import hashlib, io, json, os, random, sys, tarfile
d = sys.argv[1]
rng = random.Random(7)
files = [
    ("cats/a.jpg", rng.randbytes(1000)),
    ("cats/empty.jpg", b""),
    ("dogs/" + "x" * 150 + ".png", rng.randbytes(700)),
    ("dogs/" + "d" * 120 + "/y.png", rng.randbytes(513)),
    ("\u00e9t\u00e9/\u00fcn\u00efcode.jpg", rng.randbytes(512)),
    ("big.bin", rng.randbytes(5 * 1024 * 1024 + 17)),
]
def add_all(t, ustar):
    ti = tarfile.TarInfo("cats"); ti.type = tarfile.DIRTYPE; t.addfile(ti)
    for name, b in files:
        if ustar and len(name.split("/")[-1]) > 100:
            continue
        ti = tarfile.TarInfo(name); ti.size = len(b); t.addfile(ti, io.BytesIO(b))
    for name, kind, link in [("link.jpg", tarfile.SYMTYPE, "cats/a.jpg"), ("hard.jpg", tarfile.LNKTYPE, "cats/a.jpg"),
                             ("fifo", tarfile.FIFOTYPE, ""), ("tty", tarfile.CHRTYPE, ""),
                             ("far.jpg", tarfile.SYMTYPE, "z" * (90 if ustar else 200))]:
        ti = tarfile.TarInfo(name); ti.type = kind; ti.linkname = link; t.addfile(ti)
for fmt_name, fmt in [("gnu", tarfile.GNU_FORMAT), ("pax", tarfile.PAX_FORMAT), ("ustar", tarfile.USTAR_FORMAT)]:
    with tarfile.open(os.path.join(d, fmt_name + ".tar"), "w", format=fmt) as t:
        add_all(t, fmt == tarfile.USTAR_FORMAT)
os.makedirs(os.path.join(d, "tree/cls/sub"), exist_ok=True)
for i in range(3):
    with open(os.path.join(d, "tree/cls/sub/f%d.bin" % i), "wb") as f:
        f.write(rng.randbytes(100 + i))
with tarfile.open(os.path.join(d, "dot.tar"), "w") as t:
    t.add(os.path.join(d, "tree"), arcname=".")
types = {tarfile.REGTYPE: "file", tarfile.AREGTYPE: "file", tarfile.DIRTYPE: "dir", tarfile.SYMTYPE: "symlink",
         tarfile.LNKTYPE: "hardlink", tarfile.FIFOTYPE: "fifo", tarfile.CHRTYPE: "device", tarfile.BLKTYPE: "device"}
out = {}
for name in ["gnu", "pax", "ustar", "dot"]:
    rows = []
    with tarfile.open(os.path.join(d, name + ".tar")) as t:
        for m in t.getmembers():
            row = {"name": m.name, "type": types.get(m.type, "other"), "size": m.size if m.isreg() else 0}
            if m.isreg():
                row["sha256"] = hashlib.sha256(t.extractfile(m).read()).hexdigest()
            rows.append(row)
    out[name] = rows
print(json.dumps(out))
)PY";

// tarfile's name as frugal names the entry: no leading "./", folders ending with '/'.
std::string frugal_name(std::string name, const std::string& type) {
  while (name.rfind("./", 0) == 0) name.erase(0, 2);
  if (name == ".") name.clear();
  if (type == "dir" && !name.empty()) name += "/";
  return name;
}

std::string sha256_of(const std::vector<std::uint8_t>& b) {
  return sha256_hex(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
}

class TarRead : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::temp_dir("tar-read");
    auto out = run_python(kWriteTars, {dir_.string()}, dir_);
    ASSERT_TRUE(out);
    expected_ = nlohmann::json::parse(*out);
  }
  void TearDown() override { fs::remove_all(dir_); }

  ArchiveOptions no_cache() const {
    ArchiveOptions o;
    o.index_cache_dir = fs::path();
    return o;
  }

  // Every member tarfile reads is an entry of the same kind, size and bytes, and nothing else is.
  void expect_same_as_python(const Archive& a, const nlohmann::json& rows) {
    std::size_t compared = 0;
    for (const auto& row : rows) {
      const std::string type = row["type"];
      const std::string name = frugal_name(row["name"], type);
      if (name.empty()) continue;  // the root folder "." names no member
      ++compared;
      SCOPED_TRACE(name);
      auto i = a.find(name);
      ASSERT_TRUE(i) << "no entry " << name;
      const ZipEntry& e = a.entries()[*i];
      EXPECT_FALSE(e.has_crc32);
      EXPECT_EQ(e.method, 0);
      EXPECT_EQ(e.is_dir, type == "dir");
      EXPECT_EQ(e.is_symlink, type == "symlink");
      EXPECT_EQ(e.special == SpecialMember::hard_link, type == "hardlink");
      EXPECT_EQ(e.special == SpecialMember::fifo, type == "fifo");
      EXPECT_EQ(e.special == SpecialMember::device, type == "device");
      if (type == "file") {
        EXPECT_EQ(e.size, row["size"].get<std::uint64_t>());
        EXPECT_EQ(entry_problem(a, *i), "");
        const std::vector<std::uint8_t> bytes = a.read(*i);
        EXPECT_EQ(sha256_of(bytes), row["sha256"].get<std::string>());
        std::vector<std::uint8_t> pieces;
        a.read_to(*i, [&](std::span<const std::uint8_t> p) { pieces.insert(pieces.end(), p.begin(), p.end()); });
        EXPECT_EQ(pieces, bytes);
        // A view wherever the bytes lie in one mapped piece (not across two parts of a split tar).
        auto view = a.stored_view(*i);
        if (a.source().files().size() == 1) EXPECT_TRUE(view);
        if (view) EXPECT_TRUE(std::equal(view->begin(), view->end(), bytes.begin(), bytes.end()));
        ASSERT_TRUE(a.stored_offset(*i));
      } else if (type != "dir") {
        EXPECT_NE(entry_problem(a, *i), "");
        EXPECT_FALSE(a.stored_view(*i));
        EXPECT_FALSE(a.stored_offset(*i));
        try {
          a.read(*i);
          ADD_FAILURE() << "a " << type << " member was read";
        } catch (const Error& err) {
          EXPECT_EQ(err.kind(), ErrorKind::unsupported) << err.what();
        }
      }
    }
    EXPECT_EQ(a.entries().size(), compared);
  }

  fs::path dir_;
  nlohmann::json expected_;
};

TEST_F(TarRead, GnuPaxAndUstarTarsReadAsPythonReadsThem) {
  for (const char* fmt : {"gnu", "pax", "ustar"}) {
    SCOPED_TRACE(fmt);
    auto a = Archive::open(dir_ / (std::string(fmt) + ".tar"), no_cache());
    EXPECT_STREQ(a->format(), "tar");
    expect_same_as_python(*a, expected_[fmt]);
  }
}

TEST_F(TarRead, DotSlashNamesAreReadWithoutThePrefix) {
  auto a = Archive::open(dir_ / "dot.tar", no_cache());
  expect_same_as_python(*a, expected_["dot"]);
  EXPECT_TRUE(a->find("cls/sub/f1.bin"));
  for (const ZipEntry& e : a->entries()) EXPECT_NE(e.raw_name.rfind("./", 0), 0u) << e.raw_name;
}

TEST_F(TarRead, ASplitTarIsReadInPlaceAcrossItsParts) {
  const std::string tar = testing::read_all(dir_ / "pax.tar");
  const std::size_t cut = tar.size() / 3;
  testing::write(dir_ / "parts.tar.000", tar.substr(0, cut));
  testing::write(dir_ / "parts.tar.001", tar.substr(cut, cut));
  testing::write(dir_ / "parts.tar.002", tar.substr(2 * cut));
  auto a = Archive::open(dir_ / "parts.tar.000", no_cache());
  expect_same_as_python(*a, expected_["pax"]);
}

TEST_F(TarRead, LinksAndSpecialMembersAreListedAndRefusedByExtract) {
  auto a = Archive::open(dir_ / "gnu.tar", no_cache());
  EXPECT_NE(entry_problem(*a, *a->find("link.jpg")).find("symlink"), std::string::npos);
  EXPECT_NE(entry_problem(*a, *a->find("hard.jpg")).find("hard link"), std::string::npos);
  EXPECT_NE(entry_problem(*a, *a->find("fifo")).find("FIFO"), std::string::npos);
  EXPECT_NE(entry_problem(*a, *a->find("tty")).find("device"), std::string::npos);
  ExtractOptions x;
  x.dir = dir_ / "out";
  try {
    extract(*a, x);
    FAIL() << "extracted a tar holding links";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::invalid) << err.what();
  }
  EXPECT_FALSE(fs::exists(dir_ / "out" / "cats" / "a.jpg"));
  x.patterns = {"cats/*", "big.bin"};
  const ExtractResult r = extract(*a, x);
  EXPECT_EQ(r.files, 3u);
  EXPECT_EQ(testing::read_all(dir_ / "out" / "big.bin").size(), 5u * 1024 * 1024 + 17);
  // A rerun finds the files there by their bytes: tar members have no CRC to compare.
  const ExtractResult again = extract(*a, x);
  EXPECT_EQ(again.already_there, 3u);
  EXPECT_EQ(again.files, 0u);
}

TEST_F(TarRead, VerifyReadsEveryMemberAndCountsThoseWithoutChecksum) {
  const VerifyReport r = verify_archive(dir_ / "dot.tar");
  EXPECT_TRUE(r.ok());
  EXPECT_FALSE(r.is_zip);
  EXPECT_EQ(r.entries_without_checksum, 5u);  // cls/, cls/sub/ and 3 files
  EXPECT_EQ(r.bytes_checked, 0u);
  const VerifyReport links = verify_archive(dir_ / "gnu.tar");
  EXPECT_EQ(links.bad.size(), 5u);  // two symlinks, a hard link, a FIFO, a device
}

// ---- the index cache ----

std::string member_name(std::size_t i) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "c%zu/m%07zu.bin", i % 7, i);
  return buf;
}

// A tar of `n` small members, each member's bytes its own name (all names of one length).
std::string many_member_tar(std::size_t n, std::size_t first = 0) {
  std::string t;
  for (std::size_t i = first; i < first + n; ++i) t += testing::tar_file(member_name(i), member_name(i));
  return t + testing::tar_end();
}

std::vector<fs::path> cache_files(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir / "tar-index", ec)) out.push_back(e.path());
  return out;
}

TEST(TarIndexCache, ALargeTarIsIndexedOnceAndOpenedFromItsCacheAfterwards) {
  const fs::path d = testing::temp_dir("tar-cache");
  testing::write(d / "big.tar", many_member_tar(kTarIndexCacheMin + 5));
  ArchiveOptions o;
  o.index_cache_dir = d / "cache";
  auto first = Archive::open(d / "big.tar", o);
  ASSERT_EQ(first->entries().size(), kTarIndexCacheMin + 5);
  const auto files = cache_files(d / "cache");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(files[0].filename().string().find("big.tar"), std::string::npos);

  // Loaded from the cache: the same entries, and reads that land on the same bytes.
  const auto before = fs::last_write_time(files[0]);
  auto second = Archive::open(d / "big.tar", o);
  EXPECT_EQ(names_of(*second), names_of(*first));
  for (std::size_t i : {std::size_t{0}, std::size_t{500}, kTarIndexCacheMin + 4}) {
    const auto b = second->read(i);
    EXPECT_EQ(std::string(b.begin(), b.end()), second->entries()[i].name);
  }
  EXPECT_EQ(fs::last_write_time(files[0]), before);  // not rewritten
  fs::remove_all(d);
}

TEST(TarIndexCache, ASmallTarIsNotCached) {
  const fs::path d = testing::temp_dir("tar-cache-small");
  testing::write(d / "small.tar", many_member_tar(10));
  ArchiveOptions o;
  o.index_cache_dir = d / "cache";
  EXPECT_EQ(Archive::open(d / "small.tar", o)->entries().size(), 10u);
  EXPECT_TRUE(cache_files(d / "cache").empty());
  fs::remove_all(d);
}

TEST(TarIndexCache, ATarRewrittenInPlaceIsIndexedAgain) {
  const fs::path d = testing::temp_dir("tar-cache-stale");
  const std::size_t n = kTarIndexCacheMin + 1;
  testing::write(d / "t.tar", many_member_tar(n));
  ArchiveOptions o;
  o.index_cache_dir = d / "cache";
  Archive::open(d / "t.tar", o);
  // The same size and layout, other names: only the stamps (here the mtime) tell.
  const auto mtime = fs::last_write_time(d / "t.tar");
  testing::write(d / "t.tar", many_member_tar(n, 5000000));
  fs::last_write_time(d / "t.tar", mtime + std::chrono::seconds(1));
  auto a = Archive::open(d / "t.tar", o);
  EXPECT_EQ(a->entries().front().name, member_name(5000000));
  const auto b = a->read(0);
  EXPECT_EQ(std::string(b.begin(), b.end()), member_name(5000000));
  fs::remove_all(d);
}

TEST(TarIndexCache, StaleStampsAreCaughtByTheSpotCheckOfHeaders) {
  const fs::path d = testing::temp_dir("tar-cache-spot");
  const std::size_t n = kTarIndexCacheMin + 1;
  testing::write(d / "t.tar", many_member_tar(n));
  ArchiveOptions o;
  o.index_cache_dir = d / "cache";
  Archive::open(d / "t.tar", o);
  // Shift every header by one block, then give the file its old mtime back: the stamps match.
  struct stat st {};
  ASSERT_EQ(::stat((d / "t.tar").c_str(), &st), 0);
  std::string shifted = std::string(512, 'x') + many_member_tar(n);
  shifted.resize(static_cast<std::size_t>(st.st_size));
  auto src = memory_byte_source(shifted, "t.tar");
  auto id = tar_cache_identity(*open_byte_source(d / "t.tar"), 0, 0, static_cast<std::uint64_t>(st.st_size));
  ASSERT_TRUE(id);
  const fs::path file = tar_cache_file(d / "cache", *id);
  ASSERT_TRUE(fs::exists(file));
  EXPECT_TRUE(load_tar_cache(file, *id, *open_byte_source(d / "t.tar"), 0));
  EXPECT_FALSE(load_tar_cache(file, *id, *src, 0));
  fs::remove_all(d);
}

TEST(TarIndexCache, ADamagedCacheFileIsIgnoredAndReplaced) {
  const fs::path d = testing::temp_dir("tar-cache-damaged");
  testing::write(d / "t.tar", many_member_tar(kTarIndexCacheMin));
  ArchiveOptions o;
  o.index_cache_dir = d / "cache";
  const auto names = names_of(*Archive::open(d / "t.tar", o));
  const fs::path file = cache_files(d / "cache").at(0);
  std::string bytes = testing::read_all(file);
  for (std::size_t at : {std::size_t{20}, bytes.size() / 2, bytes.size() - 1}) {
    std::string bad = bytes;
    bad[at] ^= 0x20;
    testing::write(file, bad);
    EXPECT_EQ(names_of(*Archive::open(d / "t.tar", o)), names);
    EXPECT_EQ(testing::read_all(file), bytes);  // written again
  }
  testing::write(file, bytes.substr(0, bytes.size() / 3));
  EXPECT_EQ(names_of(*Archive::open(d / "t.tar", o)), names);
  fs::remove_all(d);
}

TEST(TarIndexCache, TarsInsideAZipAreCachedByTheZipAndTheirPlaceInIt) {
  const fs::path d = testing::temp_dir("tar-cache-nested");
  const std::string a = many_member_tar(kTarIndexCacheMin), b = many_member_tar(kTarIndexCacheMin, 7000000);
  testing::write(d / "outer.zip", testing::build_zip({{"a.tar", a}, {"b.tar", b}}));
  ArchiveOptions o;
  o.index_cache_dir = d / "cache";
  const auto names_a = names_of(*Archive::open(d / "outer.zip:a.tar", o));
  const auto names_b = names_of(*Archive::open(d / "outer.zip:b.tar", o));
  const auto files = cache_files(d / "cache");
  ASSERT_EQ(files.size(), 2u);  // one per place in the zip
  for (const auto& f : files) EXPECT_NE(f.filename().string().find("outer.zip"), std::string::npos);
  const auto when = fs::last_write_time(files[0]);
  EXPECT_EQ(names_of(*Archive::open(d / "outer.zip:a.tar", o)), names_a);
  EXPECT_EQ(names_of(*Archive::open(d / "outer.zip:b.tar", o)), names_b);
  EXPECT_EQ(fs::last_write_time(files[0]), when);
  EXPECT_NE(names_a, names_b);
  fs::remove_all(d);
}

TEST(TarIndexCache, EachShardOfASetHasItsOwnCache) {
  const fs::path d = testing::temp_dir("tar-cache-shards");
  testing::write(d / "s-0.tar", many_member_tar(kTarIndexCacheMin));
  testing::write(d / "s-1.tar", many_member_tar(kTarIndexCacheMin, 9000000));
  ArchiveOptions o;
  o.index_cache_dir = d / "cache";
  const auto first = names_of(*Archive::open(d / "s-{0..1}.tar", o));
  EXPECT_EQ(cache_files(d / "cache").size(), 2u);
  // One shard replaced: its cache alone is made again, the set reads the same as it is.
  testing::write(d / "s-1.tar", many_member_tar(kTarIndexCacheMin, 8000000));
  fs::last_write_time(d / "s-1.tar", fs::last_write_time(d / "s-1.tar") + std::chrono::seconds(3));
  const auto second = names_of(*Archive::open(d / "s-{0..1}.tar", o));
  EXPECT_EQ(second.size(), first.size());
  EXPECT_EQ(second.back(), "s-1.tar/" + member_name(8000000 + kTarIndexCacheMin - 1));
  EXPECT_EQ(second.front(), first.front());
  fs::remove_all(d);
}

TEST(TarIndexCache, ACacheFolderThatCannotBeWrittenCostsOnlyTheCache) {
  const fs::path d = testing::temp_dir("tar-cache-ro");
  testing::write(d / "t.tar", many_member_tar(kTarIndexCacheMin));
  testing::write(d / "cache", "a file where the cache folder goes");
  ArchiveOptions o;
  o.index_cache_dir = d / "cache";
  EXPECT_EQ(Archive::open(d / "t.tar", o)->entries().size(), kTarIndexCacheMin);
  fs::remove_all(d);
}

}  // namespace
}  // namespace frugal

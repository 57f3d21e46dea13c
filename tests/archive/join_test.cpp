#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "archive/manifest.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/hash.h"
#include "frugal/archive/split.h"
#include "test_files.h"

namespace fs = std::filesystem;
using namespace frugal;

namespace {
using frugal::testing::write;

struct Interrupted {};

struct SplitSet {
  fs::path dir, manifest;
  std::string data;
  SplitResult split;
};

// 4 parts: 3 of 1000 bytes and one of 500.
SplitSet make_set(const std::string& name) {
  SplitSet s;
  s.dir = fs::path(FRUGAL_BINARY_DIR) / "test-tmp" / ("join_" + name);
  fs::remove_all(s.dir);
  fs::create_directories(s.dir / "parts");
  std::mt19937 rng(7);
  s.data.resize(3500);
  for (auto& c : s.data) c = static_cast<char>(rng());
  write(s.dir / "orig.bin", s.data);
  SplitOptions o;
  o.part_size = 1000;
  o.out_dir = s.dir / "parts";
  o.sync = false;
  s.split = split_file(s.dir / "orig.bin", o);
  s.manifest = s.split.manifest;
  return s;
}

JoinOptions out_to(const fs::path& out, bool delete_parts = false) {
  JoinOptions o;
  o.output = out;
  o.delete_parts = delete_parts;
  return o;
}

fs::path part(const SplitSet& s, std::size_t i) { return s.dir / "parts" / s.split.parts[i].file; }

ErrorKind join_error(const fs::path& manifest, const JoinOptions& o, std::string* what = nullptr) {
  try {
    join_parts(manifest, o);
  } catch (const Error& e) {
    if (what) *what = e.what();
    return e.kind();
  }
  ADD_FAILURE() << "join did not fail";
  return ErrorKind::io;
}
}  // namespace

TEST(Join, RebuildsTheOriginalAndKeepsTheParts) {
  auto s = make_set("plain");
  JoinResult r = join_parts(s.manifest, out_to(s.dir / "joined"));
  EXPECT_EQ(read_file(s.dir / "joined"), s.data);
  EXPECT_EQ(r.sha256, sha256_hex(s.data));
  EXPECT_EQ(r.parts, 4u);
  EXPECT_EQ(r.parts_deleted, 0u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_TRUE(fs::exists(part(s, i)));
  EXPECT_FALSE(fs::exists(join_partial_path(s.dir / "joined")));
}

TEST(Join, DefaultOutputIsTheOriginalNameBesideTheManifest) {
  auto s = make_set("default_out");
  JoinResult r = join_parts(s.manifest, {});
  EXPECT_EQ(r.output, s.dir / "parts" / "orig.bin");
  EXPECT_EQ(read_file(r.output), s.data);
}

TEST(Join, DeletePartsRemovesEachPartOnceItIsInTheOutput) {
  auto s = make_set("delete");
  auto out = s.dir / "joined";
  auto o = out_to(out, true);
  o.after_part = [&](std::size_t i) {
    for (std::size_t k = 0; k < 4; ++k) EXPECT_EQ(fs::exists(part(s, k)), k > i) << "after part " << i;
    EXPECT_EQ(fs::file_size(join_partial_path(out)), std::min<std::uint64_t>(1000 * (i + 1), 3500));
  };
  JoinResult r = join_parts(s.manifest, o);
  EXPECT_EQ(r.parts_deleted, 4u);
  EXPECT_EQ(read_file(out), s.data);
}

TEST(Join, InterruptedJoinContinuesWhereItStopped) {
  auto s = make_set("resume");
  auto out = s.dir / "joined";
  auto o = out_to(out);
  o.after_part = [](std::size_t i) {
    if (i == 1) throw Interrupted{};
  };
  EXPECT_THROW(join_parts(s.manifest, o), Interrupted);
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(fs::file_size(join_partial_path(out)), 2000u);
  JoinResult r = join_parts(s.manifest, out_to(out));
  EXPECT_EQ(r.parts_resumed, 2u);
  EXPECT_EQ(sha256_hex(read_file(out)), sha256_hex(s.data));
}

TEST(Join, InterruptedDeletePartsJoinContinuesWithoutTheDeletedParts) {
  for (std::size_t stop : {0u, 2u}) {
    auto s = make_set("resume_delete" + std::to_string(stop));
    auto out = s.dir / "joined";
    auto o = out_to(out, true);
    o.after_part = [stop](std::size_t i) {
      if (i == stop) throw Interrupted{};
    };
    EXPECT_THROW(join_parts(s.manifest, o), Interrupted);
    EXPECT_FALSE(fs::exists(part(s, stop)));
    JoinResult r = join_parts(s.manifest, out_to(out, true));
    EXPECT_EQ(r.parts_resumed, stop + 1);
    EXPECT_EQ(read_file(out), s.data) << "stopped after part " << stop;
  }
}

TEST(Join, TornPartialOutputIsCutBackToTheLastWholePart) {
  auto s = make_set("torn");
  auto out = s.dir / "joined";
  write(join_partial_path(out), s.data.substr(0, 1700));  // a crash in the middle of part 1
  JoinResult r = join_parts(s.manifest, out_to(out));
  EXPECT_EQ(r.parts_resumed, 1u);
  EXPECT_EQ(read_file(out), s.data);
}

TEST(Join, CorruptPartialOutputIsRebuiltFromTheParts) {
  auto s = make_set("corrupt_partial");
  auto out = s.dir / "joined";
  std::string bad = s.data.substr(0, 2000);
  bad[1500] ^= 1;  // part 0 good, part 1 damaged
  write(join_partial_path(out), bad);
  JoinResult r = join_parts(s.manifest, out_to(out));
  EXPECT_EQ(r.parts_resumed, 1u);
  EXPECT_EQ(read_file(out), s.data);
}

TEST(Join, DamagedPartFailsAsBadInputNamingPartAndSums) {
  auto s = make_set("damaged");
  auto out = s.dir / "joined";
  std::string p2 = read_file(part(s, 2));
  std::string bad = p2;
  bad[10] ^= 0x40;
  write(part(s, 2), bad);
  std::string what;
  EXPECT_EQ(join_error(s.manifest, out_to(out), &what), ErrorKind::invalid);
  EXPECT_EQ(exit_code(ErrorKind::invalid), 3);
  EXPECT_NE(what.find(s.split.parts[2].file), std::string::npos) << what;
  EXPECT_NE(what.find(s.split.parts[2].sha256), std::string::npos) << what;
  EXPECT_NE(what.find(sha256_hex(bad)), std::string::npos) << what;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(fs::file_size(join_partial_path(out)), 2000u);  // the good prefix is kept
  write(part(s, 2), p2);                                    // the fix the message suggests
  JoinResult r = join_parts(s.manifest, out_to(out));
  EXPECT_EQ(r.parts_resumed, 2u);
  EXPECT_EQ(read_file(out), s.data);
}

TEST(Join, PartOfTheWrongSizeIsBadInput) {
  auto s = make_set("short");
  write(part(s, 1), read_file(part(s, 1)).substr(0, 999));
  std::string what;
  EXPECT_EQ(join_error(s.manifest, out_to(s.dir / "joined"), &what), ErrorKind::invalid);
  EXPECT_NE(what.find("999"), std::string::npos) << what;
}

TEST(Join, MissingPartIsBadInput) {
  auto s = make_set("missing");
  fs::remove(part(s, 3));
  EXPECT_EQ(join_error(s.manifest, out_to(s.dir / "joined")), ErrorKind::invalid);
}

TEST(Join, TamperedManifestIsBadInput) {
  auto s = make_set("tampered");
  std::string text = read_file(s.manifest);
  // A part sum that no longer matches the part.
  auto at = text.find(s.split.parts[0].sha256);
  std::string forged = text;
  forged.replace(at, 64, std::string(64, '0'));
  write(s.manifest, forged);
  EXPECT_EQ(join_error(s.manifest, out_to(s.dir / "j1")), ErrorKind::invalid);
  // Whole-file sum changed: every part matches, the whole does not.
  forged = text;
  at = forged.find(s.split.sha256);
  forged.replace(at, 64, std::string(64, 'a'));
  write(s.manifest, forged);
  std::string what;
  EXPECT_EQ(join_error(s.manifest, out_to(s.dir / "j2"), &what), ErrorKind::invalid);
  EXPECT_NE(what.find(std::string(64, 'a')), std::string::npos) << what;
  EXPECT_FALSE(fs::exists(s.dir / "j2"));
}

TEST(Join, ExistingOutputThatIsNotTheJoinIsRefusedAndKept) {
  auto s = make_set("exists");
  write(s.dir / "joined", "keep me");
  std::string what;
  EXPECT_EQ(join_error(s.manifest, out_to(s.dir / "joined", true), &what), ErrorKind::invalid);
  EXPECT_NE(what.find("nothing was changed"), std::string::npos) << what;
  EXPECT_EQ(read_file(s.dir / "joined"), "keep me");
  // The same size, other bytes: the SHA-256 decides.
  std::string other = s.data;
  other[3000] ^= 1;
  write(s.dir / "joined", other);
  EXPECT_EQ(join_error(s.manifest, out_to(s.dir / "joined", true), &what), ErrorKind::invalid);
  EXPECT_NE(what.find(sha256_hex(other)), std::string::npos) << what;
  EXPECT_EQ(read_file(s.dir / "joined"), other);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_TRUE(fs::exists(part(s, i))) << "part " << i << " deleted";
}

TEST(Join, RerunOfAFinishedDeletePartsJoinVerifiesTheOutputAndSucceeds) {
  auto s = make_set("rerun");
  auto out = s.dir / "joined";
  join_parts(s.manifest, out_to(out, true));
  for (std::size_t i = 0; i < 4; ++i) ASSERT_FALSE(fs::exists(part(s, i)));
  JoinResult r = join_parts(s.manifest, out_to(out, true));  // "run the same command again"
  EXPECT_TRUE(r.already_joined);
  EXPECT_EQ(r.sha256, sha256_hex(s.data));
  EXPECT_EQ(r.parts_deleted, 0u);
  EXPECT_EQ(read_file(out), s.data);
  EXPECT_FALSE(fs::exists(join_partial_path(out)));
}

TEST(Join, RerunWithDeletePartsAfterAPlainJoinRemovesThePartsOnceTheOutputVerifies) {
  auto s = make_set("rerun_plain");
  auto out = s.dir / "joined";
  join_parts(s.manifest, out_to(out));
  JoinResult r = join_parts(s.manifest, out_to(out, true));
  EXPECT_TRUE(r.already_joined);
  EXPECT_EQ(r.parts_deleted, 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_FALSE(fs::exists(part(s, i)));
  EXPECT_EQ(read_file(out), s.data);
}

// A notebook cell run twice: the second join of one set starts while the first is running.
TEST(Join, SecondJoinOfTheSameSetFailsAtOnceAndChangesNothing) {
  auto s = make_set("twice");
  auto out = s.dir / "joined";
  auto o = out_to(out, true);
  bool ran = false;
  o.after_part = [&](std::size_t i) {
    if (i != 1) return;
    ran = true;
    std::string what;
    EXPECT_EQ(join_error(s.manifest, out_to(s.dir / "joined", true), &what), ErrorKind::io);
    EXPECT_NE(what.find("in use by another frugal process"), std::string::npos) << what;
    EXPECT_EQ(join_error(s.manifest, out_to(s.dir / "elsewhere", true)), ErrorKind::io);
    EXPECT_TRUE(fs::exists(part(s, 2)) && fs::exists(part(s, 3)));
    EXPECT_FALSE(fs::exists(join_partial_path(s.dir / "elsewhere")));
  };
  JoinResult r = join_parts(s.manifest, o);
  EXPECT_TRUE(ran);
  EXPECT_EQ(r.parts_deleted, 4u);
  EXPECT_EQ(read_file(out), s.data);
}

TEST(Join, SecondJoinOfAnotherManifestIntoTheSameOutputFailsAtOnce) {
  auto s = make_set("same_out");
  fs::copy(s.dir / "parts", s.dir / "copy");
  auto out = s.dir / "joined";
  auto o = out_to(out);
  bool ran = false;
  o.after_part = [&](std::size_t i) {
    if (i != 1) return;
    ran = true;
    std::string what;
    EXPECT_EQ(join_error(s.dir / "copy" / s.manifest.filename(), out_to(out), &what), ErrorKind::io);
    EXPECT_NE(what.find(join_partial_path(out).string()), std::string::npos) << what;
    EXPECT_EQ(fs::file_size(join_partial_path(out)), 2000u);
  };
  join_parts(s.manifest, o);
  EXPECT_TRUE(ran);
  EXPECT_EQ(read_file(out), s.data);
}

// What another writer did to the output between the copy and the check: the read-back decides,
// the part is kept and the partial output cut back to the good prefix.
TEST(Join, BytesChangedInTheOutputAfterTheCopyAreCaughtBeforeThePartIsDeleted) {
  auto s = make_set("read_back");
  auto out = s.dir / "joined";
  auto o = out_to(out, true);
  o.after_copy = [&](std::size_t i) {
    if (i != 2) return;
    std::fstream f(join_partial_path(out), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(2100);
    f.write("\0\0\0\0", 4);
  };
  std::string what;
  EXPECT_EQ(join_error(s.manifest, o, &what), ErrorKind::io);
  EXPECT_NE(what.find("read back"), std::string::npos) << what;
  EXPECT_TRUE(fs::exists(part(s, 2)));
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(fs::file_size(join_partial_path(out)), 2000u);
  JoinResult r = join_parts(s.manifest, out_to(out, true));
  EXPECT_EQ(r.parts_resumed, 2u);
  EXPECT_EQ(read_file(out), s.data);
}

TEST(Join, APartialOutputThatDoesNotStartWithThisSetIsKept) {
  auto s = make_set("foreign_partial");
  auto out = s.dir / "joined";
  std::string foreign(1500, 'x');  // another set's interrupted join into the same output
  write(join_partial_path(out), foreign);
  std::string what;
  EXPECT_EQ(join_error(s.manifest, out_to(out, true), &what), ErrorKind::invalid);
  EXPECT_EQ(read_file(join_partial_path(out)), foreign);
  EXPECT_TRUE(fs::exists(part(s, 0)));
}

TEST(Join, BytesOfAPartWhoseFileIsGoneAreNotCutOff) {
  auto s = make_set("gone");
  auto out = s.dir / "joined";
  std::string torn = s.data.substr(0, 1500);  // part 0 and half of part 1, whose file is gone
  write(join_partial_path(out), torn);
  fs::remove(part(s, 1));
  EXPECT_EQ(join_error(s.manifest, out_to(out, true)), ErrorKind::invalid);
  EXPECT_EQ(read_file(join_partial_path(out)), torn);
}

TEST(Join, OutputNamesNearNameMaxJoin) {
  auto s = make_set("long_name");
  const std::string name(250, 'n');
  auto out = s.dir / name;
  auto o = out_to(out, true);
  o.after_part = [&](std::size_t) { EXPECT_LE(join_partial_path(out).filename().string().size(), 255u); };
  join_parts(s.manifest, o);
  EXPECT_EQ(read_file(out), s.data);
  EXPECT_NE(join_partial_path(s.dir / (name + "a")), join_partial_path(out));
}

// TensorBoard event files under write failures: the writer throws, and the file holds only whole
// records (each one's length and CRCs check), so TensorBoard reads everything before the failure.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <cstring>

#include "budget/fault_env.h"
#include "frugal/util/fs.h"
#include "frugal/training/events.h"

namespace frugal {
namespace {

using testing::FaultEnv;
using testing::TempDir;

// The number of whole records in a TFRecord file; fails the test on a torn or corrupt one.
int whole_records(const std::string& bytes) {
  std::size_t at = 0;
  int n = 0;
  while (at < bytes.size()) {
    if (bytes.size() - at < 12) {
      ADD_FAILURE() << "a torn record header at byte " << at << " of " << bytes.size();
      return n;
    }
    std::uint64_t len = 0;
    std::uint32_t len_crc = 0, data_crc = 0;
    std::memcpy(&len, bytes.data() + at, 8);
    std::memcpy(&len_crc, bytes.data() + at + 8, 4);
    EXPECT_EQ(len_crc, masked_crc32c(bytes.substr(at, 8))) << "at byte " << at;
    if (bytes.size() - at - 12 < len + 4) {
      ADD_FAILURE() << "a torn record at byte " << at << ": " << len << " data bytes announced, "
                    << bytes.size() - at - 12 << " there";
      return n;
    }
    std::memcpy(&data_crc, bytes.data() + at + 12 + len, 4);
    EXPECT_EQ(data_crc, masked_crc32c(bytes.substr(at + 12, len))) << "at byte " << at;
    at += 12 + len + 4;
    ++n;
  }
  return n;
}

TEST(EventsFaults, DiskFullWhileAppendingThrowsAndKeepsTheWholeRecords) {
  TempDir dir;
  FaultEnv env;
  env.fail_append_at = 3;  // the version record, two scalars, then the disk is full
  env.sticky = true;
  EventWriter w(dir.path(), env);
  w.scalar("train/loss", 1.0f, 20);
  w.scalar("train/loss", 0.5f, 40);
  EXPECT_THROW(w.scalar("train/loss", 0.25f, 60), DiskFullError);
  EXPECT_THROW(w.scalar("val/loss", 0.25f, 60), DiskFullError);
  EXPECT_EQ(whole_records(read_file(w.path())), 3);
}

TEST(EventsFaults, AnIoErrorIsAnErrorNamingTheFile) {
  TempDir dir;
  FaultEnv env;
  env.fault = FaultEnv::Fault::io;
  env.fail_append_at = 1;
  EventWriter w(dir.path(), env);
  try {
    w.scalar("val/accuracy", 0.5f, 1);
    FAIL() << "the failed write was swallowed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
    EXPECT_NE(std::string(e.what()).find("events.out.tfevents."), std::string::npos) << e.what();
  }
  w.scalar("val/accuracy", 0.75f, 2);  // the next record follows the last whole one
  EXPECT_EQ(whole_records(read_file(w.path())), 2);
}

// With the real Env, a write the kernel takes only in part (the file-size limit here; a disk
// filling midway does the same): the writer throws at once and the part is cut off again.
// Failed before the Env (fopen "ab" + fwrite): nothing was thrown, and the next flush left the
// file ending in a torn record.
TEST(EventsFaults, APartialWriteByTheKernelLeavesNoTornRecord) {
  TempDir dir;
  EventWriter w(dir.path());
  for (int s = 1; s <= 3; ++s) w.scalar("val/accuracy", 0.25f * s, s);
  const auto size = read_file(w.path()).size();
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = size + 10;  // room for 10 bytes of the next record
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  bool threw = false;
  try {
    w.scalar("val/accuracy", 1.0f, 4);
    w.flush();
  } catch (const Error&) {
    threw = true;
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_TRUE(threw);
  EXPECT_EQ(whole_records(read_file(w.path())), 4);
}

// The wall times in the records and the file name come from the Env's clock.
TEST(EventsFaults, WallTimeComesFromTheEnv) {
  TempDir dir;
  FaultEnv env;
  env.wall = Env::WallTime{} + std::chrono::seconds(1234567890);
  EventWriter w(dir.path(), env);
  EXPECT_NE(w.path().filename().string().find("events.out.tfevents.1234567890."), std::string::npos) << w.path();
}

}  // namespace
}  // namespace frugal

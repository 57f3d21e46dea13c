#include <gtest/gtest.h>

#include "budget/fault_env.h"
#include "frugal/fs.h"

namespace frugal {
namespace {

using testing::FaultEnv;
using testing::TempDir;

int count_temporaries(const std::filesystem::path& dir) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) n += is_temp_path(e.path());
  return n;
}

void write_text(Env& env, const std::filesystem::path& p, const std::string& text) {
  write_atomic(env, p, [&](WritableFile& f) {
    f.append(text.substr(0, text.size() / 2));
    f.append(text.substr(text.size() / 2));
  });
}

TEST(WriteAtomic, ReplacesTheFileAndLeavesNoTemporary) {
  TempDir dir;
  auto p = dir / "a.txt";
  write_text(Env::real(), p, "first");
  write_text(Env::real(), p, "second");
  EXPECT_EQ(read_file(p), "second");
  EXPECT_EQ(count_temporaries(dir.path()), 0);
}

// Every operation of an atomic write (create, 2 appends, sync, close, rename, folder sync) fails
// once in turn: before the rename the old content stays and the temporary is gone; from the
// rename on, the new content is complete.
TEST(WriteAtomic, FailureAtAnyOperationLeavesOldOrNewFileNeverATornOne) {
  for (auto fault : {FaultEnv::Fault::io, FaultEnv::Fault::disk_full}) {
    for (int at = 0;; ++at) {
      TempDir dir;
      auto p = dir / "state.bin";
      write_text(Env::real(), p, "old content");
      FaultEnv env;
      env.fault = fault;
      env.fail_at = at;
      bool threw = false;
      try {
        write_text(env, p, "the new content");
      } catch (const DiskFullError& e) {
        threw = true;
        // The injected ENOSPC comes out as itself, not re-wrapped as another error.
        EXPECT_EQ(fault, FaultEnv::Fault::disk_full) << "at op " << at << ": " << e.what();
        EXPECT_NE(std::string(e.what()).find("injected ENOSPC"), std::string::npos) << e.what();
      } catch (const Error& e) {
        threw = true;
        EXPECT_EQ(fault, FaultEnv::Fault::io) << "a disk-full came back as " << e.what();
        EXPECT_EQ(e.kind(), ErrorKind::io) << e.what();
        EXPECT_NE(std::string(e.what()).find("injected I/O error"), std::string::npos) << e.what();
      }
      std::string now = read_file(p);
      EXPECT_TRUE(now == "old content" || now == "the new content") << "at op " << at << ": " << now;
      EXPECT_EQ(count_temporaries(dir.path()), 0) << "at op " << at;
      if (!threw) {
        EXPECT_EQ(now, "the new content");
        EXPECT_GE(at, 7);  // all 7 operations passed
        break;
      }
    }
  }
}

// A real ENOSPC from the kernel (/dev/full refuses every write with it) is a DiskFullError that
// names the file and tells the user what to do.
TEST(PosixEnv, EnospcIsDiskFullWithTheFreeSpaceHint) {
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full";
  auto f = Env::real().new_writable_file("/dev/full");
  try {
    f->append(std::string(4096, 'x'));
    f->sync();
    FAIL() << "a write to /dev/full succeeded";
  } catch (const DiskFullError& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::io);
    EXPECT_NE(m.find("/dev/full"), std::string::npos) << m;
    EXPECT_NE(m.find("No space left on device"), std::string::npos) << m;
    EXPECT_NE(m.find("free disk space (frugal du, frugal clean)"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace frugal

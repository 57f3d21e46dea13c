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
      } catch (const DiskFullError&) {
        threw = true;
        EXPECT_EQ(fault, FaultEnv::Fault::disk_full);
      } catch (const Error&) {
        threw = true;
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

}  // namespace
}  // namespace frugal

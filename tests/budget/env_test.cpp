#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>

#include "budget/fault_env.h"
#include "frugal/util/fs.h"

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

TEST(AppendableFile, KeepsWhatIsThereAndAppends) {
  TempDir dir;
  auto p = dir / "log.jsonl";
  Env::real().new_appendable_file(p)->append("one\n");  // created when missing
  {
    auto f = Env::real().new_appendable_file(p);
    f->append("two\n");
    f->sync();
    f->close();
  }
  EXPECT_EQ(read_file(p), "one\ntwo\n");
}

// The kernel takes part of a write and then refuses the rest (here: the file-size limit, EFBIG;
// a disk filling midway does the same with ENOSPC). The append throws and the file is cut back
// to its last whole record. Fails without the cut-back: the file ends in "record-2 par".
TEST(AppendableFile, AFailedAppendLeavesNoTornRecord) {
  TempDir dir;
  auto p = dir / "log";
  auto f = Env::real().new_appendable_file(p);
  f->append("record-1\n");
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 20;  // room for 11 of the next record's 20 bytes
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  bool threw = false;
  std::string what;
  try {
    f->append("record-2 partly out\n");
  } catch (const Error& e) {
    threw = true;
    what = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_TRUE(threw) << "a write past the file-size limit succeeded";
  EXPECT_NE(what.find(p.string()), std::string::npos) << what;
  EXPECT_EQ(read_file(p), "record-1\n");
  f->append("record-3\n");  // the log goes on from its last whole record
  EXPECT_EQ(read_file(p), "record-1\nrecord-3\n");
}

// A log is appended only to a regular file (issue 32, item 11): a device where metrics.jsonl should
// be (here /dev/full, which once stood in for a full disk) is refused before any byte is written.
// The ENOSPC path of appends is the writable file's (EnospcIsDiskFullWithTheFreeSpaceHint above).
TEST(AppendableFile, ADeviceIsRefusedNotAppendedTo) {
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full";
  try {
    Env::real().new_appendable_file("/dev/full");
    FAIL() << "/dev/full was opened for appending";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid);
    EXPECT_NE(std::string(e.what()).find("character device"), std::string::npos) << e.what();
  }
}

TEST(PosixEnv, CreateDirsMakesParentsAndAcceptsAnExistingFolder) {
  TempDir dir;
  Env::real().create_dirs(dir / "a/b/c");
  EXPECT_TRUE(std::filesystem::is_directory(dir / "a/b/c"));
  Env::real().create_dirs(dir / "a/b/c");
  write_text(Env::real(), dir / "file", "x");
  EXPECT_THROW(Env::real().create_dirs(dir / "file/sub"), Error);
}

// The fake: the N-th append fails (counted over appends only), and with `sticky` the disk stays
// full for every later operation.
TEST(FaultEnv, FailsTheNthAppendAndCanStayFull) {
  TempDir dir;
  FaultEnv env;
  env.fail_append_at = 1;
  auto f = env.new_appendable_file(dir / "log");
  f->append("a");
  EXPECT_THROW(f->append("b"), DiskFullError);
  f->append("c");
  EXPECT_EQ(read_file(dir / "log"), "ac");
  EXPECT_EQ(env.failures, 1);

  FaultEnv full;
  full.sticky = true;
  full.fail_append_at = 1;
  auto g = full.new_appendable_file(dir / "log2");
  g->append("d");
  EXPECT_THROW(g->append("e"), DiskFullError);
  EXPECT_THROW(g->append("f"), DiskFullError);
  EXPECT_THROW(g->sync(), DiskFullError);
  EXPECT_EQ(read_file(dir / "log2"), "d");
  EXPECT_EQ(full.failures, 3);
}

TEST(FaultEnv, TornAppendWritesHalfThenFails) {
  TempDir dir;
  FaultEnv env;
  env.torn = true;
  env.fault = FaultEnv::Fault::io;
  env.fail_append_at = 0;
  auto f = env.new_writable_file(dir / "out");
  EXPECT_THROW(f->append("12345678"), Error);
  f->close();
  EXPECT_EQ(read_file(dir / "out"), "1234");
}

}  // namespace
}  // namespace frugal

// Crash safety against the real kernel: a child process writing checkpoints is SIGKILLed at
// random moments (often mid-save), and a real full file system (a 2 MiB tmpfs).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <random>

#include "budget/fault_env.h"
#include "checkpoint/checkpoint_helpers.h"
#include "frugal/checkpoint.h"
#include "frugal/fs.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

using testing::small_checkpoint;
using testing::TempDir;

constexpr const char* kChildEnv = "FRUGAL_CRASH_CHILD_DIR";

Checkpoint crash_checkpoint(std::int64_t step) {
  auto c = small_checkpoint(step);
  c.weights.emplace_back("big.weight", torch::full({1 << 20}, static_cast<float>(step)));  // 4 MiB: saves take a while
  return c;
}

// Runs only inside the child the crash test starts: saves checkpoints until killed.
TEST(CrashChild, WritesCheckpointsUntilKilled) {
  const char* dir = std::getenv(kChildEnv);
  if (!dir) GTEST_SKIP() << "helper for CheckpointCrash (runs in a child process)";
  CheckpointManager m(dir, {.retention = {.keep_last = 2, .keep_best = 1}});
  m.remove_temporaries();
  std::int64_t step = 0;
  if (auto r = m.load_latest()) step = r->ckpt.step;
  write_file_atomic(fs::path(dir) / "child-ready", "");  // the parent's clock starts now
  for (;;) m.save(crash_checkpoint(++step));
}

TEST(CheckpointCrash, SigkillAtRandomMomentsAlwaysLeavesAValidNewestCheckpoint) {
  TempDir dir;
  std::mt19937 rng(12345);
  std::int64_t last_step = 0;
  int rounds_with_checkpoint = 0, killed_mid_write = 0;
  for (int round = 0; round < 12; ++round) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::setenv(kChildEnv, dir.path().c_str(), 1);
      ::execl("/proc/self/exe", "test_checkpoint", "--gtest_filter=CrashChild.*", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    // Wait until the child is ready to save (start-up costs seconds on a busy machine), then kill
    // it at a random moment within the next few saves.
    for (int i = 0; i < 6000 && !fs::exists(dir / "child-ready"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 500));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited on its own with " << WEXITSTATUS(status);
    fs::remove(dir / "child-ready");
    for (const auto& e : fs::directory_iterator(dir.path())) {
      if (is_temp_path(e.path())) {
        ++killed_mid_write;  // the next child removes it at start
        break;
      }
    }

    for (const auto& e : list_checkpoints(dir.path(), true)) EXPECT_TRUE(e.valid) << e.path << ": " << e.problem;
    CheckpointManager reader(dir.path(), {});
    auto r = reader.load_latest();
    if (!r) continue;  // killed before its first save finished
    ++rounds_with_checkpoint;
    EXPECT_TRUE(r->skipped.empty());
    EXPECT_GE(r->ckpt.step, last_step);
    EXPECT_TRUE(torch::equal(r->ckpt.weight_map().at("big.weight"),
                             torch::full({1 << 20}, static_cast<float>(r->ckpt.step))));
    last_step = r->ckpt.step;
    if (fs::exists(dir / kBestFile)) EXPECT_EQ(verify_checkpoint_file(dir / kBestFile), "");
  }
  EXPECT_GE(rounds_with_checkpoint, 10);
  EXPECT_GE(last_step, 8);
  std::printf("crash test: %lld checkpoints written across 12 SIGKILLed children, %d killed mid-write\n",
              static_cast<long long>(last_step), killed_mid_write);
}

class TmpfsMount {
 public:
  explicit TmpfsMount(const fs::path& dir) : dir_(dir) {
    ok_ = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=2m") == 0;
    if (!ok_) error_ = std::strerror(errno);
  }
  ~TmpfsMount() {
    if (ok_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }

 private:
  fs::path dir_;
  bool ok_ = false;
  std::string error_;
};

Checkpoint sized_checkpoint(std::int64_t step, std::int64_t floats) {
  Checkpoint c;
  c.model = {"cnn", {"a"}, 28, 1, {0.5f}, {0.5f}};
  c.weights = {{"w", torch::full({floats}, static_cast<float>(step))}};
  c.step = step;
  return c;
}

TEST(CheckpointDiskFull, RealEnospcLeavesThePreviousCheckpointAndNoTemporary) {
  TempDir dir;
  TmpfsMount mount(dir.path());
  if (!mount.ok()) GTEST_SKIP() << "cannot mount a 2 MiB tmpfs here (" << mount.error() << "); needs root";
  fs::path run = dir / "run";
  CheckpointManager m(run, {.retention = {.keep_last = 1, .keep_best = 0}});
  constexpr std::int64_t kFloats = 175000;  // 700 KB: checkpoint + best fit, a second checkpoint does not
  ASSERT_EQ(m.save(sized_checkpoint(1, kFloats)).status, SaveResult::Status::saved);
  auto r = m.save(sized_checkpoint(2, kFloats));
  EXPECT_EQ(r.status, SaveResult::Status::disk_full) << r.message;
  auto count_temps = [&] {
    int n = 0;
    for (const auto& e : fs::directory_iterator(run)) n += is_temp_path(e.path());
    return n;
  };
  EXPECT_EQ(count_temps(), 0);
  // With a budget the manager sees there is no room first, and says so without writing.
  DiskBudget budget(dir.path(), {});
  m.set_disk_budget(&budget);
  r = m.save(sized_checkpoint(3, kFloats));
  EXPECT_EQ(r.status, SaveResult::Status::skipped_no_room) << r.message;
  EXPECT_EQ(count_temps(), 0);
  CheckpointManager reader(run, {});
  auto latest = reader.load_latest();
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->ckpt.step, 1);
  EXPECT_EQ(verify_checkpoint_file(run / kBestFile), "");
}

}  // namespace
}  // namespace frugal

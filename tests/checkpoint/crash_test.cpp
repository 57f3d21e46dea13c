// Crash safety against the real kernel: a child process writing checkpoints is SIGKILLed in the
// middle of writing one (at a random byte of it), and a real full file system (a 2 MiB tmpfs).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <random>
#include <thread>

#include "budget/fault_env.h"
#include "checkpoint/checkpoint_helpers.h"
#include "frugal/checkpoint/checkpoint.h"
#include "frugal/util/fs.h"
#include "frugal/checkpoint_files/run_folder.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

using testing::small_checkpoint;
using testing::TempDir;

constexpr const char* kChildEnv = "FRUGAL_CRASH_CHILD_DIR";
constexpr int kBigTensors = 64;  // of 64 KiB: a save is 64 appends, so a kill can land between them

Checkpoint crash_checkpoint(std::int64_t step) {
  auto c = small_checkpoint(step);
  for (int i = 0; i < kBigTensors; ++i)
    c.weights.emplace_back("big." + std::to_string(i) + ".weight", torch::full({16384}, static_cast<float>(step)));
  return c;
}

// Real files, but a pause after every append: the stretch in which a checkpoint file is part
// written lasts tens of milliseconds instead of one, so the parent can see it and kill there.
class SlowEnv : public testing::FaultEnv {
 public:
  std::unique_ptr<WritableFile> new_writable_file(const fs::path& path) override {
    return std::make_unique<SlowFile>(FaultEnv::new_writable_file(path));
  }

 private:
  struct SlowFile : WritableFile {
    explicit SlowFile(std::unique_ptr<WritableFile> f) : inner(std::move(f)) {}
    void append(const void* data, std::size_t n) override {
      inner->append(data, n);
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    void sync() override { inner->sync(); }
    void close() override { inner->close(); }
    std::unique_ptr<WritableFile> inner;
  };
};

// Runs only inside the child the crash test starts: saves checkpoints until killed.
TEST(CrashChild, WritesCheckpointsUntilKilled) {
  const char* dir = std::getenv(kChildEnv);
  if (!dir) GTEST_SKIP() << "helper for CheckpointCrash (runs in a child process)";
  SlowEnv env;
  CheckpointManager m(dir, {.retention = {.keep_last = 2, .keep_best = 1}}, env);
  m.remove_temporaries();
  std::int64_t step = 0;
  if (auto r = m.load_latest()) step = r->ckpt.step;
  write_file_atomic(fs::path(dir) / "child-ready", "");
  for (;;) m.save(crash_checkpoint(++step));
}

// The temporaries of checkpoint file `name` in `dir` holding at least `at` bytes but not all of
// them (a checkpoint's size varies by a few bytes of metadata; 4 KiB is well inside its last append).
std::vector<fs::path> torn_temporaries(const fs::path& dir, const std::string& name, std::uint64_t at,
                                       std::uint64_t full_size) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!is_temp_path(e.path()) || e.path().filename().string().rfind(name, 0) != 0) continue;
    auto size = fs::file_size(e.path(), ec);
    if (!ec && size >= at && size + 4096 < full_size) out.push_back(e.path());
  }
  return out;
}

std::int64_t latest_step(const fs::path& dir) {
  auto r = CheckpointManager(dir, {}).load_latest();
  return r ? r->ckpt.step : 0;
}

TEST(CheckpointCrash, SigkillInTheMiddleOfAWriteAlwaysLeavesTheLastCommittedCheckpoint) {
  TempDir dir, scratch;
  save_checkpoint(scratch / "c.safetensors", crash_checkpoint(1));
  const std::uint64_t full_size = fs::file_size(scratch / "c.safetensors");
  std::mt19937 rng(12345);
  std::int64_t committed = 0;
  int rounds = 0, misses = 0;
  std::vector<fs::path> left_by_previous;
  while (rounds < 8) {
    ASSERT_LT(misses, 8) << "the kill kept landing outside a write";
    committed = latest_step(dir.path());
    // The child commits `saves - 1` checkpoints, then dies once the temporary of the next one
    // holds at least `at` bytes (a random point of the write).
    const std::int64_t saves = 1 + static_cast<std::int64_t>(rng() % 2);
    const std::int64_t target = committed + saves;
    const std::uint64_t at = 1 + rng() % (full_size - 65536);
    const std::string target_name = checkpoint_file_name(target / 10, target, false);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::setenv(kChildEnv, dir.path().c_str(), 1);
      ::execl("/proc/self/exe", "test_checkpoint", "--gtest_filter=CrashChild.*", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    // Start-up (seconds on a busy machine) ends with "child-ready", written after the child
    // removed the abandoned temporaries: the torn files of the previous child are gone by then.
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!fs::exists(dir / "child-ready") && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_TRUE(fs::exists(dir / "child-ready")) << "the child did not start";
    for (const auto& p : left_by_previous) EXPECT_FALSE(fs::exists(p)) << p << " was not removed at the next start";
    bool saw = false;
    while (!saw && std::chrono::steady_clock::now() < give_up) {
      saw = !torn_temporaries(dir.path(), target_name, at, full_size).empty();
      if (!saw) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ASSERT_TRUE(saw) << "no part-written " << target_name << " appeared";
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child ended with status " << status;
    fs::remove(dir / "child-ready");
    // The kill landed mid-write: the child died holding the torn file.
    left_by_previous = torn_temporaries(dir.path(), target_name, at, full_size);
    if (left_by_previous.empty()) {  // the write finished between the look and the kill
      ++misses;
      continue;
    }
    ++rounds;

    for (const auto& e : list_checkpoints(dir.path(), true)) EXPECT_TRUE(e.valid) << e.path << ": " << e.problem;
    CheckpointManager reader(dir.path(), {});
    auto r = reader.load_latest();
    // Every save before the torn one was committed, whole; the torn one does not exist.
    if (target == 1) {
      EXPECT_FALSE(r);
    } else {
      ASSERT_TRUE(r) << "round " << rounds;
      EXPECT_TRUE(r->skipped.empty());
      EXPECT_EQ(r->ckpt.step, target - 1);
      const auto weights = r->ckpt.weight_map();
      for (int i = 0; i < kBigTensors; ++i)
        EXPECT_TRUE(torch::equal(weights.at("big." + std::to_string(i) + ".weight"),
                                 torch::full({16384}, static_cast<float>(r->ckpt.step))));
      EXPECT_EQ(verify_checkpoint_file(dir / kBestFile), "");
    }
  }
  committed = latest_step(dir.path());
  EXPECT_GE(committed, 2);
  std::printf(
      "crash test: 8 children SIGKILLed mid-write (%d kills landed after the write and were redone), "
      "%lld checkpoints committed\n",
      misses, static_cast<long long>(committed));
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
  // The kernel's ENOSPC, as the user reads it: what failed, why, what to do, and that nothing is lost.
  EXPECT_NE(r.message.find("No space left on device"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("free disk space"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("intact"), std::string::npos) << r.message;
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

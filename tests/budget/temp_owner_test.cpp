// Temporaries carry their owner (fs.h): only one whose writer is provably gone is removed, and only
// by the run that owns its folder or by `frugal clean`; an interrupted join's output never is.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <optional>

#include "budget/fault_env.h"
#include "frugal/budget/budget.h"
#include "frugal/util/fs.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

using testing::FaultEnv;
using testing::TempDir;

// `bytes` bytes of 'x' as file `p`, written in place (no temporary of its own beside it).
void put_directly(const fs::path& p, std::size_t bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << std::string(bytes, 'x');
}

std::vector<fs::path> temporaries_in(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (is_temp_path(e.path())) out.push_back(e.path());
  return out;
}

// A child process that creates `temp` as a writer does and then waits to be killed.
pid_t writer_process(const fs::path& temp) {
  int ready[2];
  EXPECT_EQ(::pipe(ready), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    int fd = create_owned_temp(temp);
    char ok = fd >= 0 && ::write(fd, "data", 4) == 4 ? 'y' : 'n';
    (void)!::write(ready[1], &ok, 1);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char ok = 0;
  EXPECT_EQ(::read(ready[0], &ok, 1), 1);
  ::close(ready[0]);
  EXPECT_EQ(ok, 'y');
  return pid;
}

TEST(TempOwner, AliveWritersTemporaryIsKeptAndRemovedOnceTheWriterIsKilled) {
  TempDir dir;
  const fs::path temp = dir / "ckpt.safetensors.frugal-tmp-0123456789ab";
  pid_t pid = writer_process(temp);
  // Old enough for clean's quiet rule too: only the lock says that it is alive.
  fs::last_write_time(temp, fs::file_time_type::clock::now() - std::chrono::hours(2));
  EXPECT_EQ(sweep_temp(temp, std::chrono::seconds(0), /*remove=*/true), TempState::owned);
  EXPECT_EQ(sweep_temp(temp, std::chrono::seconds(60), /*remove=*/true), TempState::owned);
  EXPECT_TRUE(fs::exists(temp));

  ASSERT_EQ(::kill(pid, SIGKILL), 0);  // the writer was alive when the signal was sent
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the writer did not die by the kill";
  EXPECT_EQ(sweep_temp(temp, std::chrono::seconds(0), /*remove=*/false), TempState::abandoned);
  EXPECT_TRUE(fs::exists(temp)) << "a dry check removed it";
  EXPECT_TRUE(remove_if_abandoned(temp));
  EXPECT_FALSE(fs::exists(temp));
}

TEST(TempOwner, QuietRuleKeepsARecentlyModifiedUnlockedTemporary) {
  TempDir dir;
  const fs::path temp = dir / "x.bin.frugal-tmp-aaaaaaaaaaaa";
  put_directly(temp, 10);  // written by a program that takes no lock
  EXPECT_EQ(sweep_temp(temp, std::chrono::seconds(60), true), TempState::recent);
  EXPECT_TRUE(fs::exists(temp));
  fs::last_write_time(temp, fs::file_time_type::clock::now() - std::chrono::minutes(5));
  EXPECT_EQ(sweep_temp(temp, std::chrono::seconds(60), true), TempState::abandoned);
  EXPECT_FALSE(fs::exists(temp));
}

TEST(TempOwner, SymlinkNamedLikeATemporaryIsNeverFollowedOrRemoved) {
  TempDir dir;
  put_directly(dir / "precious", 10);
  fs::create_symlink(dir / "precious", dir / "p.frugal-tmp-bbbbbbbbbbbb");
  EXPECT_EQ(sweep_temp(dir / "p.frugal-tmp-bbbbbbbbbbbb", std::chrono::seconds(0), true), TempState::absent);
  EXPECT_TRUE(fs::exists(dir / "precious"));
  EXPECT_TRUE(fs::is_symlink(dir / "p.frugal-tmp-bbbbbbbbbbbb"));
}

TEST(TempOwner, AtomicWriteHoldsTheLockUntilItsRename) {
  TempDir dir;
  {
    AtomicWrite f(Env::real(), dir / "out.bin");
    f.file().append("hello");
    auto temps = temporaries_in(dir.path());
    ASSERT_EQ(temps.size(), 1u);
    EXPECT_EQ(sweep_temp(temps[0], std::chrono::seconds(0), true), TempState::owned);
    f.commit();
  }
  EXPECT_EQ(read_file(dir / "out.bin"), "hello");
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
}

// A sweeper that runs at the worst moment: after the writer closed its file, before the rename.
class SweepAtRename : public FaultEnv {
 public:
  std::optional<TempState> seen;
  void rename_file(const fs::path& from, const fs::path& to) override {
    seen = sweep_temp(from, std::chrono::seconds(0), /*remove=*/true);
    FaultEnv::rename_file(from, to);
  }
};

TEST(TempOwner, EnvWriterKeepsTheLockBetweenCloseAndRename) {
  TempDir dir;
  SweepAtRename env;
  write_atomic(env, dir / "best.safetensors", [](WritableFile& f) { f.append("payload"); });
  ASSERT_TRUE(env.seen.has_value()) << "the sweep did not run";
  EXPECT_EQ(*env.seen, TempState::owned);
  EXPECT_EQ(read_file(dir / "best.safetensors"), "payload");
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
}

TEST(TempOwner, MakeRoomRemovesOnlyThisRunsAbandonedTemporaries) {
  TempDir dir;
  put_directly(dir / "run/config.json", 2);
  put_directly(dir / "run/ckpt-e0001-s000010.safetensors.frugal-tmp-deaddeaddead", 8192);  // writer died
  put_directly(dir / "other/config.json", 2);
  put_directly(dir / "other/ckpt-e0001-s000010.safetensors.frugal-tmp-0000aaaa0000", 8192);  // another run's
  // After `join --delete-parts` this is the only copy of the parts already removed.
  put_directly(dir / "data/big.zip.frugal-join", 8192);
  // A live writer in this run folder (another open file description: the lock conflicts).
  const fs::path live = dir / "run/best.safetensors.frugal-tmp-11ve11ve11ve";
  UniqueFd live_fd(create_owned_temp(live));
  ASSERT_TRUE(live_fd);

  FaultEnv env;
  DiskBudget b(dir.path(), {.limit = 1, .own_folder = dir / "run"}, env);
  EXPECT_FALSE(b.make_room(1ull << 40));  // nothing can make that much room: everything it may remove goes
  EXPECT_FALSE(fs::exists(dir / "run/ckpt-e0001-s000010.safetensors.frugal-tmp-deaddeaddead"));
  EXPECT_TRUE(fs::exists(dir / "data/big.zip.frugal-join")) << "a partial join was deleted";
  EXPECT_TRUE(fs::exists(dir / "other/ckpt-e0001-s000010.safetensors.frugal-tmp-0000aaaa0000"))
      << "another run's temporary was deleted";
  EXPECT_TRUE(fs::exists(live)) << "a live writer's temporary was deleted";
}

TEST(TempOwner, PartialJoinIsItsOwnKindCountedAndNeverATemporary) {
  EXPECT_EQ(classify_file("data/big.zip.frugal-join", false), FileKind::partial);
  TempDir dir;
  put_directly(dir / "data/big.zip.frugal-join", 5000);
  put_directly(dir / "run/x.safetensors.frugal-tmp-1234", 10);
  auto u = measure_usage(dir.path());
  EXPECT_EQ(u.partial, allocated_size(dir / "data/big.zip.frugal-join"));
  EXPECT_GE(u.partial, 5000u);
  EXPECT_EQ(find_partial_files(dir.path()), std::vector<fs::path>{dir / "data/big.zip.frugal-join"});
  EXPECT_EQ(find_temporary_files(dir.path()), std::vector<fs::path>{dir / "run/x.safetensors.frugal-tmp-1234"});
}

TEST(DiskUsageBlocks, ManySmallFilesCountWhatTheFileSystemAllocates) {
  TempDir dir;
  for (int i = 0; i < 50; ++i) put_directly(dir / ("data/f" + std::to_string(i) + ".txt"), 100);
  const std::uint64_t one = allocated_size(dir / "data/f0.txt");
  ASSERT_GE(one, 512u);  // every file system here allocates at least a sector for 100 bytes
  auto u = measure_usage(dir.path());
  EXPECT_EQ(u.other, 50 * one);
  EXPECT_GT(u.other, 50u * 100u) << "declared sizes counted instead of blocks";
  EXPECT_EQ(allocated_bytes(dir.path(), 0), 0u);
  EXPECT_GE(allocated_bytes(dir.path(), 1), 512u);
  EXPECT_EQ(allocated_bytes(dir.path(), 1) % 512, 0u);
  EXPECT_EQ(allocated_bytes(dir.path(), allocated_bytes(dir.path(), 1)), allocated_bytes(dir.path(), 1));
}

TEST(DiskBudgetReserve, SmallAppendsCountDownTheMeasuredRoomAndRefuseBeyondIt) {
  TempDir dir;
  FaultEnv env;
  DiskBudget b(dir.path(), {.limit = 16384}, env);
  EXPECT_FALSE(b.reserve(20000));
  EXPECT_TRUE(b.reserve(8000));
  put_directly(dir / "run/metrics.jsonl", 8000);  // what was reserved is written
  const std::uint64_t used = allocated_size(dir / "run/metrics.jsonl");
  ASSERT_GE(used, 8000u);
  EXPECT_TRUE(b.reserve(16384 - 8000));       // still inside the last measure
  EXPECT_FALSE(b.reserve(16384 - used + 1));  // re-measured: only limit - allocated is left
  EXPECT_TRUE(b.reserve(16384 - used));
}

}  // namespace
}  // namespace frugal

#include <gtest/gtest.h>

#include "budget/fault_env.h"
#include "frugal/budget/budget.h"
#include "frugal/util/fs.h"
#include "frugal/checkpoint_files/run_folder.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

using testing::FaultEnv;
using testing::TempDir;

void put(const fs::path& p, std::size_t bytes) {
  fs::create_directories(p.parent_path());
  write_file_atomic(p, std::string(bytes, 'x'));
}

TEST(ClassifyFile, SortsWorkspaceFilesByKind) {
  EXPECT_EQ(classify_file("data/mnist.zip", false), FileKind::data);
  EXPECT_EQ(classify_file("data/big.zip.part0003", false), FileKind::data);
  EXPECT_EQ(classify_file("data/big.zip.manifest.json", false), FileKind::data);
  EXPECT_EQ(classify_file("data/set.z01", false), FileKind::data);
  EXPECT_EQ(classify_file("run/ckpt-e0001-s000010.safetensors", true), FileKind::checkpoint);
  EXPECT_EQ(classify_file("run/best.safetensors", true), FileKind::checkpoint);
  EXPECT_EQ(classify_file("run/best.safetensors.frugal-tmp-0123abcd", true), FileKind::temporary);
  EXPECT_EQ(classify_file("data/big.zip.frugal-join", false), FileKind::partial);
  EXPECT_EQ(classify_file("run/metrics.jsonl", true), FileKind::other);
  EXPECT_EQ(classify_file("weights.safetensors", false), FileKind::other);
}

TEST(MeasureUsage, AddsSizesByKind) {
  TempDir dir;
  put(dir / "data/a.zip", 1000);
  put(dir / "run/config.json", 10);
  put(dir / "run/ckpt-e0001-s000010.safetensors", 300);
  put(dir / "run/x.safetensors.frugal-tmp-1234", 50);
  auto u = measure_usage(dir.path());  // allocated blocks, as the file system counts them
  EXPECT_EQ(u.data, allocated_size(dir / "data/a.zip"));
  EXPECT_EQ(u.checkpoints, allocated_size(dir / "run/ckpt-e0001-s000010.safetensors"));
  EXPECT_EQ(u.temporary, allocated_size(dir / "run/x.safetensors.frugal-tmp-1234"));
  EXPECT_EQ(u.other, allocated_size(dir / "run/config.json"));
  EXPECT_GE(u.data, 1000u);
}

TEST(DiskBudget, LimitCountsAgainstWorkspaceUsage) {
  TempDir dir;
  put(dir / "data/a.zip", 4000);
  FaultEnv env;
  DiskBudget b(dir.path(), {.limit = 10000}, env);
  EXPECT_EQ(b.available(), 10000u - allocated_size(dir / "data/a.zip"));
  env.free_bytes = 100;
  EXPECT_EQ(b.available(), 100u);
}

// The tars --cache-decompressed makes of a run's data count against its budget wherever the cache
// folder is; one inside the workspace is counted once, a missing one not at all.
TEST(DiskBudget, CountedFilesCountWhereverTheyAreAndOnlyOnce) {
  TempDir dir;
  put(dir / "ws/data/a.zip", 4000);
  put(dir / "ws/cache/in-0001.tar", 8000);
  put(dir / "cache/out-0002.tar", 20000);
  FaultEnv env;
  DiskBudget b(
      dir / "ws/",
      {.limit = 100000, .counted = {dir / "cache/out-0002.tar", dir / "ws/cache/in-0001.tar", dir / "cache/none.tar"}},
      env);
  const std::uint64_t used = allocated_size(dir / "ws/data/a.zip") + allocated_size(dir / "ws/cache/in-0001.tar") +
                             allocated_size(dir / "cache/out-0002.tar");
  EXPECT_GE(used, 32000u);
  EXPECT_EQ(b.used(), used);
  EXPECT_EQ(b.available(), 100000u - used);
}

TEST(DiskBudget, MakeRoomRemovesTemporariesFirstThenEvictableOldestFirst) {
  TempDir dir;
  put(dir / "run/config.json", 0);
  put(dir / "run/a.frugal-tmp-1", 1000);
  put(dir / "run/live.frugal-tmp-2", 1000);
  put(dir / "run/old1", 1000);
  put(dir / "run/old2", 1000);
  const std::uint64_t f = allocated_size(dir / "run/old1");  // each file's blocks
  FaultEnv env;
  DiskBudget b(dir.path(), {.limit = 4 * f + f / 2, .own_folder = dir / "run"}, env);
  b.set_in_progress([&] { return std::vector<fs::path>{dir / "run/live.frugal-tmp-2"}; });
  b.set_evictable([&] { return std::vector<fs::path>{dir / "run/old1", dir / "run/old2"}; });
  EXPECT_TRUE(b.make_room(f));  // temporary a goes; 1.5 files free
  EXPECT_FALSE(fs::exists(dir / "run/a.frugal-tmp-1"));
  EXPECT_TRUE(fs::exists(dir / "run/old1"));
  EXPECT_TRUE(b.make_room(2 * f));  // then old1
  EXPECT_FALSE(fs::exists(dir / "run/old1"));
  EXPECT_TRUE(fs::exists(dir / "run/old2"));
  EXPECT_TRUE(fs::exists(dir / "run/live.frugal-tmp-2"));
}

TEST(DiskBudget, NoRoomEvenAfterEvictionIsReportedAndRequireThrowsBudget) {
  TempDir dir;
  put(dir / "run/keep", 1000);
  FaultEnv env;
  DiskBudget b(dir.path(), {.limit = 1500}, env);
  EXPECT_FALSE(b.make_room(1000));
  EXPECT_TRUE(fs::exists(dir / "run/keep"));
  try {
    b.require(1000, "a checkpoint");
    FAIL() << "expected a budget error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::budget);
    EXPECT_NE(std::string(e.what()).find("--disk-budget"), std::string::npos);
  }
}

TEST(DiskBudget, WatcherWarnsWhenLittleRoomIsLeft) {
  TempDir dir;
  FaultEnv env;
  env.free_bytes = 100 << 20;  // 100 MiB < 512 MiB
  DiskBudget b(dir.path(), {.watch_interval = std::chrono::seconds(3600)}, env);
  b.start_watcher();  // checks once at start, then sleeps until stopped
  for (int i = 0; i < 200 && !b.low_space_warned(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  b.stop_watcher();
  EXPECT_TRUE(b.low_space_warned());
}

}  // namespace
}  // namespace frugal

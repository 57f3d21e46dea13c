// Everything the checkpoint manager writes asks the disk budget first, and a budget that cannot
// keep a run resumable is refused before training (exit 4), saying what would fit.
#include <gtest/gtest.h>

#include "budget/fault_env.h"
#include "checkpoint/checkpoint_helpers.h"
#include "frugal/budget/budget.h"
#include "frugal/checkpoint/checkpoint.h"
#include "frugal/util/fs.h"
#include "frugal/util/units.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

using testing::TempDir;

// 4 MiB of weights and 8 MiB of optimizer state: sizes where the 256 KiB header allowance of the
// estimates does not decide the outcome.
Checkpoint sized_checkpoint(std::int64_t step, double metric) {
  Checkpoint c = testing::small_checkpoint(step, metric);
  c.weights.emplace_back("big.weight", torch::rand({1 << 20}));
  c.state.emplace_back("optim.big.weight.exp_avg", torch::rand({1 << 20}));
  c.state.emplace_back("optim.big.weight.exp_avg_sq", torch::rand({1 << 20}));
  return c;
}

TEST(BudgetedSave, BestSafetensorsAsksTheBudgetAndTheWorkspaceStaysWithinIt) {
  TempDir ws;
  const fs::path run = ws / "run";
  const std::uint64_t limit = 14ull << 20;  // one full checkpoint (~12.3 MiB), not best (~4.3 MiB) too
  DiskBudget budget(ws.path(), {.limit = limit, .own_folder = run});
  CheckpointManager m(run, {});
  m.set_disk_budget(&budget);
  SaveResult r = m.save(sized_checkpoint(10, 0.5));
  EXPECT_EQ(r.status, SaveResult::Status::saved) << r.message;
  EXPECT_TRUE(fs::exists(r.file));
  EXPECT_FALSE(r.best_updated);
  EXPECT_FALSE(fs::exists(run / kBestFile)) << "best.safetensors written past the budget";
  EXPECT_LE(measure_usage(ws.path()).total(), limit) << format_size(measure_usage(ws.path()).total());
  EXPECT_EQ(m.resumable_step(), 10);
}

TEST(BudgetedSave, ASkippedSaveLeavesTheRunResumableFromTheLastSavedStep) {
  TempDir ws;
  const fs::path run = ws / "run";
  DiskBudget budget(ws.path(), {.limit = 14ull << 20, .own_folder = run});
  CheckpointManager m(run, {});
  m.set_disk_budget(&budget);
  ASSERT_EQ(m.save(sized_checkpoint(10, 0.5)).status, SaveResult::Status::saved);
  // The step-10 checkpoint is the last good one and is never evicted: step 20 cannot fit beside it.
  SaveResult r = m.save(sized_checkpoint(20, 0.6));
  EXPECT_NE(r.status, SaveResult::Status::saved);
  EXPECT_EQ(m.resumable_step(), 10);
  EXPECT_NE(r.message.find("resumes from step 10"), std::string::npos) << r.message;
  EXPECT_LE(measure_usage(ws.path()).total(), 14ull << 20);
}

TEST(BudgetedSave, AFullDiskWhileSavingOnlyTheWeightsIsASkippedSaveNotAnError) {
  TempDir ws;
  const fs::path run = ws / "run";
  testing::FaultEnv env;
  env.free_bytes = 6ull << 20;  // the budget sees room for the weights (4.3 MiB), not a checkpoint
  env.fail_at = 0;              // ...and the disk is full at the first write: creating best's temporary
  DiskBudget budget(ws.path(), {.own_folder = run}, env);
  CheckpointManager m(run, {}, env);
  m.set_disk_budget(&budget);
  SaveResult r;
  ASSERT_NO_THROW(r = m.save(sized_checkpoint(10, 0.5)));
  ASSERT_EQ(env.ops, 1) << "the injected ENOSPC was not reached";
  EXPECT_EQ(r.status, SaveResult::Status::skipped_no_room) << r.message;
  EXPECT_NE(r.message.find("a rerun starts over"), std::string::npos) << r.message;
  EXPECT_FALSE(fs::exists(run / kBestFile));
}

TEST(BudgetedSave, TooSmallABudgetIsRefusedBeforeTrainingWithWhatWouldFit) {
  TempDir ws;
  const fs::path run = ws / "run";
  DiskBudget budget(ws.path(), {.limit = 20ull << 20, .own_folder = run});
  CheckpointManager m(run, {});
  m.set_disk_budget(&budget);
  try {
    m.require_room_for_run(4ull << 20, 8ull << 20, 1ull << 20);
    FAIL() << "a 20 MiB budget accepted for 12 MiB checkpoints";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::budget);
    const std::string what = e.what();
    EXPECT_NE(what.find("raise --disk-budget to at least"), std::string::npos) << what;
    EXPECT_NE(what.find("two checkpoints of"), std::string::npos) << what;
  }
  // What it said would fit does fit.
  DiskBudget enough(
      ws.path(), {.limit = 2 * ((12ull << 20) + (256 << 10)) + (4ull << 20) + (256 << 10) + (1ull << 20) + (64 << 10),
                  .own_folder = run});
  m.set_disk_budget(&enough);
  EXPECT_NO_THROW(m.require_room_for_run(4ull << 20, 8ull << 20, 1ull << 20));
}

}  // namespace
}  // namespace frugal

#include <gtest/gtest.h>

#include <optional>

#include "budget/fault_env.h"
#include "checkpoint/checkpoint_helpers.h"
#include "frugal/checkpoint/checkpoint.h"
#include "frugal/checkpoint_files/checkpoint_files.h"
#include "frugal/util/fs.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

using testing::error_kind;
using testing::same_tensors;
using testing::small_checkpoint;
using testing::TempDir;

// A model-sized state: a "backbone" and a "head".
Checkpoint model_like(int seed) {
  torch::manual_seed(seed);
  Checkpoint c;
  c.model = {"resnet-ish", {"a", "b"}, 32, 3, {0.5f, 0.5f, 0.5f}, {0.25f, 0.25f, 0.25f}};
  for (int i = 0; i < 8; ++i)
    c.weights.emplace_back("backbone." + std::to_string(i) + ".weight", torch::randn({64, 64, 3, 3}));
  c.weights.emplace_back("fc.weight", torch::randn({10, 512}));
  c.weights.emplace_back("fc.bias", torch::randn({10}));
  c.step = 1;
  return c;
}

// One SGD-like update: small relative changes, as between checkpoints of a real run.
void update(Checkpoint& c, bool frozen_backbone, int seed) {
  torch::manual_seed(seed);
  for (auto& [name, t] : c.weights) {
    if (frozen_backbone && name.rfind("backbone.", 0) == 0) continue;
    t = t + 1e-3 * torch::randn(t.sizes());
  }
  c.step += 1;
}

double delta_ratio(bool frozen_backbone) {
  TempDir dir;
  auto base = model_like(1);
  save_checkpoint(dir / "base.safetensors", base);
  auto next = base;
  update(next, frozen_backbone, 2);
  save_delta_checkpoint(dir / "d.safetensors", next, base, dir / "base.safetensors");
  auto back = load_checkpoint(dir / "d.safetensors");
  EXPECT_TRUE(same_tensors(next.weights, back.weights));
  EXPECT_EQ(back.step, next.step);
  EXPECT_EQ(back.kind, "full");
  return double(fs::file_size(dir / "d.safetensors")) / double(fs::file_size(dir / "base.safetensors"));
}

TEST(DeltaCheckpoint, RestoresBitExactlyAndIsSmallerThanAFullOne) {
  double full_training = delta_ratio(false);
  double fine_tuning = delta_ratio(true);
  std::printf("delta/full size: all weights updated %.3f, frozen backbone %.4f\n", full_training, fine_tuning);
  EXPECT_LT(full_training, 1.0);
  EXPECT_LT(fine_tuning, 0.02);  // the head is 1.7% of the weights
}

TEST(DeltaCheckpoint, NewAndReshapedTensorsAreStoredWhole) {
  TempDir dir;
  auto base = small_checkpoint(10);
  save_checkpoint(dir / "base.safetensors", base);
  auto next = small_checkpoint(20, std::nullopt, 9);
  next.weights.emplace_back("new.weight", torch::arange(5, torch::kInt32));
  next.weights[0].second = torch::randn({4, 2});  // reshaped
  save_delta_checkpoint(dir / "d.safetensors", next, base, dir / "base.safetensors");
  auto back = load_checkpoint(dir / "d.safetensors");
  EXPECT_TRUE(same_tensors(next.weights, back.weights));
  EXPECT_TRUE(same_tensors(next.state, back.state));
}

TEST(DeltaCheckpoint, AReplacedBaseIsDetected) {
  TempDir dir;
  auto base = small_checkpoint(10);
  save_checkpoint(dir / "base.safetensors", base);
  save_delta_checkpoint(dir / "d.safetensors", small_checkpoint(20), base, dir / "base.safetensors");
  save_checkpoint(dir / "base.safetensors", small_checkpoint(10, std::nullopt, 5));
  EXPECT_EQ(error_kind([&] { load_checkpoint(dir / "d.safetensors"); }), ErrorKind::invalid);
}

TEST(DeltaCheckpoint, ManagerWritesDeltasBetweenFullOnesAndResumesFromThem) {
  TempDir dir;
  CheckpointOptions opt{.retention = {.keep_last = 2, .keep_best = 0}, .delta = true, .full_every = 3};
  CheckpointManager m(dir.path(), opt);
  auto c = model_like(1);
  std::vector<bool> was_delta;
  for (int i = 0; i < 5; ++i) {
    update(c, true, 10 + i);
    auto r = m.save(c);
    was_delta.push_back(r.file.string().find(".delta.") != std::string::npos);
  }
  EXPECT_EQ(was_delta, (std::vector<bool>{false, true, true, false, true}));
  // keep_last 2: the newest delta and the full one it is based on (which is also the 2nd newest).
  auto list = list_checkpoints(dir.path(), true);
  ASSERT_EQ(list.size(), 2u);
  CheckpointManager again(dir.path(), opt);
  auto r = again.load_latest();
  ASSERT_TRUE(r);
  EXPECT_TRUE(same_tensors(r->ckpt.weights, c.weights));
  update(c, true, 99);
  EXPECT_NE(again.save(c).file.string().find(".delta."), std::string::npos);
  EXPECT_TRUE(same_tensors(again.load_latest()->ckpt.weights, c.weights));
}

// Issue 16: a load reads each file's header once (it was parsed twice per file, a delta's base
// three times, and a resume from a delta loaded the base twice over).
TEST(DeltaCheckpoint, ALoadParsesEachHeaderOnce) {
  TempDir dir;
  auto base = small_checkpoint(10);
  const auto full = dir / checkpoint_file_name(1, 10, false);
  const auto delta = dir / checkpoint_file_name(2, 20, true);
  save_checkpoint(full, base);
  save_delta_checkpoint(delta, small_checkpoint(20), base, full);
  auto counted = [&](auto&& fn) {
    const auto before = safetensors_header_parses();
    fn();
    return safetensors_header_parses() - before;
  };
  EXPECT_EQ(counted([&] { load_checkpoint(full); }), 1u);
  EXPECT_EQ(counted([&] { load_checkpoint(delta); }), 2u);  // the delta's and its base's
  // A resume lists the run (one header per checkpoint file), then loads the newest: the delta and
  // its base, which it keeps for the next delta without reading it again.
  CheckpointManager m(dir.path(), {.retention = {.keep_last = 2, .keep_best = 0}, .delta = true});
  std::optional<CheckpointManager::Resume> r;
  EXPECT_EQ(counted([&] { r = m.load_latest(); }), 2u + 2u);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->ckpt.step, 20);
}

}  // namespace
}  // namespace frugal

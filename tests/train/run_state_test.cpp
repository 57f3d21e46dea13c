// RunIdentity and RunState: the keys a checkpoint and config.json hold are those old runs wrote
// (docs/formats.md), and a checkpoint's state comes back as it went in.
#include <gtest/gtest.h>

#include "train/run_state.h"

namespace frugal {
namespace {

TEST(RunState, TheCheckpointKeysAreThoseOfVersionOne) {
  RunState s;
  s.step = 120;
  s.epochs_done = 3;
  s.loader_epoch = 3;
  s.loader_position = 64;
  s.lr = 0.002;
  s.total_steps = 400;
  s.micro_batch = 16;
  s.accum = 4;
  s.time_budget = {{"planned", true}};
  s.metrics = {{"val_accuracy", 0.5}};
  s.val_accuracy = 0.5;
  Checkpoint ck;
  s.to_checkpoint(ck);
  EXPECT_EQ(ck.step, 120);
  EXPECT_EQ(ck.epoch, 3);
  EXPECT_EQ(ck.loader, (nlohmann::json{{"epoch", 3}, {"position", 64}}));
  EXPECT_EQ(ck.schedule, (nlohmann::json{{"lr", 0.002},
                                         {"total_steps", 400},
                                         {"micro_batch", 16},
                                         {"accum", 4},
                                         {"time_budget", {{"planned", true}}}}));
  EXPECT_EQ(ck.metric_name, "val_accuracy");
  ASSERT_TRUE(ck.metric_value);
  EXPECT_EQ(*ck.metric_value, 0.5);

  const RunState back = RunState::from_checkpoint(ck, 64);
  EXPECT_EQ(back.step, 120);
  EXPECT_EQ(back.loader_epoch, 3);
  EXPECT_EQ(back.loader_position, 64);
  EXPECT_EQ(back.micro_batch, 16);
  EXPECT_EQ(back.time_budget, s.time_budget);
  EXPECT_EQ(back.val_accuracy, s.val_accuracy);
}

TEST(RunState, AnOldCheckpointWithoutLoaderOrScheduleResumesAtItsEpoch) {
  Checkpoint ck;
  ck.epoch = 2;
  ck.step = 50;
  const RunState s = RunState::from_checkpoint(ck, 32);
  EXPECT_EQ(s.loader_epoch, 2);
  EXPECT_EQ(s.loader_position, 0);
  EXPECT_EQ(s.micro_batch, 32);
  EXPECT_TRUE(s.time_budget.is_null());
  EXPECT_FALSE(s.val_accuracy);
}

TEST(RunState, TheIdentityHoldsTheOptionsTheClassesTheImagesAndTheWorld) {
  RunIdentity id;
  id.config.batch_size = 8;
  id.classes = {"cat", "dog"};
  id.train_images = 1000;
  id.world_size = 2;
  const nlohmann::json j = id.to_json();
  EXPECT_EQ(j["batch_size"], 8);
  EXPECT_EQ(j["classes"], (nlohmann::json{"cat", "dog"}));
  EXPECT_EQ(j["train_images"], 1000);
  EXPECT_EQ(j["world_size"], 2);
  EXPECT_TRUE(learning_changes(j, j).empty());
}

TEST(RunState, TheLossScalerAndGeneratorTensorsRoundTrip) {
  LossScalerOptions o;
  o.init_scale = 1024;
  LossScaler scaler(o);
  Checkpoint ck;
  put_trainer_tensors(ck, scaler, torch::kCPU);
  std::vector<std::string> names;
  for (const auto& [name, t] : ck.state) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"loss_scaler.growth_tracker", "loss_scaler.scale", "rng.cpu"}));
  LossScaler other;
  load_trainer_tensors(ck, other, torch::kCPU);
  EXPECT_EQ(other.scale_value(), 1024.0);
}

}  // namespace
}  // namespace frugal

// validate(TrainConfig&): the rules between options, the same for the command line, its config
// files and a program that makes a TrainConfig itself.
#include <gtest/gtest.h>

#include "frugal/util/error.h"
#include "frugal/training/train_config.h"

namespace frugal {
namespace {

TrainConfig with_budget(const char* text, long seconds) {
  TrainConfig c;
  c.time_budget.text = text;
  c.time_budget.seconds = std::chrono::seconds(seconds);
  return c;
}

ErrorKind refusal(TrainConfig c) {
  try {
    validate(c);
  } catch (const Error& e) {
    return e.kind();
  }
  return ErrorKind::io;  // "not refused", distinct from the usage error expected
}

TEST(ValidateTrainConfig, EpochsLeftUnsetAreAutoWithATimeBudgetAndFixedWithout) {
  TrainConfig budget = with_budget("2h", 7200);
  validate(budget);
  EXPECT_EQ(budget.epochs_mode, EpochsMode::automatic);
  EXPECT_EQ(budget.to_json()["epochs"], "auto");
  TrainConfig plain;
  validate(plain);
  EXPECT_EQ(plain.epochs_mode, EpochsMode::fixed);
  EXPECT_EQ(plain.to_json()["epochs"], 10);
  validate(plain);  // idempotent
  EXPECT_EQ(plain.epochs_mode, EpochsMode::fixed);
}

TEST(ValidateTrainConfig, TheTableSetsTheModeAsTheCommandLineGivesIt) {
  TrainConfig c;
  const TrainOption* epochs = nullptr;
  for (const auto& row : train_options())
    if (std::string(row.key) == "epochs") epochs = &row;
  ASSERT_NE(epochs, nullptr);
  EXPECT_EQ(epochs->set(c, "auto"), "");
  EXPECT_EQ(c.epochs_mode, EpochsMode::automatic);
  EXPECT_EQ(epochs->set(c, "3"), "");
  EXPECT_EQ(c.epochs_mode, EpochsMode::fixed);
  EXPECT_EQ(c.epochs, 3);
  EXPECT_NE(epochs->set(c, "0"), "");
}

TEST(ValidateTrainConfig, ContradictionsAreUsageErrorsForEveryCaller) {
  TrainConfig fixed_with_budget = with_budget("2h", 7200);
  fixed_with_budget.epochs_mode = EpochsMode::fixed;
  EXPECT_EQ(refusal(fixed_with_budget), ErrorKind::usage);
  TrainConfig auto_without_budget;
  auto_without_budget.epochs_mode = EpochsMode::automatic;
  EXPECT_EQ(refusal(auto_without_budget), ErrorKind::usage);
  TrainConfig no_epochs;  // was the sentinel for auto; now a number out of range
  no_epochs.epochs = 0;
  EXPECT_EQ(refusal(no_epochs), ErrorKind::usage);
  try {
    validate(fixed_with_budget);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--time-budget with --epochs 10"), std::string::npos) << e.what();
  }
}

// The GPU decode path only crops, resizes and flips: --decode gpu with an augmentation it cannot run
// is refused, auto decodes on the CPU for it; flip and none stay on any path.
TEST(ValidateTrainConfig, AugmentationsBeyondTheFlipKeepDecodingOnTheCpu) {
  TrainConfig gpu;
  gpu.decode = DecodeChoice::gpu;
  gpu.augment.policy = AugmentOptions::Policy::trivial;
  EXPECT_EQ(refusal(gpu), ErrorKind::usage);
  gpu.augment.policy = AugmentOptions::Policy::none;
  gpu.augment.erasing = 0.25;
  EXPECT_EQ(refusal(gpu), ErrorKind::usage);
  gpu.augment.erasing = 0;
  EXPECT_EQ(refusal(gpu), ErrorKind::io) << "--augment none on the GPU path is refused";
  TrainConfig automatic;
  automatic.decode = DecodeChoice::automatic;
  automatic.augment.policy = AugmentOptions::Policy::randaugment;
  validate(automatic);
  EXPECT_EQ(automatic.decode, DecodeChoice::cpu);
  automatic.decode = DecodeChoice::automatic;
  automatic.augment.policy = AugmentOptions::Policy::flip;
  validate(automatic);
  EXPECT_EQ(automatic.decode, DecodeChoice::automatic);
}

}  // namespace
}  // namespace frugal

#include <gtest/gtest.h>

#include "frugal/training/train_config.h"

using namespace frugal;

namespace {

TEST(Outcome, AFinishedRunGivesEveryFigure) {
  SessionOutcome o;
  o.step = 120;
  o.resumable_step = 120;
  o.epochs = 4;
  o.final_val = ValFigures{0.75, 0.5, 4, 120, std::nullopt};
  o.best_val = ValFigures{0.8, 0.45, 3, 90, std::nullopt};
  o.best_checkpoint = "runs/a/best.safetensors";
  o.classes = 3;
  o.train_images = 900;
  o.val_images = 100;
  o.skipped = {{"not an image", 2}};
  nlohmann::json j = outcome_json(o, 0, "runs/a");
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_EQ(j["run"], "runs/a");
  EXPECT_EQ(j["status"], "done");
  EXPECT_TRUE(j["stop_reason"].is_null());
  EXPECT_EQ(j["epochs"], 4);
  EXPECT_EQ(j["steps"], 120);
  EXPECT_EQ(j["resumable_step"], 120);
  EXPECT_EQ(j["val_accuracy"], 0.75);
  EXPECT_EQ(j["val_loss"], 0.5);
  EXPECT_EQ(j["best_val_accuracy"], 0.8);
  EXPECT_EQ(j["best_val_loss"], 0.45);
  EXPECT_EQ(j["best_epoch"], 3);
  EXPECT_EQ(j["best_checkpoint"], "runs/a/best.safetensors");
  EXPECT_EQ(j["classes"], 3);
  EXPECT_EQ(j["train_images"], 900);
  EXPECT_EQ(j["val_images"], 100);
  EXPECT_EQ(j["skipped"]["not an image"], 2);
  EXPECT_TRUE(j["val_skipped"].is_object() && j["val_skipped"].empty());
  EXPECT_FALSE(j.contains("val_mean_ap"));  // single-label: no multi-label figure at all
}

TEST(Outcome, AMultiLabelRunGivesItsMeanAp) {
  SessionOutcome o;
  o.final_val = ValFigures{0.5, 0.2, 4, 120, 0.91};
  o.best_val = ValFigures{0.55, 0.19, 3, 90, 0.93};
  nlohmann::json j = outcome_json(o, 0, "r");
  EXPECT_EQ(j["val_mean_ap"], 0.91);
  EXPECT_EQ(j["best_val_mean_ap"], 0.93);
  EXPECT_EQ(j["val_accuracy"], 0.5);  // the share of images with every tag right
}

TEST(Outcome, WhatARunDidNotReachIsNullNotZero) {
  SessionOutcome o;
  o.status = SessionOutcome::Status::stopped_resumable;
  o.stop_reason = "signal SIGTERM";
  o.step = 7;
  nlohmann::json j = outcome_json(o, 75, "r");
  EXPECT_EQ(j["status"], "stopped");
  EXPECT_EQ(j["stop_reason"], "signal SIGTERM");
  EXPECT_EQ(j["exit_code"], 75);
  for (const char* k : {"resumable_step", "val_accuracy", "val_loss", "best_checkpoint", "best_val_accuracy",
                        "best_val_loss", "best_epoch"})
    EXPECT_TRUE(j[k].is_null()) << k;
}

}  // namespace

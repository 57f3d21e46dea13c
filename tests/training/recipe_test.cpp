// The recipes' rules (training/recipe.h): what each sets, that options the user gave or a program
// set keep their values, auto's choice by epochs, and validate()'s resolution without a budget.
#include <gtest/gtest.h>

#include "frugal/training/recipe.h"
#include "frugal/training/train_config.h"

namespace frugal {
namespace {

TEST(Recipe, NamedRecipesSetTheirOptions) {
  TrainConfig c;
  apply_recipe(c, "strong");
  EXPECT_EQ(c.recipe, "strong");
  EXPECT_EQ(c.augment.policy, AugmentOptions::Policy::trivial);
  EXPECT_EQ(c.augment.erasing, 0.25);
  EXPECT_EQ(c.mixup, 0.2);
  EXPECT_EQ(c.cutmix, 1.0);
  EXPECT_EQ(c.label_smoothing, 0.1);
  EXPECT_EQ(c.ema, 0.9998);
  EXPECT_TRUE(c.tta_flip);
  TrainConfig none;
  apply_recipe(none, "none");
  EXPECT_EQ(none.augment.policy, AugmentOptions::Policy::none);
  EXPECT_EQ(none.ema, 0.0);
  EXPECT_FALSE(none.tta_flip);
}

TEST(Recipe, GivenAndProgramSetOptionsWin) {
  TrainConfig c;
  c.given = {"label_smoothing", "augment"};  // --label-smoothing 0 --augment flip on the command line
  c.ema = 0.5;                               // a program's own value
  const auto set = apply_recipe(c, "strong");
  EXPECT_EQ(c.label_smoothing, 0.0);
  EXPECT_EQ(c.augment.policy, AugmentOptions::Policy::flip);
  EXPECT_EQ(c.ema, 0.5);
  EXPECT_EQ(c.mixup, 0.2);  // the others are the recipe's
  for (const auto& s : set) EXPECT_TRUE(s.rfind("label_smoothing", 0) != 0 && s.rfind("ema", 0) != 0) << s;
}

TEST(Recipe, AutoChoosesByEpochs) {
  EXPECT_EQ(recipe_for_epochs(1), "light");
  EXPECT_EQ(recipe_for_epochs(kStrongRecipeEpochs - 0.1), "light");
  EXPECT_EQ(recipe_for_epochs(kStrongRecipeEpochs), "strong");
  EXPECT_EQ(find_recipe("auto"), nullptr);
  EXPECT_NE(find_recipe("default"), nullptr);
}

TEST(Recipe, ProgressiveSizesFollowFfcvsRamp) {
  // 88 epochs from 160 to 192 (FFCV's ResNet-50): 160 to epoch 65, 192 from epoch 75, between on 32s.
  EXPECT_EQ(progressive_size(160, 192, 0, 88), 160);
  EXPECT_EQ(progressive_size(160, 192, 65, 88), 160);
  EXPECT_EQ(progressive_size(160, 192, 68, 88), 160);  // 160 + 3/10 x 32 = 169.6: 5.3 x 32 rounds to 160
  EXPECT_EQ(progressive_size(160, 192, 70, 88), 192);  // 176 = 5.5 x 32: to the even 6, as numpy.round
  EXPECT_EQ(progressive_size(160, 192, 75, 88), 192);
  EXPECT_EQ(progressive_size(160, 192, 87, 88), 192);
  // Small images step by 4 px; a 2-epoch run trains its last epoch at the full size.
  EXPECT_EQ(progressive_size(20, 28, 0, 2), 20);
  EXPECT_EQ(progressive_size(20, 28, 1, 2), 28);
  EXPECT_EQ(progressive_size(16, 28, 80, 100), 24);  // 16 + 6/12 x 12 = 22 -> 24
  EXPECT_EQ(progressive_size(0, 28, 0, 10), 28);     // off
  EXPECT_EQ(progressive_size(32, 28, 0, 10), 28);    // not smaller: the full size
}

TEST(Recipe, ValidateResolvesAutoWithoutABudget) {
  TrainConfig c;
  validate(c);
  EXPECT_EQ(c.recipe, "default");
  EXPECT_EQ(c.ema, 0.0);
  EXPECT_EQ(c.augment.policy, AugmentOptions::Policy::flip);
  TrainConfig b;
  b.time_budget.text = "1h";
  b.time_budget.seconds = std::chrono::seconds(3600);
  validate(b);
  EXPECT_EQ(b.recipe, "auto");  // the session chooses once its plan is known
  EXPECT_EQ(b.to_json()["recipe"], "auto");
  TrainConfig s;
  s.recipe = "light";
  validate(s);
  EXPECT_EQ(s.ema, 0.999);
  EXPECT_EQ(s.to_json()["tta"], "flip");
}

}  // namespace
}  // namespace frugal

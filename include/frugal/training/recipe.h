// Training recipes (`--recipe`): named sets of the options that decide how a model is trained
// beyond its schedule (augmentation, mixing, label smoothing, weight averaging, test-time flip),
// and the one `auto` picks from the epochs a time budget buys. Torch-free: the table, its rules
// and the config they change; the session applies a choice made once its plan is known.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "frugal/training/train_config.h"

namespace frugal {

struct Recipe {
  const char* name;
  const char* augment;  // --augment's value
  double random_erasing, mixup, cutmix, label_smoothing, ema;
  bool tta_flip;
  const char* what;  // one line: what it is for
};

// none, default, light, strong (docs/recipe.md has the table and the measurements behind it).
const std::vector<Recipe>& recipes();
// nullptr for a name that is none of them.
const Recipe* find_recipe(const std::string& name);

// With a time budget, `auto` chooses by the epochs the plan buys: light below this many (the
// strong recipe's regularisers cost accuracy in short schedules), strong from it on.
inline constexpr double kStrongRecipeEpochs = 40;
std::string recipe_for_epochs(double epochs);

// --progressive START: the training image size of 0-based `epoch` of a run of `epochs`, as FFCV's
// ResNet recipes grow it: START until 74% of the epochs, then linearly to `final_size` at 86% of them
// (numpy.interp between the two), rounded to a multiple of 32 px (of 4 px for a final size under
// 128), never below START nor above `final_size`; `final_size` from there on (for a short run,
// whose 74% and 86% fall in the same epoch, from that epoch on).
int progressive_size(int start, int final_size, std::int64_t epoch, std::int64_t epochs);

// Sets `name`'s values in the options of `c` that the user did not give (c.given) and that still
// hold their defaults (a program that set one keeps it), and c.recipe to `name`. Returns the
// options it set, as "key value" (for the line that says what was chosen).
std::vector<std::string> apply_recipe(TrainConfig& c, const std::string& name);

// A resumed run's recipe as it chose it: `saved` (its config) names the recipe and records the
// values it set, which may differ from the table's (auto under a disk budget leaves --ema out):
// the recipe's options not given take the saved values. Returns false when `saved` names none.
bool take_saved_recipe(TrainConfig& c, const nlohmann::json& saved);

}  // namespace frugal

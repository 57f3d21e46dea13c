// The training recipes and the rule `--recipe auto` follows (training/recipe.h).
#include "frugal/training/recipe.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "frugal/image/augment.h"
#include "frugal/util/error.h"

namespace frugal {

const std::vector<Recipe>& recipes() {
  static const std::vector<Recipe> table = {
      {"none", "none", 0, 0, 0, 0, 0, false, "the crop alone: no flip, nothing else"},
      {"default", "flip", 0, 0, 0, 0, 0, false, "crop and flip: what frugal trains with when no budget chooses"},
      {"light", "flip", 0, 0, 0, 0.1, 0.999, true,
       "for a few epochs: crop and flip, label smoothing 0.1, the weights' average (EMA 0.999), flip at test time"},
      {"strong", "trivial", 0.25, 0.2, 1.0, 0.1, 0.9998, true,
       "for many epochs: TrivialAugment, random erasing 0.25, mixup 0.2 / cutmix 1.0, label smoothing 0.1, EMA "
       "0.9998, flip at test time"},
  };
  return table;
}

const Recipe* find_recipe(const std::string& name) {
  for (const Recipe& r : recipes())
    if (name == r.name) return &r;
  return nullptr;
}

std::string recipe_for_epochs(double epochs) { return epochs < kStrongRecipeEpochs ? "light" : "strong"; }

int progressive_size(int start, int final_size, std::int64_t epoch, std::int64_t epochs) {
  if (start <= 0 || start >= final_size) return final_size;
  const double e = static_cast<double>(epoch), n = static_cast<double>(epochs);
  const double start_ramp = std::floor(0.74 * n), end_ramp = std::floor(0.86 * n);
  if (e >= end_ramp) return final_size;  // first: a short run's ramp is empty, its last epochs full size
  if (e <= start_ramp) return start;
  const double size = start + (e - start_ramp) / (end_ramp - start_ramp) * (final_size - start);
  const int step = final_size >= 128 ? 32 : 4;
  const int rounded = static_cast<int>(std::nearbyint(size / step)) * step;  // half to even, as numpy.round
  return std::clamp(rounded, start, final_size);
}

bool take_saved_recipe(TrainConfig& c, const nlohmann::json& saved) {
  const auto it = saved.find("recipe");
  if (it == saved.end() || !it->is_string() || find_recipe(it->get<std::string>()) == nullptr) return false;
  apply_recipe(c, it->get<std::string>());
  for (const char* key : {"augment", "random_erasing", "mixup", "cutmix", "label_smoothing", "ema", "tta"}) {
    const auto v = saved.find(key);
    if (v == saved.end() || std::find(c.given.begin(), c.given.end(), key) != c.given.end()) continue;
    for (const TrainOption& row : train_options())
      if (std::string(row.key) == key)
        if (const std::string allowed = row.set(c, v->is_string() ? v->get<std::string>() : v->dump());
            !allowed.empty())
          fail(ErrorKind::invalid, std::string("the run's recorded ") + key, allowed, v->dump().substr(0, 40),
               "the checkpoint is damaged: remove it to resume from an older one, or add {fresh}");
  }
  return true;
}

std::vector<std::string> apply_recipe(TrainConfig& c, const std::string& name) {
  const Recipe* r = find_recipe(name);
  if (r == nullptr) return {};
  const TrainConfig defaults;
  std::vector<std::string> set;
  auto free = [&](const char* key) { return std::find(c.given.begin(), c.given.end(), key) == c.given.end(); };
  auto number = [&](const char* key, double& field, double default_value, double value) {
    if (!free(key) || field != default_value) return;
    field = value;
    char text[64];
    std::snprintf(text, sizeof text, "%s %g", key, value);
    set.emplace_back(text);
  };
  if (free("augment") && c.augment.policy == defaults.augment.policy && c.augment.num_ops == defaults.augment.num_ops &&
      c.augment.magnitude == defaults.augment.magnitude) {
    parse_augment(r->augment, c.augment);
    set.push_back(std::string("augment ") + r->augment);
  }
  number("random_erasing", c.augment.erasing, defaults.augment.erasing, r->random_erasing);
  if (c.class_weights.empty()) {  // weighed classes take no mixed targets (validate())
    number("mixup", c.mixup, defaults.mixup, r->mixup);
    number("cutmix", c.cutmix, defaults.cutmix, r->cutmix);
  }
  number("label_smoothing", c.label_smoothing, defaults.label_smoothing, r->label_smoothing);
  number("ema", c.ema, defaults.ema, r->ema);
  if (free("tta") && c.tta_flip == defaults.tta_flip) {
    c.tta_flip = r->tta_flip;
    set.push_back(std::string("tta ") + (r->tta_flip ? "flip" : "none"));
  }
  c.recipe = name;
  return set;
}

}  // namespace frugal

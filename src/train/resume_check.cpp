// Which options of a resumed run would change what is learned (see learning_changes in train.h).
#include <nlohmann/json.hpp>

#include "frugal/train.h"

namespace frugal {

namespace {

// Options that define the model, the data, the optimisation and the randomness. Anything else
// (deadline, budgets, workers, save cadence, device, amp) may change between
// sessions. The micro-batch may change too, as long as the effective batch B x K stays the same,
// which is what OOM recovery itself does.
// Paths (--data, --val, --init) are not compared: a new session often mounts the data elsewhere,
// and --init only matters before the first checkpoint; the data's identity is its classes and
// image count.
constexpr const char* kLearningKeys[] = {
    "model", "classes", "train_images", "val_split", "label_pattern", "channels", "image_size", "epochs", "lr",
    "optimizer", "weight_decay", "label_smoothing", "clip_grad_norm", "warmup_fraction", "seed", "freeze",
    "deterministic"};

std::string shown(const nlohmann::json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

}  // namespace

std::vector<std::string> learning_changes(const nlohmann::json& saved, const nlohmann::json& now) {
  std::vector<std::string> out;
  for (const char* key : kLearningKeys) {
    // A key the checkpoint does not record (an older run) cannot be checked.
    if (!saved.contains(key) || !now.contains(key)) continue;
    if (saved[key] != now[key]) out.push_back(std::string(key) + ": " + shown(saved[key]) + " -> " + shown(now[key]));
  }
  auto effective = [](const nlohmann::json& c) {
    return c.value("batch_size", std::int64_t{0}) * c.value("accum", std::int64_t{1});
  };
  if (saved.contains("batch_size") && now.contains("batch_size") && effective(saved) != effective(now))
    out.push_back("effective batch (batch_size x accum): " + std::to_string(effective(saved)) + " -> " +
                  std::to_string(effective(now)));
  return out;
}

}  // namespace frugal

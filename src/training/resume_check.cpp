// Which options of a resumed run would change what is learned (see learning_changes in training/train_config.h).
#include <nlohmann/json.hpp>

#include <optional>

#include "frugal/training/train_config.h"
#include "frugal/training/global_batch.h"

namespace frugal {

namespace {

// learning_keys() (train_options.cpp): the options that define the model, the data, the
// optimisation and the randomness. Anything else (deadline, budgets, workers, save cadence,
// device, amp) may change between sessions. The micro-batch may change too, as long as the
// effective batch B x K x W (W: the processes of a data-parallel run, "world_size") stays the same,
// which is what OOM recovery itself does, and what resuming 2 ranks of B as 1 process of 2B keeps.
// Paths (--data, --val, --init) are not compared: a new session often mounts the data elsewhere,
// and --init only matters before the first checkpoint; the data's identity is its classes and
// image count.

std::string shown(const nlohmann::json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

}  // namespace

std::vector<std::string> learning_changes(const nlohmann::json& saved, const nlohmann::json& now) {
  std::vector<std::string> out;
  for (const std::string& key : learning_keys()) {
    // A key the checkpoint does not record (an older run) cannot be checked.
    if (!saved.contains(key) || !now.contains(key)) continue;
    if (saved[key] != now[key]) out.push_back(key + ": " + shown(saved[key]) + " -> " + shown(now[key]));
  }
  // The saved config comes from a checkpoint file: global_batch_of reads what it holds as a number
  // or as unreadable (a change), never an exception or a wrap.
  if (saved.contains("batch_size") && now.contains("batch_size")) {
    const auto before = global_batch_of(saved), after = global_batch_of(now);
    auto text = [](std::optional<std::int64_t> v) { return v ? std::to_string(*v) : std::string("unreadable"); };
    if (!before || before != after)
      out.push_back("effective batch (batch_size x accum x processes): " + text(before) + " -> " + text(after));
  }
  return out;
}

}  // namespace frugal

// Retention: which of a run's checkpoints may go, and the policy from its config.json.
#include <algorithm>
#include <set>

#include "frugal/checkpoint_files.h"
#include "frugal/error.h"
#include "frugal/fs.h"
#include "frugal/run_folder.h"

namespace fs = std::filesystem;

namespace frugal {

RetentionPolicy retention_from_config(const fs::path& run) {
  RetentionPolicy p;
  std::error_code ec;
  if (!fs::exists(run / kConfigFile, ec)) return p;
  try {
    auto j = nlohmann::json::parse(read_file(run / kConfigFile));
    if (j.contains("keep_best") && j["keep_best"].is_number_integer()) p.keep_best = j["keep_best"].get<int>();
    if (j.contains("keep_last") && j["keep_last"].is_number_integer()) p.keep_last = j["keep_last"].get<int>();
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::invalid, (run / kConfigFile).string(), "a JSON object", std::string("unparsable JSON (") + e.what() + ")",
         "fix or remove the file");
  }
  return p;
}

std::vector<fs::path> checkpoints_to_delete(const std::vector<CheckpointEntry>& entries,
                                            const RetentionPolicy& policy) {
  // entries: newest first (list_checkpoints' order).
  auto newest_valid = std::find_if(entries.begin(), entries.end(), [](const auto& e) { return e.valid; });
  if (newest_valid == entries.end()) return {};
  std::set<fs::path> keep;
  keep.insert(newest_valid->path);
  int kept_last = 0;
  for (auto it = newest_valid; it != entries.end() && kept_last < std::max(policy.keep_last, 1); ++it)
    if (it->valid) {
      keep.insert(it->path);
      ++kept_last;
    }
  std::vector<const CheckpointEntry*> ranked;
  for (auto it = newest_valid; it != entries.end(); ++it)
    if (it->valid && it->metric) ranked.push_back(&*it);
  std::stable_sort(ranked.begin(), ranked.end(), [](const CheckpointEntry* a, const CheckpointEntry* b) {
    return a->higher_is_better ? *a->metric > *b->metric : *a->metric < *b->metric;
  });
  for (int i = 0; i < policy.keep_best && i < static_cast<int>(ranked.size()); ++i) keep.insert(ranked[i]->path);
  // A kept delta needs its base.
  for (const auto& e : entries)
    if (keep.count(e.path) && e.name.delta && !e.base.empty()) keep.insert(e.path.parent_path() / e.base);
  std::vector<fs::path> out;
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    if (&*it == &*newest_valid) break;  // nothing newer than the last good one is ours to judge
    // Invalid files are kept for inspection; the user removes them (the loader names them).
    if (it->valid && !keep.count(it->path)) out.push_back(it->path);
  }
  return out;
}

}  // namespace frugal

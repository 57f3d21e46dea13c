// Retention: which of a run's checkpoints may go, and the policy from its config.json.
#include <algorithm>
#include <set>

#include "frugal/checkpoint_files/checkpoint_files.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/checkpoint_files/run_folder.h"
#include "frugal/util/terminal.h"

namespace fs = std::filesystem;

namespace frugal {

namespace {
// As `frugal train` takes --keep-best / --keep-last.
constexpr std::uint64_t kMaxKeep = 1u << 20;

// keep_best / keep_last: absent means the default; a value that is not a whole number from 0 to
// kMaxKeep ("10", -1, 2.5, true, null) is refused, never read as the default: a default of 2 where
// the user asked for 10 deletes 8 checkpoints.
void read_keep(const nlohmann::json& j, const char* key, const fs::path& config, int& out) {
  const auto it = j.find(key);
  if (it == j.end()) return;
  const auto n = config_whole_number(*it, kMaxKeep);
  if (!n)
    fail(ErrorKind::invalid, config.string() + ": " + key,
         "a whole number of checkpoints from 0 to " + std::to_string(kMaxKeep), json_text(*it).substr(0, 100),
         "write it as a number (e.g. 10) or remove the key for the default; nothing was deleted");
  out = static_cast<int>(*n);
}
}  // namespace

RetentionPolicy retention_from_config(const fs::path& run) {
  RetentionPolicy p;
  const auto j = read_run_config(run);
  if (!j) return p;
  read_keep(*j, "keep_best", run / kConfigFile, p.keep_best);
  read_keep(*j, "keep_last", run / kConfigFile, p.keep_last);
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

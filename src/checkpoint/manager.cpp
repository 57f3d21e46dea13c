#include <sys/stat.h>

#include <chrono>
#include <set>

#include "checkpoint/internal.h"
#include "frugal/checkpoint/checkpoint.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/progress.h"
#include "frugal/util/units.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

constexpr std::uint64_t kHeaderAllowance = 256 << 10;  // metadata + JSON index, generously

std::uint64_t tensor_bytes(const NamedTensors& ts) {
  std::uint64_t n = 0;
  for (const auto& [name, t] : ts) n += t.nbytes();
  return n;
}

// A --disk-budget value of at least `bytes`, in whole MiB ("300M"): format_size() rounds to
// three digits, sometimes down, and a suggestion must fit when typed back.
std::string size_option(std::uint64_t bytes) { return std::to_string((bytes + (1ull << 20) - 1) >> 20) + "M"; }

// Runs `write` (a crash-safe write of `path`). A full disk reported after the rename (the folder
// sync) leaves the new file in place: it is what a reader and a rerun now see, so the write
// counts as done, with a warning, instead of "not saved; the previous one is intact".
template <class Write>
void published_despite_error(const fs::path& path, Write&& write) {
  auto inode = [&] {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 ? st.st_ino : ino_t{0};
  };
  const ino_t before = inode();
  try {
    write();
  } catch (const DiskFullError& e) {
    const ino_t after = inode();
    if (after == 0 || after == before) throw;  // nothing was published
    warn(std::string(e.what()) + " (after " + path.string() +
         " was in place; it stands, but may not survive a power cut)");
  }
}

bool improves(const Checkpoint& c, const std::optional<double>& best) {
  if (!c.metric_value) return true;  // no validation: best = newest
  if (!best) return true;
  return c.higher_is_better ? *c.metric_value > *best : *c.metric_value < *best;
}

}  // namespace

CheckpointManager::CheckpointManager(fs::path run, CheckpointOptions options, Env& env)
    : run_(std::move(run)), options_(options), env_(env) {
  // Made once, before any save: a failure is the caller's error naming the folder (exit 2 or 1), not
  // a save the manager could skip, so it is not one of env_'s writes.
  std::error_code made;
  fs::create_directories(run_, made);
  if (made) fail_errno("create folder", run_.string(), made.value());
}

int CheckpointManager::remove_temporaries() {
  int n = 0;
  std::error_code ec;
  // Only those whose writer is gone (fs.h's owner lock): another process may be writing here.
  for (const auto& e : fs::directory_iterator(run_, ec))
    if (is_temp_path(e.path()) && remove_if_abandoned(e.path())) ++n;
  if (n) note("frugal: removed " + std::to_string(n) + " abandoned temporary file(s) in " + run_.string());
  return n;
}

int CheckpointManager::discard_previous() {
  int n = 0;
  for (const auto& e : list_checkpoints(run_, /*verify=*/false)) n += env_.remove_file(e.path);
  n += env_.remove_file(run_ / kBestFile);
  std::lock_guard lock(mu_);
  base_.reset();
  base_path_.clear();
  known_good_.clear();
  known_good_step_.reset();
  best_metric_.reset();
  best_loaded_ = true;
  if (n)
    note("frugal: {fresh}: removed " + std::to_string(n) + " checkpoint file(s) of the previous run in " +
         run_.string());
  return n;
}

std::optional<CheckpointManager::Resume> CheckpointManager::load_latest() {
  Resume r;
  for (const auto& entry : list_checkpoints(run_, /*verify=*/false)) {
    // Everything read from this entry (a delta's base included) is inside the try: any damage,
    // crafted or not, makes it skipped, and the next older checkpoint is tried.
    std::optional<Checkpoint> base;
    fs::path base_path;
    std::string base_checksum;
    try {
      // One read per file: a delta's load hands back the base it decoded against.
      auto loaded = load_checkpoint_file(entry.path, Links::refuse);
      r.ckpt = std::move(loaded.ckpt);
      r.file = entry.path;
      if (loaded.base) {
        base = std::move(loaded.base);
        base_path = loaded.base_path;
        base_checksum = loaded.base_checksum;
      } else {
        base_path = entry.path;
        base_checksum = loaded.checksum;
      }
    } catch (const Error& e) {
      r.skipped.push_back(e.what());
      note("frugal: skipping checkpoint " + entry.path.string() + ": " + e.what());
      continue;
    }
    std::lock_guard lock(mu_);
    known_good_ = entry.path;
    known_good_step_ = r.ckpt.step;
    base_ = base ? std::move(base) : std::optional<Checkpoint>(r.ckpt);
    base_path_ = base_path;
    base_checksum_ = base_checksum;
    saves_since_full_ = entry.name.delta ? 1 : 0;
    return r;
  }
  if (!r.skipped.empty())
    note("frugal: no valid checkpoint in " + run_.string() + "; starting from scratch (" +
         std::to_string(r.skipped.size()) + " unreadable file(s) kept for inspection)");
  return std::nullopt;
}

std::uint64_t CheckpointManager::estimate_bytes(const Checkpoint& ckpt) const {
  return allocated_bytes(run_, tensor_bytes(ckpt.weights) + tensor_bytes(ckpt.state) + kHeaderAllowance);
}

std::uint64_t CheckpointManager::best_bytes(const Checkpoint& ckpt) const {
  return allocated_bytes(run_, tensor_bytes(ckpt.weights) + kHeaderAllowance);
}

void CheckpointManager::require_room_for_run(std::uint64_t weight_bytes, std::uint64_t state_bytes,
                                             std::uint64_t log_bytes) {
  if (!budget_) return;
  const std::uint64_t full = allocated_bytes(run_, weight_bytes + state_bytes + kHeaderAllowance);
  const std::uint64_t best = options_.write_best ? allocated_bytes(run_, weight_bytes + kHeaderAllowance) : 0;
  // The last good checkpoint stays until the next one is committed, so two must fit at once.
  const std::uint64_t need = 2 * full + best + log_bytes;
  // This run's own checkpoints are replaced or evicted as it goes: their room counts as free.
  std::uint64_t own = allocated_size(run_ / kBestFile);
  for (const auto& e : list_checkpoints(run_, /*verify=*/false)) own += allocated_size(e.path);
  const std::uint64_t have = budget_->available() + own;
  if (have >= need) return;
  const auto& limit = budget_->options().limit;
  const std::string within = limit ? "a disk budget of " + format_size(*limit) : "the free disk space";
  std::string fix = limit ? "raise {disk_budget} to at least " + size_option(*limit + (need - have)) + ", or "
                          : "free " + format_size(need - have) + " (frugal du, frugal clean), or ";
  fail(ErrorKind::budget, run_.string(),
       format_size(need) + " within " + within + " to keep the run resumable: two checkpoints of " + format_size(full) +
           " (the last good one stays until the next is written)" +
           (best ? " + best.safetensors of " + format_size(best) : std::string()) +
           (log_bytes ? " + " + format_size(log_bytes) + " of logs" : std::string()),
       format_size(have) + " for this run", fix + "train a smaller model or image size; nothing was trained");
}

std::uint64_t CheckpointManager::room_for_save(std::uint64_t weight_bytes, std::uint64_t state_bytes,
                                               std::uint64_t log_bytes) const {
  const std::uint64_t full = allocated_bytes(run_, weight_bytes + state_bytes + kHeaderAllowance);
  const std::uint64_t best = options_.write_best ? allocated_bytes(run_, weight_bytes + kHeaderAllowance) : 0;
  return full + best + log_bytes;
}

void CheckpointManager::require_free_space(std::uint64_t weight_bytes, std::uint64_t state_bytes,
                                           std::uint64_t log_bytes) {
  const std::uint64_t need = room_for_save(weight_bytes, state_bytes, log_bytes);
  const std::uint64_t have = env_.free_space(run_);
  if (have >= need) return;
  const std::uint64_t full = allocated_bytes(run_, weight_bytes + state_bytes + kHeaderAllowance);
  fail(ErrorKind::budget, run_.string(),
       format_size(need) + " free on its disk for the next save (a checkpoint of " + format_size(full) +
           (options_.write_best ? ", best.safetensors and logs)" : " and logs)"),
       format_size(have) + " free",
       "free at least " + format_size(need - have) +
           " (frugal du, frugal clean, or other files of yours), then run the same command again; nothing was changed");
}

void CheckpointManager::set_disk_budget(DiskBudget* budget) {
  budget_ = budget;
  if (budget_) budget_->set_evictable([this] { return evictable(); });
}

std::optional<std::int64_t> CheckpointManager::resumable_step() const {
  std::lock_guard lock(mu_);
  return known_good_step_;
}

std::string CheckpointManager::resumable_from() const {
  auto step = resumable_step();
  return step ? "a rerun resumes from step " + std::to_string(*step) + ", the last checkpoint saved"
              : "no resumable checkpoint exists yet: a rerun starts over";
}

std::vector<fs::path> CheckpointManager::evictable() const {
  std::lock_guard lock(mu_);
  auto out = checkpoints_to_delete(list_checkpoints(run_, /*verify=*/false), options_.retention);
  std::erase_if(out, [&](const fs::path& p) { return p == known_good_ || p == base_path_; });
  return out;
}

SaveResult CheckpointManager::save(const Checkpoint& ckpt) {
  auto start = env_.steady_now();
  SaveResult r;
  if (budget_ && !budget_->make_room(estimate_bytes(ckpt))) {
    std::uint64_t weights = best_bytes(ckpt);
    bool weights_saved = false;
    if (options_.write_best && budget_->make_room(weights)) {
      Checkpoint best = ckpt;
      best.kind = "best";
      best.state.clear();
      try {
        published_despite_error(run_ / kBestFile, [&] { save_checkpoint(run_ / kBestFile, best, env_); });
        weights_saved = true;
      } catch (const DiskFullError& e) {  // the budget had room, the disk did not
        warn(e.what());
      }
    }
    if (weights_saved) {
      r.status = SaveResult::Status::weights_only;
      r.file = run_ / kBestFile;
      r.message = "not enough room for a full checkpoint (" + format_size(estimate_bytes(ckpt)) +
                  "); saved only the weights to " + r.file.string() + " (not resumable from here; " + resumable_from() +
                  ")";
    } else {
      r.status = SaveResult::Status::skipped_no_room;
      r.message = "no room for a checkpoint of " + format_size(estimate_bytes(ckpt)) + " in " + run_.string() +
                  "; checkpoint SKIPPED (" + resumable_from() + "). Free space (frugal du, frugal clean)";
    }
    warn(r.message);
    r.seconds = std::chrono::duration<double>(env_.steady_now() - start).count();
    return r;
  }
  try {
    r = write_checkpoint(ckpt);
  } catch (const DiskFullError& e) {
    r.status = SaveResult::Status::disk_full;
    r.message = std::string(e.what()) + " (the previous checkpoint is intact)";
    warn("checkpoint not saved: " + r.message);
    r.seconds = std::chrono::duration<double>(env_.steady_now() - start).count();
    return r;
  }
  try {
    r.best_updated = options_.write_best && update_best(ckpt);
  } catch (const DiskFullError& e) {
    warn(std::string("best.safetensors not updated: ") + e.what());
  }
  r.deleted = apply_retention();
  r.seconds = std::chrono::duration<double>(env_.steady_now() - start).count();
  return r;
}

SaveResult CheckpointManager::write_checkpoint(const Checkpoint& ckpt) {
  SaveResult r;
  bool delta = options_.delta && base_ && saves_since_full_ + 1 < options_.full_every;
  r.file = run_ / checkpoint_file_name(ckpt.epoch, ckpt.step, delta);
  Checkpoint full = ckpt;
  full.kind = "full";
  published_despite_error(r.file, [&] {
    if (delta) {
      save_delta_checkpoint(r.file, full, *base_, base_path_, env_);
    } else {
      save_checkpoint(r.file, full, env_);
    }
  });
  std::error_code ec;
  r.bytes = fs::file_size(r.file, ec);
  std::lock_guard lock(mu_);
  known_good_ = r.file;
  known_good_step_ = ckpt.step;
  if (delta) {
    ++saves_since_full_;
  } else {
    saves_since_full_ = 0;
    if (options_.delta) {
      base_ = snapshot(full);
      base_path_ = r.file;
      base_checksum_ = read_safetensors_header(r.file, Links::refuse).metadata["checksum"];
    }
  }
  return r;
}

bool CheckpointManager::update_best(const Checkpoint& ckpt) {
  if (!best_loaded_) {
    best_loaded_ = true;
    std::error_code ec;
    if (fs::exists(run_ / kBestFile, ec)) {
      try {
        auto md = read_safetensors_header(run_ / kBestFile, Links::refuse).metadata;
        if (md.count("metric_value")) best_metric_ = std::stod(md["metric_value"]);
      } catch (const std::exception& e) {
        note("frugal: replacing unreadable " + (run_ / kBestFile).string() + ": " + e.what());
      }
    }
  }
  if (!improves(ckpt, best_metric_)) return false;
  if (budget_ && !budget_->make_room(best_bytes(ckpt))) {
    warn("no room for " + (run_ / kBestFile).string() + " (" + format_size(best_bytes(ckpt)) +
         ") within the disk budget; it was NOT updated. Free space (frugal du, frugal clean) or raise {disk_budget}");
    return false;
  }
  Checkpoint best = ckpt;
  best.kind = "best";
  best.state.clear();
  published_despite_error(run_ / kBestFile, [&] { save_checkpoint(run_ / kBestFile, best, env_); });
  best_metric_ = ckpt.metric_value;
  return true;
}

std::vector<fs::path> CheckpointManager::apply_retention() {
  std::vector<fs::path> deleted;
  for (const auto& p : evictable()) {
    try {
      if (env_.remove_file(p)) deleted.push_back(p);
    } catch (const Error& e) {
      note(std::string("frugal: could not remove an old checkpoint: ") + e.what());
    }
  }
  return deleted;
}

}  // namespace frugal

// Where a training run stands (train/run_progress.h).
#include "train/run_progress.h"

#include <cmath>

#include "frugal/checkpoint/checkpoint.h"
#include "frugal/checkpoint_files/run_folder.h"
#include "frugal/util/error.h"
#include "frugal/util/progress.h"

namespace frugal {
namespace fs = std::filesystem;

void EpochTally::add(const StepResult& r) {
  ++step;
  if (std::isfinite(r.loss)) {
    loss_sum += r.loss * static_cast<double>(r.samples);
    loss_samples += r.samples;
  }
  if (r.correct >= 0) {
    correct += r.correct;
    correct_samples += r.samples;
  }
}

double EpochTally::mean_loss() const { return loss_samples > 0 ? loss_sum / static_cast<double>(loss_samples) : NAN; }

double EpochTally::accuracy() const {
  return correct_samples > 0 ? static_cast<double>(correct) / static_cast<double>(correct_samples) : NAN;
}

namespace {

// A validation's figures from a metrics record (metrics.jsonl's, a checkpoint's "metrics"), which a
// damaged or crafted file may hold anything in: nullopt unless its numbers are there.
std::optional<ValFigures> val_figures(const nlohmann::json& m) {
  auto number = [&](const char* key) { return m.is_object() && m.contains(key) && m[key].is_number(); };
  if (!number("val_accuracy") || !number("val_loss") || !number("epoch") || !number("step")) return std::nullopt;
  ValFigures v;
  v.accuracy = m["val_accuracy"].get<double>();
  v.loss = m["val_loss"].get<double>();
  v.epoch = m["epoch"].get<std::int64_t>();
  v.step = m["step"].get<std::int64_t>();
  if (number("val_mean_ap")) v.mean_ap = m["val_mean_ap"].get<double>();
  return v;
}

}  // namespace

RunState RunProgress::state(std::int64_t epochs_done_now, std::int64_t loader_epoch,
                            std::int64_t loader_position) const {
  RunState s;
  s.step = step;
  s.epochs_done = epochs_done_now;
  s.loader_epoch = loader_epoch;
  s.loader_position = loader_position;
  s.lr = lr;
  s.metrics = metrics;
  s.val_accuracy = val_accuracy;
  return s;
}

SessionOutcome progress_outcome(const RunProgress& at, const TrainingData& data, const fs::path& run_dir,
                                bool read_best) {
  SessionOutcome o;
  o.step = at.step;
  o.epochs = at.epochs_done;
  o.final_val = val_figures(at.metrics);
  data.describe(o);
  const fs::path best = run_dir / kBestFile;
  std::error_code ec;
  if (read_best && fs::is_regular_file(fs::symlink_status(best, ec))) {
    try {
      SafetensorsHeader h = read_safetensors_header(best, Links::refuse);
      o.best_checkpoint = best.string();
      if (h.metadata.count("metrics"))
        o.best_val = val_figures(nlohmann::json::parse(h.metadata["metrics"], nullptr, false));
    } catch (const Error& e) {
      warn(e.what());
    }
  }
  return o;
}

}  // namespace frugal

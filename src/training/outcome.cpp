// `train --json`'s outcome document (training/train_config.h's outcome_json), torch-free.
#include "frugal/training/train_config.h"

namespace frugal {
namespace {

nlohmann::json figure(const std::optional<ValFigures>& v, double ValFigures::*field) {
  return v ? nlohmann::json((*v).*field) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json outcome_json(const SessionOutcome& o, int exit_code, const std::string& run) {
  const bool done = o.status == SessionOutcome::Status::done;
  nlohmann::json j = {
      {"exit_code", exit_code},
      {"run", run},
      {"status", done ? "done" : "stopped"},
      {"stop_reason", done ? nlohmann::json(nullptr) : nlohmann::json(o.stop_reason)},
      {"epochs", o.epochs},
      {"steps", o.step},
      {"resumable_step", o.resumable_step >= 0 ? nlohmann::json(o.resumable_step) : nlohmann::json(nullptr)},
      {"val_accuracy", figure(o.final_val, &ValFigures::accuracy)},
      {"val_loss", figure(o.final_val, &ValFigures::loss)},
      {"best_checkpoint", o.best_checkpoint.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.best_checkpoint)},
      {"best_val_accuracy", figure(o.best_val, &ValFigures::accuracy)},
      {"best_val_loss", figure(o.best_val, &ValFigures::loss)},
      {"best_epoch", o.best_val ? nlohmann::json(o.best_val->epoch) : nlohmann::json(nullptr)},
      {"classes", o.classes},
      {"train_images", o.train_images},
      {"val_images", o.val_images},
      {"skipped", o.skipped},
      {"val_skipped", o.val_skipped},
      {"data", o.data},
  };
  if (o.final_val && o.final_val->mean_ap) j["val_mean_ap"] = *o.final_val->mean_ap;
  if (o.best_val && o.best_val->mean_ap) j["best_val_mean_ap"] = *o.best_val->mean_ap;
  return j;
}

}  // namespace frugal

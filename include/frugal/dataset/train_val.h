// The data a training reads: DATA's training samples and the validation samples beside them, chosen
// by one rule for every front end (the CLI's session, Python's frugal.Loader). Torch-free.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "frugal/dataset/dataset.h"

namespace frugal {

struct TrainValOptions {
  std::string data;  // DATA as data_source.h reads it
  std::string val;   // a validation DATA of its own; "" for none
  // The stable fraction of DATA validated on; unset: 5% (said in a note); 0: no validation (an
  // empty `val`).
  std::optional<double> val_split;
  std::string data_root;   // a folder inside DATA only ({data_root}; --val names its own folder)
  DatasetOptions dataset;  // labels, channels, ... for both
  // The validation data's own labels (--val-labels FILE, --val-label-columns, --val-images-dir),
  // as `dataset`'s labels, label_columns and images_dir are the training data's: with them, --labels
  // labels the training data alone. "" for none: --labels labels both.
  struct ValLabels {
    std::string labels, label_columns, images_dir;
  } val_labels;
};

struct TrainVal {
  std::shared_ptr<Dataset> train, val;
  std::vector<std::string> classes;                           // train's, which val's equal
  std::map<std::string, std::uint64_t> skipped, val_skipped;  // files left out, by reason
  // What was decided that the user did not say, as config.json's and train --json's "data" record
  // it: {"train": what was trained on, "validation": what was validated on (null: nothing),
  // "val_split": the fraction of the training data held out (absent when validation is its own)}.
  nlohmann::json decided = nlohmann::json::object();
};

// Opens DATA and notes (stderr) what was used and skipped. Validation comes from, in this order:
// `val` when given; the validation folder of data whose top level is split folders
// (train/ val/ test/: trained on train/, split names never classes); else a stable val_split of
// DATA (Dataset::split_val). Error(invalid) naming the data when it holds fewer than 2 classes
// (saying why any class had no image), when the validation classes differ from the training
// classes, or when no training image is left.
TrainVal open_train_val(const TrainValOptions& options);

}  // namespace frugal

// The data a training reads, as a TrainConfig says it: the one construction of DatasetOptions and
// TrainValOptions from the run's options, for `frugal train`'s session and Python's frugal.Loader
// alike (each fills a TrainConfig's data fields; the same rule turns them into what
// open_train_val() takes). Torch-free.
#pragma once

#include "frugal/dataset/dataset.h"
#include "frugal/dataset/train_val.h"
#include "frugal/training/train_config.h"

namespace frugal {

// Labels, channels, limits, names and exclusions for both the training and the validation data.
// decompressed_max_bytes is left unset: what is left of a disk budget is the session's to say.
DatasetOptions dataset_options(const TrainConfig& c);

// DATA, the validation data (its own, a split folder's, or a split of DATA), {data_root}, the
// validation data's own labels, and dataset_options(c).
TrainValOptions train_val_options(const TrainConfig& c);

}  // namespace frugal

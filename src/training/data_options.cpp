// The data options of a TrainConfig (frugal/training/data_options.h).
#include "frugal/training/data_options.h"

namespace frugal {

// In DatasetOptions' order of fields (designated initializers): a field added there is added here.
DatasetOptions dataset_options(const TrainConfig& c) {
  return DatasetOptions{
      .label_pattern = c.label_pattern,
      .labels = c.labels,
      .label_columns = c.label_columns,
      .images_dir = c.images_dir,
      .class_names = c.class_names,
      .label_separator = c.label_separator,
      .labels_are_classes = c.labels_are_classes,
      .labels_header = c.labels_header,
      .max_pixels = static_cast<std::uint64_t>(c.max_pixels),
      .max_file_bytes = c.max_file_bytes ? c.max_file_bytes.bytes : kDefaultMaxFileBytes,
      .exif_orientation = c.exif_orientation,
      .max_bad_fraction = c.max_bad_fraction,
      .channels = c.channels,
      .name_encoding = c.name_encoding,
      .root = {},  // {data_root} is TrainValOptions': DATA's alone, never --val's
      .cache_decompressed = c.cache_decompressed,
      .label_kind = c.label_kind,
      .split = SplitFolder::train,
      .decompressed_max_bytes = std::nullopt,
      .exclude = c.exclude,
  };
}

TrainValOptions train_val_options(const TrainConfig& c) {
  return TrainValOptions{.data = c.data,
                         .val = c.val,
                         .val_split = c.val_split,
                         .data_root = c.data_root,
                         .dataset = dataset_options(c),
                         .val_labels = {c.val_labels, c.val_label_columns, c.val_images_dir}};
}

}  // namespace frugal

#include "frugal/dataset/train_val.h"

#include <cmath>
#include <cstdio>
#include <set>
#include <tuple>

#include "frugal/util/error.h"
#include "frugal/util/progress.h"
#include "frugal/util/settings_text.h"
#include "frugal/util/terminal.h"
#include "frugal/util/units.h"

namespace frugal {

namespace {

// Every file left out is counted by reason at the start, not found missing at the end.
void say_used(const std::string& path, const Dataset& ds) {
  note(path + ": " + count_of(ds.size(), "image") +
       (ds.multi_label() ? ", multi-label: " + count_of(ds.classes().size(), "tag")
                         : " in " + count_of(ds.classes().size(), "class", "classes")) +
       "; skipped: " + ds.skipped().summary());
}

// Multi-label data, as the "data" record says it: how the tags were read, how many there are,
// how many an image has, and how many images have none (negative samples, kept).
void record_multi_label(const TrainValOptions& o, const Dataset& all, TrainVal& out) {
  if (!all.multi_label()) return;
  std::uint64_t tags = 0, none = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    tags += all.tags(i).size();
    none += all.tags(i).empty();
  }
  const double mean = all.size() ? static_cast<double>(tags) / static_cast<double>(all.size()) : 0.0;
  const std::string& sep = o.dataset.label_separator;
  out.decided["labels"] = all.labels_read() + ": multi-label, " +
                          (sep.empty() ? "one 0/1 column per tag (" + o.dataset.label_columns + ")"
                                       : "tags separated by '" + sep + "' (label_separator)");
  out.decided["multi_label"] = {{"tags", all.classes().size()},
                                {"mean_tags_per_image", std::round(mean * 1000) / 1000},
                                {"images_without_tags", none}};
  char per_image[32];
  std::snprintf(per_image, sizeof per_image, "%.2f", mean);
  note(o.data + ": multi-label: " + count_of(all.classes().size(), "tag") + ", " + per_image + " per image on average" +
       (none ? "; " + count_of(none, "image") + " without a tag (negative samples)" : ""));
}

// One class trains to loss 0 and "100%" without learning anything (one tag of multi-label data is
// a yes/no task: it learns).
void check_classes(const std::string& data, const std::vector<std::string>& classes, const SkipReport& skipped,
                   bool multi_label = false) {
  if (classes.size() >= (multi_label ? 1u : 2u)) return;
  std::string found = classes.empty() ? std::string("no class") : "only class \"" + classes[0] + "\"";
  for (const auto& [name, why] : skipped.empty_classes)
    found += "; class \"" + name + "\" had no image frugal reads: " + why;
  fail(ErrorKind::invalid, data, "images of at least 2 classes to train a classifier", found,
       "add images of other classes (one folder per class, labels.csv or a label pattern)");
}

// Which split trains and which validates, said in one line, on data whose top level is split
// folders or whose parquet files are named by split.
void say_splits(const std::string& data, const Dataset& all, bool val_folder, const std::string& val = "") {
  if (const auto& files = all.split_files())
    note(data + ": " + files->what + ": training on " + files->train +
         (val_folder ? "; validating on " + files->validation : std::string()) +
         (files->test.empty()                       ? std::string()
          : !val.empty() && val == files->test_data ? "; validating on " + files->test + " ({val})"
                                                    : "; not read: " + files->test) +
         (files->test_data.empty() || !val.empty() ? std::string()
                                                   : " ({val} " + files->test_data + " validates on it)"));
  else if (!all.split_folder().empty())
    note(data + ": its top level is split folders: training on " + all.split_folder() +
         (val_folder ? ", validating on " + all.validation_folder() : std::string()));
}

// The options the validation data is opened with: its own labels when {val_labels} gives them
// (then {labels} labelled the training data alone), else the training data's.
DatasetOptions with_val_labels(const TrainValOptions& o, DatasetOptions d) {
  const auto& v = o.val_labels;
  if (v.labels.empty()) {
    if (!v.label_columns.empty() || !v.images_dir.empty())
      fail(ErrorKind::usage, v.label_columns.empty() ? "{val_images_dir}" : "{val_label_columns}",
           "{val_labels} FILE beside it", "no {val_labels}", "give the validation data's label file with {val_labels}");
    return d;
  }
  d.labels = v.labels;
  d.label_columns = v.label_columns;
  d.images_dir = v.images_dir;
  d.labels_header = o.dataset.labels_header;  // {labels_header} says it of every label file given
  d.label_pattern.clear();                    // the training data's rule, not the validation data's
  return d;
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < 5; ++i) s += (i ? ", \"" : "\"") + printable(names[i]) + "\"";
  if (names.size() > 5) s += ", and " + std::to_string(names.size() - 5) + " more";
  return s;
}

// Validation labelled by {val_labels} must name the training classes, every one of them (a class
// is one output of the model, numbered in the same order): a label that is no training class,
// or a training class no validation image has, is exit 3 naming them and the file, with why a
// class has no training image when its training files were all skipped.
void check_val_labels(const TrainValOptions& o, const Dataset& val, const std::vector<std::string>& classes,
                      const SkipReport& train_skips) {
  if (o.val_labels.labels.empty() || val.classes() == classes) return;
  const std::set<std::string> train(classes.begin(), classes.end()), own(val.classes().begin(), val.classes().end());
  std::vector<std::string> extra, missing;
  std::string why;
  for (const std::string& c : val.classes())
    if (!train.count(c)) {
      extra.push_back(c);
      if (const auto it = train_skips.empty_classes.find(c); it != train_skips.empty_classes.end() && why.size() < 400)
        why += "; class \"" + printable(c) + "\" has training files but none frugal reads: " + it->second;
    }
  for (const std::string& c : classes)
    if (!own.count(c)) missing.push_back(c);
  const std::string where = o.val_labels.labels + " ({val_labels})";
  if (!extra.empty())
    fail(ErrorKind::invalid, where,
         "labels that are classes of the training data (" + count_of(classes.size(), "class", "classes") + ")",
         count_of(extra.size(), "label") + " that " + (extra.size() == 1 ? "is" : "are") +
             " no training class: " + quoted_list(extra) + why,
         "correct the labels, or add training images of those classes");
  fail(ErrorKind::invalid, where, "validation images of every training class (both are numbered as one list)",
       "none of " + count_of(missing.size(), "class", "classes") + ": " + quoted_list(missing),
       "label validation images of those classes too, or leave the classes out of the training data");
}

// What config.json's "data" record says of the labels (whose they are, how they were read) and of
// the files taken as images by their bytes.
void record_labels(const TrainValOptions& o, const Dataset& all, TrainVal& out) {
  out.decided["reader"] = all.reader();
  out.decided["label_source"] = all.label_source();
  out.decided["labels"] = all.labels_read();
  if (!out.train->taken_by_bytes().empty()) out.decided["taken_by_bytes"] = out.train->taken_by_bytes();
  if (out.val && !out.val->taken_by_bytes().empty() && out.val->taken_by_bytes() != out.train->taken_by_bytes())
    out.decided["val_taken_by_bytes"] = out.val->taken_by_bytes();
  if (!o.val_labels.labels.empty())
    out.decided["val_labels"] =
        o.val_labels.labels + ": labels the validation data alone" +
        (o.dataset.labels.empty() ? std::string() : spell_settings(" ({labels} the training data)"));
}

// A stable fraction of the training data validates: 5% when unset (said), nothing with 0 (said:
// no validation figures, best.safetensors the newest).
void split_off_validation(const TrainValOptions& o, const Dataset& all, TrainVal& out) {
  if (!o.val_labels.labels.empty() || !o.val_labels.label_columns.empty() || !o.val_labels.images_dir.empty())
    fail(ErrorKind::usage, "{val_labels}",
         "validation data of its own to label: {val} DATA, or a val/ folder in the data",
         "validation split off the training data (labelled as it is)",
         "give {val}, or leave out {val_labels} (then {labels} labels both)");
  const double f = o.val_split.value_or(0.05);
  std::tie(out.train, out.val) = all.split_val(f);
  out.decided["val_split"] = f;
  out.decided["validation"] = f > 0 ? nlohmann::json(out.decided["train"].get<std::string>() + " (a stable " +
                                                     std::to_string(std::lround(f * 100)) + "%)")
                                    : nlohmann::json(nullptr);
  if (!o.val_split)
    note("validating on a stable 5% of the training data ({val} or {val_split} to choose)");
  else if (f == 0)
    note("no validation ({val_split} 0): no validation figures, and best.safetensors is the newest checkpoint");
}

// The record holds paths as the user's file system spells them; config.json and --json need valid
// UTF-8 (a Latin-1 folder name would otherwise end the run as an internal error).
void keep_as_utf8(nlohmann::json& decided) {
  for (auto& [key, value] : decided.items())
    if (value.is_string()) value = utf8_escaped(value.get<std::string>());
}

}  // namespace

TrainVal open_train_val(const TrainValOptions& o) {
  TrainVal out;
  DatasetOptions d = o.dataset;
  if (d.labels.empty() && !o.val_labels.labels.empty()) d.labels_header = "auto";  // it was said of {val_labels}
  DatasetOptions data_options = d;
  data_options.root = o.data_root;  // --data's alone: --val names its own folder
  auto all = Dataset::open(o.data, data_options);
  out.classes = all->classes();
  say_used(o.data, *all);
  const SkipReport skipped = all->skipped();
  out.skipped = skipped.counts;
  check_classes(o.data, out.classes, skipped, all->multi_label());
  // A top level of train/ val/ test/ (or parquet files named train-*, validation-*, test-*):
  // trained on train, validated on the validation split unless --val names other data; the split
  // names are never classes, test is never trained on.
  const auto& files = all->split_files();
  const bool val_folder = o.val.empty() && (files ? !files->validation.empty() : !all->validation_folder().empty());
  const std::string val_where = files ? files->glob[1] : o.data + ":" + all->validation_folder();
  say_splits(o.data, *all, val_folder, o.val);
  out.decided["train"] = files ? files->train : o.data + (all->split_folder().empty() ? "" : ":" + all->split_folder());
  if (val_folder) {
    d.channels = all->channels();
    data_options.channels = d.channels;
    data_options.split = SplitFolder::validation;
    out.train = all;
    out.val = Dataset::open(o.data, with_val_labels(o, data_options));
    say_used(val_where, *out.val);
    check_val_labels(o, *out.val, out.classes, skipped);
    out.val_skipped = out.val->skipped().counts;
    out.decided["validation"] = files ? files->validation : val_where;
    if (out.val->classes() != out.classes)
      fail(ErrorKind::invalid, val_where, "the classes of " + (files ? files->train : all->split_folder()),
           count_of(out.val->classes().size(), "class", "classes") + ", not all matching",
           "make the two splits hold the same classes, or give {val}");
  } else if (!o.val.empty()) {
    d.channels = all->channels();
    out.train = all;
    out.val = Dataset::open(o.val, with_val_labels(o, d));
    say_used(o.val, *out.val);
    check_val_labels(o, *out.val, out.classes, skipped);
    out.val_skipped = out.val->skipped().counts;
    out.decided["validation"] = o.val;
    if (out.val->classes() != out.classes)
      fail(ErrorKind::invalid, o.val, "the same classes as " + o.data,
           count_of(out.val->classes().size(), "class", "classes") + ", not all matching",
           "give a validation archive with the same class names");
  } else {
    split_off_validation(o, *all, out);
  }
  record_labels(o, *all, out);
  record_multi_label(o, *all, out);
  // What the labels are, said as the record says it (decided by a rule unless {labels} or
  // {label_pattern} said it, and said then too: how the file was read).
  note(o.data + ": labels: " + out.decided["labels"].get<std::string>() + " (read by its " +
       out.decided["reader"].get<std::string>() + " reader)");
  if (out.train->size() == 0) fail(ErrorKind::invalid, o.data, "training images", "none", "check {data}");
  keep_as_utf8(out.decided);
  return out;
}

}  // namespace frugal

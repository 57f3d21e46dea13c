// The one table of train options (training/train_config.h, TrainOption): parsing and validating each value where
// it enters, what config.json records, and which options a resume may not change.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "frugal/dataset/sampler.h"
#include "frugal/image/augment.h"
#include "frugal/training/recipe.h"
#include "frugal/util/error.h"
#include "frugal/util/progress.h"
#include "frugal/util/terminal.h"
#include "frugal/training/train_config.h"
#include "frugal/util/units.h"

namespace frugal {
namespace {

using Row = TrainOption;
using Kind = TrainOption::Kind;

// Whole-text numbers only: "12abc", "1.5" for a count, " 3" and "" are refused, never truncated.
template <class T>
std::optional<T> number(const std::string& text) {
  T v{};
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end) return std::nullopt;
  if constexpr (std::is_floating_point_v<T>)
    if (!std::isfinite(v)) return std::nullopt;
  return v;
}

// An integer field in [lo, hi]; returns the allowed range when refused.
template <class T>
std::string integer(T& field, const std::string& text, T lo, T hi) {
  auto v = number<std::int64_t>(text);
  if (!v || *v < static_cast<std::int64_t>(lo) || *v > static_cast<std::int64_t>(hi))
    return "a whole number from " + std::to_string(lo) + " to " + std::to_string(hi);
  field = static_cast<T>(*v);
  return "";
}

// A number in [lo, hi] (or [lo, hi) when `below_hi`); `range` says it in words.
std::string real(double& field, const std::string& text, double lo, double hi, bool below_hi, const char* range) {
  auto v = number<double>(text);
  if (!v || *v < lo || *v > hi || (below_hi && *v == hi)) return range;
  field = *v;
  return "";
}

std::string choice(std::initializer_list<const char*> names) {
  std::string list;
  for (const char* n : names) list += (list.empty() ? "" : ", ") + std::string(n);
  return "one of " + list;
}

std::string size(SizeOption& field, const std::string& text) {
  try {
    field.bytes = parse_size(text);
  } catch (const Error&) {
    return "a size such as 512M, 20G or 1.5T (K/M/G/T: powers of 1024; KB/MB/GB/TB: of 1000)";
  }
  if (field.bytes == 0) return "a size above 0, such as 512M or 20G";
  field.text = text;
  return "";
}

std::string flag(bool& field, const std::string& text) {
  if (text != "true" && text != "false") return "true or false";
  field = text == "true";
  return "";
}

std::string text_value(std::string& field, const std::string& text) {
  if (text.empty()) return "a non-empty value";
  field = text;
  return "";
}

constexpr int kMaxCount = 1 << 20;  // epochs, batch sizes, ...: beyond it an int product could wrap

// Rows in `frugal train --help` order. The lambdas are captureless, so they convert to the
// function pointers TrainOption holds. A table, one row per option in --help's order: split into
// functions, that order would be spread over them.
// NOLINTNEXTLINE(readability-function-size)
std::vector<Row> make_rows() {
  std::vector<Row> r;
  auto add = [&](Row row) { r.push_back(row); };
  add({"data", nullptr, "training data (class folders, labels.csv, --labels, --label-pattern, .npy; docs/data.md)",
       Kind::value, false, true, [](TrainConfig& c, const std::string& t) { return text_value(c.data, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.data; }});
  add({"run", nullptr, "run folder: config, checkpoints, metrics; resumes when it holds a checkpoint", Kind::value,
       false, true, [](TrainConfig& c, const std::string& t) { return text_value(c.run, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.run; }});
  add({"config_file", "config", "TOML file with the same keys as the long options", Kind::value, false, false,
       [](TrainConfig& c, const std::string& t) { return text_value(c.config_file, t); }, nullptr});
  add({"val", nullptr, "validation archive", Kind::value, false, false,
       [](TrainConfig& c, const std::string& t) { return text_value(c.val, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.val; }});
  add({"val_split", nullptr, "fraction of --data held out for validation (stable); default 0.05; 0: none", Kind::value,
       true, false,
       [](TrainConfig& c, const std::string& t) {
         double v = 0;
         std::string refused = real(v, t, 0, 1, true, "a fraction from 0 (no validation) up to (not including) 1");
         if (refused.empty()) c.val_split = v;
         return refused;
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.val_split.value_or(0.0); }});
  add({"label_pattern", nullptr,
       "RE2 regex with one capture group, the class: searched for in the file name, else in the path inside the "
       "data (e.g. '([a-z]+)\\.[0-9]+\\.jpg$' for train/cat.0.jpg, '^([^/]+)/' for the top folder)",
       Kind::value, true, false, [](TrainConfig& c, const std::string& t) { return text_value(c.label_pattern, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.label_pattern; }});
  add({"labels", nullptr,
       "a CSV or TSV of image ids and labels, inside the data or beside it (e.g. train.csv); string labels are "
       "class names",
       Kind::value, true, false, [](TrainConfig& c, const std::string& t) { return text_value(c.labels, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.labels; }});
  add({"label_columns", nullptr,
       "ID,LABEL: the --labels columns, header names or 0-based indices (e.g. image_id,label); default the first two",
       Kind::value, true, false, [](TrainConfig& c, const std::string& t) { return text_value(c.label_columns, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.label_columns; }});
  add({"images_dir", nullptr,
       "the folder inside the data that --labels ids are relative to (e.g. train_images/); default the CSV's; ids "
       "match with or without their extension",
       Kind::value, true, false, [](TrainConfig& c, const std::string& t) { return text_value(c.images_dir, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.images_dir; }});
  add({"val_labels", nullptr,
       "the validation data's own CSV or TSV of ids and labels, inside the data or beside it (e.g. "
       "val/val_annotations.txt); --labels then labels the training data alone; the labels must be the training "
       "classes",
       Kind::value, false, false, [](TrainConfig& c, const std::string& t) { return text_value(c.val_labels, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.val_labels; }});
  add({"val_label_columns", nullptr, "ID,LABEL: the --val-labels columns, header names or 0-based indices", Kind::value,
       false, false, [](TrainConfig& c, const std::string& t) { return text_value(c.val_label_columns, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.val_label_columns; }});
  add({"val_images_dir", nullptr,
       "the folder inside the data that --val-labels ids are relative to (e.g. val/images/); default the file's",
       Kind::value, false, false, [](TrainConfig& c, const std::string& t) { return text_value(c.val_images_dir, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.val_images_dir; }});
  add({"labels_are_classes", nullptr,
       "each whole --labels label is one class, even when the labels look like tag lists (which are refused "
       "without this or --label-separator)",
       Kind::flag, false, false, [](TrainConfig& c, const std::string& t) { return flag(c.labels_are_classes, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.labels_are_classes; }});
  add({"label_separator", nullptr,
       "SEP: multi-label data: each --labels label is a list of tags separated by SEP (e.g. ' ' for Kaggle's "
       "planet); --label-columns ID,* (or ID,A,B,...) reads one 0/1 column per tag instead",
       Kind::value, true, false, [](TrainConfig& c, const std::string& t) { return text_value(c.label_separator, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.label_separator; }});
  add({"labels_header", nullptr,
       "yes|no|auto: whether the --labels file's first row is a header (no: columns by index only; auto, the "
       "default: a header, refused when it looks like data)",
       Kind::value, true, false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         if (t != "yes" && t != "no" && t != "auto") return "one of yes, no, auto";
         c.labels_header = t;
         return "";
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.labels_header; }});
  add({"class_names", nullptr,
       "names of integer classes, inside the data or beside it: a JSON map {\"0\": \"name\", ...}, a JSON list, or "
       "one name a line",
       Kind::value, true, false, [](TrainConfig& c, const std::string& t) { return text_value(c.class_names, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.class_names; }});
  add({"exclude", nullptr,
       "FILE|GLOB: files never read, by their path inside the data or a glob ('*' within a folder, '**' across "
       "them; without '/': a file name in any folder); repeatable; recorded in the run",
       Kind::values, false, false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         if (t.empty()) return "a path inside the data or a glob";
         c.exclude.push_back(t);
         return "";
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.exclude; }});
  add({"name_encoding", nullptr, "encoding of non-UTF-8 entry names", Kind::value, false, false,
       [](TrainConfig& c, const std::string& t) { return text_value(c.name_encoding, t); }, nullptr});
  add({"data_root", nullptr, "read only this folder inside --data, e.g. train/ (DATA:train/ says the same)",
       Kind::value, false, false, [](TrainConfig& c, const std::string& t) { return text_value(c.data_root, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.data_root; }});
  add({"cache_decompressed", nullptr,
       "a compressed tar is decompressed once into the cache folder ($FRUGAL_CACHE_DIR, else ~/.cache/frugal), "
       "counted against --disk-budget wherever that folder is, and read from there",
       Kind::flag, false, false, [](TrainConfig& c, const std::string& t) { return flag(c.cache_decompressed, t); },
       nullptr});
  add({"label_kind", nullptr, "CIFAR-100's labels: fine (default, 100 classes) or coarse (20 superclasses)",
       Kind::value, true, false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         if (t != "fine" && t != "coarse") return choice({"fine", "coarse"});
         c.label_kind = t;
         return "";
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.label_kind; }});
  add({"max_pixels", nullptr, "larger images count as bad", Kind::value, false, false,
       [](TrainConfig& c, const std::string& t) {
         return integer<std::int64_t>(c.max_pixels, t, 1, std::int64_t{1} << 40);
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.max_pixels; }});
  add({"max_file_bytes", nullptr,
       "an image or .npy file larger than this (default 256M) is never read: skipped and counted, by the size its "
       "folder or archive lists",
       Kind::value, false, false, [](TrainConfig& c, const std::string& t) { return size(c.max_file_bytes, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.max_file_bytes.text; }});
  add({"max_bad_fraction", nullptr, "fail when more images than this cannot be decoded", Kind::value, false, false,
       [](TrainConfig& c, const std::string& t) {
         return real(c.max_bad_fraction, t, 0, 1, false, "a fraction from 0 to 1");
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.max_bad_fraction; }});
  add({"check_val", nullptr,
       "auto (default): decode a validation set of at most 10,000 images once before training, so that a damaged "
       "image is refused before any step (exit 3); off: found by the first evaluation (exit 75 after the epoch's "
       "training is saved)",
       Kind::value, false, false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         if (t != "auto" && t != "off") return choice({"auto", "off"});
         c.check_val = t == "auto";
         return "";
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.check_val ? "auto" : "off"; }});
  add({"channels", nullptr, "1 or 3 (default: as the data)", Kind::value, true, false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         if (t != "1" && t != "3") return "1 or 3";
         c.channels = t == "1" ? 1 : 3;
         return "";
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.channels; }});
  add({"exif_orientation", nullptr, "apply (default: photos turned upright as their EXIF says) or ignore", Kind::value,
       true, false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         if (t != "apply" && t != "ignore") return choice({"apply", "ignore"});
         c.exif_orientation = t == "apply" ? ExifOrientation::apply : ExifOrientation::ignore;
         return "";
       },
       [](const TrainConfig& c) -> nlohmann::json {
         return c.exif_orientation == ExifOrientation::apply ? "apply" : "ignore";
       }});
  add({"model", nullptr,
       "cnn, resnet18, resnet50, efficientnet_b0, or FILE.pt: your own model as a TorchScript module (default: the zoo "
       "model --init's weights are for, else cnn)",
       Kind::value, true, false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         const auto& names = zoo_model_names();
         if (std::find(names.begin(), names.end(), t) == names.end() && !names_module_file(t)) {
           std::string list;
           for (auto& n : names) list += (list.empty() ? "" : ", ") + n;
           return "one of " + list + ", or a TorchScript module's file (FILE.pt)";
         }
         c.model = t;
         return "";
       },
       // Written once the session has chosen (by --init, else cnn); a config not yet resolved
       // records the default it will get without --init, as version 1 did.
       [](const TrainConfig& c) -> nlohmann::json { return c.model.empty() ? std::string("cnn") : c.model; }});
  add({"epochs", nullptr, "passes over the training data, or auto: as many as fit --time-budget", Kind::value, true,
       false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         if (t == "auto") {
           c.epochs_mode = EpochsMode::automatic;
           return "";
         }
         std::string allowed = integer(c.epochs, t, 1, kMaxCount);
         if (!allowed.empty()) return allowed + ", or auto";
         c.epochs_mode = EpochsMode::fixed;
         return "";
       },
       [](const TrainConfig& c) -> nlohmann::json {
         return c.epochs_auto() ? nlohmann::json("auto") : nlohmann::json(c.epochs);
       }});
  add({"batch_size", nullptr, "micro-batch size", Kind::value, false, false,
       [](TrainConfig& c, const std::string& t) { return integer(c.batch_size, t, 1, kMaxCount); },
       [](const TrainConfig& c) -> nlohmann::json { return c.batch_size; }});
  add({"accum", nullptr, "micro-batches per optimizer step (effective batch = B x K)", Kind::value, false, false,
       [](TrainConfig& c, const std::string& t) { return integer(c.accum, t, 1, kMaxCount); },
       [](const TrainConfig& c) -> nlohmann::json { return c.accum; }});
  add({"lr", nullptr, "peak learning rate (cosine schedule with warmup)", Kind::value, true, false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         auto v = number<double>(t);
         if (!v || *v <= 0 || *v > 1e3) return "a number above 0, at most 1000 (e.g. 1e-3)";
         c.lr = *v;
         return "";
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.lr; }});
  add({"optimizer", nullptr, "adamw or sgd (momentum 0.9, Nesterov)", Kind::value, true, false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         if (t == "adamw")
           c.optimizer = OptimizerKind::adamw;
         else if (t == "sgd")
           c.optimizer = OptimizerKind::sgd;
         else
           return choice({"adamw", "sgd"});
         return "";
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.optimizer == OptimizerKind::sgd ? "sgd" : "adamw"; }});
  add({"weight_decay", nullptr, "not applied to norms and biases", Kind::value, true, false,
       [](TrainConfig& c, const std::string& t) {
         return real(c.weight_decay, t, 0, 1e3, false, "a number from 0 to 1000");
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.weight_decay; }});
  add({"label_smoothing", nullptr, "label smoothing of the cross-entropy", Kind::value, true, false,
       [](TrainConfig& c, const std::string& t) {
         return real(c.label_smoothing, t, 0, 1, true, "a fraction from 0 up to (not including) 1");
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.label_smoothing; }});
  add({"augment", nullptr,
       "after the random crop: none, flip (the default: a horizontal flip half the time), trivial (flip, then "
       "TrivialAugmentWide) or randaugment[:N,M] (flip, then RandAugment: N ops at magnitude M of 0-30; default "
       "2,9), as torchvision v2 defines them; on the CPU loader",
       Kind::value, true, false, [](TrainConfig& c, const std::string& t) { return parse_augment(t, c.augment); },
       [](const TrainConfig& c) -> nlohmann::json { return augment_text(c.augment); }});
  add({"random_erasing", nullptr,
       "probability of erasing a random box of the image to 0 after the other augmentations (torchvision's "
       "RandomErasing; 0: off, the default); on the CPU loader",
       Kind::value, true, false,
       [](TrainConfig& c, const std::string& t) {
         return real(c.augment.erasing, t, 0, 1, false, "a probability from 0 (off) to 1");
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.augment.erasing; }});
  add({"recipe", nullptr,
       "the training recipe as a whole: auto (the default: chosen by the epochs a --time-budget buys, else "
       "default), none, default (crop and flip), light (for a few epochs) or strong (for many); options given "
       "beside it win (docs/recipe.md)",
       Kind::value, true, false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         if (t != "auto" && find_recipe(t) == nullptr) return choice({"auto", "none", "default", "light", "strong"});
         c.recipe = t;
         return "";
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.recipe; }});
  add({"mixup", nullptr,
       "mix each training batch with itself reversed, weights drawn from Beta(A, A) (timm's Mixup; its targets "
       "label-smoothed; 0: off, the default)",
       Kind::value, true, false,
       [](TrainConfig& c, const std::string& t) {
         return real(c.mixup, t, 0, 100, false, "an alpha from 0 (off) to 100");
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.mixup; }});
  add({"cutmix", nullptr,
       "paste a box of the batch reversed into each training image, its area from Beta(A, A) (timm's CutMix; with "
       "--mixup, one or the other per batch; 0: off, the default)",
       Kind::value, true, false,
       [](TrainConfig& c, const std::string& t) {
         return real(c.cutmix, t, 0, 100, false, "an alpha from 0 (off) to 100");
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.cutmix; }});
  add({"ema", nullptr,
       "keep an exponential moving average of the weights with this decay (e.g. 0.999; timm's ModelEmaV3 with "
       "warmup), and evaluate, keep as best and export it; 0: off, the default",
       Kind::value, true, false,
       [](TrainConfig& c, const std::string& t) {
         return real(c.ema, t, 0, 1, true, "a decay from 0 (off) up to (not including) 1");
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.ema; }});
  add({"clip_grad_norm", nullptr, "clip the gradient norm (0: off)", Kind::value, true, false,
       [](TrainConfig& c, const std::string& t) {
         return real(c.clip_grad_norm, t, 0, std::numeric_limits<double>::max(), false, "a number from 0 (off) up");
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.clip_grad_norm; }});
  add({"warmup_fraction", "warmup", "fraction of the steps spent warming up", Kind::value, true, false,
       [](TrainConfig& c, const std::string& t) {
         return real(c.warmup_fraction, t, 0, 1, false, "a fraction from 0 to 1");
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.warmup_fraction; }});
  add({"image_size", nullptr, "input side (default 28 for cnn, else 224)", Kind::value, true, false,
       [](TrainConfig& c, const std::string& t) { return integer(c.image_size, t, 1, kMaxCount); },
       [](const TrainConfig& c) -> nlohmann::json { return c.image_size; }});
  add({"tta", nullptr,
       "test-time augmentation of each epoch's validation (and so of which checkpoint is best): none (the default) "
       "or flip (each image's logits averaged with its mirror's)",
       Kind::value, false, false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         if (t != "none" && t != "flip") return choice({"none", "flip"});
         c.tta_flip = t == "flip";
         return "";
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.tta_flip ? "flip" : "none"; }});
  add({"workers", nullptr, "decode threads", Kind::value, false, false,
       [](TrainConfig& c, const std::string& t) { return integer(c.workers, t, 1, kMaxWorkers); },
       [](const TrainConfig& c) -> nlohmann::json { return c.workers; }});
  add({"seed", nullptr, "seed for initialization, order and augmentation", Kind::value, true, false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         auto v = number<std::uint64_t>(t);
         if (!v) return "a whole number from 0 to " + std::to_string(std::numeric_limits<std::uint64_t>::max());
         c.seed = *v;
         return "";
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.seed; }});
  add({"amp", nullptr, "auto, fp16, bf16 or off", Kind::value, false, false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         if (t == "auto")
           c.amp.reset();
         else if (t == "fp16" || t == "bf16" || t == "off")
           c.amp = parse_amp(t);
         else
           return choice({"auto", "fp16", "bf16", "off"});
         return "";
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.amp ? to_string(*c.amp) : "auto"; }});
  add({"grad_checkpoint", nullptr, "recompute activations in backward to save memory", Kind::flag, false, false,
       [](TrainConfig& c, const std::string& t) { return flag(c.grad_checkpoint, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.grad_checkpoint; }});
  add({"device", nullptr, "auto, cpu, cuda or cuda:N", Kind::value, false, false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         DeviceChoice d;
         if (t == "auto")
           d.kind = DeviceKind::automatic;
         else if (t == "cpu")
           d.kind = DeviceKind::cpu;
         else if (t == "cuda")
           d.kind = DeviceKind::cuda;
         else if (auto n = t.rfind("cuda:", 0) == 0 ? number<int>(t.substr(5)) : std::nullopt;
                  n && *n >= 0 && *n < 1024)
           d = {DeviceKind::cuda, *n};
         else
           return "auto, cpu, cuda or cuda:N (N: a device number)";
         c.device = d;
         return "";
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.device.text(); }});
  add({"init", nullptr, "start from these weights (safetensors, torchvision names)", Kind::value, false, false,
       [](TrainConfig& c, const std::string& t) { return text_value(c.init, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.init; }});
  add({"test_size", nullptr,
       "evaluate at this image size (validation, and the size the model records for eval, predict and export; "
       "FFCV tests above its training size); 0: the image size, the default",
       Kind::value, true, false,
       [](TrainConfig& c, const std::string& t) { return integer(c.test_size, t, 0, kMaxCount); },
       [](const TrainConfig& c) -> nlohmann::json { return c.test_size; }});
  add({"progressive", nullptr,
       "train on smaller images first: START_PX until 74% of the epochs, then growing to the image size by 86% "
       "(FFCV's progressive resizing; the batch is kept, validation at the full size; 0: off, the default)",
       Kind::value, true, false,
       [](TrainConfig& c, const std::string& t) { return integer(c.progressive, t, 0, kMaxCount); },
       [](const TrainConfig& c) -> nlohmann::json { return c.progressive; }});
  add({"sampler", nullptr,
       "shuffle (the default: every image once an epoch) or balanced (an epoch's images drawn with replacement, each "
       "class alike: torch's WeightedRandomSampler with weights 1 / its class's count); single-label data",
       Kind::value, true, false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         if (t != "shuffle" && t != "balanced") return choice({"shuffle", "balanced"});
         c.balanced_sampler = t == "balanced";
         return "";
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.balanced_sampler ? "balanced" : "shuffle"; }});
  add({"class_weights", nullptr,
       "weigh each class in the training loss: auto (n / (classes x count), scikit-learn's balanced) or a file of "
       "CLASS,WEIGHT lines; for imbalanced data (single-label; not with --mixup/--cutmix)",
       Kind::value, true, false, [](TrainConfig& c, const std::string& t) { return text_value(c.class_weights, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.class_weights; }});
  add({"lr_backbone", nullptr,
       "with --init: the learning rate of the pretrained part (every parameter outside the model's head) is --lr "
       "times this (e.g. 0.1; default 1: one rate for all)",
       Kind::value, true, false,
       [](TrainConfig& c, const std::string& t) {
         return real(c.lr_backbone, t, 0, 1000, false, "a multiplier from 0 (the backbone frozen in place) to 1000");
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.lr_backbone; }});
  add({"freeze", nullptr, "parameter name prefixes to freeze", Kind::values, true, false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         if (t.empty()) return "a parameter name prefix";
         c.freeze.push_back(t);
         return "";
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.freeze; }});
  add({"disk_budget", nullptr, "never let the workspace grow past this size", Kind::value, false, false,
       [](TrainConfig& c, const std::string& t) { return size(c.disk_budget, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.disk_budget.text; }});
  add({"workspace", nullptr, "workspace for the disk budget (default: the run folder's parent)", Kind::value, false,
       false, [](TrainConfig& c, const std::string& t) { return text_value(c.workspace, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.workspace; }});
  add({"gpu_memory", nullptr, "behave as if the GPU had only this much memory", Kind::value, false, false,
       [](TrainConfig& c, const std::string& t) { return size(c.gpu_memory, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.gpu_memory.text; }});
  add({"deadline", nullptr, "stop saved and resumable (exit 75) before this (DURATION or HH:MM)", Kind::value, false,
       false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         try {
           c.deadline = DeadlineSpec::parse(t);
         } catch (const Error&) {
           return "a duration (90s, 30m, 7h30m) or a time of day HH:MM";
         }
         if (c.deadline->after && c.deadline->after->count() <= 0) return "a duration above 0 (90s, 30m, 7h30m)";
         return "";
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.deadline ? c.deadline->text : ""; }});
  add({"stop_grace", nullptr,
       "past the deadline, or after a first signal, end the session when its step has not ended within this "
       "DURATION (a model's forward that does not return): exit 75 with a checkpoint, else 1 (default 1m)",
       Kind::value, false, false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         const char* allowed = "a duration above 0 (10s, 1m, 5m)";
         try {
           c.stop_grace = parse_duration(t);
         } catch (const Error&) {
           return allowed;
         }
         return c.stop_grace.count() > 0 ? "" : allowed;
       },
       nullptr});
  add({"allow_model_code", nullptr,
       "a TorchScript module (FILE.pt) may run any op it holds, not only the allowlist's: this runs code from the "
       "file with your rights (docs/models.md)",
       Kind::flag, false, false, [](TrainConfig& c, const std::string& t) { return flag(c.allow_model_code, t); },
       nullptr});
  // Not a learning option: a resumed run may get more or less time, and re-plans from where it is.
  add({"time_budget", nullptr,
       "total training time of the run, all sessions together (DURATION); implies --epochs auto", Kind::value, false,
       false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         const char* allowed = "a duration above 0 (90s, 30m, 20h)";
         try {
           c.time_budget.seconds = parse_duration(t);
         } catch (const Error&) {
           return allowed;
         }
         if (c.time_budget.seconds.count() <= 0) return allowed;
         c.time_budget.text = t;
         return "";
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.time_budget.text; }});
  add({"save_every", nullptr, "checkpoint cadence: a DURATION or Nsteps (default: each epoch)", Kind::value, false,
       false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         const char* allowed = "a duration above 0 (10m, 1h) or a number of steps above 0 (50steps)";
         SaveEvery s;
         s.text = t;
         if (t.size() > 5 && t.ends_with("steps")) {
           auto n = number<std::int64_t>(t.substr(0, t.size() - 5));
           if (!n || *n <= 0) return allowed;
           s.steps = *n;
         } else {
           try {
             s.every = parse_duration(t);
           } catch (const Error&) {
             return allowed;
           }
           if (s.every.count() <= 0) return allowed;
         }
         c.save_every = s;
         return "";
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.save_every.text; }});
  add({"threshold", nullptr,
       "multi-label data: a tag is predicted when its probability reaches this (validation's precision, recall "
       "and F1; stored with the model for predict)",
       Kind::value, false, false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         auto v = number<double>(t);
         if (!v || !(*v > 0 && *v < 1)) return "a probability above 0 and below 1 (e.g. 0.5)";
         c.threshold = *v;
         return "";
       },
       [](const TrainConfig& c) -> nlohmann::json { return c.threshold; }});
  add({"tune_thresholds", nullptr,
       "multi-label data: store with each checkpoint the per-class thresholds of the best F1 on that epoch's "
       "validation, which predict and eval then use",
       Kind::flag, false, false, [](TrainConfig& c, const std::string& t) { return flag(c.tune_thresholds, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.tune_thresholds; }});
  add({"keep_best", nullptr, "checkpoints kept for their validation accuracy (multi-label: mean AP)", Kind::value,
       false, false, [](TrainConfig& c, const std::string& t) { return integer(c.keep_best, t, 0, kMaxCount); },
       [](const TrainConfig& c) -> nlohmann::json { return c.keep_best; }});
  add({"keep_last", nullptr, "newest checkpoints kept", Kind::value, false, false,
       [](TrainConfig& c, const std::string& t) { return integer(c.keep_last, t, 0, kMaxCount); },
       [](const TrainConfig& c) -> nlohmann::json { return c.keep_last; }});
  add({"delta", nullptr, "between full checkpoints, store only what changed (XOR + zstd)", Kind::flag, false, false,
       [](TrainConfig& c, const std::string& t) { return flag(c.delta, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.delta; }});
  add({"fresh", nullptr, "start over even if the run folder holds a checkpoint", Kind::flag, false, false,
       [](TrainConfig& c, const std::string& t) { return flag(c.fresh, t); }, nullptr});
  add({"extend", nullptr,
       "go on with a finished or stopped run to a larger --epochs (or, for a run planned by --time-budget, a "
       "larger --time-budget), optimizer state kept: a new cosine tail "
       "from the step it reached (peak: --lr when changed, else the current learning rate, or a tenth of the "
       "run's --lr when its schedule had ended)",
       Kind::flag, false, false, [](TrainConfig& c, const std::string& t) { return flag(c.extend, t); }, nullptr});
  add({"deterministic", nullptr, "bitwise-reproducible on the CPU", Kind::flag, true, false,
       [](TrainConfig& c, const std::string& t) { return flag(c.deterministic, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.deterministic; }});
  // Data-parallel runs (several processes started by torchrun; README "Several GPUs or machines").
  add({"sync_bn", nullptr, "batch norm statistics over all processes of a torchrun run, not each one's", Kind::flag,
       false, false, [](TrainConfig& c, const std::string& t) { return flag(c.sync_bn, t); },
       [](const TrainConfig& c) -> nlohmann::json { return c.sync_bn; }});
  add({"dist_timeout", nullptr, "a torchrun run stops when another process does not answer for this long (default 2m)",
       Kind::value, false, false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         const char* allowed = "a duration of at least 1s (30s, 2m)";
         try {
           c.dist_timeout = parse_duration(t);
         } catch (const Error&) {
           return allowed;
         }
         return c.dist_timeout.count() >= 1 ? "" : allowed;
       },
       nullptr});
  // Pipeline stages (README "When the model does not fit one GPU").
  add({"pipeline", nullptr,
       "cut the model into N stages, one per process of a torchrun run (each holds and trains its part); batch "
       "norm then sees micro-batches",
       Kind::value, false, false, [](TrainConfig& c, const std::string& t) { return integer(c.pipeline, t, 1, 64); },
       nullptr});
  add({"micro_batches", nullptr,
       "with --pipeline: micro-batches each step's batch flows through the stages in (default 2N)", Kind::value, false,
       false, [](TrainConfig& c, const std::string& t) { return integer(c.micro_batches, t, 1, kMaxCount); }, nullptr});
  add({"pipeline_split", nullptr,
       "with --pipeline N: the N-1 pieces of the model where stages begin (default: balanced "
       "by measured time)",
       Kind::values, false, false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         if (t.empty()) return "a piece name of the model";
         c.pipeline_split.push_back(t);
         return "";
       },
       nullptr});
  add({"pipeline_balance", nullptr,
       "with --pipeline: what the stages even out, time (measured forward and backward) or parameters (memory)",
       Kind::value, false, false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         if (t != "time" && t != "parameters") return choice({"time", "parameters"});
         c.pipeline_balance = t;
         return "";
       },
       nullptr});
  add({"nproc", nullptr, "train with N processes on this machine (runs torchrun --nproc-per-node N)", Kind::value,
       false, false, [](TrainConfig& c, const std::string& t) { return integer(c.nproc, t, 1, 1024); }, nullptr});
  add({"json", nullptr,
       "print the outcome as one JSON document on stdout: exit code, run, final and best validation, epochs, steps, "
       "best checkpoint, skipped files by reason",
       Kind::flag, false, false, [](TrainConfig& c, const std::string& t) { return flag(c.json, t); }, nullptr});
  add({"decode", nullptr, "where JPEGs are decoded: cpu, gpu (nvJPEG) or auto", Kind::value, false, false,
       [](TrainConfig& c, const std::string& t) -> std::string {
         if (t == "cpu")
           c.decode = DecodeChoice::cpu;
         else if (t == "gpu")
           c.decode = DecodeChoice::gpu;
         else if (t == "auto")
           c.decode = DecodeChoice::automatic;
         else
           return choice({"cpu", "gpu", "auto"});
         return "";
       },
       // Recorded resolved; a config never built by a run (auto left) reads as the CPU's.
       [](const TrainConfig& c) -> nlohmann::json { return c.decode == DecodeChoice::gpu ? "gpu" : "cpu"; }});
  return r;
}

}  // namespace

std::string DeviceChoice::text() const {
  switch (kind) {
    case DeviceKind::automatic:
      return "auto";
    case DeviceKind::cpu:
      return "cpu";
    case DeviceKind::cuda:
      return index < 0 ? "cuda" : "cuda:" + std::to_string(index);
  }
  return "auto";
}

const std::vector<TrainOption>& train_options() {
  static const std::vector<TrainOption> rows = make_rows();
  return rows;
}

const std::vector<std::string>& learning_keys() {
  // "model" first, then the data's identity, then the table's order: how a refused resume lists them.
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k{"model", "classes", "train_images"};
    for (const auto& row : train_options())
      if (row.learning && std::string(row.key) != "model") k.push_back(row.key);
    return k;
  }();
  return keys;
}

// Named as the command line names them: this file holds the table of both spellings.
namespace {

// The GPU decode path crops, resizes and flips (gpu::plan_job); the augmentations' ops run on the
// CPU loader only: --decode gpu is refused with them, auto decodes on the CPU and says why.
void validate_augment(TrainConfig& c) {
  if (!c.augment.has_ops()) return;
  const bool policy =
      c.augment.policy == AugmentOptions::Policy::trivial || c.augment.policy == AugmentOptions::Policy::randaugment;
  const std::string what = policy ? "{augment} " + augment_text(c.augment) : "{random_erasing}";
  if (c.decode == DecodeChoice::gpu)
    fail(ErrorKind::usage, "{decode} gpu with " + what, "{decode} cpu or auto: " + what + " runs on the CPU loader",
         "{decode} gpu, whose path only crops, resizes and flips",
         "leave {decode} out (auto) or give {decode} cpu; or keep {decode} gpu with {augment} flip");
  if (c.decode == DecodeChoice::automatic) {
    note("decode: cpu (" + what + " runs on the CPU loader; the GPU decode path only crops, resizes and flips)");
    c.decode = DecodeChoice::cpu;
  }
}

}  // namespace

void validate(TrainConfig& c) {
  // A named recipe, or auto without a budget to choose by, sets its options now; auto with a budget
  // is chosen by the session once its plan is known (the options until then are the defaults).
  // Several processes would each plan alone: with them auto is the default recipe.
  if (c.recipe == "auto" && (!c.time_budget || c.nproc > 1 || c.pipeline > 1)) {
    if (c.time_budget) note("recipe: default (auto chooses from one process's plan; with several, give --recipe)");
    c.recipe = "default";
  }
  if (c.recipe != "auto") apply_recipe(c, c.recipe);
  if (!c.class_weights.empty() && (c.mixup > 0 || c.cutmix > 0))
    fail(ErrorKind::usage, "--class-weights with " + std::string(c.mixup > 0 ? "--mixup" : "--cutmix"), "one of them",
         "both", "a mixed image's soft targets have no one class to weigh: leave one out");
  if (c.lr_backbone != 1.0 && c.init.empty())
    fail(ErrorKind::usage, "--lr-backbone", "--init WEIGHTS: the pretrained part it slows down", "no --init",
         "add --init with the weights to fine-tune, or leave --lr-backbone out");
  validate_augment(c);
  // A time budget plans the epochs: left unset, the epochs are auto; a fixed number contradicts it.
  if (c.epochs_mode == EpochsMode::unset) c.epochs_mode = c.time_budget ? EpochsMode::automatic : EpochsMode::fixed;
  if (c.time_budget && !c.epochs_auto())
    fail(ErrorKind::usage, "--time-budget with --epochs " + std::to_string(c.epochs),
         "--epochs auto (or no --epochs): the budget decides how many epochs", "a fixed number of epochs",
         "leave --epochs out to train for the budget, or leave --time-budget out (--deadline cuts a session)");
  if (c.epochs_auto() && !c.time_budget)
    fail(ErrorKind::usage, "--epochs auto", "--time-budget DURATION to plan the epochs for", "no --time-budget",
         "add --time-budget (e.g. 20h: the whole run, all sessions together), or give a number of epochs");
  if (c.pipeline > 1) {
    if (c.micro_batches == 0) c.micro_batches = std::min(2 * c.pipeline, c.batch_size);
    if (c.micro_batches > c.batch_size)
      fail(ErrorKind::usage, "--micro-batches " + std::to_string(c.micro_batches),
           "at most --batch-size (" + std::to_string(c.batch_size) + ") micro-batches", "more",
           "give fewer --micro-batches or a larger --batch-size");
    if (c.sync_bn)
      fail(ErrorKind::usage, "--sync-bn with --pipeline", "one of them", "both",
           "leave --sync-bn out: each stage holds its own batch-norm layers");
    if (c.ema > 0 || c.mixup > 0 || c.cutmix > 0 || c.tta_flip || c.progressive > 0 || c.test_size > 0)
      fail(ErrorKind::usage,
           std::string(c.ema > 0           ? "--ema"
                       : c.mixup > 0       ? "--mixup"
                       : c.cutmix > 0      ? "--cutmix"
                       : c.progressive > 0 ? "--progressive"
                       : c.test_size > 0   ? "--test-size"
                                           : "--tta flip") +
               " with --pipeline",
           "one of them", "both",
           "a pipeline's stages hold no whole batch or model: train with data parallelism (--nproc) or one process");
    if (!c.pipeline_split.empty() && c.pipeline_balance != "time")
      fail(ErrorKind::usage, "--pipeline-split with --pipeline-balance " + c.pipeline_balance, "one of them", "both",
           "a split names the cut; a balance lets frugal choose it");
  } else if (c.micro_batches > 0 || !c.pipeline_split.empty() || c.pipeline_balance != "time") {
    fail(ErrorKind::usage,
         c.micro_batches > 0         ? "--micro-batches"
         : !c.pipeline_split.empty() ? "--pipeline-split"
                                     : "--pipeline-balance",
         "--pipeline N (N >= 2)", "no --pipeline",
         "add --pipeline 2 (or more) to cut the model into stages, or leave the option out");
  }
  if (!c.epochs_auto() && (c.epochs < 1 || c.epochs > kMaxCount))
    fail(ErrorKind::usage, "--epochs " + std::to_string(c.epochs),
         "a whole number from 1 to " + std::to_string(kMaxCount) + ", or auto", std::to_string(c.epochs),
         "give a number of epochs, or auto with --time-budget");
}

namespace {

// Paths are bytes on disk and JSON strings are UTF-8: a Latin-1 `--data d\xe9.zip` is recorded
// escaped, so that config.json, a checkpoint's metadata and the resume check can hold it.
void escape_strings(nlohmann::json& v) {
  if (v.is_string()) {
    v = utf8_escaped(v.get_ref<const std::string&>());
  } else if (v.is_array() || v.is_object()) {
    for (auto& item : v) escape_strings(item);
  }
}

}  // namespace

nlohmann::json TrainConfig::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& row : train_options())
    if (row.get) j[row.key] = row.get(*this);
  escape_strings(j);
  return j;
}

bool names_module_file(const std::string& model) {
  if (model.find('/') != std::string::npos) return true;
  for (const char* ext : {".pt", ".pth", ".ts", ".jit", ".torchscript"})
    if (model.size() > std::string_view(ext).size() && model.ends_with(ext)) return true;
  return false;
}

const std::vector<std::string>& zoo_model_names() {
  // models/zoo.cpp builds these; tests/models holds the two lists equal.
  static const std::vector<std::string> names{"cnn", "resnet18", "resnet50", "efficientnet_b0"};
  return names;
}

}  // namespace frugal

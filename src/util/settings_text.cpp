#include "frugal/util/settings_text.h"

#include <algorithm>
#include <atomic>
#include <string_view>

namespace frugal {
namespace {

// The settings library messages name. Only these are spelled, so a file or class name that
// happens to read "{photos}" reaches the user unchanged. scripts/check_messages.py (ctest
// house.messages) holds every "{key}" in src/ to this list and finds no "--flag" left in src/.
constexpr std::string_view kKeys[] = {"amp",
                                      "augment",
                                      "channels",
                                      "check_val",
                                      "class_names",
                                      "data",
                                      "decode",
                                      "delete_parts",
                                      "device",
                                      "disk_budget",
                                      "freeze",
                                      "fresh",
                                      "gpu_memory",
                                      "grad_checkpoint",
                                      "idx_set",
                                      "image_size",
                                      "init",
                                      "label_pattern",
                                      "limit",
                                      "max_bad_fraction",
                                      "max_bytes",
                                      "max_file_bytes",
                                      "max_pixels",
                                      "model",
                                      "name_encoding",
                                      "optimizer",
                                      "prune",
                                      "random_erasing",
                                      "root",
                                      "size",
                                      "val",
                                      "val_split",
                                      "deadline",
                                      "dist_timeout",
                                      "sync_bn",
                                      "nproc",
                                      "batch_size",
                                      "accum",
                                      "workers",
                                      "run",
                                      "overwrite",
                                      "skip_existing",
                                      "cache_decompressed",
                                      "data_root",
                                      "labels",
                                      "label_columns",
                                      "labels_are_classes",
                                      "label_separator",
                                      "labels_header",
                                      "label_kind",
                                      "images_dir",
                                      "val_labels",
                                      "val_label_columns",
                                      "val_images_dir",
                                      "exclude",
                                      "pipeline",
                                      "micro_batches",
                                      "pipeline_split",
                                      "pipeline_balance",
                                      "allow_model_code",
                                      "stop_grace",
                                      "extend",
                                      "lr",
                                      "epochs",
                                      "time_budget",
                                      "threshold",
                                      "recipe",
                                      "ema",
                                      "mixup",
                                      "cutmix",
                                      "tta",
                                      "progressive",
                                      "test_size",
                                      "sampler",
                                      "class_weights",
                                      "lr_backbone"};

bool known_key(std::string_view key) { return std::ranges::find(kKeys, key) != std::end(kKeys); }

std::string as_flag(const std::string& key) {
  std::string flag = "--" + key;
  for (char& c : flag)
    if (c == '_') c = '-';
  return flag;
}

std::atomic<SettingSpeller> g_speller{as_flag};

bool key_char(char c, bool first) { return (c >= 'a' && c <= 'z') || (!first && ((c >= '0' && c <= '9') || c == '_')); }

}  // namespace

void set_setting_speller(SettingSpeller speller) { g_speller = speller ? speller : as_flag; }

std::string spell_settings(const std::string& text) {
  if (text.find('{') == std::string::npos) return text;
  const SettingSpeller speller = g_speller;
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '{') {
      std::size_t j = i + 1;
      while (j < text.size() && key_char(text[j], j == i + 1)) ++j;
      if (j > i + 1 && j < text.size() && text[j] == '}' &&
          known_key(std::string_view(text).substr(i + 1, j - i - 1))) {
        out += speller(text.substr(i + 1, j - i - 1));
        i = j + 1;
        continue;
      }
    }
    out += text[i++];
  }
  return out;
}

}  // namespace frugal

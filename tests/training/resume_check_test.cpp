// learning_changes: which option changes make a resume unsound.
#include <gtest/gtest.h>

#include <limits>

#include <set>

#include "frugal/training/train_config.h"

using frugal::learning_changes;

namespace {

nlohmann::json config() {
  frugal::TrainConfig c;
  c.data = "/content/data.zip";
  c.batch_size = 64;
  c.accum = 2;
  nlohmann::json j = c.to_json();
  j["classes"] = {"cat", "dog"};
  j["train_images"] = 1000;
  return j;
}

}  // namespace

TEST(LearningChanges, SameOptionsResume) { EXPECT_TRUE(learning_changes(config(), config()).empty()); }

TEST(LearningChanges, SessionOptionsAndDataPathMayChange) {
  auto now = config();
  now["deadline"] = "7h";
  now["disk_budget"] = "4G";
  now["workers"] = 4;
  now["save_every"] = "10m";
  now["data"] = "/kaggle/input/data.zip";
  now["device"] = "cuda";
  EXPECT_TRUE(learning_changes(config(), now).empty());
}

TEST(LearningChanges, SmallerMicroBatchWithTheSameEffectiveBatchIsSound) {
  auto now = config();
  now["batch_size"] = 32;
  now["accum"] = 4;
  EXPECT_TRUE(learning_changes(config(), now).empty());
}

TEST(LearningChanges, ModelClassesDataSizeAndEffectiveBatchAreNamed) {
  auto now = config();
  now["model"] = "resnet18";
  now["classes"] = {"cat", "dog", "bird"};
  now["train_images"] = 1500;
  now["accum"] = 1;
  auto changes = learning_changes(config(), now);
  ASSERT_EQ(changes.size(), 4u);
  EXPECT_EQ(changes[0], "model: \"cnn\" -> \"resnet18\"");
  EXPECT_NE(changes[1].find("classes"), std::string::npos);
  EXPECT_EQ(changes[2], "train_images: 1000 -> 1500");
  EXPECT_EQ(changes[3], "effective batch (batch_size x accum x processes): 128 -> 64");
}

TEST(LearningChanges, TheGlobalBatchCountsTheProcesses) {
  // 2 ranks of 32 x 4 saved (world_size 2): one process resumes with 64 x 4, or 32 x 8, not 32 x 4.
  auto saved = config();
  saved["batch_size"] = 32;
  saved["accum"] = 4;
  saved["world_size"] = 2;
  auto now = config();
  now["batch_size"] = 64;
  now["accum"] = 4;
  now["world_size"] = 1;
  EXPECT_TRUE(learning_changes(saved, now).empty());
  now["batch_size"] = 32;
  now["accum"] = 8;
  EXPECT_TRUE(learning_changes(saved, now).empty());
  now["accum"] = 4;
  auto changes = learning_changes(saved, now);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0], "effective batch (batch_size x accum x processes): 256 -> 128");
  // An older checkpoint without world_size is one process.
  saved.erase("world_size");
  now["world_size"] = 2;
  now["batch_size"] = 16;
  EXPECT_TRUE(learning_changes(saved, now).empty());
}

TEST(LearningChanges, KeysAnOlderCheckpointLacksAreNotCompared) {
  auto saved = config();
  saved.erase("train_images");
  auto now = config();
  now["train_images"] = 5;
  EXPECT_TRUE(learning_changes(saved, now).empty());
}

TEST(LearningChanges, ASavedBatchThatIsNotANumberOrOverflowsIsAChangeNotAnException) {
  // The saved side is read from a checkpoint file; what it holds is not to be trusted.
  auto saved = config();
  saved["batch_size"] = "64";
  std::vector<std::string> changes;
  EXPECT_NO_THROW(changes = learning_changes(saved, config()));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0], "effective batch (batch_size x accum x processes): unreadable -> 128");
  saved = config();
  saved["batch_size"] = std::int64_t{1} << 62;
  saved["accum"] = 4;
  EXPECT_NO_THROW(changes = learning_changes(saved, config()));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0], "effective batch (batch_size x accum x processes): unreadable -> 128");
  // A world size above INT64_MAX (stored unsigned) is unreadable too, not wrapped to a negative.
  saved = config();
  saved["world_size"] = std::numeric_limits<std::uint64_t>::max();
  EXPECT_NO_THROW(changes = learning_changes(saved, config()));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0], "effective batch (batch_size x accum x processes): unreadable -> 128");
}

namespace {

// config.json and checkpoints record the options as version 1 did (old runs must resume, du/clean
// read them): the table's to_json gives every key of the hand-written list it replaced with the
// same value, type and bytes, here with its defaults and with typed values given as text. (Keys of
// options added since may follow: a resume does not compare what the old side lacks.)
void expect_v1(const nlohmann::json& now, const nlohmann::json& v1) {
  for (const auto& [key, value] : v1.items()) {
    ASSERT_TRUE(now.contains(key)) << key;
    EXPECT_EQ(now[key].dump(), value.dump()) << key;
    EXPECT_EQ(now[key].type(), value.type()) << key;
  }
}

TEST(TrainOptions, ConfigJsonIsByteForByteThatOfVersion1) {
  frugal::TrainConfig c;
  nlohmann::json v1 = {{"data", ""},
                       {"val", ""},
                       {"val_split", 0.0},
                       {"run", ""},
                       {"model", "cnn"},
                       {"init", ""},
                       {"freeze", std::vector<std::string>{}},
                       {"label_pattern", ""},
                       {"max_pixels", std::int64_t{89478485}},
                       {"max_bad_fraction", 0.01},
                       {"channels", 0},
                       {"epochs", 10},
                       {"batch_size", 64},
                       {"accum", 1},
                       {"lr", 1e-3},
                       {"optimizer", "adamw"},
                       {"weight_decay", 0.05},
                       {"label_smoothing", 0.0},
                       {"clip_grad_norm", 0.0},
                       {"warmup_fraction", 0.02},
                       {"image_size", 0},
                       {"workers", 2},
                       {"seed", std::uint64_t{0}},
                       {"amp", "auto"},
                       {"grad_checkpoint", false},
                       {"device", "auto"},
                       {"disk_budget", ""},
                       {"workspace", ""},
                       {"gpu_memory", ""},
                       {"deadline", ""},
                       {"save_every", ""},
                       {"keep_best", 1},
                       {"keep_last", 2},
                       {"delta", false},
                       {"deterministic", false},
                       {"decode", "cpu"}};
  expect_v1(c.to_json(), v1);

  auto set = [&](const std::string& key, const std::string& text) {
    for (const auto& row : frugal::train_options())
      if (row.key == key) return row.set(c, text);
    return std::string("no such row");
  };
  for (auto [k, t] : std::vector<std::pair<std::string, std::string>>{{"amp", "bf16"},
                                                                      {"device", "cuda:1"},
                                                                      {"optimizer", "sgd"},
                                                                      {"disk_budget", "20G"},
                                                                      {"gpu_memory", "16G"},
                                                                      {"deadline", "7h30m"},
                                                                      {"save_every", "50steps"},
                                                                      {"decode", "gpu"}})
    ASSERT_EQ(set(k, t), "") << k;
  v1["amp"] = "bf16";
  v1["device"] = "cuda:1";
  v1["optimizer"] = "sgd";
  v1["disk_budget"] = "20G";
  v1["gpu_memory"] = "16G";
  v1["deadline"] = "7h30m";
  v1["save_every"] = "50steps";
  v1["decode"] = "gpu";
  expect_v1(c.to_json(), v1);
  EXPECT_EQ(c.disk_budget.bytes, 20ull << 30);
  EXPECT_EQ(c.save_every.steps, 50);
}

TEST(TrainOptions, OneRowPerOptionAndTheLearningKeysOfVersion1) {
  std::set<std::string> keys, names;
  for (const auto& row : frugal::train_options()) {
    EXPECT_TRUE(keys.insert(row.key).second) << row.key;
    EXPECT_TRUE(names.insert(row.name ? row.name : row.key).second) << row.key;
    EXPECT_NE(row.set, nullptr) << row.key;
  }
  const std::vector<std::string> v1 = {"model", "classes", "train_images", "val_split", "label_pattern", "channels",
                                       "image_size", "epochs", "lr", "optimizer", "weight_decay", "label_smoothing",
                                       "clip_grad_norm", "warmup_fraction", "seed", "freeze", "deterministic",
                                       // added within version 1 (older configs lack it: not compared)
                                       "exif_orientation", "labels", "label_columns", "images_dir", "class_names",
                                       // how labels are read: tags (multi-label), a header, CIFAR-100's kind
                                       "label_separator", "labels_header", "label_kind",
                                       // the augmentations after the crop (older configs: flip, none)
                                       "augment", "random_erasing",
                                       // the recipe (issue 45; older configs lack them: not compared)
                                       "recipe", "mixup", "cutmix", "ema", "lr_backbone", "class_weights", "sampler",
                                       "test_size", "progressive"};
  const auto& now = frugal::learning_keys();
  EXPECT_EQ(std::set<std::string>(now.begin(), now.end()), std::set<std::string>(v1.begin(), v1.end()));
  EXPECT_EQ(now.front(), "model");
}

TEST(TrainOptions, ValuesOutOfRangeAreRefusedNamingWhatIsAllowed) {
  for (auto [key, text] : std::vector<std::pair<std::string, std::string>>{{"lr", "-1"},
                                                                           {"lr", "nan"},
                                                                           {"lr", "1e-3x"},
                                                                           {"epochs", "0"},
                                                                           {"batch_size", "0"},
                                                                           {"batch_size", "1.5"},
                                                                           {"val_split", "1.5"},
                                                                           {"val_split", "1"},
                                                                           {"augment", "trivial:3"},
                                                                           {"augment", "randaugment:2,31"},
                                                                           {"random_erasing", "1.5"},
                                                                           {"random_erasing", "-0.1"},
                                                                           {"disk_budget", "4Q"},
                                                                           {"image_size", "0"},
                                                                           {"deadline", "soon"},
                                                                           {"deadline", "0s"},
                                                                           {"save_every", "0steps"},
                                                                           {"save_every", "-5m"},
                                                                           {"model", "resnet"},
                                                                           {"channels", "2"},
                                                                           {"amp", "fp8"},
                                                                           {"device", "gpu"},
                                                                           {"device", "cuda:-1"},
                                                                           {"optimizer", "adam"},
                                                                           {"workers", "0"},
                                                                           {"seed", "-1"},
                                                                           {"max_bad_fraction", "2"},
                                                                           {"exif_orientation", "sideways"}}) {
    frugal::TrainConfig c;
    const frugal::TrainOption* row = nullptr;
    for (const auto& r : frugal::train_options())
      if (r.key == key) row = &r;
    ASSERT_NE(row, nullptr) << key;
    EXPECT_NE(row->set(c, text), "") << key << " " << text << " accepted";
  }
}

}  // namespace

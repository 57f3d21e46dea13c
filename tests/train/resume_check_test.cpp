// learning_changes: which option changes make a resume unsound.
#include <gtest/gtest.h>

#include "frugal/train.h"

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
  EXPECT_EQ(changes[3], "effective batch (batch_size x accum): 128 -> 64");
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
  EXPECT_EQ(changes[0], "effective batch (batch_size x accum): unreadable -> 128");
  saved = config();
  saved["batch_size"] = std::int64_t{1} << 62;
  saved["accum"] = 4;
  EXPECT_NO_THROW(changes = learning_changes(saved, config()));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0], "effective batch (batch_size x accum): unreadable -> 128");
}

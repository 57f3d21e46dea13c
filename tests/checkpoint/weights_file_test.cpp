// Weights made by other tools read as frugal's --init reads them (weights_file.h), against what
// PyTorch, torchvision and timm wrote in the test: torch.save state dicts (plain, nested, with DDP's
// prefix) hold the same tensors as the safetensors file of the same weights and load into frugal's
// resnet18 with 0 missing and 0 unexpected; timm's efficientnet_b0 weights give frugal's
// efficientnet_b0 the logits timm's own model gives; a pickle naming os.system and the legacy
// format are refused.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "image/fixtures.h"
#include "test_files.h"
#include "frugal/checkpoint/safetensors.h"
#include "frugal/checkpoint/weights_file.h"
#include "frugal/models/models.h"
#include "frugal/util/error.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

// Made once per build tree by one Python process (importing torch, torchvision and timm costs
// seconds): tests/checkpoint/make_foreign_weights.py.
class ForeignWeights : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::fixtures_made_by("tests/checkpoint/make_foreign_weights.py", "foreign-weights");
    if (dir_.empty()) GTEST_SKIP() << "no Python with torch, torchvision, timm and safetensors (set FRUGAL_PYTHON)";
  }
  fs::path at(const char* name) const { return dir_ / name; }
  fs::path dir_;
};

void expect_same(const std::map<std::string, torch::Tensor>& a, const std::map<std::string, torch::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) {
    ASSERT_TRUE(b.count(name)) << name;
    EXPECT_TRUE(t.dtype() == b.at(name).dtype() && t.equal(b.at(name))) << name;
  }
}

TEST_F(ForeignWeights, TorchSaveStateDictsHoldTheTensorsOfTheSafetensorsFile) {
  const WeightsFile reference = load_weights_file(at("r18.safetensors"));
  EXPECT_EQ(reference.described, "");
  const WeightsFile plain = load_weights_file(at("r18_plain.pth"));
  expect_same(plain.tensors, reference.tensors);
  EXPECT_EQ(plain.described, "a torch.save state dict");
  const WeightsFile nested = load_weights_file(at("r18_nested_ddp.pth"));
  expect_same(nested.tensors, reference.tensors);
  EXPECT_EQ(nested.described, "a torch.save state dict under 'state_dict', prefix 'module.' removed");
  auto model = make_model("resnet18", 1000, 3);
  EXPECT_EQ(load_weights(*model, nested.tensors, /*allow_head_mismatch=*/false), "");  // 0 missing, 0 unexpected
}

TEST_F(ForeignWeights, AnotherZooModelsWeightsNameThatModel) {
  const WeightsFile r18 = load_weights_file(at("r18_plain.pth"));
  EXPECT_EQ(zoo_model_for(r18.tensors), "resnet18");
  EXPECT_EQ(zoo_model_for(load_weights_file(at("effnet_timm.pth")).tensors), "efficientnet_b0");
  auto cnn = make_model("cnn", 10, 1);
  EXPECT_EQ(zoo_model_for(state_dict(*cnn)), "cnn");
  try {
    load_weights(*cnn, r18.tensors, /*allow_head_mismatch=*/true);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("these are resnet18's weights"), std::string::npos) << e.what();
  }
  std::map<std::string, torch::Tensor> partial = r18.tensors;
  partial.erase("layer1.0.conv1.weight");
  EXPECT_EQ(zoo_model_for(partial), std::nullopt);
}

TEST_F(ForeignWeights, TimmEfficientNetWeightsGiveTimmsLogits) {
  for (const char* file : {"effnet_timm.safetensors", "effnet_timm.pth"}) {
    const WeightsFile w = load_weights_file(at(file));
    EXPECT_NE(w.described.find("timm efficientnet_b0 names"), std::string::npos) << w.described;
    auto model = make_model("efficientnet_b0", 1000, 3);
    ASSERT_EQ(load_weights(*model, w.tensors, /*allow_head_mismatch=*/false), "") << file;
    model->eval();
    const SafetensorsFile expected = load_safetensors(at("effnet_logits.safetensors"));
    torch::NoGradGuard no_grad;
    const torch::Tensor logits = model->forward(expected.get("x"));
    EXPECT_TRUE(torch::allclose(logits, expected.get("logits"), 1e-4, 1e-4))
        << file << ": largest difference " << (logits - expected.get("logits")).abs().max().item<float>();
  }
}

TEST_F(ForeignWeights, APickleThatNamesOtherGlobalsAndTheLegacyFormatAreRefused) {
  try {
    load_weights_file(fs::path(FRUGAL_SOURCE_DIR) / "fuzz/corpus/torch_save/evil_os_system.pth");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid) << e.what();
    EXPECT_NE(std::string(e.what()).find("system: it could run code"), std::string::npos) << e.what();
  }
  try {
    load_weights_file(at("r18_legacy.pth"));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported) << e.what();
  }
}

TEST_F(ForeignWeights, AHubFolderIsReadThroughItsWeightsFile) {
  const fs::path hub = dir_.parent_path() / ("hub-" + std::to_string(::getpid()));
  fs::create_directories(hub);
  fs::copy_file(at("effnet_timm.safetensors"), hub / "model.safetensors");
  std::ofstream(hub / "config.json") << R"({"architecture": "efficientnet_b0", "num_classes": 1000})";
  const WeightsFile w = load_weights_file(hub);
  EXPECT_EQ(w.described.rfind("a Hugging Face folder's model.safetensors (efficientnet_b0): timm", 0), 0u)
      << w.described;
  std::ofstream(hub / "config.json") << R"({"architecture": "tf_efficientnet_b0"})";
  EXPECT_THROW(load_weights_file(hub), Error);
  testing::remove_tree(hub);
}

}  // namespace
}  // namespace frugal

// Every zoo model exported to ONNX must pass onnx.checker and give frugal's outputs under
// onnxruntime (rtol 1e-3, atol 1e-4). Python side: tests/compress/onnx_check.py.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "frugal/util/error.h"
#include "frugal/compress/onnx.h"
#include "temp_dir.h"

using namespace frugal;
namespace fs = std::filesystem;

namespace {

fs::path python() { return fs::path(FRUGAL_SOURCE_DIR) / ".venv/bin/python"; }

bool python_has_onnx() {
  if (!fs::exists(python())) return false;
  return std::system((python().string() + " -c 'import onnx, onnxruntime' 2>/dev/null").c_str()) == 0;
}

// Batch-norm statistics and affine parameters away from their (0, 1) defaults, so folding them
// into the convolutions is really exercised.
void randomize_norms(Model& model) {
  torch::NoGradGuard no_grad;
  for (const auto& item : model.named_modules()) {
    if (auto* bn = item.value()->as<torch::nn::BatchNorm2dImpl>()) {
      bn->running_mean.uniform_(-0.2, 0.2);
      bn->running_var.uniform_(0.5, 2.0);
      bn->weight.uniform_(0.5, 1.5);
      bn->bias.uniform_(-0.2, 0.2);
    }
  }
}

void write_raw(const fs::path& p, const torch::Tensor& t) {
  auto c = t.contiguous().to(torch::kFloat32);
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(c.data_ptr<float>()),
             static_cast<std::streamsize>(c.numel() * sizeof(float)));
}

struct Case {
  std::string name;
  int channels, image_size, classes;
};

class OnnxExport : public ::testing::TestWithParam<Case> {};

TEST_P(OnnxExport, MatchesFrugalsForwardInOnnxRuntime) {
  if (!python_has_onnx()) GTEST_SKIP() << "the .venv's python with onnx and onnxruntime is needed";
  const Case c = GetParam();
  torch::manual_seed(7);
  auto model = make_model(c.name, c.classes, c.channels);
  randomize_norms(*model);
  model->eval();
  ModelInfo info;
  info.name = c.name;
  info.channels = c.channels;
  info.image_size = c.image_size;
  for (int i = 0; i < c.classes; ++i) info.classes.push_back("class" + std::to_string(i));
  info.mean.assign(c.channels, 0.5f);
  info.std.assign(c.channels, 0.25f);

  auto x = torch::randn({3, c.channels, c.image_size, c.image_size});
  torch::Tensor y;
  {
    torch::NoGradGuard no_grad;
    y = model->forward(x);
  }
  test::TempDir tmp;
  const fs::path dir = tmp.path();
  export_onnx(info, *model, dir / "model.onnx");
  write_raw(dir / "x.f32", x);
  write_raw(dir / "y.f32", y);
  nlohmann::json spec{{"input", "x.f32"},
                      {"input_shape", x.sizes().vec()},
                      {"expected", "y.f32"},
                      {"expected_shape", y.sizes().vec()},
                      {"metadata",
                       {{"frugal.model", c.name},
                        {"frugal.image_size", std::to_string(c.image_size)},
                        {"frugal.channels", std::to_string(c.channels)}}}};
  std::ofstream(dir / "case.json") << spec.dump();
  const std::string cmd = python().string() + " " + FRUGAL_SOURCE_DIR "/tests/compress/onnx_check.py " +
                          (dir / "model.onnx").string() + " " + (dir / "case.json").string();
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << cmd;
}

INSTANTIATE_TEST_SUITE_P(Zoo, OnnxExport,
                         ::testing::Values(Case{"cnn", 1, 28, 10}, Case{"cnn", 3, 56, 3}, Case{"resnet18", 3, 32, 5},
                                           Case{"resnet50", 3, 32, 4}, Case{"efficientnet_b0", 3, 32, 6}),
                         [](const auto& info) {
                           return info.param.name + "_" + std::to_string(info.param.image_size);
                         });

TEST(OnnxExport, UnknownArchitectureIsUnsupported) {
  auto model = make_model("cnn", 10, 1);
  ModelInfo info;
  info.name = "vgg16";
  info.classes.assign(10, "c");
  EXPECT_THROW(onnx_model_bytes(info, *model), Error);
}

}  // namespace

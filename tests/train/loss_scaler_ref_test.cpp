// frugal's LossScaler step by step against torch.amp.GradScaler (tests/train/loss_scaler_ref.py,
// run with the .venv's torch): the same scale, the same skip decisions, the same unscaled
// gradients and parameters at every step, through inf, NaN and scaled-to-inf gradients, growth,
// backoff and a save/restore in the middle of a growth interval.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "frugal/checkpoint/safetensors.h"
#include "frugal/train/amp.h"
#include "reference_python.h"

namespace frugal {
namespace {

namespace fs = std::filesystem;
using testing::python;

// Bit patterns, so that NaN payloads and signed zeros count too.
bool same_bits(const torch::Tensor& a, const torch::Tensor& b) {
  return a.scalar_type() == b.scalar_type() && a.sizes() == b.sizes() &&
         torch::equal(a.contiguous().view(torch::kInt32), b.contiguous().view(torch::kInt32));
}

TEST(LossScalerReference, MatchesTorchGradScalerAtEveryStep) {
  const std::string py = python();
  if (py.empty() || std::system((py + " -c 'import torch, safetensors' 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << "no Python with torch and safetensors (.venv)";
  char tmpl[] = "/tmp/frugal-scaler-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const fs::path trace = fs::path(tmpl) / "trace.safetensors";
  const std::string cmd = py + " " + FRUGAL_SOURCE_DIR + "/tests/train/loss_scaler_ref.py " + trace.string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const SafetensorsFile ref = load_safetensors(trace);
  std::system(("rm -rf " + std::string(tmpl)).c_str());

  auto meta = [&](const char* key) { return std::stod(ref.metadata.at(key)); };
  const LossScalerOptions options{.enabled = true,
                                  .init_scale = meta("init_scale"),
                                  .growth_factor = meta("growth_factor"),
                                  .backoff_factor = meta("backoff_factor"),
                                  .growth_interval = static_cast<std::int64_t>(meta("growth_interval"))};
  const int steps = std::stoi(ref.metadata.at("steps"));
  const int nparams = std::stoi(ref.metadata.at("params"));
  const int restore_after = std::stoi(ref.metadata.at("restore_after"));
  const auto scale_used = ref.get("scale_used"), scale_after = ref.get("scale_after");
  const auto skipped = ref.get("skipped"), tracker_after = ref.get("tracker_after");

  std::vector<torch::Tensor> params;
  for (int i = 0; i < nparams; ++i) params.push_back(ref.get("p0." + std::to_string(i)).clone().requires_grad_(true));
  torch::optim::SGD opt(params, torch::optim::SGDOptions(meta("lr")));
  auto scaler = std::make_unique<LossScaler>(options);
  int skips = 0;
  for (int t = 0; t < steps; ++t) {
    const std::string at = "step " + std::to_string(t);
    EXPECT_EQ(static_cast<float>(scaler->scale_value()), scale_used[t].item<float>()) << at;
    opt.zero_grad(true);
    for (int i = 0; i < nparams; ++i)
      params[i].mutable_grad() = scaler->scale(ref.get("g." + std::to_string(t) + "." + std::to_string(i)));
    const bool finite = scaler->unscale(params);
    if (finite) opt.step();
    scaler->update();
    skips += !finite;
    EXPECT_EQ(!finite, skipped[t].item<std::uint8_t>() != 0) << at;
    for (int i = 0; i < nparams; ++i) {
      const std::string k = std::to_string(t) + "." + std::to_string(i);
      EXPECT_TRUE(same_bits(params[i].grad(), ref.get("unscaled." + k))) << at << " param " << i << ": unscaled grad";
      EXPECT_TRUE(same_bits(params[i].detach(), ref.get("param." + k))) << at << " param " << i << ": after the step";
    }
    const auto state = scaler->state();
    EXPECT_EQ(state.at("loss_scaler.scale").item<float>(), scale_after[t].item<float>()) << at;
    EXPECT_EQ(state.at("loss_scaler.growth_tracker").item<std::int32_t>(), tracker_after[t].item<std::int32_t>()) << at;
    if (t == restore_after) {
      // As a resume does: the state goes through a checkpoint into a scaler made with other options.
      auto saved = safetensors_bytes({{"frugal.loss_scaler.scale", state.at("loss_scaler.scale")},
                                      {"frugal.loss_scaler.growth_tracker", state.at("loss_scaler.growth_tracker")}},
                                     {});
      const auto back = parse_safetensors(saved, "scaler");
      LossScalerOptions fresh = options;
      fresh.init_scale = 7;
      scaler = std::make_unique<LossScaler>(fresh);
      scaler->load_state({{"loss_scaler.scale", back.get("frugal.loss_scaler.scale")},
                          {"loss_scaler.growth_tracker", back.get("frugal.loss_scaler.growth_tracker")}});
    }
  }
  EXPECT_EQ(skips, 5);
}

}  // namespace
}  // namespace frugal

#include <gtest/gtest.h>

#include <c10/util/Exception.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "frugal/util/error.h"
#include "frugal/budget/time_budget.h"
#include "frugal/train/amp.h"
#include "frugal/train/optim.h"
#include "frugal/train/step.h"
#include "frugal/training/train_config.h"
#include "frugal/models/models.h"
#include "train/device.h"
#include "frugal/training/events.h"
#include "train/random_batches.h"

namespace frugal {
namespace {

namespace fs = std::filesystem;
using Batches = std::vector<std::pair<torch::Tensor, torch::Tensor>>;
using testing::random_batches;

// A model without batch norm, so that how a step is split cannot change its gradient.
class TinyModel : public Model {
 public:
  TinyModel() { fc = register_module("fc", torch::nn::Linear(1 * 4 * 4, 3)); }
  torch::Tensor forward(torch::Tensor x) override { return fc(x.flatten(1)); }
  std::string head_prefix() const override { return "fc"; }
  torch::nn::Linear fc{nullptr};
};

struct Harness {
  explicit Harness(int micro, double lr = 0.1, LossScalerOptions so = {.enabled = false}) : scaler(so) {
    torch::manual_seed(7);
    model = std::make_shared<TinyModel>();
    OptimizerOptions o;
    o.kind = OptimizerKind::sgd;
    o.lr = lr;
    opt = make_optimizer(*model, o);
    StepOptions s;
    s.micro_batch = micro;
    step = std::make_unique<TrainStep>(*model, *opt.optimizer, scaler, s);
  }
  std::shared_ptr<TinyModel> model;
  OptimizerSetup opt;
  LossScaler scaler;
  std::unique_ptr<TrainStep> step;
};

TEST(Amp, AutoPicksFp16OnP100Bf16OnAmpereOffOnCpu) {
  EXPECT_EQ(choose_amp("cuda", 6, 0), AmpMode::fp16);
  EXPECT_EQ(choose_amp("cuda", 7, 5), AmpMode::fp16);
  EXPECT_EQ(choose_amp("cuda", 8, 0), AmpMode::bf16);
  EXPECT_EQ(choose_amp("cuda", 9, 0), AmpMode::bf16);
  EXPECT_EQ(choose_amp("cpu", 0, 0), AmpMode::off);
  EXPECT_THROW(parse_amp("fp8"), Error);
}

// The hint `frugal train` gives on the CPU rests on this; the kernel's flags are an independent view.
TEST(Amp, CpuBf16DetectionAgreesWithProcCpuinfo) {
  std::ifstream in("/proc/cpuinfo");
  if (!in) GTEST_SKIP() << "no /proc/cpuinfo";
  std::string line;
  bool flags_seen = false, bf16 = false;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    flags_seen = true;
    std::istringstream words(line);
    for (std::string w; words >> w;) bf16 = bf16 || w == "amx_bf16" || w == "avx512_bf16";
    break;
  }
  if (!flags_seen) GTEST_SKIP() << "no flags line in /proc/cpuinfo";
  EXPECT_EQ(cpu_has_native_bf16(), bf16);
}

TEST(TrainStep, AccumulatedStepHasTheGradientOfOneBigBatch) {
  auto data = random_batches(4, 8, 1);
  Batches one = {{torch::cat({data[0].first, data[1].first, data[2].first, data[3].first}),
                  torch::cat({data[0].second, data[1].second, data[2].second, data[3].second})}};
  Harness big(32, 0.0), accumulated(8, 0.0), uneven(3, 0.0);
  auto rb = big.step->run(one);
  auto ra = accumulated.step->run(data);
  uneven.step->run(data);
  EXPECT_NEAR(rb.loss, ra.loss, 1e-5);
  EXPECT_EQ(ra.samples, 32);
  for (auto* h : {&accumulated, &uneven}) {
    EXPECT_TRUE(torch::allclose(big.model->fc->weight.grad(), h->model->fc->weight.grad(), 1e-5, 1e-6));
    EXPECT_TRUE(torch::allclose(big.model->fc->bias.grad(), h->model->fc->bias.grad(), 1e-5, 1e-6));
  }
}

TEST(TrainStep, OutOfMemoryHalvesTheMicroBatchAndRedoesTheSameStep) {
  auto data = random_batches(2, 8, 2);
  Harness clean(8), failing(8);
  int injected = 0;
  failing.step->before_micro_step = [&](std::int64_t micro_step) {
    if (micro_step == 1 && injected == 0) {
      ++injected;
      TORCH_CHECK_WITH(OutOfMemoryError, false, "injected CUDA out of memory");
    }
  };
  auto rc = clean.step->run(data);
  auto rf = failing.step->run(data);
  EXPECT_EQ(injected, 1);
  EXPECT_TRUE(rf.oom_recovered);
  EXPECT_FALSE(rc.oom_recovered);
  EXPECT_EQ(failing.step->micro_batch(), 4);
  EXPECT_NEAR(rc.loss, rf.loss, 1e-6);
  EXPECT_TRUE(torch::allclose(clean.model->fc->weight, failing.model->fc->weight, 1e-6, 1e-7));
  // The next step keeps the smaller micro-batch (4 forwards of 4 for 16 samples).
  std::int64_t calls = 0;
  failing.step->before_micro_step = [&](std::int64_t) { ++calls; };
  failing.step->run(data);
  EXPECT_EQ(calls, 4);
}

TEST(TrainStep, OutOfMemoryAtMicroBatchOneIsABudgetError) {
  Harness h(1);
  h.step->before_micro_step = [](std::int64_t) { TORCH_CHECK_WITH(OutOfMemoryError, false, "injected"); };
  try {
    h.step->run(random_batches(1, 2, 3));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::budget);
  }
}

TEST(LossScaler, InfGradientsSkipTheStepAndBackOffCleanOnesGrow) {
  LossScaler s({.enabled = true, .init_scale = 1024, .growth_factor = 2, .backoff_factor = 0.5, .growth_interval = 2});
  auto p = torch::zeros({3}, torch::requires_grad());
  p.mutable_grad() = torch::tensor({1024.f, std::numeric_limits<float>::infinity(), 0.f});
  EXPECT_FALSE(s.unscale({p}));
  s.update();
  EXPECT_EQ(s.scale_value(), 512);
  p.mutable_grad() = torch::tensor({512.f, 1024.f, 0.f});
  EXPECT_TRUE(s.unscale({p}));
  EXPECT_TRUE(torch::allclose(p.grad(), torch::tensor({1.f, 2.f, 0.f})));
  s.update();
  p.mutable_grad() = torch::tensor({1.f, 1.f, 1.f});
  EXPECT_TRUE(s.unscale({p}));
  s.update();
  EXPECT_EQ(s.scale_value(), 1024);  // two clean steps: grown

  LossScaler restored({.enabled = true, .init_scale = 7});
  restored.load_state(s.state());
  EXPECT_EQ(restored.scale_value(), 1024);
}

TEST(TrainStep, Bf16AutocastStepWithInjectedInfGradientIsSkipped) {
  Harness h(8, 0.1, {.enabled = true, .init_scale = 256});
  auto before = h.model->fc->weight.clone();
  h.model->fc->weight.register_hook([](torch::Tensor g) { return g * std::numeric_limits<float>::infinity(); });
  StepOptions o;
  o.micro_batch = 8;
  o.amp = AmpMode::bf16;
  TrainStep step(*h.model, *h.opt.optimizer, h.scaler, o);
  auto r = step.run(random_batches(1, 8, 4));
  EXPECT_TRUE(r.skipped);
  EXPECT_TRUE(torch::equal(before, h.model->fc->weight));
  EXPECT_EQ(h.scaler.scale_value(), 128);
}

TEST(Schedule, CosineWarmsUpLinearlyThenDecaysToZero) {
  EXPECT_NEAR(cosine_lr(1.0, 0, 10, 110), 0.1, 1e-12);
  EXPECT_NEAR(cosine_lr(1.0, 9, 10, 110), 1.0, 1e-12);
  EXPECT_NEAR(cosine_lr(1.0, 60, 10, 110), 0.5, 1e-12);
  EXPECT_NEAR(cosine_lr(1.0, 110, 10, 110), 0.0, 1e-12);
}

TEST(Optimizer, NormsAndBiasesGetNoWeightDecayAndFrozenOnesAreLeftOut) {
  auto m = make_model("cnn", 10, 1);
  EXPECT_EQ(freeze(*m, {"features.0"}), 3);  // conv weight, bn weight and bias
  EXPECT_THROW(freeze(*m, {"features.9"}), Error);
  auto setup = make_optimizer(*m, {});
  auto& groups = setup.optimizer->param_groups();
  ASSERT_EQ(groups.size(), 2u);
  auto& decay = static_cast<torch::optim::AdamWOptions&>(groups[0].options());
  auto& no_decay = static_cast<torch::optim::AdamWOptions&>(groups[1].options());
  EXPECT_GT(decay.weight_decay(), 0);
  EXPECT_EQ(no_decay.weight_decay(), 0);
  for (auto& p : groups[0].params()) EXPECT_GT(p.dim(), 1);
  for (auto& p : groups[1].params()) EXPECT_EQ(p.dim(), 1);
  for (auto& [name, p] : setup.params) EXPECT_NE(name.rfind("features.0.", 0), 0u) << name;
}

TEST(Events, Crc32cMatchesTheStandardCheckValue) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(""), 0u);
}

TEST(Events, TensorboardReadsTheScalars) {
  std::string python = std::getenv("FRUGAL_PYTHON") ? std::getenv("FRUGAL_PYTHON")
                                                    : std::string(FRUGAL_SOURCE_DIR) + "/.venv/bin/python";
  if (!fs::exists(python)) GTEST_SKIP() << "no Python with tensorboard (set FRUGAL_PYTHON)";
  fs::path dir = fs::temp_directory_path() / ("frugal-events-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    EventWriter w(dir);
    for (int s = 1; s <= 3; ++s) w.scalar("val/accuracy", 0.25f * s, s);
  }
  std::string script =
      "from tensorboard.backend.event_processing.event_accumulator import EventAccumulator as E\n"
      "import sys\n"
      "a = E(sys.argv[1]); a.Reload()\n"
      "v = [(e.step, round(e.value, 4)) for e in a.Scalars('val/accuracy')]\n"
      "sys.exit(0 if v == [(1, 0.25), (2, 0.5), (3, 0.75)] else print(v) or 1)\n";
  std::ofstream(dir / "check.py") << script;
  std::string cmd = "'" + python + "' '" + (dir / "check.py").string() + "' '" + dir.string() + "' 2>/dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  // Not fs::remove_all: the wheel's libtorch.so exports its own copy, which crashes here.
  EXPECT_EQ(std::system(("rm -rf '" + dir.string() + "'").c_str()), 0);
}

}  // namespace
}  // namespace frugal

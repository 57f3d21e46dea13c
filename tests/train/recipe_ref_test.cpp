// --ema and --mixup/--cutmix against timm (tests/train/recipe_ref.py, run with the .venv's timm):
// the weights' average after every update bitwise equal to ModelEmaV3(use_warmup=True)'s, the
// mixed images, soft targets and loss equal to Mixup's (mode batch) and SoftTargetCrossEntropy's
// for the same draw; and the draws themselves: Beta(A, A) lambdas, cutmix half the time with both
// on, the same draw for the same seed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "frugal/checkpoint/safetensors.h"
#include "frugal/models/models.h"
#include "frugal/train/optim.h"
#include "reference_python.h"
#include "test_files.h"
#include "train/batch_mix.h"
#include "train/weight_average.h"

namespace frugal {
namespace {

namespace fs = std::filesystem;

bool recipe_same_bits(const torch::Tensor& a, const torch::Tensor& b) {
  return a.scalar_type() == b.scalar_type() && a.sizes() == b.sizes() &&
         torch::equal(a.contiguous().reshape({-1}).view(torch::kUInt8),
                      b.contiguous().reshape({-1}).view(torch::kUInt8));
}

// A folder for one test's files, removed after it.
class RecipeDir {
 public:
  explicit RecipeDir(const std::string& name) {
    std::string t = "/tmp/" + name + "-XXXXXX";
    if (::mkdtemp(t.data()) == nullptr) ADD_FAILURE() << "mkdtemp " << t;
    path_ = t;
  }
  ~RecipeDir() { testing::remove_tree(path_); }
  RecipeDir(const RecipeDir&) = delete;
  RecipeDir& operator=(const RecipeDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

bool recipe_have_timm(const std::string& py) {
  return !py.empty() && std::system((py + " -c 'import timm, safetensors' 2>/dev/null").c_str()) == 0;
}

// Runs recipe_ref.py MODE on `in` and returns what it wrote.
SafetensorsFile recipe_reference(const std::string& py, const char* mode, const fs::path& in) {
  const fs::path out = in.parent_path() / (std::string(mode) + "-ref.safetensors");
  const std::string cmd =
      py + " " + FRUGAL_SOURCE_DIR + "/tests/train/recipe_ref.py " + mode + " " + in.string() + " " + out.string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return load_safetensors(out);
}

TEST(RecipeReference, WeightAverageMatchesTimmModelEmaV3) {
  const std::string py = testing::python();
  if (!recipe_have_timm(py)) GTEST_SKIP() << "no Python with timm and safetensors (.venv)";
  RecipeDir dir("frugal-ema");
  torch::manual_seed(3);
  auto model = make_model("cnn", 10, 1);
  const double decay = 0.6;  // the warmup's 1 - (1 + k)^(-2/3) passes it at step 4: both regimes
  const int steps = 12;
  WeightAverage average(*model, decay);
  NamedTensors inputs;
  auto record = [&](int t) {
    for (const auto& [name, v] : state_dict(*model))
      inputs.emplace_back("s" + std::to_string(t) + "." + name, v.clone());
  };
  record(0);
  for (int t = 1; t <= steps; ++t) {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.add_(torch::randn_like(p) * 0.1);
    for (auto& b : model->buffers()) b.is_floating_point() ? b.add_(torch::rand_like(b)) : b.add_(1);
    record(t);
    average.update(t);
  }
  const fs::path in = dir.path() / "ema.safetensors";
  save_safetensors(in, inputs, {{"decay", "0.6"}, {"steps", std::to_string(steps)}});
  const SafetensorsFile ref = recipe_reference(py, "ema", in);
  ASSERT_EQ(average.names().size(), ref.tensors.size());
  for (std::size_t i = 0; i < average.names().size(); ++i) {
    const std::string& name = average.names()[i];
    EXPECT_TRUE(recipe_same_bits(average.tensors()[i], ref.get("ema." + name))) << name;
  }
  EXPECT_EQ(WeightAverage::decay_at(decay, 1), 0.0);  // the first update copies
  EXPECT_DOUBLE_EQ(WeightAverage::decay_at(0.999, 2), 1.0 - std::pow(2.0, -2.0 / 3.0));
  EXPECT_EQ(WeightAverage::decay_at(decay, 100), decay);
}

TEST(RecipeReference, WeightAverageSwapsAndRoundTripsThroughACheckpoint) {
  torch::manual_seed(4);
  auto model = make_model("cnn", 10, 1);
  WeightAverage average(*model, 0.9);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.add_(1.0);
  }
  average.update(5);
  // state_dict's CPU tensors are the model's own: copies, to keep what they held.
  auto copy = [](std::map<std::string, torch::Tensor> m) {
    for (auto& [name, t] : m) t = t.clone();
    return m;
  };
  const auto trained = copy(state_dict(*model));
  average.swap();
  const auto swapped = copy(state_dict(*model));
  EXPECT_FALSE(torch::equal(trained.at("fc.weight"), swapped.at("fc.weight")));
  average.swap();
  EXPECT_TRUE(torch::equal(trained.at("fc.weight"), state_dict(*model).at("fc.weight")));

  Checkpoint ck;
  ck.weights = to_named(state_dict(*model));
  average.put(ck);
  EXPECT_TRUE(torch::equal(ck.weight_map().at("fc.weight"), swapped.at("fc.weight")));  // the average
  ASSERT_NE(ck.find_state("trained.fc.weight"), nullptr);
  EXPECT_TRUE(torch::equal(*ck.find_state("trained.fc.weight"), trained.at("fc.weight")));

  auto other = make_model("cnn", 10, 1);
  WeightAverage resumed(*other, 0.9);
  ASSERT_TRUE(resumed.load(ck));
  for (const auto& [name, t] : state_dict(*other)) EXPECT_TRUE(torch::equal(t, trained.at(name))) << name;
  for (std::size_t i = 0; i < resumed.names().size(); ++i)
    EXPECT_TRUE(torch::equal(resumed.tensors()[i], swapped.at(resumed.names()[i]))) << resumed.names()[i];
  Checkpoint plain;
  plain.weights = to_named(state_dict(*model));
  EXPECT_FALSE(resumed.load(plain));  // no average in it: the caller starts one
}

TEST(RecipeReference, MixMatchesTimmMixup) {
  const std::string py = testing::python();
  if (!recipe_have_timm(py)) GTEST_SKIP() << "no Python with timm and safetensors (.venv)";
  RecipeDir dir("frugal-mix");
  struct Case {
    double lambda;
    bool cutmix;
    std::int64_t cy, cx;
    double smoothing;
    bool multi_label;
  };
  const std::vector<Case> cases = {
      {0.3, false, 0, 0, 0.1, false}, {0.55, true, 1, 9, 0.1, false}, {0.2, true, 4, 5, 0.0, false},
      {0.7, false, 0, 0, 0.2, true},  {0.4, true, 7, 0, 0.1, true},   {1.0, false, 0, 0, 0.1, false},
      {0.01, true, 3, 3, 0.0, false},
  };
  const int classes = 5;
  NamedTensors inputs;
  Metadata meta;
  std::vector<std::pair<torch::Tensor, torch::Tensor>> ours;  // (x, y) per case
  std::vector<torch::Tensor> loss;
  torch::manual_seed(5);
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    const std::string K = std::to_string(k);
    torch::Tensor x = torch::randn({6, 3, 8, 10});
    torch::Tensor labels = c.multi_label ? torch::randint(0, 2, {6, classes}).to(torch::kFloat32)
                                         : torch::randint(0, classes, {6}, torch::kLong);
    torch::Tensor logits = torch::randn({6, classes});
    inputs.emplace_back("x." + K, x.clone());
    inputs.emplace_back("labels." + K, labels);
    inputs.emplace_back("logits." + K, logits);
    meta["case." + K] =
        nlohmann::json{
            {"lam", c.lambda},    {"cutmix", c.cutmix},          {"cy", c.cy}, {"cx", c.cx}, {"smoothing", c.smoothing},
            {"classes", classes}, {"multi_label", c.multi_label}}
            .dump();
    MixOptions o;
    o.mixup = o.cutmix = 1.0;
    o.label_smoothing = c.smoothing;
    o.classes = classes;
    o.multi_label = c.multi_label;
    MixDraw d;
    d.lambda = c.lambda;
    if (c.cutmix) d = cutmix_box(8, 10, c.lambda, c.cy, c.cx);
    torch::Tensor y = mix_batch(x, labels, d, o);
    ours.emplace_back(x, y);
    loss.push_back(soft_target_cross_entropy(logits, y));
  }
  const fs::path in = dir.path() / "mix.safetensors";
  save_safetensors(in, inputs, meta);
  const SafetensorsFile ref = recipe_reference(py, "mix", in);
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const std::string K = std::to_string(k);
    EXPECT_TRUE(recipe_same_bits(ours[k].first, ref.get("x." + K))) << "case " << k << ": images";
    EXPECT_TRUE(recipe_same_bits(ours[k].second, ref.get("y." + K))) << "case " << k << ": targets";
    EXPECT_TRUE(recipe_same_bits(loss[k].reshape({1}), ref.get("loss." + K))) << "case " << k << ": loss";
  }
}

// --lr-backbone: frugal's optimizer groups (decayed or not, head or backbone at lr x scale) step
// as torch.optim's with the same groups do, through a changing learning rate.
void expect_groups_match(const std::string& py, OptimizerKind kind, double scale) {
  RecipeDir dir("frugal-groups");
  torch::manual_seed(6);
  auto model = make_model("cnn", 10, 1);
  OptimizerOptions o;
  o.kind = kind;
  o.lr = 0.01;
  o.weight_decay = 0.05;
  o.backbone_lr_scale = scale;
  OptimizerSetup setup = make_optimizer(*model, o);
  EXPECT_EQ(setup.lr_scale.size(), scale == 1.0 ? 2u : 4u);
  const std::vector<double> lrs = {0.01, 0.008, 0.005, 0.002};
  NamedTensors inputs;
  for (const auto& [name, p] : setup.params) inputs.emplace_back("p." + name, p.detach().clone());
  for (std::size_t t = 0; t < lrs.size(); ++t) {
    set_lr(setup, lrs[t]);
    for (const auto& [name, p] : setup.params) {
      torch::Tensor g = torch::randn_like(p);
      inputs.emplace_back("g." + std::to_string(t) + "." + name, g.clone());
      p.mutable_grad() = g;
    }
    setup.optimizer->step();
  }
  const fs::path in = dir.path() / "groups.safetensors";
  save_safetensors(in, inputs,
                   {{"kind", kind == OptimizerKind::adamw ? "adamw" : "sgd"},
                    {"lrs", nlohmann::json(lrs).dump()},
                    {"scale", std::to_string(scale)},
                    {"head", model->head_prefix()},
                    {"weight_decay", "0.05"}});
  const SafetensorsFile ref = recipe_reference(py, "groups", in);
  for (const auto& [name, p] : setup.params) {
    const torch::Tensor r = ref.get("p." + name);
    EXPECT_TRUE(torch::allclose(p.detach(), r, 1e-6, 1e-7))
        << name << ": max difference " << (p.detach() - r).abs().max().item<double>();
  }
  const auto& groups = setup.optimizer->param_groups();
  EXPECT_DOUBLE_EQ(groups.back().options().get_lr(), lrs.back() * scale);  // the backbone's, last
  EXPECT_DOUBLE_EQ(groups.front().options().get_lr(), lrs.back());         // the head's
}

TEST(RecipeReference, BackboneLearningRateMatchesTorchParamGroups) {
  const std::string py = testing::python();
  if (!recipe_have_timm(py)) GTEST_SKIP() << "no Python with timm and safetensors (.venv)";
  expect_groups_match(py, OptimizerKind::adamw, 0.1);
  expect_groups_match(py, OptimizerKind::sgd, 0.25);
  expect_groups_match(py, OptimizerKind::adamw, 1.0);
}

TEST(RecipeReference, MixDrawsAreBetaAndRepeatable) {
  MixOptions o;
  o.mixup = 0.4;
  const int n = 20000;
  double sum = 0, sq = 0;
  for (int i = 0; i < n; ++i) {
    const MixDraw d = draw_mix(o, 32, 32, static_cast<std::uint64_t>(i));
    EXPECT_FALSE(d.cutmix);
    sum += d.lambda;
    sq += d.lambda * d.lambda;
  }
  const double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 0.01);                              // Beta(a, a): mean 1/2
  EXPECT_NEAR(var, 1.0 / (4.0 * (2.0 * 0.4 + 1.0)), 0.005);  // variance 1 / (4 (2a + 1)) = 0.139
  o.cutmix = 1.0;
  int cutmixes = 0;
  for (int i = 0; i < n; ++i) {
    const MixDraw d = draw_mix(o, 32, 32, static_cast<std::uint64_t>(i));
    if (!d.cutmix) continue;
    ++cutmixes;
    EXPECT_TRUE(d.y0 >= 0 && d.y0 <= d.y1 && d.y1 <= 32 && d.x0 >= 0 && d.x0 <= d.x1 && d.x1 <= 32);
    EXPECT_DOUBLE_EQ(d.lambda, 1.0 - static_cast<double>((d.y1 - d.y0) * (d.x1 - d.x0)) / 1024.0);
  }
  EXPECT_NEAR(static_cast<double>(cutmixes) / n, 0.5, 0.02);
  const MixDraw a = draw_mix(o, 32, 32, 77), b = draw_mix(o, 32, 32, 77);
  EXPECT_TRUE(a.cutmix == b.cutmix && a.lambda == b.lambda && a.y0 == b.y0 && a.x1 == b.x1);
}

}  // namespace
}  // namespace frugal

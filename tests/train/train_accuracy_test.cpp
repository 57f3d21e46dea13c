// The training accuracy a step counts (StepResult::correct): top-1 of the step's own forwards,
// summed over its micro-batches, held to an independent argmax over the same logits; and -1 for
// multi-label targets, which have no top-1.
#include <gtest/gtest.h>

#include "frugal/models/models.h"
#include "frugal/train/amp.h"
#include "frugal/train/optim.h"
#include "frugal/train/step.h"
#include "frugal/training/train_log.h"

namespace frugal {
namespace {

// A linear classifier of 4x4 images: no dropout or batch norm, so a forward before the step gives
// the logits the step's own forwards see.
class LinearProbe : public Model {
 public:
  explicit LinearProbe(int classes) { fc = register_module("fc", torch::nn::Linear(16, classes)); }
  torch::Tensor forward(torch::Tensor x) override { return fc(x.flatten(1)); }
  std::string head_prefix() const override { return "fc"; }
  torch::nn::Linear fc{nullptr};
};

struct AccuracyRig {
  explicit AccuracyRig(int micro, int classes = 5) : scaler({.enabled = false}) {
    torch::manual_seed(11);
    model = std::make_shared<LinearProbe>(classes);
    OptimizerOptions o;
    o.lr = 0.1;
    opt = make_optimizer(*model, o);
    options.micro_batch = micro;
    step = std::make_unique<TrainStep>(*model, *opt.optimizer, scaler, options);
  }
  // Top-1 right answers of the model as it is now over `images` against `labels`.
  std::int64_t argmax_right(const torch::Tensor& images, const torch::Tensor& labels) {
    torch::NoGradGuard no_grad;
    const torch::Tensor logits = model->forward(prepare_batch(images, options));
    std::int64_t right = 0;
    for (std::int64_t i = 0; i < labels.size(0); ++i) {
      const auto row = logits[i];
      std::int64_t best = 0;
      for (std::int64_t k = 1; k < row.size(0); ++k)
        if (row[k].item<float>() > row[best].item<float>()) best = k;
      right += best == labels[i].item<std::int64_t>() ? 1 : 0;
    }
    return right;
  }
  std::shared_ptr<LinearProbe> model;
  OptimizerSetup opt;
  LossScaler scaler;
  StepOptions options;
  std::unique_ptr<TrainStep> step;
};

TEST(TrainAccuracy, CountsTopOneOverEveryMicroBatchOfTheStep) {
  for (int micro : {64, 7, 1}) {
    AccuracyRig rig(micro);
    torch::manual_seed(3);
    const auto images = torch::randint(0, 256, {40, 1, 4, 4}, torch::kUInt8);
    // Labels that agree with the untrained model on some samples and not on others.
    torch::Tensor labels;
    {
      torch::NoGradGuard no_grad;
      labels = rig.model->forward(prepare_batch(images, rig.options)).argmax(1);
    }
    labels.slice(0, 0, 15).fill_(0);
    const std::int64_t expected = rig.argmax_right(images, labels);
    ASSERT_GT(expected, 0) << "micro " << micro;
    ASSERT_LT(expected, 40) << "micro " << micro;
    const StepResult r = rig.step->run(
        {{images.slice(0, 0, 25), labels.slice(0, 0, 25)}, {images.slice(0, 25, 40), labels.slice(0, 25, 40)}});
    EXPECT_EQ(r.samples, 40);
    EXPECT_EQ(r.correct, expected) << "micro " << micro;
  }
}

TEST(TrainAccuracy, ReducedLikeTheLossAcrossProcesses) {
  AccuracyRig rig(8);
  // A second process's count arrives through reduce_gradients' sum: here, 5 more right answers.
  rig.step->reduce_gradients = [](const std::vector<torch::Tensor>&, std::vector<torch::Tensor> extra) {
    ASSERT_EQ(extra.size(), 2U);
    torch::NoGradGuard no_grad;
    extra[1].add_(5);
  };
  torch::manual_seed(4);
  const auto images = torch::randint(0, 256, {16, 1, 4, 4}, torch::kUInt8);
  const auto labels = torch::randint(0, 5, {16}, torch::kInt64);
  const std::int64_t expected = rig.argmax_right(images, labels) + 5;
  const StepResult r = rig.step->run({{images, labels}}, 32);
  EXPECT_EQ(r.samples, 32);
  EXPECT_EQ(r.correct, expected);
}

TEST(TrainAccuracy, MultiLabelTargetsHaveNoTopOne) {
  AccuracyRig rig(8, 3);
  torch::manual_seed(5);
  const auto images = torch::randint(0, 256, {12, 1, 4, 4}, torch::kUInt8);
  const auto tags = torch::randint(0, 2, {12, 3}, torch::kInt64).to(torch::kFloat32);
  const StepResult r = rig.step->run({{images, tags}});
  EXPECT_EQ(r.samples, 12);
  EXPECT_TRUE(std::isfinite(r.loss));
  EXPECT_EQ(r.correct, -1);
}

}  // namespace
}  // namespace frugal

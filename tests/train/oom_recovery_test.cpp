// Out-of-memory recovery beyond the forward/backward of a training step: allocation failures that
// cuBLAS/cuDNN report as plain c10::Error, an OOM inside optimizer.step(), evaluation, and the
// loaders' retry policy. Each failure is injected on the CPU through the same kind of seam as
// TrainStep.OutOfMemoryHalvesTheMicroBatchAndRedoesTheSameStep.
#include <gtest/gtest.h>

#include <c10/util/Exception.h>

#include "frugal/loader/oom.h"
#include "frugal/util/error.h"
#include "frugal/train/amp.h"
#include "frugal/train/optim.h"
#include "frugal/train/step.h"
#include "frugal/train/evaluate.h"
#include "frugal/training/train_config.h"
#include "frugal/training/train_log.h"
#include "frugal/models/models.h"
#include "train/random_batches.h"

namespace frugal {
namespace {

using Batches = std::vector<std::pair<torch::Tensor, torch::Tensor>>;
using testing::random_batches;

class TwoLayerModel : public Model {
 public:
  TwoLayerModel() {
    fc1 = register_module("fc1", torch::nn::Linear(16, 8));
    fc2 = register_module("fc2", torch::nn::Linear(8, 3));
  }
  torch::Tensor forward(torch::Tensor x) override { return fc2(torch::relu(fc1(x.flatten(1)))); }
  std::string head_prefix() const override { return "fc2"; }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};

std::shared_ptr<TwoLayerModel> tiny_model() {
  torch::manual_seed(7);
  return std::make_shared<TwoLayerModel>();
}

std::vector<torch::Tensor> weights(Model& m) {
  std::vector<torch::Tensor> w;
  for (auto& p : m.parameters()) w.push_back(p.detach().clone());
  return w;
}

bool same(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!torch::allclose(a[i], b[i], 1e-6, 1e-7)) return false;
  return true;
}

struct TwoLayerHarness {
  explicit TwoLayerHarness(int micro, OptimizerKind kind = OptimizerKind::sgd) : scaler({.enabled = false}) {
    model = tiny_model();
    OptimizerOptions o;
    o.kind = kind;
    o.lr = 0.1;
    opt = make_optimizer(*model, o);
    StepOptions s;
    s.micro_batch = micro;
    step = std::make_unique<TrainStep>(*model, *opt.optimizer, scaler, s);
  }
  std::shared_ptr<TwoLayerModel> model;
  OptimizerSetup opt;
  LossScaler scaler;
  std::unique_ptr<TrainStep> step;
};

// What LibTorch throws for these (ATen/cuda/Exceptions.h: TORCH_CUDABLAS_CHECK, AT_CUDNN_CHECK).
const char* const kWorkspaceFailures[] = {
    "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasLtMatmul( ltHandle, ...)`",
    "CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`",
    "cuDNN error: CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED",
    "cuDNN error: CUDNN_STATUS_ALLOC_FAILED",
    "CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported",
};

TEST(OutOfMemory, RecognisesCublasAndCudnnAllocationFailuresButNotOtherErrors) {
  for (const char* m : kWorkspaceFailures) {
    try {
      TORCH_CHECK(false, m);
    } catch (const c10::Error& e) {
      EXPECT_TRUE(is_out_of_memory(e)) << m;
    }
  }
  try {
    TORCH_CHECK_WITH(OutOfMemoryError, false, "CUDA out of memory. Tried to allocate 2.00 GiB");
  } catch (const c10::Error& e) {
    EXPECT_TRUE(is_out_of_memory(e));
  }
  for (const char* m : {"CUDA error: an illegal memory access was encountered",
                        "cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a "
                        "non-contiguous input.",
                        "CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasSetStream(handle, stream)`"}) {
    try {
      TORCH_CHECK(false, m);
    } catch (const c10::Error& e) {
      EXPECT_FALSE(is_out_of_memory(e)) << m;
    }
  }
  EXPECT_FALSE(is_out_of_memory(std::runtime_error("CUBLAS_STATUS_ALLOC_FAILED")));
}

TEST(TrainStep, CublasAndCudnnWorkspaceFailuresAreRecoveredLikeOutOfMemory) {
  auto data = random_batches(2, 8, 2);
  TwoLayerHarness clean(8);
  auto rc = clean.step->run(data);
  for (const char* m : kWorkspaceFailures) {
    TwoLayerHarness failing(8);
    int injected = 0;
    failing.step->before_micro_step = [&](std::int64_t micro_step) {
      if (micro_step == 1 && injected++ == 0) TORCH_CHECK(false, m);
    };
    auto rf = failing.step->run(data);
    EXPECT_EQ(injected, 2) << m;  // thrown once; the redone step passes the seam at the same count
    EXPECT_TRUE(rf.oom_recovered) << m;
    EXPECT_EQ(failing.step->micro_batch(), 4) << m;
    EXPECT_NEAR(rc.loss, rf.loss, 1e-6) << m;
    EXPECT_TRUE(same(weights(*clean.model), weights(*failing.model))) << m;
  }
}

// --sync-bn on several ranks (equal_forwards): a rank that halved its micro-batch alone would make
// more batch-norm collectives than the others and hang them; it stops with a budget error instead.
TEST(TrainStep, WithEqualForwardsOutOfMemoryIsABudgetErrorNotAHalving) {
  auto model = tiny_model();
  OptimizerOptions o;
  o.kind = OptimizerKind::sgd;
  auto opt = make_optimizer(*model, o);
  LossScaler scaler({.enabled = false});
  StepOptions s;
  s.micro_batch = 8;
  s.equal_forwards = 8;
  TrainStep step(*model, *opt.optimizer, scaler, s);
  step.before_micro_step = [](std::int64_t) { TORCH_CHECK(false, "CUDA error: out of memory"); };
  try {
    step.run(random_batches(1, 8, 4));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::budget);
    EXPECT_NE(std::string(e.what()).find("--sync-bn"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--accum"), std::string::npos) << e.what();
  }
  EXPECT_EQ(step.micro_batch(), 8);
}

TEST(TrainStep, OtherLibTorchErrorsAreNotTakenForOutOfMemory) {
  TwoLayerHarness h(8);
  h.step->before_micro_step = [](std::int64_t) { TORCH_CHECK(false, "CUDA error: an illegal memory access"); };
  EXPECT_THROW(h.step->run(random_batches(1, 8, 3)), c10::Error);
  EXPECT_EQ(h.step->micro_batch(), 8);
}

// SGD without momentum (no state) that, once, updates the first `update_first` parameters as SGD
// would and then runs out of memory: what LibTorch's per-parameter loop does when an allocation
// fails part-way.
class FailingSgd : public torch::optim::SGD {
 public:
  FailingSgd(std::vector<torch::Tensor> params, double lr) : SGD(std::move(params), torch::optim::SGDOptions(lr)) {}
  int update_first = -1;  // -1: never fails
  int failures = 0;
  torch::Tensor step(LossClosure closure = nullptr) override {
    if (update_first >= 0) {
      int k = update_first;
      update_first = -1;
      ++failures;
      torch::NoGradGuard no_grad;
      double lr = static_cast<torch::optim::SGDOptions&>(param_groups()[0].options()).lr();
      for (auto& p : param_groups()[0].params())
        if (k-- > 0 && p.grad().defined()) p.add_(p.grad(), -lr);
      TORCH_CHECK_WITH(OutOfMemoryError, false, "injected: out of memory inside optimizer.step()");
    }
    return SGD::step(std::move(closure));
  }
};

struct SgdRun {
  explicit SgdRun(int update_first) : scaler({.enabled = false}) {
    model = tiny_model();
    opt = std::make_unique<FailingSgd>(model->parameters(), 0.1);
    opt->update_first = update_first;
    StepOptions s;
    s.micro_batch = 8;
    step = std::make_unique<TrainStep>(*model, *opt, scaler, s);
  }
  std::shared_ptr<TwoLayerModel> model;
  std::unique_ptr<FailingSgd> opt;
  LossScaler scaler;
  std::unique_ptr<TrainStep> step;
};

TEST(TrainStep, OutOfMemoryInsideOptimizerStepBeforeAnyUpdateIsRedone) {
  auto data = random_batches(1, 8, 5);
  SgdRun clean(-1), failing(0);
  clean.step->run(data);
  auto r = failing.step->run(data);
  EXPECT_EQ(failing.opt->failures, 1);
  EXPECT_TRUE(r.oom_recovered);
  EXPECT_TRUE(same(weights(*clean.model), weights(*failing.model)));
}

TEST(TrainStep, OutOfMemoryInsideOptimizerStepAfterSomeUpdatesIsNotRedone) {
  auto data = random_batches(1, 8, 5);
  SgdRun clean(-1), failing(1);
  clean.step->run(data);
  auto before = weights(*failing.model);
  try {
    failing.step->run(data);
    FAIL() << "the step was redone: its first parameter was stepped twice";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::budget);
    EXPECT_NE(std::string(e.what()).find("cannot be redone"), std::string::npos) << e.what();
  }
  EXPECT_EQ(failing.opt->failures, 1);
  // Stepped exactly once: the first parameter as the clean step left it, the others untouched.
  auto after = weights(*failing.model), stepped = weights(*clean.model);
  EXPECT_TRUE(torch::allclose(after[0], stepped[0], 1e-6, 1e-7));
  for (std::size_t i = 1; i < after.size(); ++i) EXPECT_TRUE(torch::equal(after[i], before[i])) << i;
}

TEST(Optimizer, AdamWStateExistsBeforeTheFirstStepAndStepsAsLibTorchsOwn) {
  TwoLayerHarness ours(8, OptimizerKind::adamw);
  auto count = ours.opt.params.size();
  EXPECT_EQ(ours.opt.optimizer->state().size(), count);
  // LibTorch's AdamW with its lazily created state, same groups and options.
  auto model = tiny_model();
  std::vector<torch::Tensor> decay, no_decay;
  for (auto& p : model->parameters()) (p.dim() > 1 ? decay : no_decay).push_back(p);
  using torch::optim::AdamWOptions;
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, std::make_unique<AdamWOptions>(AdamWOptions(0.1).weight_decay(0.05)));
  groups.emplace_back(no_decay, std::make_unique<AdamWOptions>(AdamWOptions(0.1).weight_decay(0.0)));
  torch::optim::AdamW lazy(std::move(groups), AdamWOptions(0.1));
  LossScaler scaler({.enabled = false});
  StepOptions s;
  s.micro_batch = 8;
  TrainStep theirs(*model, lazy, scaler, s);
  for (std::uint64_t seed : {1, 2, 3}) {
    auto data = random_batches(1, 8, seed);
    ours.step->run(data);
    theirs.run(data);
  }
  auto a = weights(*ours.model), b = weights(*model);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << i;
}

TEST(Evaluate, OutOfMemoryHalvesTheChunkAndCountsEverySampleOnce) {
  auto model = tiny_model();
  auto data = random_batches(2, 256, 9);
  auto source = [&data](std::size_t* next) {
    return [&data, next](torch::Tensor& images, torch::Tensor& labels) {
      if (*next >= data.size()) return false;
      images = data[*next].first;
      labels = data[*next].second;
      ++*next;
      return true;
    };
  };
  StepOptions o;
  std::size_t i = 0;
  EvalResult clean = evaluate(*model, source(&i), 3, o);
  EvalOptions e;
  int injected = 0;
  e.before_forward = [&](std::int64_t forward) {
    if ((forward == 1 || forward == 2) && injected < 2) {
      ++injected;
      TORCH_CHECK_WITH(OutOfMemoryError, false, "injected CUDA out of memory");
    }
  };
  std::size_t j = 0;
  EvalResult chunked = evaluate(*model, source(&j), 3, o, &e);
  EXPECT_EQ(injected, 2);
  EXPECT_EQ(e.micro_batch, 64);  // 256 -> 128 -> 64, kept for the next evaluation
  EXPECT_EQ(chunked.samples, 512);
  EXPECT_EQ(chunked.accuracy, clean.accuracy);
  EXPECT_NEAR(chunked.loss, clean.loss, 1e-6);  // float32 sums over other chunks
  EXPECT_EQ(chunked.per_class, clean.per_class);
}

TEST(Evaluate, OutOfMemoryForASingleImageIsABudgetError) {
  auto model = tiny_model();
  auto data = random_batches(1, 4, 9);
  bool given = false;
  EvalOptions e;
  e.before_forward = [](std::int64_t) { TORCH_CHECK_WITH(OutOfMemoryError, false, "injected"); };
  try {
    evaluate(
        *model,
        [&](torch::Tensor& images, torch::Tensor& labels) {
          if (given) return false;
          given = true;
          images = data[0].first;
          labels = data[0].second;
          return true;
        },
        3, StepOptions{}, &e);
    FAIL() << "no error";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::budget);
  }
}

// The GPU loader's policy (its integration runs in tests/gpu): free the cache and retry once,
// then hand the batch to the fallback (CPU decoding); other errors pass through.
TEST(RetryAfterOom, RetriesOnceThenFallsBack) {
  int attempts = 0, releases = 0;
  bool fell_back = false;
  auto oom = [&]() -> int {
    ++attempts;
    TORCH_CHECK(false, "CUDA error: out of memory");
  };
  int v = retry_after_oom<int>(
      oom, [&] { ++releases; }, [] { return 7; }, &fell_back);
  EXPECT_EQ(v, 7);
  EXPECT_TRUE(fell_back);
  EXPECT_EQ(attempts, 2);
  EXPECT_EQ(releases, 2);

  attempts = releases = 0;
  auto once = [&]() -> int {
    if (attempts++ == 0) TORCH_CHECK_WITH(OutOfMemoryError, false, "injected");
    return 3;
  };
  EXPECT_EQ(retry_after_oom<int>(
                once, [&] { ++releases; }, [] { return 7; }, &fell_back),
            3);
  EXPECT_FALSE(fell_back);
  EXPECT_EQ(releases, 1);

  auto broken = []() -> int { TORCH_CHECK(false, "CUDA error: an illegal memory access"); };
  EXPECT_THROW(retry_after_oom<int>(
                   broken, [] {}, [] { return 7; }),
               c10::Error);
}

}  // namespace
}  // namespace frugal

// --sync-bn's batch norm (models/batch_norm.cpp) against LibTorch's own BatchNorm2d, the
// independent implementation: with one process (a collective that changes nothing) both give the
// same output, input and parameter gradients, and running statistics; and with a collective that
// adds a second process's sums, the statistics are those of both processes' samples together.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "frugal/models/models.h"
#include "models/layers.h"

namespace frugal {
namespace {

struct SyncOff {
  ~SyncOff() { set_batch_norm_sync(nullptr); }
};

void expect_close(const torch::Tensor& a, const torch::Tensor& b, double tol, const char* what) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  EXPECT_LT((a - b).abs().max().item<double>(), tol) << what;
}

TEST(SyncBatchNorm, OneProcessEqualsBatchNorm2d) {
  SyncOff off;
  torch::manual_seed(0);
  auto x = (torch::randn({6, 5, 7, 7}) * 3 + 1).contiguous(torch::MemoryFormat::ChannelsLast);
  auto dy = torch::randn({6, 5, 7, 7});
  detail::Norm2d ours(5);
  torch::nn::BatchNorm2d ref(5);
  {
    torch::NoGradGuard g;
    ours->weight.uniform_(0.5, 1.5);
    ours->bias.uniform_(-1, 1);
    ref->weight.copy_(ours->weight);
    ref->bias.copy_(ours->bias);
  }
  int calls = 0;
  set_batch_norm_sync([&](torch::Tensor&) { ++calls; });
  for (int step = 0; step < 3; ++step) {
    auto xa = x.clone().requires_grad_(true), xb = x.clone().requires_grad_(true);
    auto ya = ours(xa), yb = ref(xb);
    expect_close(ya, yb, 1e-5, "output");
    (ya * dy).sum().backward();
    (yb * dy).sum().backward();
    expect_close(xa.grad(), xb.grad(), 1e-5, "input gradient");
    expect_close(ours->weight.grad(), ref->weight.grad(), 1e-3, "weight gradient");
    expect_close(ours->bias.grad(), ref->bias.grad(), 1e-3, "bias gradient");
    ours->zero_grad();
    ref->zero_grad();
  }
  EXPECT_EQ(calls, 6);  // a forward and a backward collective per step: the sync path ran
  expect_close(ours->running_mean, ref->running_mean, 1e-6, "running mean");
  expect_close(ours->running_var, ref->running_var, 1e-5, "running var");
  EXPECT_EQ(ours->num_batches_tracked.item<std::int64_t>(), 3);
  // In evaluation it is BatchNorm2d's forward on the running statistics.
  ours->eval();
  ref->eval();
  expect_close(ours(x), ref(x), 1e-5, "eval output");
}

TEST(SyncBatchNorm, StatisticsSpanTheOtherProcessesSamples) {
  SyncOff off;
  torch::manual_seed(1);
  auto x = torch::randn({8, 3, 4, 4}) * 2;
  auto mine = x.slice(0, 0, 4), theirs = x.slice(0, 4, 8);
  // The "other process" adds the sums its half would contribute, as an all-reduce would.
  detail::Norm2d other(3);
  std::vector<torch::Tensor> their_sums;
  set_batch_norm_sync([&](torch::Tensor& t) { their_sums.push_back(t.clone()); });
  auto y_other = other(theirs);
  (y_other * 0).sum().backward();
  ASSERT_EQ(their_sums.size(), 2u);
  int call = 0;
  set_batch_norm_sync([&](torch::Tensor& t) {
    if (call == 0) t += their_sums[0];
    ++call;
  });
  detail::Norm2d ours(3);
  auto y = ours(mine);
  torch::nn::BatchNorm2d ref(3);
  auto y_ref = ref(x).slice(0, 0, 4);
  expect_close(y, y_ref, 1e-5, "normalised by the statistics of all 8 samples");
  expect_close(ours->running_mean, ref->running_mean, 1e-6, "running mean over both halves");
  expect_close(ours->running_var, ref->running_var, 1e-5, "running var over both halves");
}

// The last chunks of an uneven batch can be empty on every rank: nothing is normalised or counted,
// the running statistics stay as they were (no 0/0), and backward still runs its collective.
TEST(SyncBatchNorm, AnEmptyGlobalBatchChangesNothing) {
  SyncOff off;
  int calls = 0;
  set_batch_norm_sync([&](torch::Tensor&) { ++calls; });
  detail::Norm2d bn(4);
  auto mean = bn->running_mean.clone(), var = bn->running_var.clone();
  auto x = torch::zeros({0, 4, 5, 5}).requires_grad_(true);
  auto y = bn(x);
  EXPECT_EQ(y.numel(), 0);
  y.sum().backward();
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(bn->running_mean.equal(mean));
  EXPECT_TRUE(bn->running_var.equal(var));
  EXPECT_EQ(bn->num_batches_tracked.item<std::int64_t>(), 0);
  EXPECT_FALSE(bn->weight.grad().isnan().any().item<bool>());
}

}  // namespace
}  // namespace frugal

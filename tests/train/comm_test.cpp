// The wire between a run's processes (train/comm.h) and the model's placement over them
// (train/parallelism.h, train/data_parallel.h, train/make_parallelism.h): a single process
// answers with its own values, two ranks (threads of this process on a real c10d group) agree.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "frugal/models/models.h"
#include "loopback_group.h"
#include "train/comm.h"
#include "train/data_parallel.h"
#include "train/make_parallelism.h"

namespace frugal {
namespace {

struct Linear : Model {
  Linear() { fc = register_module("fc", torch::nn::Linear(2, 2)); }
  torch::Tensor forward(torch::Tensor x) override { return fc(x); }
  std::string head_prefix() const override { return "fc"; }
  torch::nn::Linear fc{nullptr};
};

struct NoBatches : BatchSource {
  void start(std::int64_t, std::int64_t) override {}
  std::optional<Batch> next() override { return std::nullopt; }
  std::int64_t batches_per_epoch() const override { return 0; }
  std::uint64_t samples_seen() const override { return 0; }
  std::uint64_t samples_bad() const override { return 0; }
};

TEST(Comm, ASingleProcessAnswersWithItsOwnValues) {
  auto solo = Comm::join(std::nullopt, torch::kCPU, std::chrono::milliseconds(1000), {});
  EXPECT_FALSE(solo->grouped());
  EXPECT_TRUE(solo->rank0());
  EXPECT_EQ(solo->world(), 1);
  Comm::StepPlan mine;
  mine.stop = Comm::StepPlan::Stop::deadline;
  mine.samples = 24;
  mine.total_steps = 100;
  mine.lr = 0.01;
  const auto plan = solo->agree_on_step(mine);
  EXPECT_EQ(plan.stop, mine.stop);
  EXPECT_EQ(plan.samples, 24);
  EXPECT_EQ(plan.total_steps, 100);
  EXPECT_EQ(plan.lr, 0.01);
  EXPECT_EQ(solo->from_rank0(7), 7);
  EXPECT_TRUE(solo->any(true));
  EXPECT_FALSE(solo->any(false));
  std::vector<torch::Tensor> t{torch::ones({2})};
  solo->average(t);
  solo->sum(t);
  solo->broadcast_from_rank0(t);
  EXPECT_TRUE(torch::equal(t[0], torch::ones({2})));
  EXPECT_EQ(solo->comm_seconds(), 0);
  EXPECT_EQ(solo->group(), nullptr);
}

// A single process is one replica that reads its images, leaves the evaluation's counts and its
// step's gradients alone, and says nothing of a group.
TEST(DataParallel, ASingleProcessIsTheOneCopy) {
  Comm solo;
  auto p = make_parallelism(solo);
  ASSERT_NE(dynamic_cast<DataParallel*>(p.get()), nullptr);
  EXPECT_EQ(p->replicas(), 1);
  EXPECT_EQ(p->replica(), 0);
  EXPECT_TRUE(p->reads_images());
  EXPECT_EQ(p->describe(), "");
  EXPECT_TRUE(p->epoch_figures().is_null());
  Linear model;
  NoBatches val;
  EvalOptions eo;
  const Parallelism::Evaluation how = p->for_evaluation(model, val, eo);
  EXPECT_EQ(&how.model, &model);
  EXPECT_EQ(&how.batches, &val);
  EXPECT_FALSE(eo.reduce);
  LossScaler scaler(LossScalerOptions{}, torch::kCPU);
  OptimizerOptions oo;
  auto opt = make_optimizer(model, oo);
  auto step = p->make_step(model, *opt.optimizer, scaler, StepOptions{});
  EXPECT_FALSE(step->reduce_gradients);
  EXPECT_FALSE(step->zero_gradients);
}

// Two ranks: the step's plan is rank 0's with the samples of both, a stop anywhere stops both,
// and data parallelism makes each rank a replica whose evaluation counts are summed.
TEST(Comm, TwoRanksAgreeAndSumTheirEvaluationCounts) {
  const int port = testing::free_port();
  struct Seen {
    Comm::StepPlan plan;
    bool any = false;
    std::int64_t from0 = 0;
    int replica = -1, replicas = 0;
    std::string describe;
    torch::Tensor counts;
    double seconds = 0;
    std::string error;
  };
  std::array<Seen, 2> seen;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank)
    threads.emplace_back([&, rank] {
      try {
        auto comm = Comm::join(testing::loopback_env(rank, 2, port), torch::kCPU, std::chrono::seconds(5), {});
        Seen& s = seen[static_cast<std::size_t>(rank)];
        Comm::StepPlan mine;
        mine.stop = rank == 1 ? Comm::StepPlan::Stop::signal : Comm::StepPlan::Stop::none;
        mine.samples = 3 + rank;
        mine.total_steps = 10 + rank;
        mine.lr = 0.5 + rank;
        mine.save_after = rank == 0;
        s.plan = comm->agree_on_step(mine);
        s.any = comm->any(rank == 1);
        s.from0 = comm->from_rank0(40 + rank);
        auto p = make_parallelism(*comm);
        s.replica = p->replica();
        s.replicas = p->replicas();
        s.describe = p->describe();
        Linear model;
        NoBatches val;
        EvalOptions eo;
        p->for_evaluation(model, val, eo);
        std::vector<torch::Tensor> counts{torch::full({2}, 1.0 + rank)};
        if (eo.reduce) eo.reduce(counts);
        s.counts = counts[0];
        s.seconds = comm->comm_seconds();
      } catch (const std::exception& e) {
        seen[static_cast<std::size_t>(rank)].error = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    const Seen& s = seen[static_cast<std::size_t>(r)];
    ASSERT_EQ(s.error, "") << "rank " << r;
    EXPECT_EQ(s.plan.stop, Comm::StepPlan::Stop::signal);
    EXPECT_EQ(s.plan.samples, 7);
    EXPECT_EQ(s.plan.total_steps, 10);
    EXPECT_EQ(s.plan.lr, 0.5);
    EXPECT_TRUE(s.plan.save_after);
    EXPECT_TRUE(s.any);
    EXPECT_EQ(s.from0, 40);
    EXPECT_EQ(s.replica, r);
    EXPECT_EQ(s.replicas, 2);
    EXPECT_EQ(s.describe, "distributed: rank " + std::to_string(r) + " of 2 (gloo)");
    EXPECT_TRUE(torch::equal(s.counts, torch::full({2}, 3.0))) << "rank " << r;
    EXPECT_GT(s.seconds, 0);
  }
}

}  // namespace
}  // namespace frugal

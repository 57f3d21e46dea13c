// Pipeline stages (train/pipeline.h): the cut, the 1F1B schedule, and two stages stepping
// together through a real c10d group (TCPStore + ProcessGroupGloo) of two threads of this
// process. The whole-run behaviour (bitwise equal to one process with --accum, kill, hang, resume)
// is tests/cli/train_pipeline.sh's.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <mutex>
#include <random>
#include <thread>

#include "frugal/checkpoint/checkpoint.h"
#include "frugal/loader/loader.h"
#include "frugal/models/models.h"
#include "frugal/train/evaluate.h"
#include "frugal/train/amp.h"
#include "frugal/train/optim.h"
#include "frugal/train/step.h"
#include "frugal/training/train_log.h"
#include "loopback_group.h"
#include "frugal/util/error.h"
#include "train/comm.h"
#include "train/distributed.h"
#include "train/pipeline.h"

namespace frugal {
namespace {

// The largest stage of the best cut, by trying every cut.
double brute_force(const std::vector<double>& cost, int stages, std::size_t from = 0) {
  if (stages == 1) {
    double s = 0;
    for (std::size_t i = from; i < cost.size(); ++i) s += cost[i];
    return s;
  }
  double best = std::numeric_limits<double>::infinity(), first = 0;
  for (std::size_t end = from + 1; end + static_cast<std::size_t>(stages - 1) <= cost.size(); ++end) {
    first += cost[end - 1];
    best = std::min(best, std::max(first, brute_force(cost, stages - 1, end)));
  }
  return best;
}

TEST(PipelineCut, BalancedCutIsTheBestOfEveryCut) {
  std::mt19937 rng(31);
  std::uniform_real_distribution<double> u(0.01, 1.0);
  for (int round = 0; round < 200; ++round) {
    const std::size_t n = 2 + rng() % 9;
    const int stages = 1 + static_cast<int>(rng() % std::min<std::size_t>(n, 4));
    std::vector<double> cost(n);
    for (auto& c : cost) c = u(rng);
    const auto begins = balance_stages(cost, stages);
    ASSERT_EQ(begins.size(), static_cast<std::size_t>(stages));
    ASSERT_EQ(begins[0], 0u);
    double largest = 0;
    for (int s = 0; s < stages; ++s) {
      const std::size_t b = begins[s], e = s + 1 < stages ? begins[s + 1] : n;
      ASSERT_LT(b, e) << "an empty stage";
      double sum = 0;
      for (std::size_t i = b; i < e; ++i) sum += cost[i];
      largest = std::max(largest, sum);
    }
    EXPECT_DOUBLE_EQ(largest, brute_force(cost, stages)) << "round " << round;
  }
  EXPECT_TRUE(balance_stages({1.0}, 2).empty());  // fewer pieces than stages
}

// Every micro-batch forwarded and then backpropagated once per stage; at most N - s in flight;
// and the stages' schedules, run with blocking receives and sends that do not wait, finish
// together (no stage waits for a send that never comes).
TEST(PipelineSchedule, OneFOneBIsCompleteBoundedAndNeverDeadlocks) {
  for (int stages = 1; stages <= 5; ++stages)
    for (int m = 1; m <= 9; ++m) {
      std::vector<std::vector<std::pair<char, int>>> order;
      for (int s = 0; s < stages; ++s) {
        order.push_back(one_f_one_b(s, stages, m));
        const auto& o = order.back();
        ASSERT_EQ(o.size(), static_cast<std::size_t>(2 * m));
        std::vector<int> f(m, -1), b(m, -1);
        int in_flight = 0, most = 0;
        for (std::size_t k = 0; k < o.size(); ++k) {
          auto& at = o[k].first == 'F' ? f : b;
          ASSERT_EQ(at[o[k].second], -1) << "twice";
          at[o[k].second] = static_cast<int>(k);
          in_flight += o[k].first == 'F' ? 1 : -1;
          most = std::max(most, in_flight);
        }
        for (int i = 0; i < m; ++i) EXPECT_LT(f[i], b[i]);
        EXPECT_LE(most, stages - s) << "stage " << s << " of " << stages << ", " << m << " micro-batches";
      }
      // F(i) on stage s waits for F(i) on s-1; B(i) on s waits for B(i) on s+1.
      std::vector<std::size_t> next(stages, 0);
      std::vector<std::vector<bool>> fdone(stages, std::vector<bool>(m)), bdone = fdone;
      for (bool moved = true; moved;) {
        moved = false;
        for (int s = 0; s < stages; ++s) {
          if (next[s] == order[s].size()) continue;
          auto [what, i] = order[s][next[s]];
          const bool ready = what == 'F' ? (s == 0 || fdone[s - 1][i]) : (s == stages - 1 || bdone[s + 1][i]);
          if (!ready) continue;
          (what == 'F' ? fdone : bdone)[s][i] = true;
          ++next[s];
          moved = true;
        }
      }
      for (int s = 0; s < stages; ++s)
        EXPECT_EQ(next[s], order[s].size()) << "stage " << s << " of " << stages << " waits forever, " << m;
    }
}

// A conv piece and a linear head: two pieces, one per stage.
struct TwoPieces : Model {
  TwoPieces() {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 4, 3).padding(1)));
    fc = register_module("fc", torch::nn::Linear(4 * 4, 3));
    pieces_.push_back({"conv", {"conv"}, [this](const torch::Tensor& x) {
                         return torch::adaptive_avg_pool2d(torch::relu(conv(x)), {2, 2});
                       }});
    pieces_.push_back({"head", {"fc"}, [this](const torch::Tensor& x) { return fc(x.flatten(1)); }});
  }
  torch::Tensor forward(torch::Tensor x) override { return run_pieces(x, 0, pieces_.size()); }
  std::string head_prefix() const override { return "fc"; }
  torch::nn::Conv2d conv{nullptr};
  torch::nn::Linear fc{nullptr};
};

TEST(PipelineCut, NamedCutsAreCheckedAgainstThePieces) {
  TwoPieces m;
  EXPECT_EQ(stages_at(m.pieces(), {"head"}, 2), (std::vector<std::size_t>{0, 1}));
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"conv"}, {"nope"}, {"head", "head"}}) {
    try {
      stages_at(m.pieces(), bad, 2);
      ADD_FAILURE() << "accepted " << bad[0];
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage);
      EXPECT_NE(std::string(e.what()).find("conv, head"), std::string::npos) << e.what();
    }
  }
}

// Each of a zoo model's tensors belongs to exactly one piece: what a stage holds, trains and sends
// to rank 0 for saving is decided by that.
TEST(PipelineCut, EveryZooTensorBelongsToExactlyOnePiece) {
  for (const auto& name : model_names()) {
    auto model = make_model(name, 5, 3);
    const auto& pieces = model->pieces();
    ASSERT_GE(pieces.size(), 4u) << name;
    std::vector<std::string> tensors;
    for (auto& p : model->named_parameters()) tensors.push_back(p.key());
    for (auto& b : model->named_buffers()) tensors.push_back(b.key());
    for (const auto& t : tensors) {
      int owners = 0;
      for (const auto& piece : pieces)
        for (const auto& m : piece.modules)
          if (t.size() > m.size() && t.compare(0, m.size(), m) == 0 && t[m.size()] == '.') ++owners;
      EXPECT_EQ(owners, 1) << name << ": " << t;
    }
    // The pieces run in turn are the forward.
    torch::NoGradGuard no_grad;
    model->eval();
    auto x = torch::randn({2, 3, 64, 64});
    EXPECT_TRUE(torch::equal(model->run_pieces(x, 0, pieces.size()), model->forward(x))) << name;
  }
}

using frugal::testing::free_port;

// What one stage did in one step.
struct StageRun {
  std::optional<Error> error;
  bool skipped = false;
  double scale = 0;
  torch::Tensor before, after;       // the stage's first parameter
  EvalResult eval;                   // when before_step evaluated
  std::int64_t eval_chunk = 0;       // the chunk it evaluated in
  torch::Tensor other, first_piece;  // what after_step looked at
  std::int64_t other_state = 0;
};

// A source of fixed batches, as a loader gives them; counts what it was asked.
class FixedBatches : public BatchSource {
 public:
  explicit FixedBatches(std::vector<Batch> batches) : batches_(std::move(batches)) {}
  void start(std::int64_t, std::int64_t) override {
    next_ = 0;
    ++calls;
  }
  std::optional<Batch> next() override {
    ++calls;
    if (next_ >= batches_.size()) return std::nullopt;
    return batches_[next_++];
  }
  std::int64_t batches_per_epoch() const override { return static_cast<std::int64_t>(batches_.size()); }
  std::uint64_t samples_seen() const override { return 0; }
  std::uint64_t samples_bad() const override { return 0; }
  int calls = 0;

 private:
  std::vector<Batch> batches_;
  std::size_t next_ = 0;
};

// Two validation batches as the first stage's loader gives them (7 images: one was undecodable).
std::vector<Batch> validation_batches() {
  torch::manual_seed(9);
  std::vector<Batch> out(2);
  out[0].images = torch::randint(0, 255, {7, 1, 4, 4}, torch::kUInt8);
  out[0].labels = torch::randint(0, 3, {7}, torch::kInt64);
  out[1].images = torch::randint(0, 255, {5, 1, 4, 4}, torch::kUInt8);
  out[1].labels = torch::randint(0, 3, {5}, torch::kInt64);
  return out;
}

using Batches = std::vector<std::pair<torch::Tensor, torch::Tensor>>;

// Two stages (threads) take one step on the same batch with fp16-style loss scaling; `tamper`
// may touch stage 1's step or model first; `batch_of(stage)`, when given, is what each stage's
// loader handed it (micro-batches of 4 then, else one of 8).
// `before_step` runs on each stage before the step (an Error it throws ends that stage's run),
// `after_step` after it.
using StageHook =
    std::function<void(int stage, Parallelism&, Model&, const OptimizerSetup&, const StepOptions&, StageRun&)>;
std::array<StageRun, 2> two_stages(const std::function<void(int stage, TrainStep&, Model&)>& tamper,
                                   const std::function<Batches(int stage)>& batch_of = {},
                                   const StageHook& before_step = {}, const StageHook& after_step = {}) {
  const int port = free_port();
  std::array<StageRun, 2> out;
  std::mutex init_mu;
  torch::manual_seed(11);
  auto images = torch::randint(0, 255, {8, 1, 4, 4}, torch::kUInt8);
  auto labels = torch::randint(0, 3, {8}, torch::kInt64);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank)
    threads.emplace_back([&, rank] {
      try {
        const DistEnv env = testing::loopback_env(rank, 2, port);
        std::unique_lock<std::mutex> init(init_mu);  // one thread at a time on torch's global generator
        torch::manual_seed(5);
        TwoPieces model;
        init.unlock();
        PipelineOptions po;
        po.stages = 2;
        po.micro_batches = 2;
        po.split = {"head"};
        po.sample = {4, 1, 4, 4};
        Comm comm(ProcessGroup::join(env, torch::kCPU, std::chrono::seconds(3)));
        auto group = make_pipeline(comm, po);
        group->place(model, torch::kCPU);
        OptimizerOptions oo;
        auto opt = make_optimizer(model, oo);
        LossScaler scaler(LossScalerOptions{}, torch::kCPU);
        StepOptions so;
        so.micro_batch = batch_of ? 4 : 8;
        so.mean = {0.5f};
        so.std = {0.5f};
        auto step = group->make_step(model, *opt.optimizer, scaler, so);
        const torch::Tensor first = rank == 0 ? model.conv->weight : model.fc->weight;
        out[rank].before = first.detach().clone();
        if (tamper) tamper(rank, *step, model);
        if (before_step) before_step(rank, *group, model, opt, so, out[rank]);
        StepResult r = step->run(batch_of ? batch_of(rank) : Batches{{images, labels}}, 0);
        out[rank].skipped = r.skipped;
        out[rank].scale = scaler.scale_value();
        out[rank].after = first.detach().clone();
        if (after_step) after_step(rank, *group, model, opt, so, out[rank]);
      } catch (const Error& e) {
        out[rank].error = e;
      }
    });
  for (auto& t : threads) t.join();
  return out;
}

TEST(PipelineStep, BothStagesStepTogether) {
  auto r = two_stages(nullptr);
  for (int s = 0; s < 2; ++s) {
    ASSERT_FALSE(r[s].error) << r[s].error->what();
    EXPECT_FALSE(r[s].skipped);
    EXPECT_FALSE(torch::equal(r[s].before, r[s].after)) << "stage " << s << " did not step";
    EXPECT_EQ(r[s].scale, 65536.0);
  }
}

// An inf in stage 1's gradients alone: the step is skipped on both stages (stage 0's gradients
// were finite) and both scalers back off, as one process would.
TEST(PipelineStep, InfOnOneStageSkipsTheStepOnBoth) {
  auto r = two_stages([](int stage, TrainStep&, Model& m) {
    if (stage == 1)
      dynamic_cast<TwoPieces&>(m).fc->weight.register_hook(
          [](const torch::Tensor& g) { return g * std::numeric_limits<float>::infinity(); });
  });
  for (int s = 0; s < 2; ++s) {
    ASSERT_FALSE(r[s].error) << r[s].error->what();
    EXPECT_TRUE(r[s].skipped) << "stage " << s;
    EXPECT_TRUE(torch::equal(r[s].before, r[s].after)) << "stage " << s << " stepped";
    EXPECT_EQ(r[s].scale, 32768.0) << "stage " << s;
  }
}

// Stage 1 loads labels only (LabelLoader): the first stage's micro-batch sizes and labels are the
// step's. Here stage 0's loader dropped an undecodable image (7 of 8 left, micro-batches of 4 and
// 3) while stage 1's labels-only batch holds all 8 with other labels: both stages end exactly as
// when each was handed stage 0's batch.
TEST(PipelineStep, LaterStagesTakeTheFirstStagesSizesAndLabels) {
  torch::manual_seed(3);
  auto images = torch::randint(0, 255, {7, 1, 4, 4}, torch::kUInt8);
  auto labels = torch::randint(0, 3, {7}, torch::kInt64);
  auto want = two_stages(nullptr, [&](int) { return Batches{{images, labels}}; });
  auto got = two_stages(nullptr, [&](int stage) {
    if (stage == 0) return Batches{{images, labels}};
    return Batches{{torch::empty({8, 0}, torch::kUInt8), torch::full({8}, 2, torch::kInt64)}};
  });
  for (int s = 0; s < 2; ++s) {
    ASSERT_FALSE(want[s].error) << want[s].error->what();
    ASSERT_FALSE(got[s].error) << got[s].error->what();
    EXPECT_FALSE(torch::equal(got[s].before, got[s].after)) << "stage " << s << " did not step";
    EXPECT_TRUE(torch::equal(want[s].after, got[s].after)) << "stage " << s;
  }
}

// Out of memory on stage 1: a budget error there naming what to change; stage 0, waiting for the
// gradients stage 1 never sends, ends with an I/O error within the timeout instead of hanging.
TEST(PipelineStep, OutOfMemoryOnOneStageEndsBothWithErrors) {
  auto r = two_stages([](int stage, TrainStep& step, Model&) {
    if (stage == 1)
      step.before_micro_step = [](std::int64_t) {
        throw c10::OutOfMemoryError(c10::SourceLocation{__func__, __FILE__, __LINE__}, "CUDA out of memory (test)");
      };
  });
  ASSERT_TRUE(r[1].error);
  EXPECT_EQ(r[1].error->kind(), ErrorKind::budget);
  EXPECT_NE(std::string(r[1].error->what()).find("--micro-batches"), std::string::npos) << r[1].error->what();
  ASSERT_TRUE(r[0].error);
  EXPECT_EQ(r[0].error->kind(), ErrorKind::io) << r[0].error->what();
}

// Evaluation on two stages: only the first reads its batches (here 7 and 5 images, one having
// been undecodable there); the second takes their sizes and labels from it and never touches its
// own loader. Both report the counts of one process evaluating the same model on the first
// stage's batches, in chunks of the training micro-batch (4).
TEST(PipelineEval, OnlyTheFirstStageReadsAndEveryStageReportsItsBatches) {
  const auto batches = validation_batches();
  std::array<int, 2> calls{};
  auto r = two_stages(
      nullptr, {},
      [&](int stage, Parallelism& group, Model& model, const OptimizerSetup&, const StepOptions& so, StageRun& out) {
        FixedBatches own(stage == 0 ? batches : std::vector<Batch>{});
        EvalOptions eo;
        const Parallelism::Evaluation how = group.for_evaluation(model, own, eo);
        out.eval = evaluate(how.model, how.batches, 3, so, &eo);
        out.eval_chunk = eo.micro_batch;
        calls[static_cast<std::size_t>(stage)] = own.calls;
      });
  torch::manual_seed(5);  // the stages' model, whole, in one process
  TwoPieces whole;
  FixedBatches source(batches);
  StepOptions so;
  so.mean = {0.5f};
  so.std = {0.5f};
  EvalOptions eo;
  eo.micro_batch = 4;
  const EvalResult want = evaluate(whole, source, 3, so, &eo);
  ASSERT_EQ(want.samples, 12);
  for (int s = 0; s < 2; ++s) {
    ASSERT_FALSE(r[s].error) << r[s].error->what();
    EXPECT_EQ(r[s].eval_chunk, 4) << "stage " << s;
    EXPECT_EQ(r[s].eval.samples, 12) << "stage " << s;
    EXPECT_EQ(r[s].eval.loss, want.loss) << "stage " << s;
    EXPECT_EQ(r[s].eval.accuracy, want.accuracy) << "stage " << s;
  }
  EXPECT_GT(calls[0], 0);
  EXPECT_EQ(calls[1], 0) << "the second stage read its own loader";
}

// Out of memory evaluating on stage 1: a budget error there naming what to change, not a halving
// of its chunks alone (the first stage would send whole ones); stage 0 ends with an I/O error
// within the timeout instead of waiting.
TEST(PipelineEval, OutOfMemoryOnOneStageIsABudgetErrorNotAHalving) {
  const auto batches = validation_batches();
  auto r = two_stages(
      nullptr, {},
      [&](int stage, Parallelism& group, Model& model, const OptimizerSetup&, const StepOptions& so, StageRun&) {
        FixedBatches own(stage == 0 ? batches : std::vector<Batch>{});
        EvalOptions eo;
        if (stage == 1)
          eo.before_forward = [](std::int64_t) {
            throw c10::OutOfMemoryError(c10::SourceLocation{__func__, __FILE__, __LINE__}, "CUDA out of memory (test)");
          };
        const Parallelism::Evaluation how = group.for_evaluation(model, own, eo);
        evaluate(how.model, how.batches, 3, so, &eo);
      });
  ASSERT_TRUE(r[1].error);
  EXPECT_EQ(r[1].error->kind(), ErrorKind::budget) << r[1].error->what();
  EXPECT_NE(std::string(r[1].error->what()).find("--micro-batches"), std::string::npos) << r[1].error->what();
  ASSERT_TRUE(r[0].error);
  EXPECT_EQ(r[0].error->kind(), ErrorKind::io) << r[0].error->what();
}

// Before a save, rank 0 (which saves) gets stage 1's trained parameters and optimizer state. Stage
// 1 holds none of stage 0's tensors or their optimizer state (nobody but rank 0 needs the whole
// model: it let go of them when its step was made) and is sent none.
TEST(PipelineGather, RankZeroGetsTheOtherStagesTensorsAndOnlyIt) {
  auto r = two_stages(
      nullptr, {}, {},
      [](int, Parallelism& group, Model& model, const OptimizerSetup& opt, const StepOptions&, StageRun& out) {
        auto& m = dynamic_cast<TwoPieces&>(model);
        group.gather(model, opt);
        // The head's weight and its AdamW moment; the first piece's weight.
        torch::Tensor moment;
        for (const auto& [name, t] : optimizer_state(*opt.optimizer, {{"fc.weight", m.fc->weight}}))
          if (name == "optim.fc.weight.exp_avg") moment = t;
        out.other = torch::cat({m.fc->weight.detach().flatten(), moment.flatten()});
        out.first_piece = m.conv->weight.detach().clone();
        out.other_state =
            static_cast<std::int64_t>(optimizer_state(*opt.optimizer, {{"conv.weight", m.conv->weight}}).size());
      });
  for (int s = 0; s < 2; ++s) ASSERT_FALSE(r[s].error) << r[s].error->what();
  EXPECT_TRUE(torch::equal(r[0].other, r[1].other)) << "rank 0 has not stage 1's weight and state";
  EXPECT_GT(r[1].other.abs().sum().item<double>(), 0);
  EXPECT_TRUE(torch::equal(r[0].first_piece, r[0].after));
  EXPECT_EQ(r[1].first_piece.numel(), 0) << "stage 1 kept (or was sent) stage 0's weight";
  EXPECT_EQ(r[1].other_state, 0) << "stage 1 kept optimizer state of stage 0";
  EXPECT_GT(r[0].other_state, 0);
}

}  // namespace
}  // namespace frugal

// Data-parallel training steps through a real c10d group (TCPStore + ProcessGroupGloo) of two
// processes: this test binary starts itself twice as the two ranks (DistributedChild.Rank, which
// does nothing unless FRUGAL_DIST_CASE is set) and compares what they trained with one process
// of the same global batch, trained in this process.
//
// Tolerance: the ranks' gradients are summed by Gloo (two partial sums added) where one process
// sums all samples in one reduction, so the float32 results differ in the last bits; after the
// steps here, parameters agree to a relative 1e-5. The two ranks end bitwise equal to each other
// (they step on the same summed gradients).
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>

#include "loopback_group.h"
#include "frugal/dataset/sampler.h"
#include "frugal/util/error.h"
#include "frugal/models/models.h"
#include "frugal/train/amp.h"
#include "frugal/train/optim.h"
#include "frugal/train/step.h"
#include "frugal/training/train_config.h"
#include "frugal/training/train_log.h"
#include "models/layers.h"
#include "train/distributed.h"

extern char** environ;

namespace frugal {
namespace {

// conv -> (batch norm) -> relu -> pool -> linear: small enough for many steps, and with a batch
// norm only when asked (the zoo's models all have one).
struct Tiny : Model {
  explicit Tiny(bool norm) : norm_(norm) {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 6, 3).padding(1)));
    if (norm_) bn = register_module("bn", detail::Norm2d(6));
    fc = register_module("fc", torch::nn::Linear(6 * 4, 3));
  }
  torch::Tensor forward(torch::Tensor x) override {
    x = conv(x);
    if (norm_) x = bn(x);
    x = torch::adaptive_avg_pool2d(torch::relu(x), {2, 2}).flatten(1);
    return fc(x);
  }
  std::string head_prefix() const override { return "fc"; }
  bool norm_;
  torch::nn::Conv2d conv{nullptr};
  detail::Norm2d bn{nullptr};
  torch::nn::Linear fc{nullptr};
};

struct Case {
  bool norm = false;         // with a batch norm, synchronised over the ranks
  int accum = 1;             // global batches per optimizer step
  int inf_step = -1;         // rank 1 puts an inf in its gradients at this step
  bool bucket_views = true;  // gradients prepared as views of the buckets, as the trainer does
};

Case find_case(const std::string& name) {
  static const std::map<std::string, Case> cases{
      {"plain", {false, 1, -1, true}}, {"accum", {false, 2, -1, true}},   {"syncbn", {true, 2, -1, true}},
      {"inf", {false, 1, 2, true}},    {"copied", {false, 2, -1, false}},  // gradients backward made itself, copied into the buckets
  };
  return cases.at(name);
}

constexpr int kSamples = 35;  // 4 full global batches of 8 and a last one of 3 (ranks: 1 and 2)
constexpr int kGlobalBatch = 8;

struct Trained {
  std::vector<torch::Tensor> params;  // parameters, then buffers
  std::vector<bool> skipped;          // per step
  std::vector<double> losses;
};

// Trains Tiny for one epoch of kSamples (2 epochs for more steps) as `rank` of `world`, each rank
// reading its shard of every global batch as the trainer's EpochPlan gives it.
Trained train_case(const Case& c, int rank, int world, ProcessGroup* group) {
  torch::manual_seed(3);
  auto images = torch::randint(0, 256, {kSamples, 1, 8, 8}, torch::kUInt8);
  auto labels = torch::randint(0, 3, {kSamples}, torch::kInt64);
  torch::manual_seed(11);
  Tiny model(c.norm);
  OptimizerOptions oo;
  oo.kind = OptimizerKind::sgd;
  oo.lr = 0.05;
  auto opt = make_optimizer(model, oo);
  LossScaler scaler(LossScalerOptions{}, torch::kCPU);
  StepOptions so;
  // Two micro-batches per batch (accumulation inside a batch too), but with a batch norm one: its
  // statistics are over a micro-batch of every rank, which must be the same samples as one
  // process's micro-batch (2 ranks x B = 1 x 2B).
  so.micro_batch = c.norm ? kGlobalBatch / world : kGlobalBatch / world / 2;
  so.mean = {0.5f};
  so.std = {0.25f};
  if (c.norm) {
    so.equal_forwards = kGlobalBatch / world;
    set_batch_norm_sync(group ? std::function<void(torch::Tensor&)>([group](torch::Tensor& t) {
      std::vector<torch::Tensor> one{t};
      group->all_reduce_sum(one);
    })
                              : std::function<void(torch::Tensor&)>([](torch::Tensor&) {}));
  }
  TrainStep step(model, *opt.optimizer, scaler, so);
  int step_no = 0;
  if (group) {  // as the trainer does: gradients as views of the all-reduce's buckets
    if (c.bucket_views)
      step.zero_gradients = [&](const std::vector<torch::Tensor>& params) { group->prepare_gradients(params); };
    step.reduce_gradients = [&](const std::vector<torch::Tensor>& params, std::vector<torch::Tensor> extra) {
      if (step_no == c.inf_step && rank == 1) {
        torch::NoGradGuard no_grad;
        params[0].mutable_grad().view(-1)[0] = INFINITY;
      }
      group->all_reduce_gradients(params, std::move(extra));
    };
  }
  LoaderOptions lo;
  lo.batch_size = kGlobalBatch / world;
  lo.shard = {rank, world};
  lo.seed = 5;
  Trained out;
  for (int epoch = 0; epoch < 2; ++epoch) {
    EpochPlan plan = EpochPlan::make(kSamples, lo, epoch, 0, "test");
    for (std::int64_t k = 0; k < plan.batches; k += c.accum) {
      std::vector<std::pair<torch::Tensor, torch::Tensor>> batches;
      std::int64_t global = 0;
      for (std::int64_t j = k; j < std::min<std::int64_t>(k + c.accum, plan.batches); ++j) {
        auto idx = plan.samples(j);
        auto index = torch::tensor(std::vector<std::int64_t>(idx.begin(), idx.end()), torch::kInt64);
        batches.emplace_back(images.index_select(0, index), labels.index_select(0, index));
        global += plan.position_after(j) - (plan.start + j * plan.global_batch);
      }
      StepResult r = step.run(batches, group ? global : 0);
      out.skipped.push_back(r.skipped);
      out.losses.push_back(r.loss);
      ++step_no;
    }
  }
  if (c.norm) set_batch_norm_sync(nullptr);
  for (auto& p : model.parameters()) out.params.push_back(p.detach().clone());
  for (auto& b : model.buffers()) out.params.push_back(b.detach().clone());
  return out;
}

using frugal::testing::free_port;

struct Child {
  pid_t pid = -1;
  std::string out;
};

// Starts this binary as rank `rank` of 2 for case `name`; it writes its results to `out`.
Child spawn_rank(const std::string& name, int rank, int port, const std::string& dir, const std::string& timeout_ms) {
  Child c;
  c.out = dir + "/rank" + std::to_string(rank);
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  env.push_back("FRUGAL_DIST_CASE=" + name);
  env.push_back("FRUGAL_DIST_OUT=" + c.out);
  env.push_back("FRUGAL_DIST_TIMEOUT_MS=" + timeout_ms);
  env.push_back("RANK=" + std::to_string(rank));
  env.push_back("LOCAL_RANK=" + std::to_string(rank));
  env.push_back("WORLD_SIZE=2");
  env.push_back("MASTER_ADDR=127.0.0.1");
  env.push_back("MASTER_PORT=" + std::to_string(port));
  env.push_back("OMP_NUM_THREADS=1");
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string self = "/proc/self/exe", filter = "--gtest_filter=DistributedChild.Rank";
  char* argv[] = {self.data(), filter.data(), nullptr};
  EXPECT_EQ(::posix_spawn(&c.pid, "/proc/self/exe", nullptr, nullptr, argv, envp.data()), 0);
  return c;
}

// Waits at most `limit` seconds; returns the exit status (-1: killed at the limit).
int wait_for(pid_t pid, double limit, double* seconds = nullptr) {
  auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      if (seconds) *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > limit) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Not fs::remove_all: the wheel's libtorch.so exports its own copy, which crashes here.
void remove_dir(const std::string& dir) { EXPECT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0); }

std::string temp_dir() {
  std::string t = (std::filesystem::temp_directory_path() / "frugal-dist-XXXXXX").string();
  return ::mkdtemp(t.data());
}

Trained load(const std::string& file) {
  Trained t;
  torch::load(t.params, file + ".params");
  std::ifstream in(file + ".steps");
  int s;
  double l;
  while (in >> s >> l) {
    t.skipped.push_back(s != 0);
    t.losses.push_back(l);
  }
  return t;
}

double max_relative_diff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_floating_point()) {
      if (!a[i].equal(b[i])) return INFINITY;
      continue;
    }
    double scale = std::max(1e-3, a[i].abs().max().item<double>());
    worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>() / scale);
  }
  return worst;
}

// Two ranks of case `name` against one process of the same global batch.
void expect_two_ranks_equal_one(const std::string& name) {
  const Case c = find_case(name);
  const std::string dir = temp_dir();
  const int port = free_port();
  Child r0 = spawn_rank(name, 0, port, dir, "20000"), r1 = spawn_rank(name, 1, port, dir, "20000");
  ASSERT_EQ(wait_for(r0.pid, 120), 0) << "rank 0 failed";
  ASSERT_EQ(wait_for(r1.pid, 120), 0) << "rank 1 failed";
  Trained a = load(r0.out), b = load(r1.out);
  Trained one = train_case(c, 0, 1, nullptr);
  ASSERT_EQ(a.params.size(), one.params.size());
  ASSERT_EQ(a.skipped.size(), one.skipped.size());
  EXPECT_GE(a.skipped.size(), 6u);
  // The ranks stepped on the same gradients: equal to the bit.
  for (std::size_t i = 0; i < a.params.size(); ++i) EXPECT_TRUE(a.params[i].equal(b.params[i])) << "tensor " << i;
  EXPECT_EQ(a.skipped, b.skipped);
  EXPECT_LT(max_relative_diff(a.params, one.params), 1e-5);
  for (std::size_t s = 0; s < a.losses.size(); ++s) {
    if (static_cast<int>(s) == c.inf_step) continue;
    EXPECT_NEAR(a.losses[s], one.losses[s], 1e-5 * std::abs(one.losses[s])) << "step " << s;
  }
  // The check can fail: the parameters moved far more than the tolerance.
  std::vector<torch::Tensor> start;
  torch::manual_seed(11);
  Tiny init(c.norm);
  for (auto& p : init.parameters()) start.push_back(p.detach());
  std::vector<torch::Tensor> trained(a.params.begin(), a.params.begin() + static_cast<std::ptrdiff_t>(start.size()));
  EXPECT_GT(max_relative_diff(trained, start), 1e-2);
  remove_dir(dir);
}

}  // namespace

// A rank of the cases above (started by the tests below, with its environment).
TEST(DistributedChild, Rank) {
  const char* name = std::getenv("FRUGAL_DIST_CASE");
  if (!name) GTEST_SKIP() << "started by the Distributed tests as a rank";
  const std::string out = std::getenv("FRUGAL_DIST_OUT");
  auto env = dist_env();
  ASSERT_TRUE(env.has_value());
  auto group = ProcessGroup::join(*env, torch::kCPU,
                                  std::chrono::milliseconds(std::atoi(std::getenv("FRUGAL_DIST_TIMEOUT_MS"))));
  const std::string which = name;
  if (which == "die" || which == "hang") {
    std::vector<torch::Tensor> t{torch::ones({4})};
    group->all_reduce_sum(t);  // both reach this
    if (env->rank == 1) {
      if (which == "die") ::_exit(9);  // as kill -9 would
      std::this_thread::sleep_for(std::chrono::seconds(60));
      ::_exit(0);
    }
    try {
      group->all_reduce_sum(t);
      std::ofstream(out + ".error") << "no error";
    } catch (const Error& e) {
      std::ofstream(out + ".error") << e.what();
      ::_exit(exit_code(e.kind()));
    }
    ::_exit(0);
  }
  Trained t = train_case(find_case(which), env->rank, env->world, group.get());
  // Every step's gradients were summed where backward wrote them (the buckets), not copied.
  const Case c = find_case(which);
  EXPECT_EQ(group->in_place_reductions(), c.bucket_views ? static_cast<std::int64_t>(t.skipped.size()) : 0);
  if (::testing::Test::HasFailure()) ::_exit(3);
  torch::save(t.params, out + ".params");
  std::ofstream steps(out + ".steps");
  for (std::size_t i = 0; i < t.skipped.size(); ++i) steps << (t.skipped[i] ? 1 : 0) << " " << t.losses[i] << "\n";
}

TEST(Distributed, TwoRanksOfBEqualOneProcessOf2BWithoutBatchNorm) { expect_two_ranks_equal_one("plain"); }

TEST(Distributed, TwoRanksOfBEqualOneProcessOf2BWithAccumulationAndAnUnevenLastBatch) {
  expect_two_ranks_equal_one("accum");
}

TEST(Distributed, GradientsNotPreparedAsBucketViewsAreCopiedInAndSummedAlike) { expect_two_ranks_equal_one("copied"); }

TEST(Distributed, SyncBatchNormOverTwoRanksEqualsOneProcessOfTheWholeBatch) { expect_two_ranks_equal_one("syncbn"); }

TEST(Distributed, AnInfOnOneRankSkipsTheStepOnBoth) {
  const std::string dir = temp_dir();
  const int port = free_port();
  Child r0 = spawn_rank("inf", 0, port, dir, "20000"), r1 = spawn_rank("inf", 1, port, dir, "20000");
  ASSERT_EQ(wait_for(r0.pid, 120), 0);
  ASSERT_EQ(wait_for(r1.pid, 120), 0);
  Trained a = load(r0.out), b = load(r1.out);
  const int inf_step = find_case("inf").inf_step;
  ASSERT_GT(a.skipped.size(), static_cast<std::size_t>(inf_step));
  EXPECT_TRUE(a.skipped[static_cast<std::size_t>(inf_step)]) << "rank 0 stepped on rank 1's inf";
  EXPECT_TRUE(b.skipped[static_cast<std::size_t>(inf_step)]);
  EXPECT_EQ(std::count(a.skipped.begin(), a.skipped.end(), true), 1);
  for (std::size_t i = 0; i < a.params.size(); ++i) EXPECT_TRUE(a.params[i].equal(b.params[i]));
  remove_dir(dir);
}

// A rank killed (kill -9) or hanging: the other stops with an I/O error (exit 1) naming the lost
// contact, within the bound, instead of waiting for ever.
void expect_bounded_failure(const std::string& name, double bound) {
  const std::string dir = temp_dir();
  const int port = free_port();
  Child r0 = spawn_rank(name, 0, port, dir, "3000"), r1 = spawn_rank(name, 1, port, dir, "3000");
  double seconds = 0;
  const int rc = wait_for(r0.pid, 60, &seconds);
  wait_for(r1.pid, 1);  // the hanging one is killed here
  EXPECT_EQ(rc, 1);
  EXPECT_LT(seconds, bound);
  std::ifstream in(r0.out + ".error");
  std::string msg((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(msg.find("rank 0 of 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no answer"), std::string::npos) << msg;
  remove_dir(dir);
}

TEST(Distributed, ARankKilledMakesTheOtherFailWithinTheBound) { expect_bounded_failure("die", 20); }
TEST(Distributed, ARankThatHangsMakesTheOtherFailAfterTheTimeout) { expect_bounded_failure("hang", 20); }

TEST(DistEnv, WorldSizeAbsentOrOneIsOneProcess) {
  std::map<std::string, std::string> vars;
  auto get = [&](const char* n) -> const char* {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  EXPECT_FALSE(dist_env_from(get));
  vars["WORLD_SIZE"] = "1";
  EXPECT_FALSE(dist_env_from(get));
  vars = {{"WORLD_SIZE", "1"},
          {"RANK", "0"},
          {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", "29500"},
          {"FRUGAL_FORCE_GROUP", "1"}};  // a group of one, to measure what a group costs
  auto one = dist_env_from(get);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->world, 1);
  vars = {{"WORLD_SIZE", "4"},
          {"RANK", "3"},
          {"LOCAL_RANK", "1"},
          {"LOCAL_WORLD_SIZE", "2"},
          {"MASTER_ADDR", "node1"},
          {"MASTER_PORT", "29500"},
          {"TORCHELASTIC_USE_AGENT_STORE", "True"},
          {"TORCHELASTIC_RESTART_COUNT", "2"}};
  auto e = dist_env_from(get);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->rank, 3);
  EXPECT_EQ(e->world, 4);
  EXPECT_EQ(e->local_rank, 1);
  EXPECT_EQ(e->master_addr, "node1");
  EXPECT_EQ(e->master_port, 29500);
  EXPECT_TRUE(e->agent_store);
  EXPECT_EQ(e->restart_count, "2");
  EXPECT_EQ(e->backend, "");             // the device's: Gloo on the CPU, NCCL on CUDA
  vars["FRUGAL_DIST_BACKEND"] = "gloo";  // ranks that share one GPU
  EXPECT_EQ(dist_env_from(get)->backend, "gloo");
  vars["FRUGAL_DIST_BACKEND"] = "mpi";
  try {
    dist_env_from(get);
    ADD_FAILURE() << "FRUGAL_DIST_BACKEND=mpi taken";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(err.what()).find("gloo or nccl"), std::string::npos) << err.what();
  }
  vars.erase("FRUGAL_DIST_BACKEND");
  vars["RANK"] = "4";  // out of range
  EXPECT_THROW(dist_env_from(get), Error);
  vars["RANK"] = "x";
  EXPECT_THROW(dist_env_from(get), Error);
  vars.erase("RANK");
  try {
    dist_env_from(get);
    ADD_FAILURE() << "no error";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(err.what()).find("RANK"), std::string::npos) << err.what();
  }
}

}  // namespace frugal

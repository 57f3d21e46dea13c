// frugal train --time-budget through train_session on a fake clock (the Env's steady clock moves
// a fixed tick at every read, so a step "takes" the same time on every run): the run plans its
// steps once the first are timed, ends annealed within the budget, refuses a budget shorter than
// one epoch before writing anything, continues its plan after a deadline cut, and re-plans when
// a resumed session gets another budget.
#include <gtest/gtest.h>

#include <filesystem>
#include <cstdio>
#include <fstream>
#include <map>
#include <thread>

#include "../budget/fault_env.h"
#include "frugal/util/error.h"
#include "frugal/archive/pack.h"
#include "frugal/util/progress.h"
#include "frugal/checkpoint/safetensors.h"
#include "frugal/train/train_session.h"
#include "frugal/training/train_config.h"

namespace frugal {
namespace {

namespace fs = std::filesystem;
using testing::FaultEnv;
using testing::TempDir;

// Time passes only as the run reads the clock: `tick` seconds per read.
class TickEnv : public FaultEnv {
 public:
  double tick = 0.5;
  SteadyTime steady_now() override {
    advance(tick);
    return now;
  }
};

// Two classes of 12x12 .npy images (bright top rows or bright bottom rows), packed.
fs::path make_two_class_archive(const fs::path& dir, int per_class = 24) {
  const int side = 12;
  std::uint32_t state = 7;
  for (int k = 0; k < 2; ++k) {
    fs::create_directories(dir / "src" / ("c" + std::to_string(k)));
    for (int i = 0; i < per_class; ++i) {
      std::string header = "{'descr': '|u1', 'fortran_order': False, 'shape': (12, 12), }";
      header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
      header += '\n';
      std::ofstream out(dir / "src" / ("c" + std::to_string(k)) / (std::to_string(i) + ".npy"), std::ios::binary);
      out.write("\x93NUMPY\x01\x00", 8);
      out.put(static_cast<char>(header.size() & 0xff)).put(static_cast<char>(header.size() >> 8));
      out << header;
      for (int p = 0; p < side * side; ++p) {
        state = state * 1664525u + 1013904223u;
        const bool band = (p / side < side / 2) == (k == 0);
        out.put(static_cast<char>((band ? 180 : 40) + (state >> 27)));
      }
    }
  }
  PackOptions o;
  o.output = dir / "data.zip";
  o.threads = 1;
  pack(dir / "src", o);
  return o.output;
}

TrainConfig budget_config(const fs::path& data, const fs::path& run, const std::string& budget, long seconds) {
  TrainConfig c;
  c.data = data.string();
  c.run = run.string();
  c.model = "cnn";
  c.epochs = 0;  // auto
  c.time_budget.text = budget;
  c.time_budget.seconds = std::chrono::seconds(seconds);
  c.batch_size = 4;
  c.workers = 1;
  c.image_size = 12;
  c.val_split = 0.25;
  c.device.kind = DeviceKind::cpu;
  c.deterministic = true;
  c.json = true;
  return c;
}

std::vector<nlohmann::json> plan_records(const fs::path& run) {
  std::vector<nlohmann::json> out;
  std::ifstream in(run / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.contains("time_budget")) out.push_back(j["time_budget"]);
  }
  return out;
}

// The "schedule" metadata of the run's newest full checkpoint, and its step.
std::pair<nlohmann::json, std::int64_t> newest_schedule(const fs::path& run) {
  fs::path best;
  std::int64_t step = -1;
  for (const auto& e : fs::directory_iterator(run)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("ckpt-", 0) != 0 || n.find(".delta.") != std::string::npos) continue;
    const std::int64_t s = std::stoll(n.substr(n.find("-s") + 2));
    if (s > step) step = s, best = e.path();
  }
  auto file = load_safetensors(best.string());
  return {nlohmann::json::parse(file.metadata.at("schedule")), step};
}

class TimeBudgetRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { Progress::set_quiet(true); }
  void SetUp() override { data_ = make_two_class_archive(dir_.path()); }
  TempDir dir_;
  fs::path data_;
};

TEST_F(TimeBudgetRun, PlansOnceTimedAndEndsAnnealedWithinTheBudget) {
  TickEnv env;
  const fs::path run = dir_ / "run";
  SessionOutcome out = train_session(budget_config(data_, run, "2m", 120), env);
  ASSERT_EQ(out.status, SessionOutcome::Status::done);
  auto plans = plan_records(run);
  ASSERT_FALSE(plans.empty());
  EXPECT_EQ(plans.front()["event"], "plan");
  auto [schedule, step] = newest_schedule(run);
  const auto& tb = schedule["time_budget"];
  EXPECT_EQ(step, out.step);
  EXPECT_EQ(tb["schedule"]["total_steps"].get<std::int64_t>(), out.step);  // ended where the plan ends
  EXPECT_GT(out.step, 9 * 3);                                              // more than 3 epochs fit in 2 fake minutes
  // Within the budget give or take the last re-plan's error: background threads (loader,
  // checkpoint writer) read the fake clock too, so its time is not exactly the run's.
  EXPECT_LE(tb["spent_seconds"].get<double>(), 120 * 1.15);
  EXPECT_GT(tb["spent_seconds"].get<double>(), 120 * 0.8);
  EXPECT_LT(schedule["lr"].get<double>(), 1e-3 * 1e-2);  // annealed (peak 1e-3)
}

TEST_F(TimeBudgetRun, ABudgetShorterThanOneEpochIsRefusedBeforeAnythingIsWritten) {
  TickEnv env;
  const fs::path run = dir_ / "run";
  try {
    train_session(budget_config(data_, run, "2s", 2), env);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::budget) << e.what();
    EXPECT_NE(std::string(e.what()).find("give a budget of at least"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(run));
}

TEST_F(TimeBudgetRun, ADeadlineCutContinuesThePlanAndTheSessionsTimeCounts) {
  const fs::path run = dir_ / "run";
  TickEnv first;
  TrainConfig c = budget_config(data_, run, "2m", 120);
  c.deadline = DeadlineSpec::parse("40s");
  ASSERT_EQ(train_session(c, first).status, SessionOutcome::Status::stopped_resumable);
  auto [cut, cut_step] = newest_schedule(run);
  const double spent_at_cut = cut["time_budget"]["spent_seconds"];
  EXPECT_GT(spent_at_cut, 25);
  EXPECT_LE(spent_at_cut, 41);
  TickEnv second;
  // A later deadline, not none: the fake clock's time is its reads, and a deadline reads it too.
  c.deadline = DeadlineSpec::parse("10m");
  SessionOutcome out = train_session(c, second);
  ASSERT_EQ(out.status, SessionOutcome::Status::done);
  auto [end, end_step] = newest_schedule(run);
  EXPECT_EQ(end["time_budget"]["schedule"]["total_steps"].get<std::int64_t>(), end_step);
  EXPECT_LE(end["time_budget"]["spent_seconds"].get<double>(), 120 * 1.15);
  EXPECT_LT(end["lr"].get<double>(), 1e-5);
  // The resumed session continues the saved plan: it re-plans only once it has timed its own
  // steps (5, after an untimed first), never on resuming.
  for (const auto& p : plan_records(run))
    if (p["step"].get<std::int64_t>() >= cut_step) EXPECT_GE(p["step"].get<std::int64_t>(), cut_step + 6) << p.dump();
}

TEST_F(TimeBudgetRun, AnotherBudgetOnResumeReplansFromWhereTheRunIs) {
  const fs::path run = dir_ / "run";
  TickEnv first;
  TrainConfig c = budget_config(data_, run, "2m", 120);
  c.deadline = DeadlineSpec::parse("40s");
  ASSERT_EQ(train_session(c, first).status, SessionOutcome::Status::stopped_resumable);
  auto [cut, cut_step] = newest_schedule(run);
  TickEnv second;
  c.deadline.reset();
  c.time_budget = {"3m", std::chrono::seconds(180)};
  SessionOutcome out = train_session(c, second);  // not refused: the budget is no learning option
  ASSERT_EQ(out.status, SessionOutcome::Status::done);
  bool replanned = false;
  for (const auto& p : plan_records(run))
    if (p["event"].get<std::string>().rfind("budget changed", 0) == 0) {
      replanned = true;
      EXPECT_EQ(p["step"].get<std::int64_t>(), cut_step);
      EXPECT_GT(p["total_steps"].get<std::int64_t>(),
                cut["time_budget"]["schedule"]["total_steps"].get<std::int64_t>());
    }
  EXPECT_TRUE(replanned);
}

// A kill -9 between the checkpoint of step 10 (committed, saved every 5 steps) and the next: the
// process "dies" (an exception no one catches, from the clock) a few steps after that file
// appears, losing those steps. The resumed session continues the saved plan: until it has timed
// its own steps and re-plans (6 steps in), it trains bitwise what the uninterrupted run trained,
// so their checkpoints of step 15 hold the same tensors (weights, optimizer and trainer state).
struct Killed {};
// The run's full checkpoint of `step` ("" when there is none).
fs::path checkpoint_of(const fs::path& run, int step) {
  char tail[32];
  std::snprintf(tail, sizeof tail, "-s%06d.safetensors", step);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run, ec))
    if (e.path().filename().string().rfind("ckpt-", 0) == 0 && e.path().filename().string().ends_with(tail))
      return e.path();
  return {};
}
// TickEnv whose time moves only with the training thread's reads: the background checkpoint
// writer's reads, which interleave differently on every run, do not move it, so two runs of the
// same command see the same times and make the same plans.
class MainTickEnv : public FaultEnv {
 public:
  double tick = 0.5;
  std::thread::id main = std::this_thread::get_id();
  SteadyTime steady_now() override {
    if (std::this_thread::get_id() == main) advance(tick);
    return now;
  }
};
class DyingEnv : public MainTickEnv {
 public:
  fs::path run;
  int reads_after = -1;
  SteadyTime steady_now() override {
    if (std::this_thread::get_id() == main) {
      if (reads_after < 0 && !checkpoint_of(run, 10).empty()) reads_after = 0;
      if (reads_after >= 0 && ++reads_after > 20) throw Killed{};
    }
    return MainTickEnv::steady_now();
  }
};

std::map<std::string, std::string> tensor_bytes(const fs::path& file) {
  auto f = load_safetensors(file.string());
  std::map<std::string, std::string> out;
  for (auto& [name, t] : f.tensors) {
    auto c = t.contiguous();
    out[name] = std::string(static_cast<const char*>(c.data_ptr()), c.nbytes());
  }
  return out;
}

TEST_F(TimeBudgetRun, APlanKilledAfterACheckpointResumesBitwiseUntilItReplans) {
  auto config = [&](const fs::path& run) {
    TrainConfig c = budget_config(data_, run, "2m", 120);
    c.save_every.text = "5steps";
    c.save_every.steps = 5;
    c.keep_last = 100;
    return c;
  };
  MainTickEnv whole;
  ASSERT_EQ(train_session(config(dir_ / "whole"), whole).status, SessionOutcome::Status::done);

  const fs::path run = dir_ / "killed";
  DyingEnv dying;
  dying.run = run;
  bool killed = false;
  try {
    train_session(config(run), dying);
  } catch (const Killed&) {
    killed = true;
  }
  ASSERT_TRUE(killed) << "the run was not killed";
  ASSERT_FALSE(checkpoint_of(run, 10).empty());
  ASSERT_TRUE(checkpoint_of(run, 15).empty()) << "killed too late: nothing to redo";
  auto [at_kill, kill_step] = newest_schedule(run);
  ASSERT_EQ(kill_step, 10);
  MainTickEnv second;
  ASSERT_EQ(train_session(config(run), second).status, SessionOutcome::Status::done);
  ASSERT_FALSE(checkpoint_of(dir_ / "whole", 15).empty());
  ASSERT_FALSE(checkpoint_of(run, 15).empty()) << "the resumed run saved no step 15";
  const auto a = tensor_bytes(checkpoint_of(dir_ / "whole", 15));
  const auto b = tensor_bytes(checkpoint_of(run, 15));
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, bytes] : a) EXPECT_TRUE(b.count(name) && b.at(name) == bytes) << name;
  // And the plan the resumed session continued is the one the killed run had saved.
  for (const auto& p : plan_records(run))
    if (p["step"].get<std::int64_t>() >= kill_step) EXPECT_GE(p["step"].get<std::int64_t>(), kill_step + 6) << p.dump();
  // The resumed run ends where its (re-)planned schedule ends.
  auto [end, end_step] = newest_schedule(run);
  EXPECT_EQ(end["time_budget"]["schedule"]["total_steps"].get<std::int64_t>(), end_step);
}

}  // namespace
}  // namespace frugal

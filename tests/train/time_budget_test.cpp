// frugal train --time-budget through train_session on a fake clock (the Env's steady clock moves
// a fixed tick at every read, so a step "takes" the same time on every run): the run plans its
// steps once the first are timed, ends annealed within the budget, refuses a budget shorter than
// one epoch before writing anything, continues its plan after a deadline cut, and re-plans when
// a resumed session gets another budget.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../budget/fault_env.h"
#include "frugal/error.h"
#include "frugal/pack.h"
#include "frugal/progress.h"
#include "frugal/safetensors.h"
#include "frugal/train.h"

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
fs::path make_archive(const fs::path& dir, int per_class = 24) {
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
  void SetUp() override { data_ = make_archive(dir_.path()); }
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
  EXPECT_GT(out.step, 9 * 3);  // more than 3 epochs fit in 2 fake minutes
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
      EXPECT_GT(p["total_steps"].get<std::int64_t>(), cut["time_budget"]["schedule"]["total_steps"].get<std::int64_t>());
    }
  EXPECT_TRUE(replanned);
}

}  // namespace
}  // namespace frugal

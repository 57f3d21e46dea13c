// train_session end to end on a tiny generated data set (the cnn, a few steps on the CPU), with
// every file write and clock read going through a test Env: a full disk while appending
// metrics, a failed write of the TensorBoard events, deadlines on a fake clock, and refusals that
// must leave the run folder as they found it.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "../budget/fault_env.h"
#include "frugal/checkpoint/checkpoint.h"
#include "frugal/checkpoint/safetensors.h"
#include "frugal/checkpoint_files/checkpoint_files.h"
#include "frugal/models/models.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/archive/pack.h"
#include "frugal/util/progress.h"
#include "frugal/train/train_session.h"
#include "frugal/training/train_config.h"
#include "frugal/util/env.h"

namespace frugal {
namespace {

namespace fs = std::filesystem;
using testing::FaultEnv;
using testing::TempDir;

// A 2-D uint8 .npy (numpy format 1.0): the header padded with spaces to a multiple of 64 bytes.
void write_npy(const fs::path& path, int side, const std::vector<std::uint8_t>& pixels) {
  std::string header = "{'descr': '|u1', 'fortran_order': False, 'shape': (" + std::to_string(side) + ", " +
                       std::to_string(side) + "), }";
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const std::uint16_t n = static_cast<std::uint16_t>(header.size());
  out.put(static_cast<char>(n & 0xff)).put(static_cast<char>(n >> 8));
  out << header;
  out.write(reinterpret_cast<const char*>(pixels.data()), static_cast<std::streamsize>(pixels.size()));
}

// `classes` folders of `per_class` 12x12 images each: class k is bright in its own band of rows
// (learnable in a few steps), with noise.
fs::path make_archive(const fs::path& dir, int classes = 2, int per_class = 24) {
  const int side = 12;
  fs::path src = dir / "src";
  std::uint32_t state = 12345;
  for (int k = 0; k < classes; ++k) {
    fs::create_directories(src / ("class" + std::to_string(k)));
    for (int i = 0; i < per_class; ++i) {
      std::vector<std::uint8_t> px(side * side);
      for (int y = 0; y < side; ++y)
        for (int x = 0; x < side; ++x) {
          state = state * 1664525u + 1013904223u;
          const bool band = y * classes / side == k;
          px[y * side + x] = static_cast<std::uint8_t>((band ? 180 : 40) + (state >> 27));
        }
      write_npy(src / ("class" + std::to_string(k)) / (std::to_string(i) + ".npy"), side, px);
    }
  }
  PackOptions o;
  o.output = dir / "data.zip";
  o.threads = 1;
  pack(src, o);
  return o.output;
}

TrainConfig small_config(const fs::path& data, const fs::path& run) {
  TrainConfig c;
  c.data = data.string();
  c.run = run.string();
  c.model = "cnn";
  c.epochs = 2;
  c.batch_size = 8;
  c.workers = 1;
  c.image_size = 12;
  c.val_split = 0.25;
  c.device.kind = DeviceKind::cpu;
  c.json = true;  // no progress lines
  return c;
}

std::vector<std::string> lines_of(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Every line whole JSON and the file ending in a newline: nothing torn.
void expect_whole_lines(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.empty()) return;
  EXPECT_EQ(text.back(), '\n') << file;
  for (const auto& line : lines_of(file)) EXPECT_TRUE(nlohmann::json::accept(line)) << "torn line: " << line;
}

std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.insert(e.path().filename().string());
  return names;
}

std::vector<fs::path> checkpoints(const fs::path& run) {
  std::vector<fs::path> out;
  for (const auto& n : listing(run))
    if (n.rfind("ckpt-", 0) == 0) out.push_back(run / n);
  return out;
}

// FaultEnv, plus: appends to the files whose name starts with `fail_prefix` fail (disk full or an
// I/O error, from the `fail_from`-th such append on), and the steady clock moves `tick` seconds at
// every read, so time passes as the run asks for it.
class RunEnv : public FaultEnv {
 public:
  std::string fail_prefix;
  int fail_from = 0;
  Fault prefix_fault = Fault::disk_full;
  double tick = 0;
  std::atomic<int> prefix_appends = 0, prefix_failures = 0;

  std::unique_ptr<WritableFile> new_appendable_file(const fs::path& path) override {
    auto inner = FaultEnv::new_appendable_file(path);
    if (fail_prefix.empty() || path.filename().string().rfind(fail_prefix, 0) != 0) return inner;
    return std::make_unique<Failing>(*this, path, std::move(inner));
  }
  std::unique_ptr<WritableFile> new_writable_file(const fs::path& path) override {
    auto inner = FaultEnv::new_writable_file(path);
    if (fail_prefix.empty() || path.filename().string().rfind(fail_prefix, 0) != 0) return inner;
    return std::make_unique<Failing>(*this, path, std::move(inner));
  }
  void rename_file(const fs::path& from, const fs::path& to) override {
    FaultEnv::rename_file(from, to);
    std::lock_guard lock(clock_mu_);
    if (to.filename().string().rfind("ckpt-", 0) == 0) last_checkpoint_at = now;
  }
  SteadyTime last_checkpoint_at{};  // when the newest checkpoint was published
  // The checkpoint writer's thread reads the clock too.
  SteadyTime steady_now() override {
    std::lock_guard lock(clock_mu_);
    advance(tick);
    return now;
  }

 private:
  std::mutex clock_mu_;
  class Failing : public WritableFile {
   public:
    Failing(RunEnv& env, fs::path path, std::unique_ptr<WritableFile> inner)
        : env_(env), path_(std::move(path)), inner_(std::move(inner)) {}
    void append(const void* data, std::size_t n) override {
      if (env_.prefix_appends++ >= env_.fail_from) {
        ++env_.prefix_failures;
        if (env_.prefix_fault == Fault::disk_full) throw DiskFullError(path_.string() + ": injected ENOSPC");
        throw Error(ErrorKind::io, path_.string() + ": injected I/O error");
      }
      inner_->append(data, n);
    }
    void sync() override { inner_->sync(); }
    void close() override { inner_->close(); }

   private:
    RunEnv& env_;
    fs::path path_;
    std::unique_ptr<WritableFile> inner_;
  };
};

class SessionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { Progress::set_quiet(true); }
  void SetUp() override { data_ = make_archive(dir_.path()); }
  TempDir dir_;
  fs::path data_;
};

TEST_F(SessionTest, TrainsAndWritesItsFilesThroughTheEnv) {
  RunEnv env;
  const fs::path run = dir_ / "run";
  SessionOutcome out = train_session(small_config(data_, run), env);
  EXPECT_EQ(out.status, SessionOutcome::Status::done);
  EXPECT_GT(out.step, 0);
  EXPECT_TRUE(fs::exists(run / "config.json"));
  auto metrics = lines_of(run / "metrics.jsonl");
  ASSERT_EQ(metrics.size(), 2u);
  expect_whole_lines(run / "metrics.jsonl");
  // train_loss is the epoch's mean: finite, and a cross-entropy of 2 classes starts near ln 2.
  auto first = nlohmann::json::parse(metrics[0]);
  EXPECT_TRUE(first["train_loss"].is_number());
  EXPECT_GT(first["train_loss"].get<double>(), 0.0);
  EXPECT_LT(first["train_loss"].get<double>(), 5.0);
  EXPECT_GT(env.ops, 0) << "the run wrote nothing through its Env";
}

TEST_F(SessionTest, DiskFullWhileAppendingMetricsDropsTheRecordAndTrainingGoesOn) {
  RunEnv env;
  env.fail_prefix = "metrics.jsonl";
  env.fail_from = 1;  // the first epoch's line is written, the second's finds the disk full
  const fs::path run = dir_ / "run";
  SessionOutcome out = train_session(small_config(data_, run), env);
  EXPECT_EQ(out.status, SessionOutcome::Status::done);
  EXPECT_GE(env.prefix_failures, 1);
  EXPECT_EQ(lines_of(run / "metrics.jsonl").size(), 1u);
  expect_whole_lines(run / "metrics.jsonl");
  EXPECT_FALSE(checkpoints(run).empty()) << "the checkpoints are not the log's to give up";
}

TEST_F(SessionTest, AFailedWriteOfEventsDropsThemAndTrainingGoesOn) {
  RunEnv env;
  env.fail_prefix = "events.out.tfevents.";
  env.prefix_fault = FaultEnv::Fault::io;
  env.fail_from = 0;
  const fs::path run = dir_ / "run";
  SessionOutcome out = train_session(small_config(data_, run), env);
  EXPECT_EQ(out.status, SessionOutcome::Status::done);
  EXPECT_GE(env.prefix_failures, 1) << "the events were not written through the Env";
  EXPECT_EQ(lines_of(run / "metrics.jsonl").size(), 2u);
  // Nothing torn: an events file, if any, holds whole records only (here: none got through).
  for (const auto& n : listing(run))
    if (n.rfind("events.out.tfevents.", 0) == 0) EXPECT_EQ(fs::file_size(run / n), 0u) << n;
}

TEST_F(SessionTest, ADeadlineOnTheFakeClockStopsResumableJustBeforeIt) {
  RunEnv env;
  env.tick = 0.25;  // every clock read: a step, a save, an evaluation each take a tick or a few
  const fs::path run = dir_ / "run";
  TrainConfig c = small_config(data_, run);
  c.epochs = 12;  // more than 20 fake seconds hold
  c.deadline = DeadlineSpec::parse("20s");
  const auto start = env.now;
  SessionOutcome out = train_session(c, env);
  ASSERT_EQ(out.status, SessionOutcome::Status::stopped_resumable);
  EXPECT_GT(out.step, 0);
  EXPECT_EQ(out.resumable_step, out.step) << "the stop step was saved";
  // The deadline counts from when the run starts (a tick or two after `start`).
  const double saved_at = std::chrono::duration<double>(env.last_checkpoint_at - start).count();
  EXPECT_LE(saved_at, 20.0 + 0.75) << "the last checkpoint was saved after the deadline";
  // Not early either: the stop leaves less than one more step, save and evaluation, plus the
  // margin (Deadline::margin: 10% + 1 s), of a few ticks each.
  EXPECT_GE(saved_at, 20.0 - 4.0) << "stopped long before the deadline";
  bool found = false;
  for (const auto& p : checkpoints(run))
    found = found || p.filename().string().find("-s" + std::string(6 - std::to_string(out.step).size(), '0') +
                                                std::to_string(out.step)) != std::string::npos;
  EXPECT_TRUE(found) << "no checkpoint of step " << out.step;

  // The same command with time to spare continues from there and finishes.
  RunEnv later;
  TrainConfig again = small_config(data_, run);
  again.epochs = 12;
  SessionOutcome done = train_session(again, later);
  EXPECT_EQ(done.status, SessionOutcome::Status::done);
  EXPECT_GT(done.step, out.step);
}

TEST_F(SessionTest, ADeadlineTooShortIsABudgetErrorThatCreatesNothing) {
  FaultEnv env;  // the clock stands still: only the deadline's own length counts
  const fs::path run = dir_ / "new" / "run";
  TrainConfig c = small_config(data_, run);
  c.deadline = DeadlineSpec::parse("1s");
  try {
    train_session(c, env);
    FAIL() << "trained with a 1 s deadline";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::budget);
    EXPECT_NE(std::string(e.what()).find("nothing was changed"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir_ / "new")) << "a refused run left a folder behind";
}

TEST_F(SessionTest, RefusalsBeforeTrainingLeaveAnOldRunAsItWas) {
  const fs::path run = dir_ / "run";
  {
    RunEnv env;
    ASSERT_EQ(train_session(small_config(data_, run), env).status, SessionOutcome::Status::done);
  }
  auto before = listing(run);
  auto metrics_before = lines_of(run / "metrics.jsonl");
  // --fresh with a deadline too short, a memory budget that cannot hold the image size: each is
  // refused before the run folder changes (--fresh's discards included).
  TrainConfig short_deadline = small_config(data_, run);
  short_deadline.fresh = true;
  short_deadline.deadline = DeadlineSpec::parse("1s");
  TrainConfig huge = small_config(data_, run);
  huge.fresh = true;
  huge.image_size = 1 << 20;
  for (const TrainConfig* c : {&short_deadline, &huge}) {
    RunEnv env;
    try {
      train_session(*c, env);
      ADD_FAILURE() << "not refused";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::budget) << e.what();
    }
    EXPECT_EQ(listing(run), before);
    EXPECT_EQ(lines_of(run / "metrics.jsonl"), metrics_before);
  }
}

TEST_F(SessionTest, FreshRemovesTheOldMetricsAndEvents) {
  const fs::path run = dir_ / "run";
  {
    RunEnv env;
    ASSERT_EQ(train_session(small_config(data_, run), env).status, SessionOutcome::Status::done);
  }
  std::ofstream(run / "events.out.tfevents.1.old.frugal") << "old";
  TrainConfig c = small_config(data_, run);
  c.fresh = true;
  c.epochs = 1;
  RunEnv env;
  ASSERT_EQ(train_session(c, env).status, SessionOutcome::Status::done);
  EXPECT_EQ(lines_of(run / "metrics.jsonl").size(), 1u) << "the old run's lines are still there";
  EXPECT_FALSE(fs::exists(run / "events.out.tfevents.1.old.frugal"));
}

// Everything in a folder, name -> bytes: what "left as it was" compares.
std::map<std::string, std::string> contents(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& n : listing(dir)) {
    std::ifstream in(dir / n, std::ios::binary);
    out[n] = std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  return out;
}

// A notebook cell run twice: the second training of a run folder fails at once, naming the
// process that holds it, and reads or writes nothing there.
TEST_F(SessionTest, ARunFolderInUseByAnotherTrainingIsRefusedAndLeftAsItWas) {
  const fs::path run = dir_ / "run";
  {
    RunEnv env;
    ASSERT_EQ(train_session(small_config(data_, run), env).status, SessionOutcome::Status::done);
  }
  const auto before = contents(run);
  FileLock held = FileLock::lock(run, "the test");  // as the first training holds it
  for (bool fresh : {false, true}) {
    TrainConfig c = small_config(data_, run);
    c.fresh = fresh;
    c.lr = 0.5;  // a changed option is not even looked at
    RunEnv env;
    try {
      train_session(c, env);
      ADD_FAILURE() << "trained into a run folder in use";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::io) << e.what();
      // (The holder's pid is named only when it is another process: tests/cli/train_concurrency.sh.)
      EXPECT_NE(std::string(e.what()).find("in use by another frugal process"), std::string::npos) << e.what();
    }
    EXPECT_EQ(env.ops, 0) << "wrote through its Env";
    EXPECT_EQ(contents(run), before);
  }
}

// A Hugging Face model folder given as --run: refused before anything is written, --fresh's
// removals included, every file as it was.
TEST_F(SessionTest, AFolderFrugalDidNotMakeIsRefusedAndLeftAsItWas) {
  const fs::path hub = dir_ / "vit-base";
  fs::create_directory(hub);
  std::ofstream(hub / "config.json") << R"({"architectures": ["ViTForImageClassification"]})";
  std::ofstream(hub / "model.safetensors") << "weights";
  std::ofstream(hub / "metrics.jsonl") << "{\"eval_loss\": 0.3}\n";
  std::ofstream(hub / "events.out.tfevents.1700000000.host.42.0") << "tb";
  const auto before = contents(hub);
  for (bool fresh : {false, true}) {
    TrainConfig c = small_config(data_, hub);
    c.fresh = fresh;
    RunEnv env;
    try {
      train_session(c, env);
      ADD_FAILURE() << "trained into " << hub;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage) << e.what();
      const std::string what = e.what();
      for (const char* part : {"config.json is not a frugal run configuration", "model.safetensors",
                               "a new or empty folder", "nothing was changed"})
        EXPECT_NE(what.find(part), std::string::npos) << part << " not in: " << what;
    }
    EXPECT_EQ(contents(hub), before);
  }
}

// metrics.jsonl as a link out of the run folder: bad input naming it, before anything is written;
// the file outside is not appended to.
TEST_F(SessionTest, AMetricsFileLinkingOutOfTheRunFolderIsRefusedBeforeTraining) {
  const fs::path run = dir_ / "run";
  fs::create_directory(run);
  std::ofstream(run / "config.json") << R"({"format": "frugal-run-config", "version": 1})";
  std::ofstream(dir_ / "elsewhere.jsonl") << "theirs\n";
  fs::create_symlink(dir_ / "elsewhere.jsonl", run / "metrics.jsonl");
  const auto before = contents(run);
  RunEnv env;
  try {
    train_session(small_config(data_, run), env);
    ADD_FAILURE() << "trained with metrics.jsonl linking out";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid) << e.what();
    EXPECT_NE(std::string(e.what()).find((run / "metrics.jsonl").string() + ": expected a regular file"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(contents(run), before);
  EXPECT_EQ(lines_of(dir_ / "elsewhere.jsonl"), std::vector<std::string>{"theirs"});
}

// The disk fills once the run has a good checkpoint: the session stops resumable from it (exit 75)
// instead of training on and ending in a budget failure; a rerun while the disk is still full is a
// budget refusal before any training (nothing changed); once there is room it resumes and finishes.
TEST_F(SessionTest, ADiskThatFillsAfterAGoodCheckpointStopsResumableAndARerunWaitsForRoom) {
  // Every checkpoint after the first finds the disk full.
  class FullAfterFirstCheckpoint : public RunEnv {
   public:
    std::atomic<int> published = 0, refused = 0;
    std::unique_ptr<WritableFile> new_writable_file(const fs::path& path) override {
      if (published > 0 && path.filename().string().rfind("ckpt-", 0) == 0) {
        ++refused;
        throw DiskFullError(path.string() + ": injected ENOSPC");
      }
      return RunEnv::new_writable_file(path);
    }
    void rename_file(const fs::path& from, const fs::path& to) override {
      RunEnv::rename_file(from, to);
      if (to.filename().string().rfind("ckpt-", 0) == 0) ++published;
    }
  };
  const fs::path run = dir_ / "run";
  TrainConfig c = small_config(data_, run);
  c.epochs = 4;
  FullAfterFirstCheckpoint full;
  SessionOutcome out = train_session(c, full);
  ASSERT_GE(full.refused, 1) << "the full disk was never met";
  EXPECT_EQ(out.status, SessionOutcome::Status::stopped_resumable);
  const auto saved = checkpoints(run);
  ASSERT_EQ(saved.size(), 1u);
  const std::int64_t first = parse_checkpoint_name(saved[0].filename().string())->step;
  EXPECT_EQ(out.resumable_step, first);
  EXPECT_GT(out.step, first);
  EXPECT_LT(out.step, 4 * first) << "trained every epoch on a full disk";

  // The same command while the disk is still full: refused before training.
  const auto before = contents(run);
  {
    RunEnv still_full;
    still_full.free_bytes = 64 << 10;
    try {
      train_session(c, still_full);
      ADD_FAILURE() << "trained on a full disk";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::budget) << e.what();
      const std::string what = e.what();
      EXPECT_NE(what.find("free on its disk for the next save"), std::string::npos) << what;
      EXPECT_NE(what.find("nothing was changed"), std::string::npos) << what;
    }
    EXPECT_EQ(contents(run), before);
  }
  // Room again: it resumes from the good checkpoint and finishes.
  RunEnv room;
  SessionOutcome done = train_session(c, room);
  EXPECT_EQ(done.status, SessionOutcome::Status::done);
  EXPECT_EQ(done.step, 4 * first);
  EXPECT_EQ(nlohmann::json::parse(lines_of(run / "metrics.jsonl").back())["epoch"], 4);
}

TEST_F(SessionTest, OneClassIsRefusedAsBadInput) {
  TempDir one;
  const fs::path data = make_archive(one.path(), 1);
  const fs::path run = dir_ / "run";
  RunEnv env;
  try {
    train_session(small_config(data, run), env);
    FAIL() << "trained on one class";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid);
    EXPECT_NE(std::string(e.what()).find("at least 2 classes"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(run));
}

// Issue 29 item 4: with --init and no --model, the weights choose the model, and the log says the
// model, its image size and why; weights of no zoo model are a usage error asking for --model.
TEST_F(SessionTest, WithoutModelTheInitWeightsChooseItAndTheLogSaysSo) {
  const fs::path weights = dir_ / "r18.safetensors";
  save_safetensors(weights, to_named(state_dict(*make_model("resnet18", 5, 1))), {});
  TrainConfig c = small_config(data_, dir_ / "run");
  c.model.clear();
  c.init = weights.string();
  c.epochs = 1;
  Progress::set_quiet(false);
  ::testing::internal::CaptureStderr();
  train_session(c);
  const std::string err = ::testing::internal::GetCapturedStderr();
  Progress::set_quiet(true);
  EXPECT_NE(err.find("model: resnet18 at 12 px (chosen by --init: its weights have resnet18's names and shapes"),
            std::string::npos)
      << err;
  std::ifstream cfg(dir_ / "run/config.json");
  EXPECT_EQ(nlohmann::json::parse(cfg)["model"], "resnet18");

  // Neither: cnn, said as the default.
  c.init.clear();
  c.run = (dir_ / "run2").string();
  Progress::set_quiet(false);
  ::testing::internal::CaptureStderr();
  train_session(c);
  const std::string err2 = ::testing::internal::GetCapturedStderr();
  Progress::set_quiet(true);
  EXPECT_NE(err2.find("model: cnn at 12 px (the default; --model not given; --image-size)"), std::string::npos) << err2;

  // Weights of no zoo model.
  std::map<std::string, torch::Tensor> odd = {{"encoder.weight", torch::zeros({4, 4})}};
  save_safetensors(dir_ / "odd.safetensors", to_named(odd), {});
  c.init = (dir_ / "odd.safetensors").string();
  c.run = (dir_ / "run3").string();
  try {
    train_session(c);
    FAIL() << "trained on weights of no zoo model";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("--model NAME"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir_ / "run3"));
}

}  // namespace
}  // namespace frugal

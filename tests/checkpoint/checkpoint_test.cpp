#include <gtest/gtest.h>

#include "budget/fault_env.h"
#include "checkpoint/checkpoint_helpers.h"
#include "frugal/checkpoint.h"
#include "frugal/fs.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

using testing::FaultEnv;
using testing::same_tensors;
using testing::small_checkpoint;
using testing::TempDir;

int count_temporaries(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += is_temp_path(e.path());
  return n;
}

TEST(Checkpoint, RoundTripsTensorsAndMetadata) {
  TempDir dir;
  auto c = small_checkpoint(42, 0.75);
  c.extra["quantization"] = "int8";
  save_checkpoint(dir / "c.safetensors", c);
  auto d = load_checkpoint(dir / "c.safetensors");
  EXPECT_TRUE(same_tensors(c.weights, d.weights));
  EXPECT_TRUE(same_tensors(c.state, d.state));
  EXPECT_EQ(d.model.name, "cnn");
  EXPECT_EQ(d.model.classes, c.model.classes);
  EXPECT_EQ(d.model.mean, c.model.mean);
  EXPECT_EQ(d.step, 42);
  EXPECT_EQ(d.loader, c.loader);
  EXPECT_EQ(d.config, c.config);
  EXPECT_EQ(*d.metric_value, 0.75);
  EXPECT_EQ(d.extra.at("quantization"), "int8");
  // State lives under the "frugal." prefix on disk, weights under their plain names.
  auto raw = load_safetensors(dir / "c.safetensors");
  EXPECT_TRUE(raw.find("frugal.rng.cpu"));
  EXPECT_TRUE(raw.find("conv1.weight"));
  EXPECT_EQ(verify_checkpoint_file(dir / "c.safetensors"), "");
}

TEST(Checkpoint, FlippedPayloadBitFailsTheChecksum) {
  TempDir dir;
  save_checkpoint(dir / "c.safetensors", small_checkpoint(1));
  std::string bytes = read_file(dir / "c.safetensors");
  bytes[bytes.size() - 100] ^= 0x10;
  write_file_atomic(dir / "c.safetensors", bytes);
  try {
    load_checkpoint(dir / "c.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid);
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos);
  }
}

TEST(ResolveCkpt, RunFolderMeansItsBestFile) {
  TempDir dir;
  EXPECT_THROW(resolve_ckpt(dir.path()), Error);
  save_checkpoint(dir / kBestFile, small_checkpoint(1));
  EXPECT_EQ(resolve_ckpt(dir.path()), dir / kBestFile);
  EXPECT_EQ(load_ckpt_arg(dir.path()).step, 1);
}

TEST(CheckpointManager, CorruptOrTruncatedNewestFallsBackToThePreviousGoodOne) {
  TempDir dir;
  CheckpointManager m(dir.path(), {});
  m.save(small_checkpoint(10));
  m.save(small_checkpoint(20));
  auto newest = dir / checkpoint_file_name(2, 20, false);
  std::string bytes = read_file(newest);
  write_file_atomic(newest, bytes.substr(0, bytes.size() / 2));
  CheckpointManager again(dir.path(), {});
  auto r = again.load_latest();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->ckpt.step, 10);
  ASSERT_EQ(r->skipped.size(), 1u);
  EXPECT_NE(r->skipped[0].find(newest.filename().string()), std::string::npos);
  EXPECT_TRUE(fs::exists(newest));  // kept for inspection
}

TEST(CheckpointManager, RetentionKeepsLastAndBestAndBestFileFollowsTheMetric) {
  TempDir dir;
  CheckpointManager m(dir.path(), {.retention = {.keep_last = 2, .keep_best = 1}});
  double metrics[] = {0.5, 0.9, 0.6, 0.7, 0.65};
  for (int i = 0; i < 5; ++i) m.save(small_checkpoint(10 * (i + 1), metrics[i], i));
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(dir.path())) files.insert(e.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{checkpoint_file_name(2, 20, false), checkpoint_file_name(4, 40, false),
                                          checkpoint_file_name(5, 50, false), kBestFile}));
  auto best = load_checkpoint(dir / kBestFile);
  EXPECT_EQ(best.step, 20);
  EXPECT_EQ(best.kind, "best");
  EXPECT_TRUE(best.state.empty());
}

TEST(CheckpointManager, WithoutValidationBestIsTheNewest) {
  TempDir dir;
  CheckpointManager m(dir.path(), {});
  m.save(small_checkpoint(10));
  m.save(small_checkpoint(20));
  EXPECT_EQ(load_checkpoint(dir / kBestFile).step, 20);
}

TEST(CheckpointManager, FreshStartDiscardsThePreviousRunsCheckpoints) {
  TempDir dir;
  { CheckpointManager(dir.path(), {}).save(small_checkpoint(500)); }
  CheckpointManager m(dir.path(), {});
  EXPECT_EQ(m.discard_previous(), 2);  // the checkpoint and best.safetensors
  m.save(small_checkpoint(10));
  EXPECT_EQ(CheckpointManager(dir.path(), {}).load_latest()->ckpt.step, 10);
}

TEST(CheckpointManager, RemovesLeftoverTemporariesAtStart) {
  TempDir dir;
  write_file_atomic(dir / "ckpt-e0001-s000010.safetensors.frugal-tmp-0123", "half");
  CheckpointManager m(dir.path(), {});
  EXPECT_EQ(m.remove_temporaries(), 1);
  EXPECT_EQ(count_temporaries(dir.path()), 0);
}

// Every file operation of a save (checkpoint, best file) fails in turn: the previous checkpoint
// still loads, no temporary is left, and whatever is visible verifies.
TEST(CheckpointManager, FaultAtEveryWriteFsyncRenameLeavesThePreviousCheckpointIntact) {
  for (int at = 0;; ++at) {
    TempDir dir;
    { CheckpointManager(dir.path(), {}).save(small_checkpoint(10, 0.5)); }
    FaultEnv env;
    env.fault = at % 2 ? FaultEnv::Fault::io : FaultEnv::Fault::disk_full;
    env.fail_at = at;
    try {
      CheckpointManager m(dir.path(), {}, env);
      auto r = m.save(small_checkpoint(20, 0.6));
      if (r.status == SaveResult::Status::disk_full) EXPECT_NE(r.message.find("intact"), std::string::npos);
    } catch (const Error&) {
    }
    EXPECT_EQ(count_temporaries(dir.path()), 0) << "fault at op " << at;
    for (const auto& e : list_checkpoints(dir.path(), true)) EXPECT_TRUE(e.valid) << e.path << ": " << e.problem;
    EXPECT_EQ(verify_checkpoint_file(dir / kBestFile), "");
    CheckpointManager reader(dir.path(), {});
    auto r = reader.load_latest();
    ASSERT_TRUE(r) << "fault at op " << at;
    EXPECT_TRUE(r->skipped.empty());
    EXPECT_GE(r->ckpt.step, 10);
    if (env.ops <= at) break;  // the fault was never reached: every operation has been covered
  }
}

TEST(CheckpointManager, NoRoomSavesWeightsOnlyOrSkipsLoudly) {
  TempDir dir;
  FaultEnv env;
  CheckpointManager m(dir.path(), {}, env);
  DiskBudget budget(dir.path(), {}, env);
  m.set_disk_budget(&budget);
  auto first = m.save(small_checkpoint(10));
  EXPECT_EQ(first.status, SaveResult::Status::saved);
  env.free_bytes = 260 << 10;  // room for the weights (+ header allowance), not weights + state
  auto c = small_checkpoint(20);
  c.state.emplace_back("big", torch::zeros({100000}));
  auto r = m.save(c);
  EXPECT_EQ(r.status, SaveResult::Status::weights_only);
  EXPECT_EQ(load_checkpoint(dir / kBestFile).step, 20);
  env.free_bytes = 10;
  r = m.save(small_checkpoint(30));
  EXPECT_EQ(r.status, SaveResult::Status::skipped_no_room);
  EXPECT_NE(r.message.find("SKIPPED"), std::string::npos);
  CheckpointManager reader(dir.path(), {});
  EXPECT_EQ(reader.load_latest()->ckpt.step, 10);
}

TEST(CheckpointWriter, SavesInTheBackgroundAndPropagatesErrors) {
  TempDir dir;
  CheckpointManager m(dir.path(), {.retention = {.keep_last = 10}});
  CheckpointWriter w(m);
  auto c = small_checkpoint(10);
  w.submit(c);
  c.weights[0].second.add_(1);  // training goes on mutating the live tensors
  w.submit(small_checkpoint(20));
  auto r = w.wait();
  EXPECT_EQ(r.status, SaveResult::Status::saved);
  EXPECT_TRUE(torch::equal(load_checkpoint(dir / checkpoint_file_name(1, 10, false)).weights[0].second,
                           small_checkpoint(10).weights[0].second));
  testing::remove_tree(dir.path());  // the next save cannot create its file
  w.submit(small_checkpoint(30));
  EXPECT_THROW(w.wait(), Error);
}

TEST(OptimizerState, AdamWResumesBitExactly) {
  auto make = [] {
    torch::manual_seed(3);
    return torch::nn::Linear(4, 2);
  };
  auto step = [](torch::nn::Linear& net, torch::optim::Optimizer& opt, int i) {
    torch::manual_seed(100 + i);
    opt.zero_grad();
    net->forward(torch::randn({8, 4})).pow(2).sum().backward();
    opt.step();
  };
  auto params = [](torch::nn::Linear& net) {
    NamedTensors p;
    for (auto& item : net->named_parameters()) p.emplace_back(item.key(), item.value());
    return p;
  };
  auto a = make();
  torch::optim::AdamW opt_a(a->parameters(), torch::optim::AdamWOptions(0.01));
  for (int i = 0; i < 3; ++i) step(a, opt_a, i);
  Checkpoint c;
  c.state = optimizer_state(opt_a, params(a));
  c.weights = params(a);
  TempDir dir;
  save_checkpoint(dir / "c.safetensors", c);
  auto loaded = load_checkpoint(dir / "c.safetensors");
  auto b = make();
  {
    torch::NoGradGuard ng;
    for (auto& item : b->named_parameters()) item.value().copy_(loaded.weight_map().at(item.key()));
  }
  torch::optim::AdamW opt_b(b->parameters(), torch::optim::AdamWOptions(0.01));
  load_optimizer_state(opt_b, params(b), loaded);
  for (int i = 3; i < 6; ++i) {
    step(a, opt_a, i);
    step(b, opt_b, i);
  }
  EXPECT_TRUE(torch::equal(a->weight, b->weight));
  EXPECT_TRUE(torch::equal(a->bias, b->bias));
}

TEST(RngState, RestoringReplaysTheSameNumbers) {
  torch::manual_seed(5);
  auto s = cpu_rng_state().clone();
  auto x = torch::randn({4});
  set_cpu_rng_state(s);
  EXPECT_TRUE(torch::equal(x, torch::randn({4})));
}

}  // namespace
}  // namespace frugal

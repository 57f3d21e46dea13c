#include <gtest/gtest.h>

#include <optional>

#include "budget/fault_env.h"
#include "checkpoint/checkpoint_helpers.h"
#include "frugal/checkpoint/checkpoint.h"
#include "frugal/util/fs.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

using testing::error_kind;
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
  EXPECT_EQ(error_kind([&] { resolve_ckpt(dir.path()); }), ErrorKind::usage);
  save_checkpoint(dir / kBestFile, small_checkpoint(1));
  EXPECT_EQ(resolve_ckpt(dir.path()), dir / kBestFile);
  EXPECT_EQ(load_ckpt_arg(dir.path()).step, 1);
}

TEST(ResolveCkpt, AMissingPathGetsTheSharedInputAnswer) {
  TempDir dir;
  save_checkpoint(dir / "model.safetensors", small_checkpoint(1));
  try {
    resolve_ckpt(dir / "modle.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    const std::string what = e.what();
    EXPECT_NE(what.find("found no such file or folder"), std::string::npos) << what;
    EXPECT_NE(what.find("did you mean"), std::string::npos) << what;
  }
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

// Every file operation of a save (checkpoint, best file) fails in turn, as a full disk and as
// another I/O error: the previous checkpoint still loads, no temporary is left, and whatever is
// visible verifies. A full disk is never an exception: the save says disk_full (the checkpoint
// could not be written) or saved without a new best; any other I/O error is thrown as itself.
TEST(CheckpointManager, FaultAtEveryWriteFsyncRenameLeavesThePreviousCheckpointIntact) {
  int disk_full_checkpoint = 0, disk_full_best = 0, io_thrown = 0;
  for (int at = 0;; ++at) {
    for (auto fault : {FaultEnv::Fault::disk_full, FaultEnv::Fault::io}) {
      TempDir dir;
      { CheckpointManager(dir.path(), {}).save(small_checkpoint(10, 0.5)); }
      FaultEnv env;
      env.fault = fault;
      env.fail_at = at;
      const std::string what =
          std::string(fault == FaultEnv::Fault::io ? "I/O error" : "disk full") + " at op " + std::to_string(at);
      std::optional<SaveResult> r;
      try {
        CheckpointManager m(dir.path(), {}, env);
        r = m.save(small_checkpoint(20, 0.6));
      } catch (const DiskFullError& e) {
        ADD_FAILURE() << what << ": a full disk escaped the manager: " << e.what();
      } catch (const Error& e) {
        EXPECT_EQ(fault, FaultEnv::Fault::io) << what << ": " << e.what();
        EXPECT_EQ(e.kind(), ErrorKind::io) << what << ": " << e.what();
        EXPECT_NE(std::string(e.what()).find("injected I/O error"), std::string::npos) << e.what();
        ++io_thrown;
      }
      const bool reached = env.ops > at;
      if (r && reached) {
        EXPECT_EQ(fault, FaultEnv::Fault::disk_full) << what << ": the I/O error was swallowed";
        if (r->status == SaveResult::Status::disk_full) {
          ++disk_full_checkpoint;
          EXPECT_NE(r->message.find("injected ENOSPC"), std::string::npos) << what << ": " << r->message;
          EXPECT_NE(r->message.find("intact"), std::string::npos) << what << ": " << r->message;
          EXPECT_EQ(CheckpointManager(dir.path(), {}).load_latest()->ckpt.step, 10) << what;
        } else {
          // The checkpoint is in. best.safetensors was not replaced, or (a fault at a folder sync,
          // after a rename) a file stands as written, with a warning.
          EXPECT_EQ(r->status, SaveResult::Status::saved) << what << ": " << r->message;
          EXPECT_EQ(CheckpointManager(dir.path(), {}).load_latest()->ckpt.step, 20) << what;
          EXPECT_EQ(load_checkpoint(dir / kBestFile).step, r->best_updated ? 20 : 10) << what;
          disk_full_best += !r->best_updated;
        }
      }
      if (r && !reached) EXPECT_EQ(r->status, SaveResult::Status::saved) << what;
      EXPECT_EQ(count_temporaries(dir.path()), 0) << what;
      for (const auto& e : list_checkpoints(dir.path(), true)) EXPECT_TRUE(e.valid) << e.path << ": " << e.problem;
      EXPECT_EQ(verify_checkpoint_file(dir / kBestFile), "");
      CheckpointManager reader(dir.path(), {});
      auto latest = reader.load_latest();
      ASSERT_TRUE(latest) << what;
      EXPECT_TRUE(latest->skipped.empty());
      EXPECT_GE(latest->ckpt.step, 10);
      if (!reached) {  // every operation has been covered
        EXPECT_GT(disk_full_checkpoint, 0);
        EXPECT_GT(disk_full_best, 0);
        EXPECT_GT(io_thrown, 0);
        return;
      }
    }
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
  testing::remove_tree_quietly(dir.path());  // the next save cannot create its file
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

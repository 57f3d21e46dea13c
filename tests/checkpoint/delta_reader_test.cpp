// The delta codec against an independent decoder: tests/checkpoint/delta_reader.py, written from
// docs/formats.md alone, decodes a delta checkpoint frugal wrote and compares every tensor bit for
// bit with the same checkpoint saved whole.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "budget/fault_env.h"
#include "frugal/checkpoint/checkpoint.h"
#include "reference_python.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

using testing::python;
using testing::TempDir;

// Every dtype a checkpoint may hold, 0-d to 4-d.
Checkpoint every_dtype(int seed) {
  torch::manual_seed(seed);
  Checkpoint c;
  c.model = {"cnn", {"a", "b"}, 28, 1, {0.5f}, {0.25f}};
  c.weights = {{"conv.weight", torch::randn({6, 1, 3, 3})},
               {"conv.bias", torch::randn({6})},
               {"half", torch::randn({7, 5}).to(torch::kFloat16)},
               {"bhalf", torch::randn({9}).to(torch::kBFloat16)},
               {"double", torch::randn({3, 3}, torch::kFloat64)},
               {"bn.num_batches_tracked", torch::tensor(int64_t{1234}, torch::kInt64)},
               {"i32", torch::randint(-1000, 1000, {11}, torch::kInt32)},
               {"i16", torch::randint(-1000, 1000, {4, 2}, torch::kInt16)},
               {"i8", torch::randint(-100, 100, {13}, torch::kInt8)},
               {"mask", torch::randint(0, 2, {10}).to(torch::kBool)},
               {"fc.weight", torch::randn({2, 24})}};
  c.state = {{"optim.fc.weight.exp_avg", torch::randn({2, 24})},
             {"rng.cpu", torch::randint(0, 255, {64}, torch::kUInt8)}};
  c.step = 10;
  return c;
}

TEST(DeltaReference, PythonReaderFromTheFormatDocDecodesEveryModeBitExactly) {
  const std::string py = python();
  if (py.empty() || std::system((py + " -c 'import numpy' 2>/dev/null").c_str()) != 0 ||
      std::system("zstd --version >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "needs the .venv's numpy and the zstd command";
  TempDir dir;
  const Checkpoint base = every_dtype(1);
  save_checkpoint(dir / "ckpt-e0000-s000010.safetensors", base);

  Checkpoint next = every_dtype(1);  // same values: "same" for what the update leaves alone
  next.step = 20;
  torch::manual_seed(2);
  for (auto& [name, t] : next.weights) {
    if (name == "conv.weight" || name == "fc.weight" || name == "half" || name == "bhalf" || name == "double")
      t = t + (1e-3 * torch::randn(t.sizes())).to(t.scalar_type());  // "xor"
    if (name == "i32") t = t + 1;
  }
  next.weights[1].second = torch::randn({3, 2});                              // reshaped: "raw"
  next.weights.emplace_back("new.weight", torch::arange(17, torch::kInt64));  // new: "raw"
  next.weights[8].second = next.weights[8].second.to(torch::kInt16);          // dtype changed: "raw"
  next.state[0].second = next.state[0].second * 0.9;
  save_delta_checkpoint(dir / "ckpt-e0000-s000020.delta.safetensors", next, base,
                        dir / "ckpt-e0000-s000010.safetensors");
  save_checkpoint(dir / "whole.safetensors", next);

  const std::string reader = std::string(FRUGAL_SOURCE_DIR) + "/tests/checkpoint/delta_reader.py ";
  const std::string cmd = py + " " + reader + (dir / "ckpt-e0000-s000020.delta.safetensors").string() + " " +
                          (dir / "whole.safetensors").string() + " --expect-modes same,xor,raw";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  // The reader can tell a wrong answer: the base is not the checkpoint the delta holds.
  const std::string wrong = py + " " + reader + (dir / "ckpt-e0000-s000020.delta.safetensors").string() + " " +
                            (dir / "ckpt-e0000-s000010.safetensors").string() + " >/dev/null";
  EXPECT_NE(std::system(wrong.c_str()), 0) << wrong;
}

}  // namespace
}  // namespace frugal

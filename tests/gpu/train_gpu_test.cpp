// The trainer's CUDA paths that the CPU cannot show (GPU only; each skips without one): fp16
// autocast under --grad-checkpoint, normalize() without a host sync, the CUDA generator in
// checkpoints, --gpu-memory on an initialised allocator, the device verdict on this GPU, cuDNN's
// heuristics under --deterministic, the GPU loader's out-of-memory fallback, and Gloo carrying
// CUDA tensors between ranks on one GPU.
#include <gtest/gtest.h>

#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/util/Exception.h>

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <optional>
#include <thread>

#include "gpu/photo_archive.h"
#include "loopback_group.h"
#include "frugal/checkpoint/checkpoint.h"
#include "frugal/loader/loader.h"
#include "frugal/loader/gpu_loader.h"
#include "frugal/models/models.h"
#include "frugal/train/amp.h"
#include "frugal/train/optim.h"
#include "frugal/train/step.h"
#include "frugal/training/train_config.h"
#include "frugal/gpu/plan.h"
#include "train/device.h"
#include "train/distributed.h"

namespace frugal {
namespace {

bool cuda() { return torch::cuda::is_available(); }
const torch::Device kGpu(torch::kCUDA, 0);

using Batches = std::vector<std::pair<torch::Tensor, torch::Tensor>>;
using testing::photos;

Batches tiny_set(int steps, int batch) {
  torch::manual_seed(11);
  Batches out;
  for (int s = 0; s < steps; ++s) {
    auto labels = torch::randint(0, 4, {batch}, torch::kInt64);
    auto images = torch::randint(0, 96, {batch, 1, 28, 28}, torch::kInt64);
    for (int i = 0; i < batch; ++i) {
      auto row = labels[i].item<std::int64_t>() * 7;
      images[i].slice(1, row, row + 7).add_(150);
    }
    out.emplace_back(images.clamp(0, 255).to(torch::kUInt8), labels);
  }
  return out;
}

// cnn on the GPU, fp16 with the loss scaler, cuDNN deterministic; returns weights and buffers.
std::vector<torch::Tensor> train_cnn_fp16(bool grad_checkpoint, const Batches& data) {
  at::globalContext().setDeterministicCuDNN(true);
  at::globalContext().setBenchmarkCuDNN(false);
  torch::manual_seed(5);
  auto model = make_model("cnn", 4, 1);
  model->to(kGpu);
  to_channels_last(*model);
  model->set_grad_checkpoint(grad_checkpoint);
  model->train();
  auto opt = make_optimizer(*model, OptimizerOptions{});
  LossScaler scaler({.enabled = true}, kGpu);
  StepOptions o;
  o.micro_batch = 16;
  o.amp = AmpMode::fp16;
  o.device = kGpu;
  o.channels_last = true;
  TrainStep step(*model, *opt.optimizer, scaler, o);
  for (auto& b : data) step.run({b});
  std::vector<torch::Tensor> out;
  for (auto& p : model->parameters()) out.push_back(p.detach().cpu());
  for (auto& b : model->buffers()) out.push_back(b.detach().cpu());
  return out;
}

TEST(GpuTrain, GradCheckpointFp16WeightsAreBitwiseThoseOfPlainTraining) {
  if (!cuda()) GTEST_SKIP() << "no CUDA device";
  setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 0);
  auto data = tiny_set(6, 32);
  auto plain = train_cnn_fp16(false, data), checkpointed = train_cnn_fp16(true, data);
  ASSERT_EQ(plain.size(), checkpointed.size());
  for (std::size_t i = 0; i < plain.size(); ++i) EXPECT_TRUE(torch::equal(plain[i], checkpointed[i])) << i;
}

TEST(GpuTrain, NormalizeKeepsItsStatisticsOnTheDeviceWithoutAHostSync) {
  if (!cuda()) GTEST_SKIP() << "no CUDA device";
  auto images = torch::randint(0, 256, {4, 3, 8, 8}, torch::kUInt8).to(kGpu);
  auto first = normalize(images, {0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f});  // makes the cache
  auto& warn = c10::cuda::warning_state();
  warn.set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);  // a synchronising call throws now
  torch::Tensor again;
  EXPECT_NO_THROW(again = normalize(images, {0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}));
  warn.set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
  EXPECT_TRUE(torch::equal(first, again));
  auto cpu = normalize(images.cpu(), {0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f});
  // CUDA divides by a scalar as a product with its reciprocal: an ulp apart, and x/255 - mean
  // cancels to small values, so an absolute tolerance (an ulp of 0.5, divided by the std).
  EXPECT_TRUE(torch::allclose(first.cpu(), cpu, 1e-5, 1e-6)) << (first.cpu() - cpu).abs().max();
}

TEST(GpuTrain, TheCudaGeneratorStateRoundTripsSoDropoutResumesExactly) {
  if (!cuda()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(3);
  auto state = device_rng_state(kGpu);
  ASSERT_TRUE(state.defined());
  auto x = torch::ones({1024}, torch::TensorOptions().device(kGpu));
  auto a = torch::dropout(x, 0.5, true);
  set_device_rng_state(kGpu, state);
  auto b = torch::dropout(x, 0.5, true);
  EXPECT_TRUE(torch::equal(a, b));
  auto c = torch::dropout(x, 0.5, true);
  EXPECT_FALSE(torch::equal(a, c));
}

TEST(GpuTrain, GpuMemoryCapIsSetOnAnInitialisedAllocatorAndLeavesOutWhatIsInUse) {
  if (!cuda()) GTEST_SKIP() << "no CUDA device";
  std::uint64_t total = at::cuda::getDeviceProperties(0)->totalGlobalMem;
  std::string line;
  ASSERT_NO_THROW(line = limit_gpu_memory(kGpu, total / 2)) << "setMemoryFraction before the allocator's init";
  double f = c10::cuda::CUDACachingAllocator::getMemoryFraction(0);
  EXPECT_GT(f, 0.0);
  EXPECT_LT(f, 0.5);  // the context and whatever else is in use came off
  EXPECT_NE(line.find("already held"), std::string::npos) << line;
  // Past the cap: the allocator refuses although the device has room.
  EXPECT_THROW(torch::empty({static_cast<std::int64_t>(total * 6 / 10)},
                            torch::TensorOptions().dtype(torch::kUInt8).device(kGpu)),
               c10::OutOfMemoryError);
  c10::cuda::CUDACachingAllocator::setMemoryFraction(1.0, 0);
  c10::cuda::CUDACachingAllocator::emptyCache();
}

// --deterministic on CUDA: cuDNN's heuristics choose, not its benchmark (whose timed choice varies
// from run to run); without it the benchmark is on.
TEST(GpuTrain, DeterministicRunsTakeCudnnHeuristicsNotItsBenchmark) {
  if (!cuda()) GTEST_SKIP() << "no CUDA device";
  auto& ctx = at::globalContext();
  const bool was = ctx.deterministicAlgorithms(), warn_only = ctx.deterministicAlgorithmsWarnOnly();
  ctx.setDeterministicAlgorithms(true, false);
  configure_device(kGpu);
  EXPECT_FALSE(ctx.benchmarkCuDNN());
  ctx.setDeterministicAlgorithms(false, false);
  configure_device(kGpu);
  EXPECT_TRUE(ctx.benchmarkCuDNN());
  ctx.setDeterministicAlgorithms(was, warn_only);
}

TEST(GpuTrain, ThisGpuHasKernelsAndAutoPicksIt) {
  if (!cuda()) GTEST_SKIP() << "no CUDA device";
  CudaFacts f = cuda_facts(0);
  EXPECT_FALSE(f.torch_archs.sass.empty()) << "libtorch_cuda.so's fatbinary was not found or read";
  DevicePlan p = plan_device("auto", "auto", f);
  EXPECT_EQ(p.cuda, 0) << p.note;
  EXPECT_EQ(p.amp, f.major >= 8 ? AmpMode::bf16 : AmpMode::fp16);
  auto g = gpu::probe_gpu();
  if (g.cuda_built) EXPECT_FALSE(g.kernel_archs.sass.empty() && g.kernel_archs.ptx.empty()) << "own fatbinary";
  EXPECT_EQ(gpu::missing_kernels(g, g.kernel_archs, "frugal"), "");
}

// The worker that runs out of memory twice for batch 0 builds it on the CPU: same pixels and
// labels as the CPU Loader's batch, in host memory, counted as CPU-decoded.
TEST(GpuTrain, GpuLoaderBatchWithoutMemoryIsDecodedOnTheCpu) {
  auto g = gpu::probe_gpu();
  if (!(g.cuda_built && g.nvjpeg_built && g.devices > 0)) GTEST_SKIP() << "no nvJPEG or CUDA device";
  auto ds = photos();
  if (!ds) GTEST_SKIP() << "no photo archive";
  LoaderOptions o;
  o.image_size = 96;
  o.batch_size = 8;
  o.workers = 1;
  o.train = false;
  o.shuffle = false;
  GpuLoader gpu_loader(ds, o);
  int injected = 0;
  gpu_loader.set_before_build([&](std::int64_t batch) {
    if (batch == 0 && injected < 2) {
      ++injected;
      TORCH_CHECK_WITH(OutOfMemoryError, false, "injected: out of memory in the GPU loader");
    }
  });
  gpu_loader.start(0);
  auto b = gpu_loader.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(injected, 2);
  EXPECT_FALSE(b->images.is_cuda());
  EXPECT_EQ(gpu_loader.cpu_decoded(), static_cast<std::uint64_t>(b->images.size(0)));
  Loader cpu_loader(ds, o);
  cpu_loader.start(0);
  auto c = cpu_loader.next();
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(torch::equal(b->images, c->images));
  EXPECT_TRUE(torch::equal(b->labels, c->labels));
  auto next = gpu_loader.next();  // batch 1: back on the GPU
  ASSERT_TRUE(next.has_value());
  EXPECT_TRUE(next->images.is_cuda());
}

// Two ranks on one GPU (FRUGAL_DIST_BACKEND=gloo; NCCL refuses two ranks on one GPU): a CUDA tensor
// sent point to point arrives on the receiver's GPU with its values, sends of several tags keep
// their order, and an all-reduce and a broadcast of CUDA tensors give every rank the result.
TEST(GpuDistributed, GlooCarriesCudaTensorsBetweenTwoRanksOnOneGpu) {
  if (!cuda()) GTEST_SKIP() << "no CUDA device";
  const int port = testing::free_port();
  std::array<std::optional<std::string>, 2> error;
  std::array<std::vector<torch::Tensor>, 2> got;
  std::array<std::string, 2> backend;
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      try {
        const DistEnv env = testing::loopback_env(r, 2, port, "gloo");
        auto g = ProcessGroup::join(env, kGpu, std::chrono::seconds(30));
        backend[r] = g->backend();
        const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(kGpu);
        if (r == 0) {
          g->send(torch::arange(6, f32).reshape({2, 3}), 1, 3);
          g->send(torch::arange(4, f32.dtype(torch::kFloat16)) * 0.5, 1, 5);
          g->wait_sends();
        } else {
          auto a = torch::empty({2, 3}, f32);
          auto b = torch::empty({4}, f32.dtype(torch::kFloat16));
          g->recv(a, 0, 3);
          g->recv(b, 0, 5);
          got[r] = {a, b};
        }
        std::vector<torch::Tensor> sum{torch::full({5}, r + 1.0, f32)};
        g->all_reduce_sum(sum);
        std::vector<torch::Tensor> root{torch::full({3}, r == 0 ? 7.0 : -1.0, f32)};
        g->broadcast(root, 0);
        got[r].push_back(sum[0]);
        got[r].push_back(root[0]);
      } catch (const std::exception& e) {
        error[r] = e.what();
      }
    });
  for (auto& t : ranks) t.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_FALSE(error[r]) << "rank " << r << ": " << *error[r];
    EXPECT_EQ(backend[r], "gloo");
  }
  ASSERT_EQ(got[1].size(), 4u);
  for (const auto& t : got[1]) EXPECT_TRUE(t.is_cuda());
  EXPECT_TRUE(torch::equal(got[1][0].cpu(), torch::arange(6, torch::kFloat32).reshape({2, 3})));
  EXPECT_TRUE(torch::equal(got[1][1].cpu(), torch::arange(4, torch::kFloat16) * 0.5));
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(torch::equal(got[r][got[r].size() - 2].cpu(), torch::full({5}, 3.0F))) << "all-reduce, rank " << r;
    EXPECT_TRUE(torch::equal(got[r].back().cpu(), torch::full({3}, 7.0F))) << "broadcast, rank " << r;
  }
}

}  // namespace
}  // namespace frugal

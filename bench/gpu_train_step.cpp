// frugal's training step on the GPU (TrainStep: normalise, forward, loss, backward, AdamW) with
// the AMP the trainer picks for the device, on one fixed batch already on the GPU, so that only
// the step is timed; bench/gpu_train_ref.py is the eager PyTorch side. scripts/gpu-check.sh runs it.
//
// Usage: gpu_train_step MODEL BATCH IMAGE_SIZE STEPS             -> {"images_per_s", "amp", ...}
//        gpu_train_step MODEL BATCH IMAGE_SIZE max GPU_MEMORY   -> {"max_micro_batch", ...}
// The second form caps the caching allocator as `--gpu-memory` does and finds the largest
// micro-batch whose step fits: TrainStep's own OOM halving from BATCH, then bisection above it.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "frugal/util/error.h"
#include "frugal/train/amp.h"
#include "frugal/train/optim.h"
#include "frugal/train/step.h"
#include "frugal/training/train_config.h"
#include "frugal/models/models.h"
#include "frugal/util/units.h"
#include "train/device.h"

namespace {

using Data = std::vector<std::pair<torch::Tensor, torch::Tensor>>;

struct Bench {
  std::shared_ptr<frugal::Model> model;
  frugal::OptimizerSetup opt;
  std::unique_ptr<frugal::LossScaler> scaler;
  std::unique_ptr<frugal::TrainStep> step;
};

Bench make(const std::string& name, int micro_batch, const torch::Device& dev, frugal::AmpMode amp) {
  Bench b;
  torch::manual_seed(0);
  b.model = frugal::make_model(name, 10, 3);
  b.model->to(dev);
  b.model->train();
  b.opt = frugal::make_optimizer(*b.model, frugal::OptimizerOptions{});
  b.scaler =
      std::make_unique<frugal::LossScaler>(frugal::LossScalerOptions{.enabled = amp == frugal::AmpMode::fp16}, dev);
  frugal::StepOptions s;
  s.micro_batch = micro_batch;
  s.amp = amp;
  s.device = dev;
  s.channels_last = true;
  s.mean = {0.485f, 0.456f, 0.406f};
  s.std = {0.229f, 0.224f, 0.225f};
  b.step = std::make_unique<frugal::TrainStep>(*b.model, *b.opt.optimizer, *b.scaler, s);
  return b;
}

Data batch(int n, int size, const torch::Device& dev) {
  return {{torch::randint(0, 256, {n, 3, size, size}, torch::TensorOptions().dtype(torch::kUInt8).device(dev)),
           torch::randint(0, 10, {n}, torch::TensorOptions().dtype(torch::kInt64).device(dev))}};
}

// The micro-batch a fresh step settles on for `n` images (n when it fits, less after halving).
int settled(const std::string& name, int n, int size, const torch::Device& dev, frugal::AmpMode amp) {
  Bench b = make(name, n, dev, amp);
  try {
    b.step->run(batch(n, size, dev));
  } catch (const frugal::Error&) {
    return 0;  // not even one image fits
  }
  int m = b.step->micro_batch();
  frugal::empty_device_cache(dev);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    std::fprintf(stderr, "usage: %s MODEL BATCH IMAGE_SIZE STEPS | MODEL BATCH IMAGE_SIZE max GPU_MEMORY\n", argv[0]);
    return 2;
  }
  if (!torch::cuda::is_available()) {
    std::fprintf(stderr, "gpu_train_step: no CUDA device\n");
    return 77;
  }
  std::string name = argv[1], steps_arg = argv[4];
  int n = std::atoi(argv[2]), size = std::atoi(argv[3]);
  torch::Device dev(torch::kCUDA, 0);
  std::string device = frugal::configure_device(dev);
  // GPU_BENCH_AMP=fp16 on an sm_80+ GPU runs the loss scaler, which auto (bf16) never does there.
  const char* forced = std::getenv("GPU_BENCH_AMP");
  frugal::AmpMode amp = forced && *forced ? frugal::parse_amp(forced) : frugal::auto_amp(dev);
  if (steps_arg == "max") {
    std::fprintf(stderr, "%s\n", frugal::limit_gpu_memory(dev, frugal::parse_size(argv[5])).c_str());
    int lo = settled(name, n, size, dev, amp), hi = lo == n ? n : 2 * lo;  // lo fits, hi does not (unless lo == n)
    for (int i = 0; i < 4 && hi - lo > 1 && lo > 0; ++i) {
      int mid = (lo + hi) / 2;
      (settled(name, mid, size, dev, amp) == mid ? lo : hi) = mid;
    }
    std::printf(
        "{\"model\": \"%s\", \"image_size\": %d, \"gpu_memory\": \"%s\", \"amp\": \"%s\", \"max_micro_batch\": %d, "
        "\"device\": \"%s\"}\n",
        name.c_str(), size, argv[5], frugal::to_string(amp), lo, device.c_str());
    return 0;
  }
  int steps = std::atoi(argv[4]);
  Bench b = make(name, n, dev, amp);
  Data data = batch(n, size, dev);
  for (int i = 0; i < 3; ++i) b.step->run(data);  // warm-up: cuDNN autotuning, allocator
  torch::cuda::synchronize();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) b.step->run(data);
  torch::cuda::synchronize();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "{\"model\": \"%s\", \"batch\": %d, \"image_size\": %d, \"amp\": \"%s\", \"images_per_s\": %.3f, "
      "\"micro_batch\": %d, \"device\": \"%s\"}\n",
      name.c_str(), n, size, frugal::to_string(amp), n * steps / secs, b.step->micro_batch(), device.c_str());
  return 0;
}

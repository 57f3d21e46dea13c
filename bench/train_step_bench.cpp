// Times frugal's training step (TrainStep: normalize, forward, cross-entropy, backward, AdamW with
// decay groups, channels-last as in `frugal train`) on one fixed batch; prints {"images_per_s": ...} for bench/train_step.sh.
// Usage: train_step_bench MODEL BATCH IMAGE_SIZE CHANNELS STEPS [AMP]   (AMP: off (default), bf16, fp16)
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "frugal/util/host_memory.h"
#include "frugal/train/amp.h"
#include "frugal/train/optim.h"
#include "frugal/train/step.h"
#include "frugal/training/train_config.h"
#include "frugal/models/models.h"

int main(int argc, char** argv) {
  if (argc != 6 && argc != 7) {
    std::fprintf(stderr, "usage: %s MODEL BATCH IMAGE_SIZE CHANNELS STEPS [AMP]\n", argv[0]);
    return 2;
  }
  std::string name = argv[1];
  int batch = std::atoi(argv[2]), size = std::atoi(argv[3]), channels = std::atoi(argv[4]), steps = std::atoi(argv[5]);
  frugal::keep_freed_host_memory();  // as frugal-torch does
  torch::manual_seed(0);
  auto model = frugal::make_model(name, 10, channels);
  model->train();
  frugal::to_channels_last(*model);  // as `frugal train` does on every device
  frugal::OptimizerOptions o;
  auto opt = frugal::make_optimizer(*model, o);
  frugal::LossScaler scaler({.enabled = false});
  frugal::StepOptions s;
  s.micro_batch = batch;
  s.mean.assign(channels, 0.5f);
  s.std.assign(channels, 0.5f);
  s.channels_last = true;
  s.amp = argc == 7 ? frugal::parse_amp(argv[6]) : frugal::AmpMode::off;
  frugal::TrainStep step(*model, *opt.optimizer, scaler, s);
  std::vector<std::pair<torch::Tensor, torch::Tensor>> data = {
      {torch::randint(0, 256, {batch, channels, size, size}, torch::kUInt8),
       torch::randint(0, 10, {batch}, torch::kInt64)}};
  for (int i = 0; i < 3; ++i) step.run(data);  // warm-up: allocator, oneDNN primitives
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step.run(data);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("{\"images_per_s\": %.3f, \"threads\": %d, \"amp\": \"%s\"}\n", batch * steps / secs,
              at::get_num_threads(), frugal::to_string(s.amp));
  return 0;
}

// The GPU input pipeline (docs/gpu.md): compressed bytes are read on the CPU, JPEGs decoded by
// nvJPEG on the GPU, and one CUDA kernel does random-resized-crop (or resize + center crop),
// flip and normalisation into a (B, C, H, W) tensor on the GPU. Crops and flips are drawn exactly
// as the CPU Loader draws them for (seed, epoch, index); images nvJPEG does not take (PNG, .npy,
// CMYK, ...) go through the CPU transforms and are uploaded.
//
// Same batching, order, resume and bad-image rules as Loader; only where the work runs differs.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "frugal/loader/loader.h"

namespace frugal {

// `--decode cpu|gpu|auto` resolved for one dataset on this machine. `gpu` that cannot be honoured
// (no CUDA in this build, no nvJPEG, no device, images of 64 px or less) throws Error(usage)
// naming what is missing; `auto` picks the GPU only when all of it is there. `reason` is for the
// log ("gpu (NVIDIA H200, nvJPEG)", "cpu (--decode auto: no CUDA device)").
struct DecodeSelection {
  bool gpu = false;
  std::string reason;
};
DecodeSelection select_decode(const std::string& mode, const Dataset& dataset);

// Batches are the CPU Loader's uint8 levels, on the GPU: TrainStep normalises both alike (normalize(),
// the one rule for gray images with RGB statistics).
struct GpuOutputOptions {
  int device = 0;  // CUDA device index
};

class GpuLoader : public BatchSource {
 public:
  // Throws Error(usage) when this build or machine cannot decode on the GPU (see select_decode).
  GpuLoader(std::shared_ptr<const Dataset> dataset, LoaderOptions options, GpuOutputOptions output = {});
  ~GpuLoader() override;
  GpuLoader(const GpuLoader&) = delete;
  GpuLoader& operator=(const GpuLoader&) = delete;

  void start(std::int64_t epoch, std::int64_t position = 0) override;
  // images: (B, C, S, S) on the GPU, labels: (B) int64 on the CPU; nullopt at the end of the epoch.
  // A batch the GPU had no memory for (after freeing the cache and one retry) is decoded on the
  // CPU and comes back in host memory (noted once; counted in cpu_decoded()).
  std::optional<Batch> next() override;
  std::int64_t batches_per_epoch() const override;
  std::uint64_t samples_seen() const override;
  std::uint64_t samples_bad() const override;
  std::uint64_t cpu_decoded() const;  // images that went through the CPU (not JPEG, EXIF-turned, or nvJPEG refused)
  std::string backend() const;        // "hardware" or "cuda" once a batch was decoded, else ""

  // Test seam: called on a worker before each attempt to build batch k (of this epoch); may throw
  // (c10::OutOfMemoryError) to simulate the GPU running out of memory there. Set before start().
  void set_before_build(std::function<void(std::int64_t batch)> hook);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace frugal

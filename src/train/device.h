// Device selection and the CUDA knobs the trainer uses (internal). Compiles without a GPU; every
// CUDA call is guarded by torch::cuda::is_available().
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "frugal/util/doctor.h"
#include "frugal/training/train_config.h"

namespace frugal {

// What the device choice depends on, gathered by cuda_facts() or made up by tests.
struct CudaFacts {
  int devices = 0;           // CUDA devices LibTorch can use (0: none, or a CPU-only LibTorch)
  std::string name;          // the device asked for (auto: device 0)
  int major = 0, minor = 0;  // its compute capability
  BuildArchs torch_archs;    // LibTorch's kernels (libtorch_cuda.so's fatbinary); empty: not known
};
CudaFacts cuda_facts(int index);

struct DevicePlan {
  int cuda = -1;  // CUDA device index; -1: the CPU
  AmpMode amp = AmpMode::off;
  std::string note;  // one line for the log when auto fell back to the CPU
};

// --device and --amp resolved, a pure function of the facts:
// - auto: CUDA device 0 when LibTorch has kernels for it (the doctor's verdict), else the CPU with
//   a note naming why; cpu; cuda / cuda:N: that device, Error(usage) when absent or without kernels.
// - --amp auto: choose_amp(); bf16 asked for on a GPU before sm_80 (no bf16 tensor cores; most of
//   its kernels emulated or missing): Error(usage).
DevicePlan plan_device(const std::string& device, const std::string& amp, const CudaFacts& facts);

// plan_device() on this machine's facts (its note logged).
std::pair<torch::Device, AmpMode> resolve_device(const std::string& device, const std::string& amp);
torch::Device pick_device(const std::string& text);

// choose_amp() for this device (compute capability read from the GPU).
AmpMode auto_amp(const torch::Device& device);

// Whether the CPU computes bf16 in hardware (AMX-BF16 or AVX512-BF16), as oneDNN uses it: there
// CPU autocast to bf16 trains faster than fp32; elsewhere it is emulated and slower.
bool cpu_has_native_bf16();

// Frees the CUDA caching allocator's unused blocks (no-op on the CPU).
void empty_device_cache(const torch::Device& device);

// --gpu-memory: what a GPU of `bytes` would leave PyTorch's caching allocator, on a bigger one.
// The CUDA context, nvJPEG and frugal's other device buffers already hold `used` of the device's
// `total` (they would on the smaller GPU too), so the allocator may have bytes - used, as a
// fraction of total. Error(budget) when `bytes` exceeds the device or leaves nothing.
double gpu_memory_fraction(std::uint64_t bytes, std::uint64_t used, std::uint64_t total);

// Applies it: initialises the device's caching allocator first (setMemoryFraction on an
// uninitialised one fails: "Allocator not initialized for device 0: did you call init?"), reads
// what is in use (cudaMemGetInfo) and sets the fraction. Returns the line for the log.
std::string limit_gpu_memory(const torch::Device& device, std::uint64_t bytes);

// cuDNN autotuning on, unless deterministic algorithms were asked for first (set them before);
// returns a one-line description of the device for the log.
std::string configure_device(const torch::Device& device);

}  // namespace frugal

// Device selection and the CUDA knobs the trainer uses (internal). Compiles without a GPU; every
// CUDA call is guarded by torch::cuda::is_available().
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "frugal/train.h"

namespace frugal {

// "auto" | "cpu" | "cuda" | "cuda:N" -> a device; Error(usage) for others or a missing GPU.
torch::Device pick_device(const std::string& text);

// choose_amp() for this device (compute capability read from the GPU).
AmpMode auto_amp(const torch::Device& device);

// Whether the CPU computes bf16 in hardware (AMX-BF16 or AVX512-BF16), as oneDNN uses it: there
// CPU autocast to bf16 trains faster than fp32; elsewhere it is emulated and slower.
bool cpu_has_native_bf16();

// Frees the CUDA caching allocator's unused blocks (no-op on the CPU).
void empty_device_cache(const torch::Device& device);

// --gpu-memory: caps the caching allocator at `bytes` (fraction of the device's memory).
// Error(budget) when the device has less.
void limit_gpu_memory(const torch::Device& device, std::uint64_t bytes);

// cuDNN autotuning on; returns a one-line description of the device for the log.
std::string configure_device(const torch::Device& device);

}  // namespace frugal

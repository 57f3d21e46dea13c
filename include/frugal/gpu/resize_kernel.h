// The batch kernel: (B) ResizeJobs -> (B, C, size, size) u8, or float/half normalised.
#pragma once

#include <cuda_runtime_api.h>

#include "frugal/gpu/resize_math.h"

namespace frugal::gpu {

// `jobs` lives in device memory; every job has `channels` channels. Asynchronous on `stream`.
void launch_resize(const ResizeJob* jobs, int batch, int size, int channels, OutputType type, const Normalisation& norm,
                   void* out, cudaStream_t stream);

}  // namespace frugal::gpu

// Recognising the GPU running out of memory however LibTorch reports it, and the one retry policy
// the loaders use (the trainer's own recovery, smaller micro-batches, is TrainStep's). Header-only:
// every user is a LibTorch file already.
#pragma once

#include <c10/util/Exception.h>

#include <exception>
#include <functional>
#include <string_view>

namespace frugal {

// c10::OutOfMemoryError (the caching allocator), and the plain c10::Error with which cuBLAS,
// cuDNN, cuFFT, cuSOLVER, cuSPARSE and the CUDA runtime report a failed allocation of workspace or
// of a handle: "CUBLAS_STATUS_ALLOC_FAILED", "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED"
// (cuDNN 9; CUDNN_STATUS_ALLOC_FAILED before), "CUDA error: out of memory", and cublasCreate's
// CUBLAS_STATUS_NOT_INITIALIZED (what a handle that found no memory reports). Anything else: false.
inline bool is_out_of_memory(const std::exception& e) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e)) return true;
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  if (!c10_error) return false;
  // The message without LibTorch's C++ backtrace, whose frame names must not match.
  std::string_view m = c10_error->msg();
  auto has = [&](std::string_view s) { return m.find(s) != std::string_view::npos; };
  return has("ALLOC_FAILED") || has("ALLOCATION_FAILED") || has("CUDA error: out of memory") ||
         (has("CUBLAS_STATUS_NOT_INITIALIZED") && has("cublasCreate"));
}

// Runs `attempt`; when it runs out of memory, calls `release` (give cached device memory back)
// and runs it once more; when that runs out of memory too, returns `fallback()` instead (work
// done elsewhere, e.g. decoding on the CPU). Other errors pass through. `fell_back` (optional)
// says whether the fallback ran.
template <class T>
T retry_after_oom(const std::function<T()>& attempt, const std::function<void()>& release,
                  const std::function<T()>& fallback, bool* fell_back = nullptr) {
  if (fell_back) *fell_back = false;
  for (int tries = 0; tries < 2; ++tries) {
    try {
      return attempt();
    } catch (const std::exception& e) {
      if (!is_out_of_memory(e)) throw;
      release();
    }
  }
  if (fell_back) *fell_back = true;
  return fallback();
}

}  // namespace frugal

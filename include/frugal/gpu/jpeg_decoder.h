// Batches of JPEGs decoded by nvJPEG into device memory (only built with FRUGAL_WITH_NVJPEG).
//
// The batch goes to the GPU's hardware JPEG engine where it has one (A100, H100/H200: baseline
// single-scan JPEGs), otherwise to nvJPEG's CUDA decoder (Huffman on the GPU for large batches).
// Images the batched path does not take (progressive on the hardware engine, or a batch that
// failed) are retried one by one with the default backend; what still fails comes back marked,
// for the CPU to decode.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace frugal::gpu {

struct DeviceImage {
  const std::uint8_t* data = nullptr;  // (height, width, channels) uint8, rows of `pitch` bytes
  int width = 0, height = 0, pitch = 0;
  bool ok = false;  // false: nvJPEG did not decode it; `why` says why
  std::string why;
};

class JpegDecoder {
 public:
  // On the current CUDA device; all work goes to `stream`.
  explicit JpegDecoder(cudaStream_t stream);
  ~JpegDecoder();
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;

  // "hardware", "cuda" (nvJPEG's GPU_HYBRID backend), or "cuda (forced)" when
  // FRUGAL_NVJPEG_BACKEND=hybrid kept a GPU with the hardware engine off it (checks of the T4 path).
  const char* backend() const;

  // Decodes to `channels` (1: luma, 3: RGB) interleaved images, valid until the next call and
  // only once `stream` has been synchronised. Four-component (CMYK/YCCK) JPEGs are left to the
  // CPU, whose decoder converts them as TurboJPEG does.
  const std::vector<DeviceImage>& decode(const std::vector<std::span<const std::uint8_t>>& jpegs, int channels);

  std::uint64_t images_left_to_cpu() const;
  // Images nvJPEG gave up on because device_allocator() found no memory (left to the CPU too).
  std::uint64_t allocation_failures() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace frugal::gpu

#if FRUGAL_WITH_NVJPEG
#include "frugal/gpu/jpeg_decoder.h"

#include <nvjpeg.h>

#include <algorithm>
#include <cstdlib>

#include "frugal/util/error.h"
#include "frugal/gpu/cuda_util.h"

namespace frugal::gpu {
namespace {

const char* status_name(nvjpegStatus_t s) {
  switch (s) {
    case NVJPEG_STATUS_SUCCESS:
      return "success";
    case NVJPEG_STATUS_NOT_INITIALIZED:
      return "not initialized";
    case NVJPEG_STATUS_INVALID_PARAMETER:
      return "invalid parameter";
    case NVJPEG_STATUS_BAD_JPEG:
      return "bad JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
      return "JPEG not supported";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE:
      return "allocator failure";
    case NVJPEG_STATUS_EXECUTION_FAILED:
      return "execution failed";
    case NVJPEG_STATUS_ARCH_MISMATCH:
      return "architecture mismatch";
    case NVJPEG_STATUS_INTERNAL_ERROR:
      return "internal error";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
      return "not implemented";
    default:
      return "unknown status";
  }
}

void check(nvjpegStatus_t s, const char* call) {
  if (s != NVJPEG_STATUS_SUCCESS)
    throw Error(ErrorKind::io, std::string("nvJPEG: ") + call + " failed: " + status_name(s) +
                                   "; use {decode} cpu to decode on the CPU");
}

// nvJPEG's device memory from device_allocator() (PyTorch's caching allocator in frugal-torch).
// Called through C: no exception may leave; a failure is nvJPEG's NVJPEG_STATUS_ALLOCATOR_FAILURE.
int device_malloc(void*, void** ptr, std::size_t size, cudaStream_t stream) {
  try {
    *ptr = device_allocator().alloc(size, stream);
    return 0;
  } catch (...) {
    *ptr = nullptr;
    return 1;
  }
}
int device_free(void*, void* ptr, std::size_t, cudaStream_t) {
  device_allocator().free(ptr);
  return 0;
}
nvjpegDevAllocatorV2_t device_hooks{device_malloc, device_free, nullptr};
// Pinned host memory as nvJPEG's default allocator makes it (given, so that the V2 call gets both).
int pinned_malloc(void*, void** ptr, std::size_t size, cudaStream_t) {
  return cudaHostAlloc(ptr, size, cudaHostAllocDefault) == cudaSuccess ? 0 : 1;
}
int pinned_free(void*, void* ptr, std::size_t, cudaStream_t) { return cudaFreeHost(ptr) == cudaSuccess ? 0 : 1; }
nvjpegPinnedAllocatorV2_t pinned_hooks{pinned_malloc, pinned_free, nullptr};

// GPUs without the hardware JPEG engine (T4, V100, consumer cards) decode batches on nvJPEG's
// GPU_HYBRID backend; FRUGAL_NVJPEG_BACKEND=hybrid makes an A100/H100 take that path too, so that
// a check on one runs it.
bool force_hybrid() {
  const char* v = std::getenv("FRUGAL_NVJPEG_BACKEND");
  return v && std::string(v) == "hybrid";
}

struct Codec {
  nvjpegHandle_t handle = nullptr;
  nvjpegJpegState_t state = nullptr;
  bool create(nvjpegBackend_t backend) {
    if (nvjpegCreateExV2(backend, &device_hooks, &pinned_hooks, 0, &handle) != NVJPEG_STATUS_SUCCESS) {
      handle = nullptr;
      return false;
    }
    check(nvjpegJpegStateCreate(handle, &state), "nvjpegJpegStateCreate");
    return true;
  }
  ~Codec() {
    if (state) nvjpegJpegStateDestroy(state);
    if (handle) nvjpegDestroy(handle);
  }
};

}  // namespace

struct JpegDecoder::Impl {
  cudaStream_t stream = nullptr;
  Codec batched, single;
  bool hardware = false, hybrid = false;
  std::uint64_t allocation_failures = 0;
  nvjpegJpegStream_t parsed = nullptr;  // for the hardware engine's per-image support check
  int initialized_batch = -1, initialized_format = -1;
  DeviceBuffer arena;
  std::vector<DeviceImage> out;
  std::uint64_t left_to_cpu = 0;

  bool batch_supported(std::span<const std::uint8_t> jpeg);
  void decode_batched(const std::vector<std::span<const std::uint8_t>>& jpegs, const std::vector<std::size_t>& which,
                      nvjpegOutputFormat_t format, std::vector<nvjpegImage_t>& dest);
  void decode_single(std::span<const std::uint8_t> jpeg, nvjpegOutputFormat_t format, nvjpegImage_t& dest,
                     DeviceImage& img);
};

JpegDecoder::JpegDecoder(cudaStream_t stream) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.stream = stream;
  m.hybrid = force_hybrid();
  m.hardware = !m.hybrid && m.batched.create(NVJPEG_BACKEND_HARDWARE);
  if (m.hardware) {
    check(nvjpegJpegStreamCreate(m.batched.handle, &m.parsed), "nvjpegJpegStreamCreate");
  } else if (!m.batched.create(NVJPEG_BACKEND_GPU_HYBRID)) {
    check(nvjpegCreateExV2(NVJPEG_BACKEND_GPU_HYBRID, &device_hooks, &pinned_hooks, 0, &m.batched.handle),
          "nvjpegCreateExV2");
  }
  if (!m.single.create(NVJPEG_BACKEND_DEFAULT))
    check(nvjpegCreateExV2(NVJPEG_BACKEND_DEFAULT, &device_hooks, &pinned_hooks, 0, &m.single.handle),
          "nvjpegCreateExV2");
}

JpegDecoder::~JpegDecoder() {
  if (impl_->parsed) nvjpegJpegStreamDestroy(impl_->parsed);
}

const char* JpegDecoder::backend() const {
  return impl_->hardware ? "hardware" : impl_->hybrid ? "cuda (forced)" : "cuda";
}
std::uint64_t JpegDecoder::images_left_to_cpu() const { return impl_->left_to_cpu; }
std::uint64_t JpegDecoder::allocation_failures() const { return impl_->allocation_failures; }

bool JpegDecoder::Impl::batch_supported(std::span<const std::uint8_t> jpeg) {
  if (!hardware) return true;
  if (nvjpegJpegStreamParseHeader(batched.handle, jpeg.data(), jpeg.size(), parsed) != NVJPEG_STATUS_SUCCESS)
    return false;
  int unsupported = 1;
  return nvjpegDecodeBatchedSupported(batched.handle, parsed, &unsupported) == NVJPEG_STATUS_SUCCESS &&
         unsupported == 0;
}

void JpegDecoder::Impl::decode_single(std::span<const std::uint8_t> jpeg, nvjpegOutputFormat_t format,
                                      nvjpegImage_t& dest, DeviceImage& img) {
  nvjpegStatus_t s = nvjpegDecode(single.handle, single.state, jpeg.data(), jpeg.size(), format, &dest, stream);
  img.ok = s == NVJPEG_STATUS_SUCCESS;
  if (s == NVJPEG_STATUS_ALLOCATOR_FAILURE) ++allocation_failures;
  if (!img.ok) img.why = std::string("nvJPEG: ") + status_name(s);
}

void JpegDecoder::Impl::decode_batched(const std::vector<std::span<const std::uint8_t>>& jpegs,
                                       const std::vector<std::size_t>& which, nvjpegOutputFormat_t format,
                                       std::vector<nvjpegImage_t>& dest) {
  if (which.empty()) return;
  const int n = static_cast<int>(which.size());
  std::vector<const unsigned char*> data(n);
  std::vector<std::size_t> lengths(n);
  std::vector<nvjpegImage_t> d(n);
  for (int k = 0; k < n; ++k) {
    data[k] = jpegs[which[k]].data();
    lengths[k] = jpegs[which[k]].size();
    d[k] = dest[which[k]];
  }
  nvjpegStatus_t s = NVJPEG_STATUS_SUCCESS;
  if (initialized_batch != n || initialized_format != static_cast<int>(format)) {
    s = nvjpegDecodeBatchedInitialize(batched.handle, batched.state, n, 1, format);
    initialized_batch = s == NVJPEG_STATUS_SUCCESS ? n : -1;
    initialized_format = static_cast<int>(format);
  }
  if (s == NVJPEG_STATUS_SUCCESS)
    s = nvjpegDecodeBatched(batched.handle, batched.state, data.data(), lengths.data(), d.data(), stream);
  if (s == NVJPEG_STATUS_SUCCESS) {
    for (std::size_t i : which) out[i].ok = true;
    return;
  }
  // One bad image fails the whole call: find it by decoding each on its own.
  initialized_batch = -1;
  for (std::size_t i : which) decode_single(jpegs[i], format, dest[i], out[i]);
}

const std::vector<DeviceImage>& JpegDecoder::decode(const std::vector<std::span<const std::uint8_t>>& jpegs,
                                                    int channels) {
  Impl& m = *impl_;
  const nvjpegOutputFormat_t format = channels == 1 ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_RGBI;
  m.out.assign(jpegs.size(), DeviceImage{});
  // Sizes first (header parse on the CPU), then one arena for the whole batch.
  std::vector<std::size_t> offset(jpegs.size(), 0);
  std::size_t total = 0;
  for (std::size_t i = 0; i < jpegs.size(); ++i) {
    int comps = 0, w[NVJPEG_MAX_COMPONENT] = {}, h[NVJPEG_MAX_COMPONENT] = {};
    nvjpegChromaSubsampling_t sub;
    nvjpegStatus_t s = nvjpegGetImageInfo(m.single.handle, jpegs[i].data(), jpegs[i].size(), &comps, &sub, w, h);
    DeviceImage& img = m.out[i];
    if (s != NVJPEG_STATUS_SUCCESS || comps == 4 || comps == 2 || w[0] <= 0 || h[0] <= 0) {
      img.why = s != NVJPEG_STATUS_SUCCESS ? std::string("nvJPEG: ") + status_name(s)
                                           : "nvJPEG: " + std::to_string(comps) + " components";
      continue;
    }
    img.width = w[0];
    img.height = h[0];
    img.pitch = w[0] * channels;
    offset[i] = total;
    total += (static_cast<std::size_t>(img.pitch) * img.height + 255) / 256 * 256;
  }
  check_cuda(cudaStreamSynchronize(m.stream), "cudaStreamSynchronize");  // the arena may move
  auto* base = static_cast<std::uint8_t*>(m.arena.reserve(std::max<std::size_t>(total, 256), m.stream));
  std::vector<nvjpegImage_t> dest(jpegs.size());
  std::vector<std::size_t> batch;
  for (std::size_t i = 0; i < jpegs.size(); ++i) {
    DeviceImage& img = m.out[i];
    if (img.width == 0) continue;
    img.data = base + offset[i];
    dest[i] = nvjpegImage_t{};
    dest[i].channel[0] = base + offset[i];
    dest[i].pitch[0] = static_cast<std::size_t>(img.pitch);
    if (m.batch_supported(jpegs[i]))
      batch.push_back(i);
    else
      m.decode_single(jpegs[i], format, dest[i], img);
  }
  m.decode_batched(jpegs, batch, format, dest);
  for (const auto& img : m.out)
    if (!img.ok) ++m.left_to_cpu;
  return m.out;
}

}  // namespace frugal::gpu
#endif  // FRUGAL_WITH_NVJPEG

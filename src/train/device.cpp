// CUDA specifics kept in one file (the only one that includes c10/cuda headers).
#include "train/device.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <ATen/Context.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <ATen/cuda/CUDAContext.h>

#include "frugal/error.h"
#include "frugal/units.h"

namespace frugal {

torch::Device pick_device(const std::string& text) {
  if (text == "auto") return torch::cuda::is_available() ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  if (text == "cpu") return torch::kCPU;
  if (text.rfind("cuda", 0) == 0) {
    if (!torch::cuda::is_available())
      fail(ErrorKind::usage, "--device " + text, "a CUDA GPU", "none usable by this build", "use --device cpu or auto; "
           "run `frugal doctor` to see why");
    int index = 0;
    if (text.size() > 5 && text[4] == ':') index = std::stoi(text.substr(5));
    else if (text != "cuda") fail(ErrorKind::usage, "--device", "auto, cpu, cuda or cuda:N", "'" + text + "'", "");
    if (index >= static_cast<int>(torch::cuda::device_count()))
      fail(ErrorKind::usage, "--device " + text, "a GPU index below " + std::to_string(torch::cuda::device_count()),
           std::to_string(index), "");
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  fail(ErrorKind::usage, "--device", "auto, cpu, cuda or cuda:N", "'" + text + "'", "");
}

AmpMode auto_amp(const torch::Device& device) {
  if (!device.is_cuda()) return choose_amp("cpu", 0, 0);
  const cudaDeviceProp& prop = *at::cuda::getDeviceProperties(device.index());
  return choose_amp("cuda", prop.major, prop.minor);
}

// From CPUID, not LibTorch: its CPU-feature API changed between 2.7 and 2.11 (is_*_supported() ->
// get_cpu_capabilities()), and the supported range spans both.
bool cpu_has_native_bf16() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));  // which register states the OS saves
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const unsigned max_subleaf = a;
  const bool os_amx = (xcr0_lo & (3u << 17)) == (3u << 17);   // XTILECFG, XTILEDATA
  const bool os_avx512 = (xcr0_lo & 0xe6u) == 0xe6u;          // SSE, AVX, opmask, ZMM state
  const bool amx_bf16 = os_amx && (d & (1u << 22));           // CPUID.(7,0):EDX[22]
  bool avx512_bf16 = false;
  if (max_subleaf >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) avx512_bf16 = os_avx512 && (a & (1u << 5));
  return amx_bf16 || avx512_bf16;                              // CPUID.(7,1):EAX[5]
#else
  return false;
#endif
}

void empty_device_cache(const torch::Device& device) {
  if (device.is_cuda() && torch::cuda::is_available()) c10::cuda::CUDACachingAllocator::emptyCache();
}

void limit_gpu_memory(const torch::Device& device, std::uint64_t bytes) {
  if (!device.is_cuda() || !torch::cuda::is_available()) return;
  const cudaDeviceProp& prop = *at::cuda::getDeviceProperties(device.index());
  if (bytes > prop.totalGlobalMem)
    fail(ErrorKind::budget, "--gpu-memory", "at most the GPU's " + format_size(prop.totalGlobalMem),
         format_size(bytes), "give a smaller --gpu-memory");
  double fraction = static_cast<double>(bytes) / static_cast<double>(prop.totalGlobalMem);
  c10::cuda::CUDACachingAllocator::setMemoryFraction(fraction, device.index());
}

std::string configure_device(const torch::Device& device) {
  if (!device.is_cuda()) return "cpu (" + std::to_string(at::get_num_threads()) + " threads)";
  at::globalContext().setBenchmarkCuDNN(true);
  const cudaDeviceProp& prop = *at::cuda::getDeviceProperties(device.index());
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
}

}  // namespace frugal

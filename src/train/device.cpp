// CUDA specifics kept in one file (the only one that includes c10/cuda headers).
#include "train/device.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <ATen/Context.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <ATen/cuda/CUDAContext.h>

#include "frugal/util/error.h"
#include "frugal/util/progress.h"
#include "frugal/util/units.h"
#include "frugal/gpu/plan.h"

namespace frugal {

namespace {

// "cuda" -> 0, "cuda:N" -> N; -1 for anything else.
int cuda_index(const std::string& text) {
  if (text == "cuda") return 0;
  if (text.size() <= 5 || text.rfind("cuda:", 0) != 0) return -1;
  for (std::size_t i = 5; i < text.size(); ++i)
    if (text[i] < '0' || text[i] > '9' || i > 8) return -1;
  return std::stoi(text.substr(5));
}

std::string sm(const CudaFacts& f) { return "sm_" + std::to_string(f.major * 10 + f.minor); }

}  // namespace

DevicePlan plan_device(const std::string& device, const std::string& amp, const CudaFacts& f) {
  DevicePlan p;
  const bool automatic = device == "auto";
  const int index = automatic ? 0 : cuda_index(device);
  if (device != "cpu" && !automatic && index < 0)
    fail(ErrorKind::usage, "{device}", "auto, cpu, cuda or cuda:N", "'" + device + "'", "");
  if (index >= 0 && f.devices > 0) {
    if (index >= f.devices)
      fail(ErrorKind::usage, "{device} " + device, "a GPU index below " + std::to_string(f.devices),
           std::to_string(index), "");
    gpu::GpuAvailability g;
    g.device_name = f.name;
    g.major = f.major;
    g.minor = f.minor;
    std::string why = gpu::missing_kernels(g, f.torch_archs, "this LibTorch");
    if (!why.empty() && !automatic)
      fail(ErrorKind::usage, "{device} " + device, "a GPU this build has kernels for", why,
           "run `frugal doctor` for a LibTorch that supports it, or use {device} cpu");
    if (why.empty())
      p.cuda = index;
    else
      p.note = "device: cpu, not the GPU ({device} auto: " + why + "; `frugal doctor` says which LibTorch would)";
  } else if (index >= 0 && !automatic) {
    fail(ErrorKind::usage, "{device} " + device, "a CUDA GPU", "none usable by this build",
         "use {device} cpu or auto; run `frugal doctor` to see why");
  }
  if (amp == "auto") {
    p.amp = p.cuda >= 0 ? choose_amp("cuda", f.major, f.minor) : choose_amp("cpu", 0, 0);
  } else {
    p.amp = parse_amp(amp);
    if (p.cuda >= 0 && p.amp == AmpMode::bf16 && f.major < 8)
      fail(ErrorKind::usage, "{amp} bf16", "a GPU with bf16 tensor cores (sm_80 or newer)", f.name + " (" + sm(f) + ")",
           "use {amp} fp16, or {amp} auto to let frugal choose");
  }
  return p;
}

CudaFacts cuda_facts(int index) {
  CudaFacts f;
  if (!torch::cuda::is_available()) return f;
  f.devices = static_cast<int>(torch::cuda::device_count());
  if (index < 0 || index >= f.devices) return f;
  const cudaDeviceProp& prop = *at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(index));
  f.name = prop.name;
  f.major = prop.major;
  f.minor = prop.minor;
  f.torch_archs = gpu::loaded_fatbin_archs("libtorch_cuda.so");
  return f;
}

std::pair<torch::Device, AmpMode> resolve_device(const std::string& device, const std::string& amp) {
  int index = device == "auto" ? 0 : cuda_index(device);
  DevicePlan p = plan_device(device, amp, cuda_facts(index));
  if (!p.note.empty()) note(p.note);
  if (p.cuda < 0) return {torch::Device(torch::kCPU), p.amp};
  return {torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(p.cuda)), p.amp};
}

torch::Device pick_device(const std::string& text) { return resolve_device(text, "off").first; }

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
  const bool os_amx = (xcr0_lo & (3u << 17)) == (3u << 17);  // XTILECFG, XTILEDATA
  const bool os_avx512 = (xcr0_lo & 0xe6u) == 0xe6u;         // SSE, AVX, opmask, ZMM state
  const bool amx_bf16 = os_amx && (d & (1u << 22));          // CPUID.(7,0):EDX[22]
  bool avx512_bf16 = false;
  if (max_subleaf >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) avx512_bf16 = os_avx512 && (a & (1u << 5));
  return amx_bf16 || avx512_bf16;  // CPUID.(7,1):EAX[5]
#else
  return false;
#endif
}

void empty_device_cache(const torch::Device& device) {
  if (device.is_cuda() && torch::cuda::is_available()) c10::cuda::CUDACachingAllocator::emptyCache();
}

double gpu_memory_fraction(std::uint64_t bytes, std::uint64_t used, std::uint64_t total) {
  if (bytes > total)
    fail(ErrorKind::budget, "{gpu_memory}", "at most the GPU's " + format_size(total), format_size(bytes),
         "give a smaller {gpu_memory}");
  if (bytes <= used)
    fail(ErrorKind::budget, "{gpu_memory} " + format_size(bytes),
         "more than the " + format_size(used) + " the CUDA context and other buffers already hold", format_size(bytes),
         "give a larger {gpu_memory}");
  return static_cast<double>(bytes - used) / static_cast<double>(total);
}

std::string limit_gpu_memory(const torch::Device& device, std::uint64_t bytes) {
  if (!device.is_cuda() || !torch::cuda::is_available()) return "";
  at::globalContext().lazyInitDevice(at::kCUDA);  // creates the caching allocator (and the context)
  c10::cuda::CUDAGuard guard(device.index());
  std::size_t free = 0, total = 0;
  C10_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  // The allocator's own reservation is inside the cap; everything else in use is not.
  auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
  auto reserved = static_cast<std::uint64_t>(
      stats.reserved_bytes[static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE)].current);
  std::uint64_t used = total - free > reserved ? total - free - reserved : 0;
  double fraction = gpu_memory_fraction(bytes, used, total);
  c10::cuda::CUDACachingAllocator::setMemoryFraction(fraction, device.index());
  return "GPU memory: " + format_size(bytes) + " as on a GPU of that size: " + format_size(used) +
         " already held by the CUDA context and others, so PyTorch's allocator may use " +
         format_size(static_cast<std::uint64_t>(fraction * static_cast<double>(total)));
}

std::string configure_device(const torch::Device& device) {
  if (!device.is_cuda()) return "cpu (" + std::to_string(at::get_num_threads()) + " threads)";
  // cuDNN's benchmark times the candidate algorithms and keeps the fastest, which varies from run
  // to run (even among deterministic ones): {deterministic} takes its heuristics' choice instead,
  // as torch's reproducibility notes say (seen on an H200: fp16 runs of one command differed).
  at::globalContext().setBenchmarkCuDNN(!at::globalContext().deterministicAlgorithms());
  const cudaDeviceProp& prop = *at::cuda::getDeviceProperties(device.index());
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
}

}  // namespace frugal

// What the machine offers (probe_gpu) and the CUDA runtime helpers.
#include "frugal/gpu/plan.h"

#include <elf.h>
#include <link.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "frugal/util/error.h"
#include "frugal/util/fs.h"

#if FRUGAL_WITH_CUDA
#include "frugal/gpu/cuda_util.h"
#endif

namespace frugal::gpu {

#if FRUGAL_WITH_CUDA
void check_cuda(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  throw Error(ErrorKind::io, std::string("CUDA: ") + call + " failed: " + cudaGetErrorString(status) +
                                 "; check the driver with nvidia-smi and the GPU memory with frugal doctor");
}

namespace {

void* cuda_alloc(std::size_t bytes, cudaStream_t) {
  void* p = nullptr;
  check_cuda(cudaMalloc(&p, bytes), "cudaMalloc");
  return p;
}
void cuda_free(void* p) { cudaFree(p); }

DeviceAllocator& current_allocator() {
  static DeviceAllocator a{cuda_alloc, cuda_free};
  return a;
}

}  // namespace

void set_device_allocator(const DeviceAllocator& allocator) { current_allocator() = allocator; }
const DeviceAllocator& device_allocator() { return current_allocator(); }

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) device_allocator().free(ptr_);
}

void* DeviceBuffer::reserve(std::size_t bytes, cudaStream_t stream) {
  if (bytes <= bytes_ && ptr_) return ptr_;
  if (ptr_) device_allocator().free(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
  std::size_t want = bytes + bytes / 4;  // slack, so slowly growing batches do not reallocate each time
  ptr_ = device_allocator().alloc(want, stream);
  bytes_ = want;
  return ptr_;
}
#endif

namespace {

struct LoadedObject {
  std::string path;     // on disk, to read the section headers from
  ElfW(Addr) base = 0;  // where the loader put it
  std::vector<ElfW(Phdr)> segments;
};

LoadedObject find_loaded(const std::string& library) {
  struct Search {
    const std::string* name;
    LoadedObject found;
    bool done = false;
  } search{&library, {}, false};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) -> int {
        auto& s = *static_cast<Search*>(data);
        const char* name = info->dlpi_name ? info->dlpi_name : "";
        bool main_program = name[0] == '\0';
        if (s.name->empty() ? !main_program : std::strstr(name, s.name->c_str()) == nullptr) return 0;
        s.found.path = main_program ? "/proc/self/exe" : name;
        s.found.base = info->dlpi_addr;
        s.found.segments.assign(info->dlpi_phdr, info->dlpi_phdr + info->dlpi_phnum);
        s.done = true;
        return 1;
      },
      &search);
  return search.done ? search.found : LoadedObject{};
}

}  // namespace

BuildArchs loaded_fatbin_archs(const std::string& library) {
  LoadedObject obj = find_loaded(library);
  if (obj.path.empty()) return {};
  try {
    UniqueFd fd = open_read(obj.path);
    Elf64_Ehdr eh{};
    pread_full(fd.get(), &eh, sizeof eh, 0, obj.path);
    if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shnum == 0)
      return {};
    std::vector<Elf64_Shdr> sh(eh.e_shnum);
    pread_full(fd.get(), sh.data(), sh.size() * sizeof(Elf64_Shdr), eh.e_shoff, obj.path);
    if (eh.e_shstrndx >= sh.size()) return {};
    std::string names(sh[eh.e_shstrndx].sh_size, '\0');
    pread_full(fd.get(), names.data(), names.size(), sh[eh.e_shstrndx].sh_offset, obj.path);
    for (const auto& s : sh) {
      if (s.sh_name >= names.size() || std::strcmp(names.c_str() + s.sh_name, ".nv_fatbin") != 0) continue;
      // Only a section that lies inside a loaded segment is readable in memory.
      for (const auto& seg : obj.segments)
        if (seg.p_type == PT_LOAD && s.sh_addr >= seg.p_vaddr && s.sh_addr + s.sh_size <= seg.p_vaddr + seg.p_filesz)
          return parse_fatbin_section(reinterpret_cast<const std::uint8_t*>(obj.base + s.sh_addr), s.sh_size);
      return {};
    }
  } catch (const Error&) {
    // Unreadable: the verdict falls back to "not known".
  }
  return {};
}

GpuAvailability probe_gpu() {
  GpuAvailability g;
#if FRUGAL_WITH_CUDA
  g.cuda_built = true;
#if FRUGAL_WITH_NVJPEG
  g.nvjpeg_built = true;
#endif
  int n = 0;
  cudaError_t st = cudaGetDeviceCount(&n);
  if (st != cudaSuccess) {
    // Without an NVIDIA driver the runtime answers "CUDA driver version is insufficient", which
    // reads as "upgrade your driver" on a machine that simply has no GPU.
    const bool driver = std::filesystem::exists("/proc/driver/nvidia/version");
    g.problem = st == cudaErrorNoDevice || !driver ? std::string("no GPU")
                                                   : std::string("cudaGetDeviceCount: ") + cudaGetErrorString(st);
    cudaGetLastError();  // clear it, so later CUDA calls (LibTorch's) do not see it
    n = 0;
  }
  g.devices = n;
  if (n > 0) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
      g.device_name = prop.name;
      g.major = prop.major;
      g.minor = prop.minor;
    }
    g.kernel_archs = loaded_fatbin_archs("");
    g.torch_archs = loaded_fatbin_archs("libtorch_cuda.so");
  }
#endif
  return g;
}

}  // namespace frugal::gpu

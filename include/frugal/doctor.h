// The machine report behind `frugal doctor`, and the verdict on whether this build can use the
// GPU. Torch-free: the LibTorch/CUDA facts are collected by the command and passed in, so the
// verdict is testable with a faked device (a P100 with driver 470, say) on a machine without one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace frugal {

struct SystemInfo {
  std::string cpu_model;
  int cpu_cores = 0;
  std::uint64_t ram_total = 0, ram_available = 0;
  std::filesystem::path workspace;
  std::uint64_t disk_total = 0, disk_free = 0;
  std::uint64_t workspace_bytes = 0;  // bytes used under the workspace folder
};

SystemInfo collect_system_info(const std::filesystem::path& workspace);

struct GpuInfo {
  int index = 0;
  std::string name;
  int major = 0, minor = 0;  // compute capability
  std::uint64_t total_memory = 0;
};

struct DriverInfo {
  std::string version;    // e.g. "470.57.02"; empty when no NVIDIA driver is loaded
  int cuda_version = 0;   // the newest CUDA the driver supports, as 11040 for 11.4; 0 if unknown
};

// Architectures a CUDA library carries kernels for, read from its .nv_fatbin section.
struct BuildArchs {
  std::vector<int> sass;  // cubins, as 75 for sm_75
  std::vector<int> ptx;   // PTX that the driver can JIT for newer GPUs
};

// Parses the ELF file's .nv_fatbin section; empty lists when it has none.
BuildArchs read_fatbin_archs(const std::filesystem::path& elf_file);
// Same, over the bytes of a .nv_fatbin section (exposed for tests and fuzzing).
BuildArchs parse_fatbin_section(const std::uint8_t* data, std::size_t size);

struct BuildInfo {
  std::string torch_version;
  int cuda_version = 0;  // CUDA the LibTorch build targets, as 13000; 0 for a CPU-only build
  BuildArchs archs;
};

struct GpuVerdict {
  bool usable = true;
  std::vector<std::string> warnings;  // each with the fix
};

// Whether `gpu` can run this build's kernels and the driver can run its CUDA version.
GpuVerdict judge_gpu(const GpuInfo& gpu, const DriverInfo& driver, const BuildInfo& build);

// Newest CUDA version (as 12060) that a driver of this major version supports; 0 when unknown.
int max_cuda_for_driver(int driver_major);

std::string cuda_version_string(int v);  // 13000 -> "13.0"

}  // namespace frugal

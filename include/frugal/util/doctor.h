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
  std::string version;   // e.g. "470.57.02"; empty when no NVIDIA driver is loaded
  int cuda_version = 0;  // the newest CUDA the driver supports, as 11040 for 11.4; 0 if unknown
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
  std::string fix;                    // the one command that scripts/setup.sh would run to make the GPU usable; or ""
};

// Whether `gpu` can run this build's kernels and the driver can run its CUDA version.
GpuVerdict judge_gpu(const GpuInfo& gpu, const DriverInfo& driver, const BuildInfo& build);

// Where frugal's own big folders (the build, LibTorch and its CUDA libraries) sit, per disk.
struct InstallDisk {
  std::vector<std::filesystem::path> folders;
  std::uint64_t bytes = 0;  // what they take on this disk
  std::uint64_t disk_total = 0, disk_free = 0;
};

// The folders' sizes, grouped by the disk that holds them; folders that do not exist are left out.
std::vector<InstallDisk> collect_install_disks(const std::vector<std::filesystem::path>& folders);

// A warning when several GB of frugal's install sit on a small disk, which on a notebook is the
// persistent one (5-20 GB) that the data and checkpoints need; "" otherwise.
std::string judge_install_disk(const InstallDisk& disk);

// Newest CUDA version (as 12060) that a driver of this major version supports; 0 when unknown.
int max_cuda_for_driver(int driver_major);

std::string cuda_version_string(int v);  // 13000 -> "13.0"

}  // namespace frugal

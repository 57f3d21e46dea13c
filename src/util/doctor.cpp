#include "frugal/util/doctor.h"
#include "frugal/util/settings_text.h"

#include <elf.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <thread>

#include "frugal/util/fs.h"

namespace frugal {
namespace {

std::string read_first_matching(const char* file, const char* key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      auto colon = line.find(':');
      if (colon == std::string::npos) return "";
      auto v = line.substr(colon + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  }
  return "";
}

std::uint64_t meminfo_kib(const char* key) {
  std::string v = read_first_matching("/proc/meminfo", key);
  return v.empty() ? 0 : std::stoull(v) * 1024;
}

std::uint64_t tree_bytes(const std::filesystem::path& dir) {
  std::uint64_t total = 0;
  std::error_code ec;
  auto it = std::filesystem::recursive_directory_iterator(
      dir, std::filesystem::directory_options::skip_permission_denied, ec);
  for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode))
      total += static_cast<std::uint64_t>(st.st_blocks) * 512;
  }
  return total;
}

// Layout of NVIDIA's fat binaries (not documented by NVIDIA; as read by cuobjdump-compatible
// tools): a container header {u32 magic 0xBA55ED50, u16 version, u16 header_size, u64 body_size}
// followed by entries {u16 kind (1 PTX, 2 ELF), u16 version, u32 header_size, u64 payload_size,
// ..., u32 arch at offset 28}.
constexpr std::uint32_t kFatbinMagic = 0xBA55ED50;

template <class T>
T load(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

SystemInfo collect_system_info(const std::filesystem::path& workspace) {
  SystemInfo s;
  s.cpu_model = read_first_matching("/proc/cpuinfo", "model name");
  s.cpu_cores = static_cast<int>(std::thread::hardware_concurrency());
  s.ram_total = meminfo_kib("MemTotal");
  s.ram_available = meminfo_kib("MemAvailable");
  s.workspace = std::filesystem::absolute(workspace);
  struct statvfs st {};
  if (::statvfs(s.workspace.c_str(), &st) == 0) {
    s.disk_total = static_cast<std::uint64_t>(st.f_blocks) * st.f_frsize;
    s.disk_free = static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
  }
  s.workspace_bytes = tree_bytes(s.workspace);
  return s;
}

BuildArchs parse_fatbin_section(const std::uint8_t* data, std::size_t size) {
  std::set<int> sass, ptx;
  std::size_t pos = 0;
  while (pos + 16 <= size) {
    if (load<std::uint32_t>(data + pos) != kFatbinMagic) {
      pos += 8;  // containers are 8-byte aligned within the section
      continue;
    }
    std::uint16_t header_size = load<std::uint16_t>(data + pos + 6);
    std::uint64_t body = load<std::uint64_t>(data + pos + 8);
    if (header_size < 16 || body > size - pos - header_size) break;
    std::size_t e = pos + header_size, end = e + body;
    while (e + 32 <= end) {
      std::uint16_t kind = load<std::uint16_t>(data + e);
      std::uint32_t entry_header = load<std::uint32_t>(data + e + 4);
      std::uint64_t payload = load<std::uint64_t>(data + e + 8);
      std::uint32_t arch = load<std::uint32_t>(data + e + 28);
      if (entry_header < 32 || payload > end - e - entry_header) break;
      if (kind == 2) sass.insert(static_cast<int>(arch));
      if (kind == 1) ptx.insert(static_cast<int>(arch));
      e += entry_header + payload;
    }
    pos = end;
  }
  return {{sass.begin(), sass.end()}, {ptx.begin(), ptx.end()}};
}

BuildArchs read_fatbin_archs(const std::filesystem::path& elf_file) {
  UniqueFd fd = open_read(elf_file);
  Elf64_Ehdr eh{};
  pread_full(fd.get(), &eh, sizeof eh, 0, elf_file.string());
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) return {};
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  pread_full(fd.get(), sh.data(), sh.size() * sizeof(Elf64_Shdr), eh.e_shoff, elf_file.string());
  if (eh.e_shstrndx >= sh.size()) return {};
  std::string names(sh[eh.e_shstrndx].sh_size, '\0');
  pread_full(fd.get(), names.data(), names.size(), sh[eh.e_shstrndx].sh_offset, elf_file.string());
  for (const auto& s : sh) {
    if (s.sh_name >= names.size() || std::strcmp(names.c_str() + s.sh_name, ".nv_fatbin") != 0) continue;
    // The section can be hundreds of MB; only headers are needed, but the entries are
    // variable-length, so read it whole in one go (it is mapped read-only by the loader anyway).
    std::vector<std::uint8_t> bytes(s.sh_size);
    pread_full(fd.get(), bytes.data(), bytes.size(), s.sh_offset, elf_file.string());
    return parse_fatbin_section(bytes.data(), bytes.size());
  }
  return {};
}

int max_cuda_for_driver(int driver_major) {
  // NVIDIA's CUDA toolkit release notes, "minimum driver version" table (Linux).
  static const std::pair<int, int> table[] = {
      {580, 13000}, {575, 12090}, {570, 12080}, {565, 12070}, {560, 12060}, {555, 12050}, {550, 12040}, {545, 12030},
      {535, 12020}, {530, 12010}, {525, 12000}, {520, 11080}, {515, 11070}, {510, 11060}, {495, 11050}, {470, 11040},
      {465, 11030}, {460, 11020}, {455, 11010}, {450, 11000}, {440, 10020}, {418, 10010}, {410, 10000}};
  for (auto [major, cuda] : table)
    if (driver_major >= major) return cuda;
  return 0;
}

std::vector<InstallDisk> collect_install_disks(const std::vector<std::filesystem::path>& folders) {
  std::vector<InstallDisk> disks;
  std::vector<dev_t> devices;
  for (const auto& f : folders) {
    struct stat st {};
    struct statvfs vfs {};
    if (::stat(f.c_str(), &st) != 0 || ::statvfs(f.c_str(), &vfs) != 0) continue;
    auto at = std::find(devices.begin(), devices.end(), st.st_dev);
    if (at == devices.end()) {
      devices.push_back(st.st_dev);
      disks.push_back({{},
                       0,
                       static_cast<std::uint64_t>(vfs.f_blocks) * vfs.f_frsize,
                       static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize});
      at = devices.end() - 1;
    }
    InstallDisk& d = disks[static_cast<std::size_t>(at - devices.begin())];
    d.folders.push_back(f);
    d.bytes += tree_bytes(f);
  }
  return disks;
}

std::string judge_install_disk(const InstallDisk& disk) {
  // Notebook persistent disks are 5-20 GB; a temporary disk or a workstation's is far larger.
  constexpr std::uint64_t kSmallDisk = 32ull << 30, kBig = 1ull << 30;
  if (disk.disk_total == 0 || disk.disk_total >= kSmallDisk || disk.bytes < kBig) return "";
  std::string list;
  for (const auto& f : disk.folders) list += (list.empty() ? "" : ", ") + f.string();
  auto gb = [](std::uint64_t b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GB", static_cast<double>(b) / 1e9);
    return std::string(buf);
  };
  return "frugal's build and LibTorch take " + gb(disk.bytes) + " of a " + gb(disk.disk_total) + " disk (" +
         gb(disk.disk_free) + " free): " + list +
         "; if this is the notebook's persistent disk, keep it for data and checkpoints: rerun "
         "'FRUGAL_PREFIX=<a temporary disk> make build' after removing .venv and the build folder";
}

std::string cuda_version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

GpuVerdict judge_gpu(const GpuInfo& gpu, const DriverInfo& driver, const BuildInfo& build) {
  GpuVerdict v;
  const int cc = gpu.major * 10 + gpu.minor;
  const std::string sm = "sm_" + std::to_string(cc);
  // A cubin runs on GPUs of the same major version and an equal or higher minor one; PTX is
  // compiled by the driver for any GPU at least as new as it.
  bool has_sass = std::any_of(build.archs.sass.begin(), build.archs.sass.end(),
                              [&](int a) { return a / 10 == gpu.major && a <= cc; });
  bool has_ptx = std::any_of(build.archs.ptx.begin(), build.archs.ptx.end(), [&](int a) { return a <= cc; });
  bool known = !build.archs.sass.empty() || !build.archs.ptx.empty();
  if (known && !has_sass && !has_ptx) {
    v.usable = false;
    std::string list;
    for (int a : build.archs.sass) list += (list.empty() ? "sm_" : ", sm_") + std::to_string(a);
    // The PyTorch build scripts/setup.sh installs for this GPU (its PYPI_ARCHS/CU126_ARCHS table:
    // PyTorch 2.11's release matrix).
    std::string fix;
    if (cc < 50) {
      fix = "no PyTorch 2.11 build has kernels for " + sm + " (the oldest is sm_50): train on the CPU (" +
            spell_settings("{device}") + " cpu)";
    } else {
      v.fix = cc < 75 ? "python -m pip install torch==2.11.0 torchvision==0.26.0 --index-url "
                        "https://download.pytorch.org/whl/cu126"
                      : "python -m pip install torch==2.11.0 torchvision==0.26.0";
      fix = "scripts/setup.sh installs PyTorch 2.11.0's " +
            std::string(cc < 75 ? "CUDA 12.6 build (which still has " + sm + ") from PyTorch's index"
                                : "CUDA 13.0 build from PyPI") +
            " into .venv when it finds this GPU: run 'make build' in the frugal checkout";
    }
    v.warnings.push_back("GPU " + std::to_string(gpu.index) + " (" + gpu.name + ", compute capability " +
                         std::to_string(gpu.major) + "." + std::to_string(gpu.minor) +
                         ") is not supported by this LibTorch " + build.torch_version + " (CUDA " +
                         cuda_version_string(build.cuda_version) + ", kernels for " + list +
                         "): training on it would fail with 'no kernel image is available'; " + fix);
  }
  if (!driver.version.empty() && build.cuda_version > 0) {
    int driver_cuda = driver.cuda_version;
    if (driver_cuda == 0) driver_cuda = max_cuda_for_driver(std::atoi(driver.version.c_str()));
    if (driver_cuda > 0 && driver_cuda / 1000 < build.cuda_version / 1000) {
      v.usable = false;
      v.warnings.push_back(
          "NVIDIA driver " + driver.version + " supports CUDA up to " + cuda_version_string(driver_cuda) +
          ", but this LibTorch needs CUDA " + cuda_version_string(build.cuda_version) +
          "; update the driver, or use a LibTorch built for CUDA " + cuda_version_string(driver_cuda) + " or older");
    }
  }
  return v;
}

}  // namespace frugal

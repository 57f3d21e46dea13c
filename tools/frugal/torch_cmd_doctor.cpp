// frugal doctor: what this machine has, and whether this build of frugal can use its GPU.
#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/cuda.h>
#include <torch/version.h>

#if __has_include(<cuda_runtime_api.h>)
#include <cuda_runtime_api.h>
#define FRUGAL_HAVE_CUDART 1
#endif

#include <algorithm>
#include <fstream>
#include <iostream>

#include "cli.h"
#include "commands.h"
#include "frugal/util/doctor.h"
#include "frugal/util/progress.h"
#include "frugal/util/terminal.h"
#include "frugal/train/launch.h"
#include "frugal/util/units.h"
#include "frugal/util/version.h"

namespace frugal::cli {
namespace {

// The loaded libtorch_cuda.so, whose fatbinary lists the GPU architectures of this build.
std::filesystem::path loaded_library(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    auto slash = line.find('/');
    if (slash != std::string::npos && line.find(name, slash) != std::string::npos) return line.substr(slash);
  }
  return {};
}

// The first "N.N" or "N.N.N" in `line` ("535.104.05" of the driver's version line), or "".
std::string first_version(const std::string& line) {
  auto digits_end = [&line](std::size_t i) {
    while (i < line.size() && line[i] >= '0' && line[i] <= '9') ++i;
    return i;
  };
  for (std::size_t i = 0; i < line.size();) {
    const std::size_t a = digits_end(i);
    if (a == i) {
      ++i;
      continue;
    }
    std::size_t end = a;
    for (int part = 0; part < 2 && end < line.size() && line[end] == '.'; ++part) {
      const std::size_t b = digits_end(end + 1);
      if (b == end + 1) break;
      end = b;
    }
    if (end > a) return line.substr(i, end - i);
    i = a;
  }
  return "";
}

DriverInfo driver_info() {
  DriverInfo d;
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (std::getline(in, line)) d.version = first_version(line);
#ifdef FRUGAL_HAVE_CUDART
  int v = 0;
  if (!d.version.empty() && cudaDriverGetVersion(&v) == cudaSuccess) d.cuda_version = v;
#endif
  return d;
}

std::vector<GpuInfo> gpus() {
  std::vector<GpuInfo> out;
#ifdef FRUGAL_HAVE_CUDART
  if (!torch::cuda::is_available()) return out;
  int n = static_cast<int>(torch::cuda::device_count());
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    out.push_back({i, p.name, p.major, p.minor, static_cast<std::uint64_t>(p.totalGlobalMem)});
  }
#endif
  return out;
}

std::string archs_string(const std::vector<int>& archs) {
  std::string s;
  for (int a : archs) s += (s.empty() ? "sm_" : " sm_") + std::to_string(a);
  return s.empty() ? "none" : s;
}

// Everything doctor reports, and its warnings and fixes.
struct DoctorFacts {
  SystemInfo sys;
  BuildInfo build;
  bool cuda_build = false;
  long cudart = 0, cudnn = 0;
  DriverInfo driver;
  std::vector<GpuInfo> gpu_list;
  std::vector<std::string> warnings, fixes;
};

// LibTorch's version, whether it was built for CUDA, its GPU architectures, CUDA runtime and cuDNN.
void collect_build(DoctorFacts& f) {
  f.build.torch_version = TORCH_VERSION;
  const auto& hooks = at::detail::getCUDAHooks();
  f.cuda_build = hooks.hasCUDA() || !loaded_library("libtorch_cuda.so").empty();
  std::filesystem::path torch_cuda = loaded_library("libtorch_cuda.so");
  if (!torch_cuda.empty()) f.build.archs = read_fatbin_archs(torch_cuda);
  try {
    f.cudart = hooks.versionCUDART();
    f.cudnn = hooks.hasCuDNN() ? hooks.versionCuDNN() : 0;
  } catch (const std::exception&) {
    // CPU-only LibTorch: no CUDA runtime to report.
  }
  f.build.cuda_version = static_cast<int>(f.cudart);
}

// The GPUs judged against the driver and the build; the disks frugal and LibTorch are installed
// on; the workspace's free space.
void judge(DoctorFacts& f) {
  if (f.gpu_list.empty())
    f.warnings.push_back(f.driver.version.empty()
                             ? "no NVIDIA GPU or driver found: frugal will train on the CPU (slow for big models)"
                             : "NVIDIA driver " + f.driver.version + " found but LibTorch sees no usable GPU");
  for (const auto& g : f.gpu_list) {
    auto v = judge_gpu(g, f.driver, f.build);
    f.warnings.insert(f.warnings.end(), v.warnings.begin(), v.warnings.end());
    if (!v.fix.empty() && std::find(f.fixes.begin(), f.fixes.end(), v.fix) == f.fixes.end()) f.fixes.push_back(v.fix);
  }
  // This executable's build folder (bin/..) and LibTorch's package with its CUDA libraries beside it.
  std::vector<std::filesystem::path> install;
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && std::filesystem::exists(exe.parent_path().parent_path() / "CMakeCache.txt"))
    install.push_back(exe.parent_path().parent_path());
  if (auto torch_cpu = loaded_library("libtorch_cpu.so"); !torch_cpu.empty()) {
    auto site = torch_cpu.parent_path().parent_path().parent_path();  // site-packages/torch/lib/..
    install.push_back(site / "torch");
    install.push_back(site / "nvidia");
  }
  for (const auto& d : collect_install_disks(install))
    if (auto w = judge_install_disk(d); !w.empty()) f.warnings.push_back(w);
  if (f.sys.disk_free < (1ull << 30))
    f.warnings.push_back("less than 1 GiB free on " + f.sys.workspace.string() +
                         "; run 'frugal du' and 'frugal clean'");
}

nlohmann::json facts_json(const DoctorFacts& f) {
  const SystemInfo& sys = f.sys;
  nlohmann::json j;
  j["frugal_version"] = kVersion;
  j["cpu"] = {{"model", sys.cpu_model}, {"cores", sys.cpu_cores}};
  j["ram"] = {{"total", sys.ram_total}, {"available", sys.ram_available}};
  j["disk"] = {{"workspace", sys.workspace.string()},
               {"total", sys.disk_total},
               {"free", sys.disk_free},
               {"workspace_bytes", sys.workspace_bytes}};
  j["libtorch"] = {{"version", f.build.torch_version},
                   {"cuda_build", f.cuda_build},
                   {"cuda_runtime", f.cudart ? cuda_version_string(static_cast<int>(f.cudart)) : ""},
                   {"cudnn", f.cudnn},
                   {"gpu_archs", f.build.archs.sass},
                   {"ptx_archs", f.build.archs.ptx}};
  j["driver"] = {{"version", f.driver.version},
                 {"cuda", f.driver.cuda_version ? cuda_version_string(f.driver.cuda_version) : ""}};
  j["gpus"] = nlohmann::json::array();
  for (const auto& g : f.gpu_list)
    j["gpus"].push_back({{"index", g.index},
                         {"name", g.name},
                         {"compute_capability", std::to_string(g.major) + "." + std::to_string(g.minor)},
                         {"memory", g.total_memory},
                         {"usable", judge_gpu(g, f.driver, f.build).usable}});
  j["distributed"] = {{"backends", distributed_backends()}, {"gpus_per_node", f.gpu_list.size()}};
  j["warnings"] = f.warnings;
  j["fixes"] = f.fixes;
  return j;
}

DoctorFacts collect_facts(const std::string& workspace) {
  DoctorFacts f;
  f.sys = collect_system_info(workspace);
  collect_build(f);
  f.driver = driver_info();
  f.gpu_list = gpus();
  judge(f);
  return f;
}

// The report is what was asked for, not progress: stdout, so `frugal doctor > report.txt` keeps it.
// What it did not make itself (the workspace's path, names the system gives) is escaped.
void print_doctor_text(const DoctorFacts& f) {
  const SystemInfo& sys = f.sys;
  std::ostream& out = std::cout;
  out << "frugal " << kVersion << "\n"
      << "CPU       " << printable(sys.cpu_model) << ", " << sys.cpu_cores << " cores\n"
      << "RAM       " << format_size(sys.ram_total) << " (" << format_size(sys.ram_available) << " available)\n"
      << "disk      " << format_size(sys.disk_free) << " free of " << format_size(sys.disk_total) << " at "
      << printable(sys.workspace.string()) << "; workspace uses " << format_size(sys.workspace_bytes) << "\n"
      << "LibTorch  " << f.build.torch_version
      << (f.cudart ? ", CUDA " + cuda_version_string(static_cast<int>(f.cudart)) : std::string(", CPU only"))
      << (f.cudnn ? ", cuDNN " + std::to_string(f.cudnn) : std::string()) << "\n"
      << "GPU archs " << archs_string(f.build.archs.sass)
      << (f.build.archs.ptx.empty() ? "" : " (PTX: " + archs_string(f.build.archs.ptx) + ")") << "\n"
      << "driver    " << (f.driver.version.empty() ? "none" : f.driver.version) << "\n";
  for (const auto& g : f.gpu_list)
    out << "GPU " << g.index << "     " << printable(g.name) << ", compute capability " << g.major << "." << g.minor
        << ", " << format_size(g.total_memory) << "\n";
  // Several processes (torchrun): what each node would use.
  std::string backends;
  for (const auto& b : distributed_backends()) backends += (backends.empty() ? "" : ", ") + b;
  out << "torchrun  " << backends << "; "
      << (f.gpu_list.empty() ? std::string("no GPU: ranks train on the CPU with gloo")
                             : "a node runs up to " + std::to_string(f.gpu_list.size()) + " GPU rank" +
                                   (f.gpu_list.size() == 1 ? "" : "s") + " (--nproc-per-node), rank i on GPU i")
      << "\n";
  for (const auto& w : f.warnings) out << "warning: " << printable(w) << "\n";
  for (const auto& fix : f.fixes)
    out << "fix:     " << printable(fix) << "   # what scripts/setup.sh does in .venv; then rebuild\n";
}

}  // namespace

nlohmann::json doctor_json(const std::string& workspace) { return facts_json(collect_facts(workspace)); }

int cmd_doctor(int argc, char** argv) {
  CLI::App app{
      "Machine report: CPU, RAM, disk, GPUs, driver/CUDA/cuDNN/LibTorch versions, and whether "
      "this build supports the GPU. Exits 0 even when it warns.",
      "doctor"};
  bool json = false;
  std::string workspace = ".";
  app.add_flag("--json", json, "one JSON document on stdout");
  app.add_option("--workspace", workspace, "folder whose disk and usage to report (default: .)");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  const DoctorFacts f = collect_facts(workspace);
  if (json)
    print_json(facts_json(f));
  else
    print_doctor_text(f);
  return 0;
}

}  // namespace frugal::cli

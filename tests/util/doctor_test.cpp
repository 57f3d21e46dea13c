#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "frugal/util/doctor.h"

using namespace frugal;

namespace {
// A CUDA 13 LibTorch's kernels (as read from torch 2.11's libtorch_cuda.so).
BuildInfo cuda13_build() {
  BuildInfo b;
  b.torch_version = "2.11.0";
  b.cuda_version = 13000;
  b.archs.sass = {75, 80, 86, 90, 100, 120};
  return b;
}

void put(std::vector<std::uint8_t>& v, std::size_t at, const void* p, std::size_t n) {
  if (v.size() < at + n) v.resize(at + n);
  std::memcpy(v.data() + at, p, n);
}

// One fat-binary container holding the given (kind, arch) entries with 8-byte payloads.
std::vector<std::uint8_t> fatbin(std::initializer_list<std::pair<int, int>> entries) {
  std::vector<std::uint8_t> out(8, 0);  // leading padding the parser must skip
  std::size_t start = out.size();
  std::uint32_t magic = 0xBA55ED50;
  std::uint16_t version = 1, header = 16;
  std::uint64_t body = entries.size() * (64 + 8);
  put(out, start, &magic, 4);
  put(out, start + 4, &version, 2);
  put(out, start + 6, &header, 2);
  put(out, start + 8, &body, 8);
  std::size_t e = start + 16;
  for (auto [kind, arch] : entries) {
    std::uint16_t k = static_cast<std::uint16_t>(kind);
    std::uint32_t eh = 64, a = static_cast<std::uint32_t>(arch);
    std::uint64_t payload = 8;
    put(out, e, &k, 2);
    put(out, e + 4, &eh, 4);
    put(out, e + 8, &payload, 8);
    put(out, e + 28, &a, 4);
    out.resize(e + 64 + 8);
    e += 64 + 8;
  }
  return out;
}
}  // namespace

TEST(GpuVerdict, PascalOnCuda13BuildIsUnsupportedAndNamesCuda126Build) {
  GpuInfo p100{0, "Tesla P100-PCIE-16GB", 6, 0, 16ull << 30};
  DriverInfo driver{"470.57.02", 11040};
  GpuVerdict v = judge_gpu(p100, driver, cuda13_build());
  EXPECT_FALSE(v.usable);
  ASSERT_EQ(v.warnings.size(), 2u);
  EXPECT_NE(v.warnings[0].find("compute capability 6.0"), std::string::npos) << v.warnings[0];
  EXPECT_NE(v.warnings[0].find("CUDA 12.6"), std::string::npos) << v.warnings[0];
  EXPECT_NE(v.warnings[1].find("driver 470.57.02 supports CUDA up to 11.4"), std::string::npos) << v.warnings[1];
}

TEST(GpuVerdict, PascalFixIsTheInstallSetupRuns) {
  GpuInfo p100{0, "Tesla P100-PCIE-16GB", 6, 0, 16ull << 30};
  GpuVerdict v = judge_gpu(p100, {"560.35.03", 12060}, cuda13_build());
  ASSERT_FALSE(v.usable);
  const std::string index = "https://download.pytorch.org/whl/cu126";
  EXPECT_EQ(v.fix, "python -m pip install torch==2.11.0 torchvision==0.26.0 --index-url " + index);
  EXPECT_NE(v.warnings.at(0).find("make build"), std::string::npos) << v.warnings[0];
  // The same build as scripts/setup.sh installs, so that the two cannot drift apart.
  std::ifstream in(FRUGAL_SOURCE_DIR "/scripts/setup.sh");
  std::stringstream setup;
  setup << in.rdbuf();
  EXPECT_NE(setup.str().find("CU126_INDEX=${FRUGAL_TORCH_INDEX:-" + index + "}"), std::string::npos);
  EXPECT_NE(setup.str().find("TORCH_VERSION=${FRUGAL_TORCH_VERSION:-2.11.0}"), std::string::npos);
  EXPECT_NE(setup.str().find("sm_60"), std::string::npos);
}

TEST(GpuVerdict, TuringMissingFromAnOldBuildGetsPypiTorch) {
  GpuInfo t4{0, "Tesla T4", 7, 5, 15ull << 30};
  BuildInfo b = cuda13_build();
  b.archs.sass = {80, 86, 90};
  GpuVerdict v = judge_gpu(t4, {"580.1", 13000}, b);
  EXPECT_FALSE(v.usable);
  EXPECT_EQ(v.fix, "python -m pip install torch==2.11.0 torchvision==0.26.0");
}

TEST(GpuVerdict, KeplerHasNoBuildToInstallAndSaysCpu) {
  GpuInfo k80{0, "Tesla K80", 3, 7, 12ull << 30};
  GpuVerdict v = judge_gpu(k80, {"470.1", 11040}, cuda13_build());
  EXPECT_FALSE(v.usable);
  EXPECT_TRUE(v.fix.empty());
  EXPECT_NE(v.warnings.at(0).find("--device cpu"), std::string::npos) << v.warnings[0];
}

TEST(GpuVerdict, HopperWithNewDriverIsUsable) {
  GpuInfo h200{0, "NVIDIA H200", 9, 0, 141ull << 30};
  GpuVerdict v = judge_gpu(h200, {"580.65.06", 13000}, cuda13_build());
  EXPECT_TRUE(v.usable);
  EXPECT_TRUE(v.warnings.empty());
  EXPECT_TRUE(v.fix.empty());
}

TEST(GpuVerdict, SameMajorNewerMinorRunsOlderCubin) {
  GpuInfo ada{0, "RTX 4090", 8, 9, 24ull << 30};  // sm_89 runs sm_86 cubins
  BuildInfo b = cuda13_build();
  b.archs.sass = {80, 86};
  EXPECT_TRUE(judge_gpu(ada, {"580.1", 13000}, b).usable);
}

TEST(GpuVerdict, PtxLetsTheDriverCompileForNewerGpus) {
  BuildInfo b = cuda13_build();
  b.archs.sass = {80};
  b.archs.ptx = {80};
  GpuInfo blackwell{0, "B200", 10, 0, 180ull << 30};
  EXPECT_TRUE(judge_gpu(blackwell, {"580.1", 13000}, b).usable);
  b.archs.ptx.clear();
  EXPECT_FALSE(judge_gpu(blackwell, {"580.1", 13000}, b).usable);
}

TEST(DriverTable, KnownDriversMapToTheirCuda) {
  EXPECT_EQ(max_cuda_for_driver(470), 11040);
  EXPECT_EQ(max_cuda_for_driver(560), 12060);
  EXPECT_EQ(max_cuda_for_driver(580), 13000);
  EXPECT_EQ(max_cuda_for_driver(300), 0);
}

TEST(Fatbin, ParsesElfAndPtxEntries) {
  auto blob = fatbin({{2, 75}, {2, 90}, {1, 90}, {2, 75}});
  BuildArchs a = parse_fatbin_section(blob.data(), blob.size());
  EXPECT_EQ(a.sass, (std::vector<int>{75, 90}));
  EXPECT_EQ(a.ptx, (std::vector<int>{90}));
}

TEST(Fatbin, TruncatedContainerStopsWithoutReadingPastTheEnd) {
  auto blob = fatbin({{2, 75}, {2, 90}});
  blob.resize(blob.size() - 20);
  BuildArchs a = parse_fatbin_section(blob.data(), blob.size());
  EXPECT_TRUE(a.ptx.empty());
  EXPECT_LE(a.sass.size(), 2u);
}

TEST(SystemInfo, ReportsCoresMemoryAndWorkspaceUse) {
  SystemInfo s = collect_system_info(FRUGAL_SOURCE_DIR "/src/util");
  EXPECT_GT(s.cpu_cores, 0);
  EXPECT_GT(s.ram_total, 0u);
  EXPECT_GT(s.disk_total, 0u);
  EXPECT_GT(s.workspace_bytes, 0u);
}

TEST(InstallDisk, SeveralGigabytesOnASmallDiskWarnWithWhereToMoveThem) {
  InstallDisk kaggle{
      {"/kaggle/working/frugal/build", "/kaggle/working/frugal/.venv/lib/python3.11/site-packages/torch"},
      8'100'000'000ull,
      21'000'000'000ull,
      2'000'000'000ull};
  std::string w = judge_install_disk(kaggle);
  EXPECT_NE(w.find("8.1 GB of a 21.0 GB disk"), std::string::npos) << w;
  EXPECT_NE(w.find("/kaggle/working/frugal/build"), std::string::npos) << w;
  EXPECT_NE(w.find("FRUGAL_PREFIX="), std::string::npos) << w;
}

TEST(InstallDisk, BigDiskOrSmallInstallIsQuiet) {
  EXPECT_EQ(judge_install_disk({{"/work/build"}, 8'100'000'000ull, 250'000'000'000ull, 75'000'000'000ull}), "");
  EXPECT_EQ(judge_install_disk({{"/kaggle/working/build"}, 200'000'000ull, 21'000'000'000ull, 2'000'000'000ull}), "");
}

TEST(InstallDisk, CollectGroupsFoldersByDiskAndSkipsMissingOnes) {
  auto disks = collect_install_disks(
      {FRUGAL_SOURCE_DIR "/src/util", FRUGAL_SOURCE_DIR "/include", FRUGAL_SOURCE_DIR "/no-such-folder"});
  ASSERT_EQ(disks.size(), 1u);
  EXPECT_EQ(disks[0].folders.size(), 2u);
  EXPECT_GT(disks[0].bytes, collect_install_disks({FRUGAL_SOURCE_DIR "/src/util"}).at(0).bytes);
  EXPECT_GT(disks[0].disk_total, 0u);
}

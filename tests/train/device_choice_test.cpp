// --device / --amp / --gpu-memory decisions as pure functions of faked GPU capabilities, so each
// rule is held on a machine without a GPU.
#include <gtest/gtest.h>

#include "frugal/util/error.h"
#include "train/device.h"

namespace frugal {
namespace {

// LibTorch 2.11's CUDA 13 wheel: no Pascal or Volta kernels.
BuildArchs cuda13_torch() { return {{75, 80, 86, 90, 100, 120}, {120}}; }

CudaFacts gpu(const char* name, int major, int minor, BuildArchs archs = cuda13_torch()) {
  CudaFacts f;
  f.devices = 1;
  f.name = name;
  f.major = major;
  f.minor = minor;
  f.torch_archs = std::move(archs);
  return f;
}

ErrorKind kind_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "no error";
  return ErrorKind::io;
}

TEST(DeviceChoice, AutoTakesTheCpuWhenLibTorchHasNoKernelsForTheGpu) {
  DevicePlan p = plan_device("auto", "auto", gpu("Tesla P100-PCIE-16GB", 6, 0));
  EXPECT_EQ(p.cuda, -1);
  EXPECT_EQ(p.amp, AmpMode::off);
  EXPECT_NE(p.note.find("sm_60"), std::string::npos) << p.note;
  EXPECT_NE(p.note.find("frugal doctor"), std::string::npos) << p.note;
  EXPECT_NE(p.note.find("Tesla P100"), std::string::npos) << p.note;
}

TEST(DeviceChoice, AutoTakesAGpuThatHasKernelsOrPtxOrWhoseListIsUnknown) {
  DevicePlan t4 = plan_device("auto", "auto", gpu("Tesla T4", 7, 5));
  EXPECT_EQ(t4.cuda, 0);
  EXPECT_EQ(t4.amp, AmpMode::fp16);
  EXPECT_TRUE(t4.note.empty());
  DevicePlan h200 = plan_device("auto", "auto", gpu("NVIDIA H200", 9, 0));
  EXPECT_EQ(h200.cuda, 0);
  EXPECT_EQ(h200.amp, AmpMode::bf16);
  // A newer GPU than any cubin: the driver compiles the PTX.
  EXPECT_EQ(plan_device("auto", "auto", gpu("future", 12, 1, {{90}, {90}})).cuda, 0);
  // A cubin runs on the same major version, equal or higher minor.
  EXPECT_EQ(plan_device("auto", "auto", gpu("RTX 3090", 8, 6, {{80}, {}})).cuda, 0);
  EXPECT_EQ(plan_device("auto", "auto", gpu("P100", 6, 0, {})).cuda, 0);  // not known: trust LibTorch
  CudaFacts none;
  EXPECT_EQ(plan_device("auto", "auto", none).cuda, -1);
  EXPECT_TRUE(plan_device("auto", "auto", none).note.empty());
}

TEST(DeviceChoice, AnExplicitGpuWithoutKernelsIsAUsageError) {
  EXPECT_EQ(kind_of([] { plan_device("cuda", "auto", gpu("Tesla P100", 6, 0)); }), ErrorKind::usage);
  EXPECT_EQ(kind_of([] { plan_device("cuda:0", "off", gpu("Tesla K80", 3, 7)); }), ErrorKind::usage);
  EXPECT_EQ(kind_of([] { plan_device("cuda", "auto", CudaFacts{}); }), ErrorKind::usage);
  EXPECT_EQ(kind_of([] { plan_device("cuda:1", "auto", gpu("Tesla T4", 7, 5)); }), ErrorKind::usage);
  EXPECT_EQ(kind_of([] { plan_device("cuda:x", "auto", gpu("Tesla T4", 7, 5)); }), ErrorKind::usage);
  EXPECT_EQ(kind_of([] { plan_device("gpu", "auto", gpu("Tesla T4", 7, 5)); }), ErrorKind::usage);
  EXPECT_EQ(plan_device("cuda:0", "auto", gpu("Tesla T4", 7, 5)).cuda, 0);
  EXPECT_EQ(plan_device("cpu", "auto", gpu("Tesla T4", 7, 5)).cuda, -1);
}

TEST(DeviceChoice, Bf16OnAGpuBeforeAmpereIsAUsageErrorAutoOnConsumerPascalIsFp32) {
  auto pascal = gpu("GeForce GTX 1080", 6, 1, {{61}, {}});
  EXPECT_EQ(kind_of([] { plan_device("cuda", "bf16", gpu("Tesla T4", 7, 5)); }), ErrorKind::usage);
  EXPECT_EQ(kind_of([&] { plan_device("auto", "bf16", pascal); }), ErrorKind::usage);
  EXPECT_EQ(plan_device("cuda", "bf16", gpu("A100", 8, 0)).amp, AmpMode::bf16);
  EXPECT_EQ(plan_device("cpu", "bf16", gpu("Tesla T4", 7, 5)).amp, AmpMode::bf16);  // the CPU's own bf16
  EXPECT_EQ(plan_device("auto", "auto", pascal).amp, AmpMode::off);
  EXPECT_EQ(plan_device("auto", "fp16", pascal).amp, AmpMode::fp16);  // asked for: slow but honoured
  EXPECT_EQ(plan_device("auto", "auto", gpu("Tesla P100", 6, 0, {{60}, {}})).amp, AmpMode::fp16);
  EXPECT_EQ(choose_amp("cuda", 6, 1), AmpMode::off);
  EXPECT_EQ(choose_amp("cuda", 6, 2), AmpMode::off);
  EXPECT_EQ(kind_of([] { plan_device("auto", "fp8", CudaFacts{}); }), ErrorKind::usage);
}

TEST(GpuMemory, TheCapLeavesOutWhatTheContextAndOthersAlreadyHold) {
  const std::uint64_t G = 1ull << 30;
  // 16 GiB asked on a 141 GiB card of which 1 GiB is taken: the allocator gets 15 GiB.
  EXPECT_DOUBLE_EQ(gpu_memory_fraction(16 * G, 1 * G, 141 * G), 15.0 / 141.0);
  EXPECT_DOUBLE_EQ(gpu_memory_fraction(16 * G, 0, 16 * G), 1.0);
  EXPECT_EQ(kind_of([&] { gpu_memory_fraction(200 * G, 1 * G, 141 * G); }), ErrorKind::budget);
  EXPECT_EQ(kind_of([&] { gpu_memory_fraction(G / 2, G, 141 * G); }), ErrorKind::budget);
}

}  // namespace
}  // namespace frugal

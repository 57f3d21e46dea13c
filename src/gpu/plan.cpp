#include "frugal/gpu/plan.h"
#include "frugal/util/settings_text.h"

#include <vector>

#include "frugal/util/error.h"

namespace frugal::gpu {
JobPlan job_for(const CropPlan& c) {
  JobPlan p;
  ResizeJob& j = p.job;
  p.view_x = c.box.x;
  p.view_y = c.box.y;
  j.view_w = c.box.width;
  j.view_h = c.box.height;
  j.x1 = static_cast<float>(c.box.width);
  j.y1 = static_cast<float>(c.box.height);
  j.full_w = c.resize_w;
  j.full_h = c.resize_h;
  j.ox = c.window.x;
  j.oy = c.window.y;
  j.flip = c.flip ? 1 : 0;
  return p;
}

std::optional<JobPlan> plan_job(int width, int height, const TransformOptions& t, std::uint64_t seed) {
  if (t.small || width <= 0 || height <= 0) return std::nullopt;
  return job_for(plan_crop(t, seed, width, height));
}

ResizeJob identity_job(const std::uint8_t* src, int size, int channels) {
  ResizeJob j;
  j.src = src;
  j.view_w = j.view_h = j.full_w = j.full_h = size;
  j.x1 = j.y1 = static_cast<float>(size);
  j.channels = channels;
  j.pitch = size * channels;
  return j;
}

void resize_on_host(const ResizeJob& job, int size, float* out) {
  const std::size_t plane = static_cast<std::size_t>(size) * size;
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) {
      float v[3];
      resize_pixel(job, size, x, y, v);
      for (int c = 0; c < job.channels; ++c) out[c * plane + static_cast<std::size_t>(y) * size + x] = v[c];
    }
}

DecodeMode parse_decode_mode(const std::string& text) {
  if (text == "cpu") return DecodeMode::cpu;
  if (text == "gpu") return DecodeMode::gpu;
  if (text == "auto") return DecodeMode::automatic;
  fail(ErrorKind::usage, "{decode}", "cpu, gpu or auto", "'" + text + "'", "");
}

const char* to_string(DecodeMode mode) {
  switch (mode) {
    case DecodeMode::cpu:
      return "cpu";
    case DecodeMode::gpu:
      return "gpu";
    case DecodeMode::automatic:
      return "auto";
  }
  return "?";
}

std::string missing_kernels(const GpuAvailability& g, const BuildArchs& archs, const std::string& whose) {
  GpuInfo info;
  info.name = g.device_name;
  info.major = g.major;
  info.minor = g.minor;
  BuildInfo build;
  build.archs = archs;
  if (judge_gpu(info, DriverInfo{}, build).usable) return "";
  auto list = [](const std::vector<int>& a) {
    std::string s;
    for (int x : a) s += (s.empty() ? "sm_" : " sm_") + std::to_string(x);
    return s;
  };
  std::string have = list(archs.sass);
  if (!archs.ptx.empty()) have += (have.empty() ? "PTX " : ", PTX ") + list(archs.ptx);
  return whose + " has kernels for " + have + ", not for this GPU's sm_" + std::to_string(g.major * 10 + g.minor) +
         " (" + g.device_name + ")";
}

DecodeChoice choose_decode(DecodeMode mode, const GpuAvailability& g, bool small_images) {
  if (mode == DecodeMode::cpu) return {false, spell_settings("cpu ({decode} cpu)")};
  std::string missing, hint;
  if (!g.cuda_built) {
    missing = "a build without CUDA (nvcc was not found when frugal was configured)";
    hint = "install the CUDA toolkit and rebuild (docs/gpu.md), or use {decode} cpu";
  } else if (!g.nvjpeg_built) {
    missing = "a build without nvJPEG";
    hint = "run scripts/setup.sh (it installs nvidia-nvjpeg into .venv) and reconfigure, or use {decode} cpu";
  } else if (g.devices == 0) {
    missing = g.problem == "no GPU" ? g.problem
                                    : "no CUDA device" + (g.problem.empty() ? std::string() : " (" + g.problem + ")");
    hint = "run on a machine with an NVIDIA GPU and driver, or use {decode} cpu";
  } else if (std::string why = missing_kernels(g, g.torch_archs, "LibTorch"); !why.empty()) {
    missing = why;
    hint = "run `frugal doctor` for a LibTorch that supports this GPU, or use {decode} cpu";
  } else if (std::string why2 = missing_kernels(g, g.kernel_archs, "frugal's resize kernel"); !why2.empty()) {
    missing = why2;
    hint = "rebuild frugal with FRUGAL_CUDA_ARCHITECTURES including " + std::to_string(g.major * 10 + g.minor) +
           " (docs/gpu.md), or use {decode} cpu";
  } else if (small_images) {
    missing = "images of 64 px or less (their padded-crop transforms run on the CPU only)";
    hint = "use {decode} cpu; decoding such small images is cheap on the CPU";
  }
  if (missing.empty()) return {true, "gpu (" + g.device_name + ", nvJPEG)"};
  if (mode == DecodeMode::gpu)
    fail(ErrorKind::usage, "{decode} gpu", "a CUDA GPU, nvJPEG and photos larger than 64 px", missing, hint);
  return {false, spell_settings("cpu ({decode} auto: ") + missing + ")"};
}

}  // namespace frugal::gpu

// The CPU half of the GPU batch path: where each image's crop comes from, drawn exactly as the
// CPU loader draws it for (seed, epoch, index), and whether the GPU path is used at all.
#pragma once

#include <optional>
#include <string>

#include "frugal/util/doctor.h"
#include "frugal/image/image.h"
#include "frugal/gpu/resize_math.h"

namespace frugal::gpu {

// The crop plan (plan_crop, the one transform_image carries out) as a ResizeJob whose view is
// given in source pixels (view_x, view_y); the caller fills src/pitch/channels. The kernel writes
// image_size x image_size: the plan's output window.
struct JobPlan {
  int view_x = 0, view_y = 0;
  ResizeJob job;
};
JobPlan job_for(const CropPlan& plan);  // resized_crop and center_crop plans
// job_for(plan_crop(...)) for a width x height source; nullopt for the small (<= 64 px)
// transforms, which the GPU path leaves to the CPU. Error(invalid) as plan_crop. The kernel crops
// the image as stored: the GPU loader plans only JPEGs whose EXIF orientation is 1 and leaves the
// others to the CPU, which turns them (decode_transform).
std::optional<JobPlan> plan_job(int width, int height, const TransformOptions& transform, std::uint64_t seed);

// A job that copies an already transformed size x size image unchanged (CPU-decoded fallbacks).
ResizeJob identity_job(const std::uint8_t* src, int size, int channels);

// Runs `job` on the host into (C, size, size) floats 0..255 (unrounded); the kernel's reference.
void resize_on_host(const ResizeJob& job, int size, float* out);

// --- which decoder ----------------------------------------------------------------------------

enum class DecodeMode { cpu, gpu, automatic };
DecodeMode parse_decode_mode(const std::string& text);  // "cpu" | "gpu" | "auto"; Error(usage)
const char* to_string(DecodeMode mode);

// What this build and machine offer; probe_gpu() asks the CUDA runtime, tests build their own.
struct GpuAvailability {
  bool cuda_built = false;    // compiled with nvcc
  bool nvjpeg_built = false;  // linked against nvJPEG
  int devices = 0;
  std::string device_name;   // of device 0
  int major = 0, minor = 0;  // device 0's compute capability
  std::string problem;       // why devices is 0, from the CUDA runtime
  BuildArchs kernel_archs;   // frugal's own kernels (the resize kernel, in this executable)
  BuildArchs torch_archs;    // LibTorch's (libtorch_cuda.so); empty lists: not known
};
GpuAvailability probe_gpu();

// The kernel architectures in the .nv_fatbin section of a loaded ELF object: the executable when
// `library` is empty, else the first loaded library whose path contains it. Parsed where the
// loader mapped it, so only its headers are touched (libtorch_cuda.so's section is ~300 MB).
// Empty lists when there is no such object or section.
BuildArchs loaded_fatbin_archs(const std::string& library);

// The doctor's verdict (judge_gpu) for device 0 and `archs`: "" when it runs them or the list is
// unknown (empty), else why not, e.g. "LibTorch has kernels for sm_75 sm_80 ..., not this GPU's
// sm_61". `whose` names the code ("LibTorch", "frugal's resize kernel").
std::string missing_kernels(const GpuAvailability& gpu, const BuildArchs& archs, const std::string& whose);

struct DecodeChoice {
  bool gpu = false;
  std::string reason;  // for the log: "gpu (NVIDIA H200, nvJPEG)" or why the CPU was chosen
};
// `small_images`: the dataset's typical side is <= 64 px (padded-crop transforms, CPU only).
// --decode gpu that cannot be honoured is Error(usage) naming what is missing and the fix.
DecodeChoice choose_decode(DecodeMode mode, const GpuAvailability& gpu, bool small_images);

}  // namespace frugal::gpu

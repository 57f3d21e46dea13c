// The crop + resize + flip + normalise of one output pixel, shared by the CUDA kernel and by its
// host reference (tests run that one on machines without a GPU). The filter is the CPU loader's
// (PIL's antialiased bilinear: support widened by the scale when downscaling, taps clamped at the
// source view's borders, weights renormalised), evaluated in one 2-D pass in float instead of two
// 8-bit passes, so it stays within one level of src/image's output.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define FRUGAL_HD __host__ __device__
#else
#define FRUGAL_HD
#endif

namespace frugal::gpu {

// One image of a batch. `src` is the source view: (view_h, view_w, channels) uint8 rows of
// `pitch` bytes. The resize maps the box [x0, x1) x [y0, y1) (view pixels) onto a full_w x full_h
// image, of which the output shows the window at (ox, oy); `flip` mirrors the output.
struct ResizeJob {
  const std::uint8_t* src = nullptr;
  int view_w = 0, view_h = 0, channels = 0, pitch = 0;
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  int full_w = 0, full_h = 0, ox = 0, oy = 0;
  int flip = 0;
};

enum class OutputType : int { u8 = 0, f32 = 1, f16 = 2 };

// Per output channel: out = (v / 255 - mean) / std, or the rounded level v for u8 output.
struct Normalisation {
  float mean[3] = {0, 0, 0};
  float inv_std[3] = {1, 1, 1};
};

namespace detail {

FRUGAL_HD inline float tri(float x) {
  x = x < 0 ? -x : x;
  return x < 1.0f ? 1.0f - x : 0.0f;
}

// Taps of output coordinate `o` along one axis: first input `lo`, count `n`, and the filter's
// centre and 1/filterscale, as PIL's precompute_coeffs computes them.
struct Axis {
  int lo, n;
  float center, ss;
};

FRUGAL_HD inline Axis axis(float in0, float in1, int out_full, int in_size, int o) {
  float scale = (in1 - in0) / static_cast<float>(out_full);
  float filterscale = scale > 1.0f ? scale : 1.0f;
  float support = filterscale;
  float center = in0 + (static_cast<float>(o) + 0.5f) * scale;
  int lo = static_cast<int>(center - support + 0.5f);
  if (lo < 0) lo = 0;
  int hi = static_cast<int>(center + support + 0.5f);
  if (hi > in_size) hi = in_size;
  return {lo, hi > lo ? hi - lo : 0, center, 1.0f / filterscale};
}

}  // namespace detail

// The filtered values (0..255, unrounded) of output pixel (x, y) of an out_w-wide output, one per
// channel into v[0..channels); `src` must be readable by the caller (device memory in the kernel).
FRUGAL_HD inline void resize_pixel(const ResizeJob& j, int out_w, int x, int y, float* v) {
  int fx = j.ox + (j.flip ? out_w - 1 - x : x);
  int fy = j.oy + y;
  detail::Axis ax = detail::axis(j.x0, j.x1, j.full_w, j.view_w, fx);
  detail::Axis ay = detail::axis(j.y0, j.y1, j.full_h, j.view_h, fy);
  const int C = j.channels;
  float sum[3] = {0.0f, 0.0f, 0.0f};
  float wsum_x = 0.0f, wsum_y = 0.0f;
  for (int i = 0; i < ax.n; ++i) wsum_x += detail::tri((i + ax.lo - ax.center + 0.5f) * ax.ss);
  for (int k = 0; k < ay.n; ++k) {
    float wy = detail::tri((k + ay.lo - ay.center + 0.5f) * ay.ss);
    if (wy == 0.0f) continue;
    wsum_y += wy;
    const std::uint8_t* p = j.src + static_cast<long long>(ay.lo + k) * j.pitch + C * ax.lo;
    float line[3] = {0.0f, 0.0f, 0.0f};
    for (int i = 0; i < ax.n; ++i, p += C) {
      float wx = detail::tri((i + ax.lo - ax.center + 0.5f) * ax.ss);
      for (int c = 0; c < C; ++c) line[c] += wx * p[c];
    }
    for (int c = 0; c < C; ++c) sum[c] += wy * line[c];
  }
  float w = wsum_x * wsum_y;
  for (int c = 0; c < C; ++c) v[c] = w > 0.0f ? sum[c] / w : 0.0f;
}

FRUGAL_HD inline std::uint8_t to_level(float v) {
  v = v + 0.5f;
  return static_cast<std::uint8_t>(v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v);
}

}  // namespace frugal::gpu

// The ops of the augmentation policies on (H, W, C) uint8 images, as torchvision.transforms.v2's
// functional ops compute them on uint8 tensors: the same float32 steps in the same order, so that
// results agree to the level (tests/image/augment_test.cpp holds them to torchvision op by op).
// Float results become uint8 by truncation (tensor.to(torch.uint8)) after a clamp to [0, 255].
// torch adds `x.add_(y, alpha=a)` as fma(y, a, x) in its vectorised kernels: std::fma here.
#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>

#include "frugal/image/augment.h"
#include "frugal/util/error.h"

namespace frugal {

namespace {

using Matrix = std::array<double, 6>;

std::uint8_t to_u8(float v) { return static_cast<std::uint8_t>(std::clamp(v, 0.0f, 255.0f)); }

// Python's math.radians and math.degrees.
double radians(double deg) { return deg * (std::numbers::pi / 180.0); }
double degrees(double rad) { return rad * (180.0 / std::numbers::pi); }

// _get_inverse_affine_matrix (torchvision.transforms.v2.functional._geometry), scale 1: the
// output-to-input matrix about `center` (relative to the image centre), in double as Python.
Matrix inverse_affine(double cx, double cy, double angle, double tx, double ty, double shear_x, double shear_y) {
  const double rot = radians(angle), sx = radians(shear_x), sy = radians(shear_y);
  const double cos_sy = std::cos(sy), tan_sx = std::tan(sx);
  const double a = std::cos(rot - sy) / cos_sy;
  const double b = -(a * tan_sx + std::sin(rot));
  const double c = std::sin(rot - sy) / cos_sy;
  const double d = std::cos(rot) - c * tan_sx;
  Matrix m = {d, -b, 0.0, -c, a, 0.0};
  m[2] += cx - m[0] * (cx + tx) - m[1] * (cy + ty);
  m[5] += cy - m[3] * (cx + tx) - m[4] * (cy + ty);
  return m;
}

// _affine_grid + grid_sample(mode="nearest", padding_mode="zeros", align_corners=False) in float32:
// theta rescaled by the half sizes, the base grid centred on the image, the source index unnormalised
// as (g + 1) * size / 2 - 0.5 and rounded half to even; outside the image: 0.
void affine_nearest(const Image& in, const Matrix& m, Image& out) {
  const int W = in.width, H = in.height, C = in.channels;
  out.resize(W, H, C);
  const float hw = static_cast<float>(0.5 * W), hh = static_cast<float>(0.5 * H);
  const float ax = static_cast<float>(m[0]) / hw, bx = static_cast<float>(m[1]) / hw,
              cx = static_cast<float>(m[2]) / hw;
  const float ay = static_cast<float>(m[3]) / hh, by = static_cast<float>(m[4]) / hh,
              cy = static_cast<float>(m[5]) / hh;
  const float sw = static_cast<float>(W) / 2, sh = static_cast<float>(H) / 2;
  for (int y = 0; y < H; ++y) {
    const float gy0 = static_cast<float>(y) - static_cast<float>(H - 1) * 0.5f;
    std::uint8_t* o = out.row(y);
    for (int x = 0; x < W; ++x, o += C) {
      const float gx0 = static_cast<float>(x) - static_cast<float>(W - 1) * 0.5f;
      const float gx = gx0 * ax + gy0 * bx + cx, gy = gx0 * ay + gy0 * by + cy;
      const float ix = std::nearbyint((gx + 1.0f) * sw - 0.5f), iy = std::nearbyint((gy + 1.0f) * sh - 0.5f);
      if (ix >= 0 && ix <= static_cast<float>(W - 1) && iy >= 0 && iy <= static_cast<float>(H - 1)) {
        const std::uint8_t* s = in.row(static_cast<int>(iy)) + static_cast<std::size_t>(ix) * C;
        std::copy(s, s + C, o);
      } else {
        std::fill(o, o + C, std::uint8_t{0});
      }
    }
  }
}

// torch.rot90(image, k, dims=(-2, -1)): k = 1 turns anticlockwise.
void rot90(const Image& in, int k, Image& out) {
  const int W = in.width, H = in.height, C = in.channels;
  if (k == 2)
    out.resize(W, H, C);
  else
    out.resize(H, W, C);
  for (int y = 0; y < out.height; ++y)
    for (int x = 0; x < out.width; ++x) {
      const int sx = k == 1 ? W - 1 - y : k == 2 ? W - 1 - x : y;
      const int sy = k == 1 ? x : k == 2 ? H - 1 - y : H - 1 - x;
      std::copy_n(in.row(sy) + static_cast<std::size_t>(sx) * C, C, out.row(y) + static_cast<std::size_t>(x) * C);
    }
}

// rotate_image: angle % 360 (Python's modulo), the exact fast paths, else the affine grid.
void rotate(const Image& in, double angle, Image& out) {
  angle = std::fmod(angle, 360.0);
  if (angle < 0) angle += 360.0;
  if (angle == 0) {
    out = in;
    return;
  }
  if (angle == 180) return rot90(in, 2, out);
  if (in.width == in.height && (angle == 90 || angle == 270)) return rot90(in, angle == 90 ? 1 : 3, out);
  affine_nearest(in, inverse_affine(0, 0, -angle, 0, 0, 0, 0), out);
}

// _rgb_to_grayscale_image then floor: r * 0.2989 + g * 0.587 + b * 0.114 in float32.
float gray(const std::uint8_t* p) {
  const float l = std::fma(static_cast<float>(p[1]), 0.587f, static_cast<float>(p[0]) * 0.2989f);
  return std::floor(std::fma(static_cast<float>(p[2]), 0.114f, l));
}

// _blend(image, other, ratio): image * ratio + other * (1 - ratio); `other` per pixel (saturation)
// or one value (contrast).
template <class Other>
void blend(const Image& in, double ratio, Other other, Image& out) {
  out.resize(in.width, in.height, in.channels);
  const float r = static_cast<float>(ratio), alpha = static_cast<float>(1.0 - ratio);
  const std::size_t n = static_cast<std::size_t>(in.width) * in.height, C = in.channels;
  for (std::size_t i = 0; i < n; ++i) {
    const float o = other(in.pixels.data() + i * C);
    for (std::size_t c = 0; c < C; ++c)
      out.pixels[i * C + c] = to_u8(std::fma(o, alpha, static_cast<float>(in.pixels[i * C + c]) * r));
  }
}

void adjust_contrast(const Image& in, double factor, Image& out) {
  const std::size_t n = static_cast<std::size_t>(in.width) * in.height, C = in.channels;
  double sum = 0;  // exact: a sum of whole numbers
  for (std::size_t i = 0; i < n; ++i) sum += C == 3 ? gray(in.pixels.data() + i * C) : static_cast<float>(in.pixels[i]);
  const float mean = static_cast<float>(sum) / static_cast<float>(n);
  blend(
      in, factor, [mean](const std::uint8_t*) { return mean; }, out);
}

// adjust_sharpness_image: the 3x3 smoothing kernel (1 around, 5 in the middle, / 13), rounded,
// blended into the inner pixels; the border rows and columns are kept.
void adjust_sharpness(const Image& in, double factor, Image& out) {
  out = in;
  const int W = in.width, H = in.height, C = in.channels;
  if (W <= 2 || H <= 2) return;
  const float alpha = static_cast<float>(1.0 - factor);
  for (int y = 1; y < H - 1; ++y)
    for (int x = 1; x < W - 1; ++x)
      for (int c = 0; c < C; ++c) {
        int sum = 0;
        for (int dy = -1; dy <= 1; ++dy)
          for (int dx = -1; dx <= 1; ++dx) sum += in.row(y + dy)[(x + dx) * C + c];
        const int v = in.row(y)[x * C + c];
        sum += 4 * v;
        // sum / 13 is never within float error of a half, so the exact quotient rounds alike.
        const float blurred = std::nearbyint(static_cast<float>(static_cast<double>(sum) / 13.0));
        const float x0 = static_cast<float>(v);
        out.row(y)[x * C + c] = to_u8(std::fma(blurred - x0, alpha, x0));
      }
}

void autocontrast(const Image& in, Image& out) {
  out.resize(in.width, in.height, in.channels);
  const std::size_t n = static_cast<std::size_t>(in.width) * in.height, C = in.channels;
  for (std::size_t c = 0; c < C; ++c) {
    std::uint8_t lo = 255, hi = 0;
    for (std::size_t i = 0; i < n; ++i)
      lo = std::min(lo, in.pixels[i * C + c]), hi = std::max(hi, in.pixels[i * C + c]);
    const float minimum = lo == hi ? 0.0f : static_cast<float>(lo);
    const float inv_scale = lo == hi ? 1.0f : static_cast<float>(hi - lo) * static_cast<float>(1.0 / 255.0);
    for (std::size_t i = 0; i < n; ++i)
      out.pixels[i * C + c] = to_u8((static_cast<float>(in.pixels[i * C + c]) - minimum) / inv_scale);
  }
}

// equalize_image: PIL's lookup table per channel; a channel with a single level besides its top
// one (step 0) is kept.
void equalize(const Image& in, Image& out) {
  out.resize(in.width, in.height, in.channels);
  const std::size_t n = static_cast<std::size_t>(in.width) * in.height, C = in.channels;
  for (std::size_t c = 0; c < C; ++c) {
    std::array<std::int64_t, 256> hist{};
    for (std::size_t i = 0; i < n; ++i) ++hist[in.pixels[i * C + c]];
    int top = 255;
    while (top > 0 && hist[top] == 0) --top;
    const std::int64_t step = (static_cast<std::int64_t>(n) - hist[top]) / 255;
    std::array<std::uint8_t, 256> lut{};
    std::int64_t cum = 0;
    for (int k = 0; k < 256; ++k) {
      lut[k] = step == 0 ? static_cast<std::uint8_t>(k)
                         : static_cast<std::uint8_t>(std::min<std::int64_t>(255, (cum + step / 2) / step));
      cum += hist[k];
    }
    for (std::size_t i = 0; i < n; ++i) out.pixels[i * C + c] = lut[in.pixels[i * C + c]];
  }
}

template <class F>
void per_level(const Image& in, F f, Image& out) {
  std::array<std::uint8_t, 256> lut{};
  for (int v = 0; v < 256; ++v) lut[v] = f(v);
  out.resize(in.width, in.height, in.channels);
  std::transform(in.pixels.begin(), in.pixels.end(), out.pixels.begin(), [&lut](std::uint8_t v) { return lut[v]; });
}

}  // namespace

// _AutoAugmentBase._apply_image_or_video_transform, with fill None (0).
void apply_augment_op(const Image& in, AugmentOp op, double m, Image& out) {
  if (in.channels != 1 && in.channels != 3)
    fail(ErrorKind::usage, "apply_augment_op", "an image of 1 or 3 channels", std::to_string(in.channels), "");
  const double cx = -0.5 * in.width, cy = -0.5 * in.height;  // shears turn about the top-left corner
  switch (op) {
    case AugmentOp::identity:
      out = in;
      return;
    case AugmentOp::shear_x:
      return affine_nearest(in, inverse_affine(cx, cy, 0, 0, 0, degrees(std::atan(m)), 0), out);
    case AugmentOp::shear_y:
      return affine_nearest(in, inverse_affine(cx, cy, 0, 0, 0, 0, degrees(std::atan(m))), out);
    case AugmentOp::translate_x:
      return affine_nearest(in, inverse_affine(0, 0, 0, std::trunc(m), 0, 0, 0), out);
    case AugmentOp::translate_y:
      return affine_nearest(in, inverse_affine(0, 0, 0, 0, std::trunc(m), 0, 0), out);
    case AugmentOp::rotate:
      return rotate(in, m, out);
    case AugmentOp::brightness: {
      const float f = static_cast<float>(1.0 + m);
      return per_level(
          in, [f](int v) { return to_u8(static_cast<float>(v) * f); }, out);
    }
    case AugmentOp::color:
      if (in.channels == 1) {
        out = in;
        return;
      }
      return blend(in, 1.0 + m, gray, out);
    case AugmentOp::contrast:
      return adjust_contrast(in, 1.0 + m, out);
    case AugmentOp::sharpness:
      return adjust_sharpness(in, 1.0 + m, out);
    case AugmentOp::posterize: {
      const int bits = static_cast<int>(m);
      const int mask = bits >= 8 ? 0xff : ((1 << bits) - 1) << (8 - bits);
      return per_level(
          in, [mask](int v) { return static_cast<std::uint8_t>(v & mask); }, out);
    }
    case AugmentOp::solarize: {
      const float threshold = static_cast<float>(255.0 * m);
      return per_level(
          in,
          [threshold](int v) { return static_cast<std::uint8_t>(static_cast<float>(v) >= threshold ? 255 - v : v); },
          out);
    }
    case AugmentOp::autocontrast:
      return autocontrast(in, out);
    case AugmentOp::equalize:
      return equalize(in, out);
  }
}

}  // namespace frugal

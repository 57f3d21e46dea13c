// torchvision's transforms on plain buffers, and the decode+transform step the loader runs.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "frugal/error.h"
#include "frugal/image.h"
#include "image/resize.h"

namespace frugal {

using detail::ImageView;
using detail::ResizeSpec;

namespace {
std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
inline std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
// Python's round(): half to even, which torchvision's integer sizes go through.
inline int py_round(double v) { return static_cast<int>(std::nearbyint(v)); }
}  // namespace

Rng::Rng(std::uint64_t seed) {
  for (auto& s : s_) s = splitmix64(seed);
}

std::uint64_t Rng::next() {
  std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
double Rng::uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
std::int64_t Rng::randint(std::int64_t lo, std::int64_t hi) {
  if (hi <= lo) return lo;
  return lo + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(hi - lo));
}

std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b) {
  std::uint64_t x = a * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL;
  std::uint64_t h = splitmix64(x);
  x = h ^ b;
  return splitmix64(x);
}

CropBox random_resized_crop_box(int width, int height, Rng& rng, double scale_lo, double scale_hi,
                                double ratio_lo, double ratio_hi) {
  double area = static_cast<double>(width) * height;
  double log_lo = std::log(ratio_lo), log_hi = std::log(ratio_hi);
  for (int attempt = 0; attempt < 10; ++attempt) {
    double target_area = area * rng.uniform(scale_lo, scale_hi);
    double aspect = std::exp(rng.uniform(log_lo, log_hi));
    int w = py_round(std::sqrt(target_area * aspect));
    int h = py_round(std::sqrt(target_area / aspect));
    if (0 < w && w <= width && 0 < h && h <= height) {
      int y = static_cast<int>(rng.randint(0, height - h + 1));
      int x = static_cast<int>(rng.randint(0, width - w + 1));
      return {x, y, w, h};
    }
  }
  double in_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (in_ratio < ratio_lo) {
    h = py_round(w / ratio_lo);
  } else if (in_ratio > ratio_hi) {
    w = py_round(h * ratio_hi);
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

void resize_bilinear(const Image& in, double x0, double y0, double x1, double y1, int out_w, int out_h, Image& out) {
  detail::resize_window(detail::view_of(in), {x0, y0, x1, y1, out_w, out_h, 0, 0, out_w, out_h}, out);
}

void resize_bilinear_reference(const Image& in, double x0, double y0, double x1, double y1, int out_w, int out_h,
                               Image& out) {
  detail::resize_window_reference(detail::view_of(in), {x0, y0, x1, y1, out_w, out_h, 0, 0, out_w, out_h}, out);
}

void flip_horizontal(Image& img) {
  const int C = img.channels;
  for (int y = 0; y < img.height; ++y) {
    std::uint8_t* r = img.row(y);
    for (int a = 0, b = img.width - 1; a < b; ++a, --b)
      for (int c = 0; c < C; ++c) std::swap(r[a * C + c], r[b * C + c]);
  }
}

void to_planar(const Image& img, std::uint8_t* dst) {
  const std::size_t plane = static_cast<std::size_t>(img.width) * img.height;
  if (img.channels == 3)
    detail::planes_from_rgb(img.pixels.data(), plane, dst, dst + plane, dst + 2 * plane);
  else
    std::memcpy(dst, img.pixels.data(), plane * img.channels);
}

void pad_crop(const Image& in, int pad, int x, int y, int w, int h, Image& out) {
  const int C = in.channels;
  out.resize(w, h, C);
  std::fill(out.pixels.begin(), out.pixels.end(), 0);
  for (int oy = 0; oy < h; ++oy) {
    int sy = y + oy - pad;
    if (sy < 0 || sy >= in.height) continue;
    int sx0 = std::max(x - pad, 0), sx1 = std::min(x - pad + w, in.width);
    if (sx1 <= sx0) continue;
    std::memcpy(out.row(oy) + static_cast<std::size_t>(sx0 - (x - pad)) * C,
                in.row(sy) + static_cast<std::size_t>(sx0) * C, static_cast<std::size_t>(sx1 - sx0) * C);
  }
}

namespace {
// torchvision Resize(shorter) then CenterCrop(size), computing only the kept window.
void resize_center_crop_view(const ImageView& in, double bx0, double by0, double bx1, double by1, int shorter,
                             int size, Image& out) {
  double w = bx1 - bx0, h = by1 - by0;
  // Sizes come from the integer dimensions when the box is the whole view, as torchvision's do.
  int iw = static_cast<int>(std::lround(w)), ih = static_cast<int>(std::lround(h));
  // A long thin image (1 x 89M pixels is within the default --max-pixels) scaled up to `shorter`
  // would have a longer side past int: bad input, not a wrapped (undefined) conversion.
  const double longer = iw <= 0 || ih <= 0 ? HUGE_VAL : static_cast<double>(shorter) * std::max(iw, ih) / std::min(iw, ih);
  if (!(longer < static_cast<double>(std::numeric_limits<int>::max())))
    fail(ErrorKind::invalid, "resize of a " + std::to_string(iw) + "x" + std::to_string(ih) + " image",
         "an aspect ratio that keeps the longer side below 2^31 pixels at a shorter side of " + std::to_string(shorter),
         "a ratio of " + std::to_string(std::max(iw, ih)) + ":" + std::to_string(std::max(1, std::min(iw, ih))),
         "crop or remove the image");
  int new_w, new_h;
  if (iw <= ih) {
    new_w = shorter;
    new_h = static_cast<int>(longer);
  } else {
    new_h = shorter;
    new_w = static_cast<int>(longer);
  }
  int cw = std::min(size, new_w), ch = std::min(size, new_h);
  int top = py_round((new_h - ch) / 2.0), left = py_round((new_w - cw) / 2.0);
  detail::resize_window(in, {bx0, by0, bx1, by1, new_w, new_h, left, top, cw, ch}, out);
}
}  // namespace

void resize_center_crop(const Image& in, int shorter, int size, Image& out) {
  resize_center_crop_view(detail::view_of(in), 0, 0, in.width, in.height, shorter, size, out);
}

namespace {
int eval_shorter(const TransformOptions& t) { return t.small ? t.image_size : t.image_size * 256 / 224; }

void small_train(const Image& in, const TransformOptions& t, Rng& rng, Image& tmp, Image& out) {
  const Image* base = &in;
  if (in.width != t.image_size || in.height != t.image_size) {
    resize_center_crop(in, t.image_size, t.image_size, tmp);
    base = &tmp;
  }
  int pad = t.image_size / 8;
  int y = static_cast<int>(rng.randint(0, 2 * pad + 1));
  int x = static_cast<int>(rng.randint(0, 2 * pad + 1));
  pad_crop(*base, pad, x, y, t.image_size, t.image_size, out);
  if (rng.uniform() < 0.5) flip_horizontal(out);
}

}  // namespace

void transform_image(const Image& in_raw, const TransformOptions& t, std::uint64_t seed, Image& out) {
  Rng rng(seed);
  Image converted, tmp;
  const Image* in = &in_raw;
  if (t.channels && in_raw.channels != t.channels) {
    convert_channels(in_raw, t.channels, converted);
    in = &converted;
  }
  if (!t.train) {
    resize_center_crop(*in, eval_shorter(t), t.image_size, out);
  } else if (t.small) {
    small_train(*in, t, rng, tmp, out);
  } else {
    CropBox b = random_resized_crop_box(in->width, in->height, rng);
    ResizeSpec spec{0, 0, double(b.width), double(b.height), t.image_size, t.image_size, 0, 0,
                    t.image_size, t.image_size};
    spec.mirror = rng.uniform() < 0.5;
    detail::resize_window(detail::crop_view(*in, b.x, b.y, b.width, b.height), spec, out);
  }
}

void decode_transform(std::span<const std::uint8_t> bytes, const TransformOptions& t, std::uint64_t max_pixels,
                      std::uint64_t seed, const std::string& where, Image& scratch, Image& out) {
  DecodeOptions d;
  d.channels = t.channels;
  d.max_pixels = max_pixels;
  if (sniff_format(bytes) != ImageFormat::jpeg || t.small) {
    decode_image(bytes, d, where, scratch);
    transform_image(scratch, t, seed, out);
    return;
  }
  // JPEG: choose the crop on the full-size geometry first, then decode only as large as it needs.
  ImageInfo info = read_image_info(bytes, where, max_pixels);
  Rng rng(seed);
  if (!t.train) {
    d.min_width = d.min_height = eval_shorter(t);
    decode_image(bytes, d, where, scratch);
    resize_center_crop(scratch, eval_shorter(t), t.image_size, out);
    return;
  }
  // Only the crop is decoded, at the smallest DCT scale that keeps it at least image_size.
  CropBox b = random_resized_crop_box(info.width, info.height, rng);
  d.min_width = d.min_height = t.image_size;
  JpegRegion r = decode_jpeg_region(bytes, b, d, where, scratch);
  int vx0 = static_cast<int>(std::floor(r.x0)), vy0 = static_cast<int>(std::floor(r.y0));
  int vx1 = std::min(scratch.width, static_cast<int>(std::ceil(r.x1)));
  int vy1 = std::min(scratch.height, static_cast<int>(std::ceil(r.y1)));
  ResizeSpec spec{r.x0 - vx0, r.y0 - vy0, r.x1 - vx0, r.y1 - vy0, t.image_size, t.image_size, 0, 0,
                  t.image_size, t.image_size};
  spec.mirror = rng.uniform() < 0.5;  // the flip, drawn after the box as transform_image does
  detail::resize_window(detail::crop_view(scratch, vx0, vy0, vx1 - vx0, vy1 - vy0), spec, out);
}

}  // namespace frugal

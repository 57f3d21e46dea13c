// The transforms' building blocks on plain buffers: the seeded generator, resizing, flip, padding
// and layout. Which of them a sample gets, and where, is crop_plan.cpp's plan.
#include <algorithm>
#include <cstring>

#include "frugal/image/image.h"
#include "image/resize.h"

namespace frugal {

namespace {
std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
inline std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
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

}  // namespace frugal

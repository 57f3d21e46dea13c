// The two passes below are most of the loader's time after decoding: built at -O3 so GCC
// vectorises the widening multiply-adds (-O2's cost model leaves them scalar, 1.5x slower).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include "image/resize.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "frugal/error.h"

namespace frugal::detail {
namespace {

// Filter taps of one output line: for output o, taps k[o*ksize + t] on inputs [start[o], start[o]+count[o]).
struct Taps {
  int ksize = 0;
  std::vector<int> start, count;
  std::vector<double> k;
};

double bilinear(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// PIL's precompute_coeffs (Resample.c) for the outputs [o0, o0+n) of an out_full-long line.
Taps precompute(int in_size, double in0, double in1, int out_full, int o0, int n) {
  Taps t;
  double scale = (in1 - in0) / out_full;
  double filterscale = std::max(scale, 1.0);
  double support = 1.0 * filterscale;
  t.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  t.start.resize(n);
  t.count.resize(n);
  t.k.assign(static_cast<std::size_t>(n) * t.ksize, 0.0);
  for (int i = 0; i < n; ++i) {
    int xx = o0 + i;
    double center = in0 + (xx + 0.5) * scale;
    double ss = 1.0 / filterscale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double* k = &t.k[static_cast<std::size_t>(i) * t.ksize];
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      double w = bilinear((x + xmin - center + 0.5) * ss);
      k[x] = w;
      ww += w;
    }
    if (ww != 0.0)
      for (int x = 0; x < xmax; ++x) k[x] /= ww;
    t.start[i] = xmin;
    t.count[i] = std::max(xmax, 0);
  }
  return t;
}

constexpr int kPrecision = 22;  // PIL's PRECISION_BITS for 8-bit images

std::vector<std::int32_t> fixed_point(const Taps& t) {
  std::vector<std::int32_t> k(t.k.size());
  for (std::size_t i = 0; i < k.size(); ++i)
    k[i] = static_cast<std::int32_t>(std::trunc((t.k[i] < 0 ? -0.5 : 0.5) + t.k[i] * (1 << kPrecision)));
  return k;
}

inline std::uint8_t clip8(std::int32_t v) {
  v >>= kPrecision;
  return static_cast<std::uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

template <int C>
void horizontal(const ImageView& in, int row0, int rows, const Taps& t, const std::vector<std::int32_t>& kk,
                std::uint8_t* __restrict out, int out_w) {
  constexpr std::int32_t half = 1 << (kPrecision - 1);
  for (int y = 0; y < rows; ++y) {
    const std::uint8_t* __restrict src = in.row(row0 + y);
    std::uint8_t* __restrict dst = out + static_cast<std::size_t>(y) * out_w * C;
    for (int x = 0; x < out_w; ++x) {
      const std::int32_t* __restrict k = &kk[static_cast<std::size_t>(x) * t.ksize];
      const std::uint8_t* __restrict p = src + static_cast<std::size_t>(t.start[x]) * C;
      const int n = t.count[x];
      if constexpr (C == 3) {
        std::int32_t s0 = half, s1 = half, s2 = half;
        for (int i = 0; i < n; ++i, p += 3) {
          s0 += p[0] * k[i];
          s1 += p[1] * k[i];
          s2 += p[2] * k[i];
        }
        dst[3 * x] = clip8(s0);
        dst[3 * x + 1] = clip8(s1);
        dst[3 * x + 2] = clip8(s2);
      } else {
        std::int32_t s0 = half;
        for (int i = 0; i < n; ++i) s0 += p[i] * k[i];
        dst[x] = clip8(s0);
      }
    }
  }
}

// Rows of `src` (row length `len` bytes) combined per output row; the inner loop runs over a
// contiguous row so the compiler vectorises it.
void vertical(const std::uint8_t* src, std::size_t src_stride, int len, const Taps& t,
              const std::vector<std::int32_t>& kk, int row_offset, Image& out) {
  std::vector<std::int32_t> acc_buf(len);
  std::int32_t* __restrict acc = acc_buf.data();
  for (int y = 0; y < out.height; ++y) {
    const std::int32_t* k = &kk[static_cast<std::size_t>(y) * t.ksize];
    const std::uint8_t* __restrict r0 = src + static_cast<std::size_t>(t.start[y] - row_offset) * src_stride;
    const std::int32_t w0 = k[0];
    for (int x = 0; x < len; ++x) acc[x] = (1 << (kPrecision - 1)) + r0[x] * w0;
    for (int i = 1, n = t.count[y]; i < n; ++i) {
      const std::uint8_t* __restrict r = r0 + static_cast<std::size_t>(i) * src_stride;
      const std::int32_t w = k[i];
      for (int x = 0; x < len; ++x) acc[x] += r[x] * w;
    }
    std::uint8_t* __restrict dst = out.row(y);
    for (int x = 0; x < len; ++x) {
      std::int32_t v = acc[x] >> kPrecision;
      dst[x] = static_cast<std::uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
    }
  }
}

void check_spec(const ImageView& in, const ResizeSpec& s) {
  bool ok = in.width > 0 && in.height > 0 && s.full_w > 0 && s.full_h > 0 && s.out_w > 0 && s.out_h > 0 &&
            s.ox >= 0 && s.oy >= 0 && s.ox + s.out_w <= s.full_w && s.oy + s.out_h <= s.full_h &&
            s.x0 >= 0 && s.y0 >= 0 && s.x1 > s.x0 && s.y1 > s.y0 && s.x1 <= in.width + 1e-6 &&
            s.y1 <= in.height + 1e-6 && (in.channels == 1 || in.channels == 3);
  if (!ok) fail(ErrorKind::invalid, "resize", "a box inside the image and a window inside the output", "", "");
}

}  // namespace

ImageView view_of(const Image& img) {
  return {img.pixels.data(), img.width, img.height, img.channels, static_cast<std::size_t>(img.width) * img.channels};
}

ImageView crop_view(const Image& img, int x, int y, int w, int h) {
  ImageView v = view_of(img);
  v.data += static_cast<std::size_t>(y) * v.stride + static_cast<std::size_t>(x) * img.channels;
  v.width = w;
  v.height = h;
  return v;
}

void resize_window(const ImageView& in, const ResizeSpec& s, Image& out) {
  check_spec(in, s);
  const int C = in.channels;
  Taps th = precompute(in.width, s.x0, s.x1, s.full_w, s.ox, s.out_w);
  Taps tv = precompute(in.height, s.y0, s.y1, s.full_h, s.oy, s.out_h);
  std::vector<std::int32_t> kh = fixed_point(th), kv = fixed_point(tv);
  int row_first = tv.start[0];
  int row_last = 0;
  for (int y = 0; y < s.out_h; ++y) row_last = std::max(row_last, tv.start[y] + tv.count[y]);
  out.resize(s.out_w, s.out_h, C);

  thread_local std::vector<std::uint8_t> tmp;
  tmp.resize(static_cast<std::size_t>(row_last - row_first) * s.out_w * C);
  if (C == 3)
    horizontal<3>(in, row_first, row_last - row_first, th, kh, tmp.data(), s.out_w);
  else
    horizontal<1>(in, row_first, row_last - row_first, th, kh, tmp.data(), s.out_w);
  vertical(tmp.data(), static_cast<std::size_t>(s.out_w) * C, s.out_w * C, tv, kv, row_first, out);
}

// Straight from the definition, in double precision: the same filter, an 8-bit intermediate.
void resize_window_reference(const ImageView& in, const ResizeSpec& s, Image& out) {
  check_spec(in, s);
  const int C = in.channels;
  Taps th = precompute(in.width, s.x0, s.x1, s.full_w, s.ox, s.out_w);
  Taps tv = precompute(in.height, s.y0, s.y1, s.full_h, s.oy, s.out_h);
  auto to8 = [](double v) { return static_cast<std::uint8_t>(std::clamp(std::floor(v + 0.5), 0.0, 255.0)); };
  Image mid;
  mid.resize(s.out_w, in.height, C);
  for (int y = 0; y < in.height; ++y)
    for (int x = 0; x < s.out_w; ++x)
      for (int c = 0; c < C; ++c) {
        double sum = 0;
        for (int i = 0; i < th.count[x]; ++i)
          sum += in.row(y)[(th.start[x] + i) * C + c] * th.k[static_cast<std::size_t>(x) * th.ksize + i];
        mid.row(y)[x * C + c] = to8(sum);
      }
  out.resize(s.out_w, s.out_h, C);
  for (int y = 0; y < s.out_h; ++y)
    for (int x = 0; x < s.out_w * C; ++x) {
      double sum = 0;
      for (int i = 0; i < tv.count[y]; ++i)
        sum += mid.row(tv.start[y] + i)[x] * tv.k[static_cast<std::size_t>(y) * tv.ksize + i];
      out.row(y)[x] = to8(sum);
    }
}

}  // namespace frugal::detail

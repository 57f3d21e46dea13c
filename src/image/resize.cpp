// The resize is most of the loader's time after decoding. Both passes run as one contiguous,
// vectorised row filter (the horizontal one on a transposed copy, since per-pixel tap loops stay
// scalar), in PIL's 22-bit fixed point with its 8-bit intermediate, as before. The row filter is
// hand-written AVX2 on x86-64 (filter_rows_avx2); the portable loop is built at -O3 so GCC
// vectorises its widening multiply-adds (-O2's cost model leaves them scalar).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include "image/resize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "frugal/util/error.h"

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
void precompute(int in_size, double in0, double in1, int out_full, int o0, int n, Taps& t) {
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
    // NOLINTNEXTLINE(bugprone-incorrect-roundings): PIL's ImagingResample rounds so; the pixels must match PIL's
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);  // NOLINT(bugprone-incorrect-roundings): as above
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
}

Taps precompute(int in_size, double in0, double in1, int out_full, int o0, int n) {
  Taps t;
  precompute(in_size, in0, in1, out_full, o0, n, t);
  return t;
}

constexpr int kPrecision = 22;  // PIL's PRECISION_BITS for 8-bit images

void fixed_point(const Taps& t, std::vector<std::int32_t>& k) {
  k.resize(t.k.size());
  for (std::size_t i = 0; i < k.size(); ++i)
    k[i] = static_cast<std::int32_t>(std::trunc((t.k[i] < 0 ? -0.5 : 0.5) + t.k[i] * (1 << kPrecision)));
}

inline std::uint8_t clip8(std::int32_t v) {
  v >>= kPrecision;
  return static_cast<std::uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

// One output row from N input rows `stride` apart: the sum stays in registers (the taps are
// unrolled), the loop over the row is vectorised.
template <int N>
inline void row_taps(const std::uint8_t* __restrict r, std::size_t stride, int len, const std::int32_t* k,
                     std::uint8_t* __restrict d) {
  std::int32_t w[N];
  for (int i = 0; i < N; ++i) w[i] = k[i];
  for (int x = 0; x < len; ++x) {
    std::int32_t a = 1 << (kPrecision - 1);
    for (int i = 0; i < N; ++i) a += r[static_cast<std::size_t>(i) * stride + x] * w[i];
    d[x] = clip8(a);
  }
}

// Any number of taps, through an accumulator row.
inline void row_taps_any(const std::uint8_t* __restrict r0, std::size_t stride, int len, const std::int32_t* k, int n,
                         std::uint8_t* __restrict d, std::int32_t* __restrict acc) {
  for (int x = 0; x < len; ++x) acc[x] = (1 << (kPrecision - 1)) + r0[x] * k[0];
  for (int i = 1; i < n; ++i) {
    const std::uint8_t* __restrict r = r0 + static_cast<std::size_t>(i) * stride;
    const std::int32_t w = k[i];
    for (int x = 0; x < len; ++x) acc[x] += r[x] * w;
  }
  for (int x = 0; x < len; ++x) d[x] = clip8(acc[x]);
}

// The filter of one line applied to whole rows: out row o = sum_i k[o][i] * src row (start[o] + i
// - row_offset), over `len` contiguous bytes. Horizontal filtering runs through it too, on a
// transposed image, so both passes are this contiguous, vectorisable loop (the per-pixel tap loop
// of a direct horizontal pass stays scalar). Portable version; filter_rows_avx2 below is the one
// x86-64 machines run.
void filter_rows_portable(const std::uint8_t* src, std::size_t src_stride, int len, const int* start, const int* count,
                          const std::int32_t* kk, int ksize, int row_offset, int n_out, std::uint8_t* dst,
                          std::size_t dst_stride, std::int32_t* acc) {
  for (int y = 0; y < n_out; ++y) {
    const std::int32_t* k = kk + static_cast<std::size_t>(y) * ksize;
    const std::uint8_t* r = src + static_cast<std::size_t>(start[y] - row_offset) * src_stride;
    std::uint8_t* d = dst + static_cast<std::size_t>(y) * dst_stride;
    switch (count[y]) {
      case 1:
        row_taps<1>(r, src_stride, len, k, d);
        break;
      case 2:
        row_taps<2>(r, src_stride, len, k, d);
        break;
      case 3:
        row_taps<3>(r, src_stride, len, k, d);
        break;
      case 4:
        row_taps<4>(r, src_stride, len, k, d);
        break;
      case 5:
        row_taps<5>(r, src_stride, len, k, d);
        break;
      case 6:
        row_taps<6>(r, src_stride, len, k, d);
        break;
      default:
        row_taps_any(r, src_stride, len, k, count[y], d, acc);
        break;
    }
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FRUGAL_AVX2_FILTER 1
// filter_rows by hand in AVX2: 32 bytes of a row per step in four 8-lane 32-bit accumulators
// (bytes widened by vpmovzxbd straight from memory), and the clip done by the saturating packs
// (v >> 22 lies in [-512, 511], so packs then packus clamp to [0, 255] exactly as clip8). GCC's
// own vectorisation of row_taps spent as many instructions on its min/max clip as on the sums
// (perf); this one computes the same integers, so the results are bit-identical.
__attribute__((target("avx2"), always_inline)) inline __m256i widen(const std::uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

__attribute__((target("avx2"))) void filter_rows_avx2(const std::uint8_t* src, std::size_t src_stride, int len,
                                                      const int* start, const int* count, const std::int32_t* kk,
                                                      int ksize, int row_offset, int n_out, std::uint8_t* dst,
                                                      std::size_t dst_stride) {
  const __m256i half = _mm256_set1_epi32(1 << (kPrecision - 1));
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int y = 0; y < n_out; ++y) {
    const std::int32_t* k = kk + static_cast<std::size_t>(y) * ksize;
    const std::uint8_t* r = src + static_cast<std::size_t>(start[y] - row_offset) * src_stride;
    std::uint8_t* d = dst + static_cast<std::size_t>(y) * dst_stride;
    const int n = count[y];
    int x = 0;
    for (; x + 32 <= len; x += 32) {
      __m256i a0 = half, a1 = half, a2 = half, a3 = half;
      for (int i = 0; i < n; ++i) {
        const __m256i w = _mm256_set1_epi32(k[i]);
        const std::uint8_t* p = r + static_cast<std::size_t>(i) * src_stride + x;
        a0 = _mm256_add_epi32(a0, _mm256_mullo_epi32(widen(p), w));
        a1 = _mm256_add_epi32(a1, _mm256_mullo_epi32(widen(p + 8), w));
        a2 = _mm256_add_epi32(a2, _mm256_mullo_epi32(widen(p + 16), w));
        a3 = _mm256_add_epi32(a3, _mm256_mullo_epi32(widen(p + 24), w));
      }
      // Each pack works within 128-bit lanes: the dwords come out as bytes 0-3, 8-11, 16-19,
      // 24-27, 4-7, 12-15, 20-23, 28-31; one permute puts them back in order.
      const __m256i s01 = _mm256_packs_epi32(_mm256_srai_epi32(a0, kPrecision), _mm256_srai_epi32(a1, kPrecision));
      const __m256i s23 = _mm256_packs_epi32(_mm256_srai_epi32(a2, kPrecision), _mm256_srai_epi32(a3, kPrecision));
      const __m256i b = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(s01, s23), order);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + x), b);
    }
    for (; x + 8 <= len; x += 8) {
      __m256i a = half;
      for (int i = 0; i < n; ++i)
        a = _mm256_add_epi32(
            a, _mm256_mullo_epi32(widen(r + static_cast<std::size_t>(i) * src_stride + x), _mm256_set1_epi32(k[i])));
      a = _mm256_srai_epi32(a, kPrecision);
      const __m128i s = _mm_packs_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(d + x), _mm_packus_epi16(s, s));
    }
    for (; x < len; ++x) {
      std::int32_t a = 1 << (kPrecision - 1);
      for (int i = 0; i < n; ++i) a += r[static_cast<std::size_t>(i) * src_stride + x] * k[i];
      d[x] = clip8(a);
    }
  }
}
#endif

bool simd_filter_usable() {
#ifdef FRUGAL_AVX2_FILTER
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
#else
  return false;
#endif
}

void filter_rows(RowFilter which, const std::uint8_t* src, std::size_t src_stride, int len, const int* start,
                 const int* count, const std::int32_t* kk, int ksize, int row_offset, int n_out, std::uint8_t* dst,
                 std::size_t dst_stride, std::int32_t* acc) {
#ifdef FRUGAL_AVX2_FILTER
  if (which == RowFilter::best && simd_filter_usable())
    return filter_rows_avx2(src, src_stride, len, start, count, kk, ksize, row_offset, n_out, dst, dst_stride);
#endif
  filter_rows_portable(src, src_stride, len, start, count, kk, ksize, row_offset, n_out, dst, dst_stride, acc);
}

// (rows x cols) pixels of C bytes -> (cols x rows), in tiles that stay in L1.
void transpose1(const std::uint8_t* src, std::size_t src_stride, int rows, int cols, std::uint8_t* dst,
                std::size_t dst_stride) {
  constexpr int kTile = 32;
  for (int y0 = 0; y0 < rows; y0 += kTile)
    for (int x0 = 0; x0 < cols; x0 += kTile) {
      const int y1 = std::min(rows, y0 + kTile), x1 = std::min(cols, x0 + kTile);
      for (int x = x0; x < x1; ++x) {
        std::uint8_t* __restrict d = dst + static_cast<std::size_t>(x) * dst_stride;
        const std::uint8_t* __restrict s = src + x;
        for (int y = y0; y < y1; ++y) d[y] = s[static_cast<std::size_t>(y) * src_stride];
      }
    }
}

// RGB pixels moved as 4-byte words (the fourth byte is the next pixel's, rewritten right after),
// 2-3x faster than byte copies; a column's last pixel and the source's last one go byte by byte
// so nothing outside either buffer is touched.
void transpose3(const std::uint8_t* src, std::size_t src_stride, int rows, int cols, std::uint8_t* dst,
                std::size_t dst_stride) {
  constexpr int kTile = 32;
  auto copy3 = [](std::uint8_t* d, const std::uint8_t* s) { d[0] = s[0], d[1] = s[1], d[2] = s[2]; };
  for (int y0 = 0; y0 < rows; y0 += kTile)
    for (int x0 = 0; x0 < cols; x0 += kTile) {
      const int y1 = std::min(rows, y0 + kTile), x1 = std::min(cols, x0 + kTile);
      for (int x = x0; x < x1; ++x) {
        std::uint8_t* d = dst + static_cast<std::size_t>(x) * dst_stride;
        const std::uint8_t* s = src + static_cast<std::size_t>(x) * 3;
        if (x + 1 == cols) {
          for (int y = y0; y < y1; ++y)
            copy3(d + static_cast<std::size_t>(y) * 3, s + static_cast<std::size_t>(y) * src_stride);
          continue;
        }
        int y = y0;
        for (; y + 1 < y1; ++y) {
          std::uint32_t v;
          std::memcpy(&v, s + static_cast<std::size_t>(y) * src_stride, 4);
          std::memcpy(d + static_cast<std::size_t>(y) * 3, &v, 4);
        }
        copy3(d + static_cast<std::size_t>(y) * 3, s + static_cast<std::size_t>(y) * src_stride);
      }
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FRUGAL_SSSE3_TRANSPOSE 1
// transpose3 by 4x4 blocks of pixels: each source row's 4 pixels spread to 32-bit lanes
// (pshufb), a 4x4 transpose of the lanes, each column packed back to 12 bytes. 3x fewer
// instructions per pixel than word copies. The scalar transpose3 does the edges.
__attribute__((target("ssse3"))) void transpose3_ssse3(const std::uint8_t* src, std::size_t src_stride, int rows,
                                                       int cols, std::uint8_t* dst, std::size_t dst_stride) {
  const __m128i spread = _mm_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1);
  const __m128i pack = _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  // A 16-byte load at pixel x reads up to pixel x + 5: stay two pixels inside the row.
  const int xs = cols >= 6 ? ((cols - 2) / 4) * 4 : 0, ys = (rows / 4) * 4;
  constexpr int kTile = 32;
  for (int x0 = 0; x0 < xs; x0 += kTile) {
    const int x1 = std::min(xs, x0 + kTile);
    for (int y = 0; y < ys; y += 4) {
      const std::uint8_t* s0 = src + static_cast<std::size_t>(y) * src_stride;
      for (int x = x0; x < x1; x += 4) {
        const std::uint8_t* s = s0 + static_cast<std::size_t>(x) * 3;
        __m128i a = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s)), spread);
        __m128i b = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + src_stride)), spread);
        __m128i c = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 2 * src_stride)), spread);
        __m128i d = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 3 * src_stride)), spread);
        __m128i t0 = _mm_unpacklo_epi32(a, b), t1 = _mm_unpacklo_epi32(c, d);
        __m128i t2 = _mm_unpackhi_epi32(a, b), t3 = _mm_unpackhi_epi32(c, d);
        __m128i col[4] = {_mm_unpacklo_epi64(t0, t1), _mm_unpackhi_epi64(t0, t1), _mm_unpacklo_epi64(t2, t3),
                          _mm_unpackhi_epi64(t2, t3)};
        for (int j = 0; j < 4; ++j) {
          __m128i p = _mm_shuffle_epi8(col[j], pack);
          std::uint8_t* d0 = dst + static_cast<std::size_t>(x + j) * dst_stride + static_cast<std::size_t>(y) * 3;
          _mm_storel_epi64(reinterpret_cast<__m128i*>(d0), p);
          std::uint32_t hi = static_cast<std::uint32_t>(_mm_cvtsi128_si32(_mm_srli_si128(p, 8)));
          std::memcpy(d0 + 8, &hi, 4);
        }
      }
    }
  }
  // The rest: columns [xs, cols) of every row, and rows [ys, rows) of columns [0, xs).
  if (xs < cols)
    transpose3(src + static_cast<std::size_t>(xs) * 3, src_stride, rows, cols - xs,
               dst + static_cast<std::size_t>(xs) * dst_stride, dst_stride);
  if (ys < rows && xs > 0)
    transpose3(src + static_cast<std::size_t>(ys) * src_stride, src_stride, rows - ys, xs,
               dst + static_cast<std::size_t>(ys) * 3, dst_stride);
}
#endif

void transpose_pixels(int C, const std::uint8_t* src, std::size_t src_stride, int rows, int cols, std::uint8_t* dst,
                      std::size_t dst_stride) {
#ifdef FRUGAL_SSSE3_TRANSPOSE
  static const bool ssse3 = __builtin_cpu_supports("ssse3");
  if (C == 3 && ssse3) return transpose3_ssse3(src, src_stride, rows, cols, dst, dst_stride);
#endif
  if (C == 3)
    transpose3(src, src_stride, rows, cols, dst, dst_stride);
  else
    transpose1(src, src_stride, rows, cols, dst, dst_stride);
}

void check_spec(const ImageView& in, const ResizeSpec& s) {
  bool ok = in.width > 0 && in.height > 0 && s.full_w > 0 && s.full_h > 0 && s.out_w > 0 && s.out_h > 0 && s.ox >= 0 &&
            s.oy >= 0 && s.ox + s.out_w <= s.full_w && s.oy + s.out_h <= s.full_h && s.x0 >= 0 && s.y0 >= 0 &&
            s.x1 > s.x0 && s.y1 > s.y0 && s.x1 <= in.width + 1e-6 && s.y1 <= in.height + 1e-6 &&
            (in.channels == 1 || in.channels == 3);
  if (!ok) fail(ErrorKind::invalid, "resize", "a box inside the image and a window inside the output", "", "");
}

}  // namespace

bool has_simd_row_filter() { return simd_filter_usable(); }

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

void resize_window(const ImageView& in, const ResizeSpec& s, Image& out, RowFilter which) {
  check_spec(in, s);
  const int C = in.channels;
  // Per thread, reused: the loader resizes every image through here.
  thread_local Taps th, tv;
  thread_local std::vector<std::int32_t> kh, kv, acc;
  thread_local std::vector<std::uint8_t> t_in, t_mid, mid;
  precompute(in.width, s.x0, s.x1, s.full_w, s.ox, s.out_w, th);
  precompute(in.height, s.y0, s.y1, s.full_h, s.oy, s.out_h, tv);
  fixed_point(th, kh);
  fixed_point(tv, kv);
  if (s.mirror) {
    std::reverse(th.start.begin(), th.start.end());
    std::reverse(th.count.begin(), th.count.end());
    for (int a = 0, b = s.out_w - 1; a < b; ++a, --b)
      std::swap_ranges(kh.begin() + static_cast<std::ptrdiff_t>(a) * th.ksize,
                       kh.begin() + static_cast<std::ptrdiff_t>(a + 1) * th.ksize,
                       kh.begin() + static_cast<std::ptrdiff_t>(b) * th.ksize);
  }
  const int row_first = tv.start[0];
  int row_last = 0;
  for (int y = 0; y < s.out_h; ++y) row_last = std::max(row_last, tv.start[y] + tv.count[y]);
  const int R = row_last - row_first;
  const std::size_t col_len = static_cast<std::size_t>(R) * C;  // one column of the used rows
  acc.resize(std::max(col_len, static_cast<std::size_t>(s.out_w) * C));
  out.resize(s.out_w, s.out_h, C);

  // Horizontal: columns become rows, are filtered as rows, and turn back.
  t_in.resize(static_cast<std::size_t>(in.width) * col_len);
  transpose_pixels(C, in.row(row_first), in.stride, R, in.width, t_in.data(), col_len);
  t_mid.resize(static_cast<std::size_t>(s.out_w) * col_len);
  filter_rows(which, t_in.data(), col_len, static_cast<int>(col_len), th.start.data(), th.count.data(), kh.data(),
              th.ksize, 0, s.out_w, t_mid.data(), col_len, acc.data());
  const std::size_t mid_stride = static_cast<std::size_t>(s.out_w) * C;
  mid.resize(static_cast<std::size_t>(R) * mid_stride);
  transpose_pixels(C, t_mid.data(), col_len, s.out_w, R, mid.data(), mid_stride);

  filter_rows(which, mid.data(), mid_stride, static_cast<int>(mid_stride), tv.start.data(), tv.count.data(), kv.data(),
              tv.ksize, row_first, s.out_h, out.pixels.data(), mid_stride, acc.data());
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
  if (s.mirror) flip_horizontal(out);
}

// In this file for its -O3 and AVX2 clone: GCC vectorises the stride-3 loads with shuffles.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx2", "default")))
#endif
void planes_from_rgb(const std::uint8_t* __restrict src, std::size_t pixels, std::uint8_t* __restrict r,
                     std::uint8_t* __restrict g, std::uint8_t* __restrict b) {
  for (std::size_t p = 0; p < pixels; ++p) {
    r[p] = src[3 * p];
    g[p] = src[3 * p + 1];
    b[p] = src[3 * p + 2];
  }
}

}  // namespace frugal::detail

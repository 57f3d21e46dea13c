// Resampling on views, so crops need no copy. PIL's ImagingResample algorithm (bilinear filter,
// support widened by the scale when downscaling, horizontal pass then vertical pass, 8-bit
// intermediate), computed only for a window of the output.
#pragma once

#include <cstddef>
#include <cstdint>

#include "frugal/image/image.h"

namespace frugal::detail {

struct ImageView {
  const std::uint8_t* data = nullptr;
  int width = 0, height = 0, channels = 0;
  std::size_t stride = 0;  // bytes per row
  const std::uint8_t* row(int y) const { return data + static_cast<std::size_t>(y) * stride; }
};

ImageView view_of(const Image& img);
ImageView crop_view(const Image& img, int x, int y, int w, int h);

// The full output is full_w x full_h from the box [x0, x1) x [y0, y1) of `in` (edges clamp at the
// view's borders); `out` receives its window (ox, oy, out_w, out_h).
struct ResizeSpec {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  int full_w = 0, full_h = 0;
  int ox = 0, oy = 0, out_w = 0, out_h = 0;
  bool mirror = false;  // write the window flipped left-right (a horizontal flip for free)
};

// Which row filter resize_window runs: the fastest this CPU has (AVX2 on x86-64) or the portable
// loop. Both compute the same integers; tests hold them to identical pixels.
enum class RowFilter { best, portable };

void resize_window(const ImageView& in, const ResizeSpec& spec, Image& out, RowFilter filter = RowFilter::best);
bool has_simd_row_filter();  // whether RowFilter::best differs from the portable loop on this CPU
void resize_window_reference(const ImageView& in, const ResizeSpec& spec, Image& out);

// Interleaved RGB -> three planes.
void planes_from_rgb(const std::uint8_t* src, std::size_t pixels, std::uint8_t* r, std::uint8_t* g, std::uint8_t* b);

}  // namespace frugal::detail

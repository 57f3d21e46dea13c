// EXIF orientations on pixels and on boxes. Stored pixel (x, y) of a W x H image is displayed at:
//   1 (x, y)   2 (W-1-x, y)   3 (W-1-x, H-1-y)   4 (x, H-1-y)                 W x H
//   5 (y, x)   6 (H-1-y, x)   7 (H-1-y, W-1-x)   8 (y, W-1-x)                 H x W
// which are PIL's FLIP_LEFT_RIGHT, ROTATE_180, FLIP_TOP_BOTTOM, TRANSPOSE, ROTATE_270 (90
// clockwise), TRANSVERSE and ROTATE_90, the transposes exif_transpose picks.
#include <algorithm>
#include <cstring>

#include "frugal/image/image.h"
#include "image/codecs.h"

namespace frugal {

void apply_orientation(const Image& in, int o, Image& out) {
  if (o < 2 || o > 8) {
    out.resize(in.width, in.height, in.channels);
    std::memcpy(out.pixels.data(), in.pixels.data(), in.pixels.size());
    return;
  }
  const int W = in.width, H = in.height, C = in.channels;
  const bool swap = detail::swaps_sides(o);
  out.resize(swap ? H : W, swap ? W : H, C);
  const std::ptrdiff_t stride = static_cast<std::ptrdiff_t>(W) * C;
  if (!swap) {
    const bool mirror = o == 2 || o == 3, flip = o == 3 || o == 4;
    for (int y = 0; y < H; ++y) {
      const std::uint8_t* src = in.row(flip ? H - 1 - y : y);
      std::uint8_t* dst = out.row(y);
      if (!mirror) {
        std::memcpy(dst, src, static_cast<std::size_t>(stride));
        continue;
      }
      for (int x = 0; x < W; ++x)
        std::memcpy(dst + static_cast<std::ptrdiff_t>(x) * C, src + static_cast<std::ptrdiff_t>(W - 1 - x) * C, C);
    }
    return;
  }
  // Display (X, Y) takes stored x = (o 5, 6: Y; 7, 8: W-1-Y) and y = (o 5, 8: X; 6, 7: H-1-X).
  // In tiles, so that both the rows read and the rows written stay in cache.
  const bool x_from_end = o == 7 || o == 8, y_from_end = o == 6 || o == 7;
  constexpr int kTile = 32;
  const int OW = H, OH = W;
  for (int Y0 = 0; Y0 < OH; Y0 += kTile)
    for (int X0 = 0; X0 < OW; X0 += kTile)
      for (int Y = Y0; Y < std::min(OH, Y0 + kTile); ++Y) {
        const int x = x_from_end ? W - 1 - Y : Y;
        std::uint8_t* dst = out.row(Y) + static_cast<std::ptrdiff_t>(X0) * C;
        for (int X = X0; X < std::min(OW, X0 + kTile); ++X, dst += C) {
          const int y = y_from_end ? H - 1 - X : X;
          const std::uint8_t* src =
              in.pixels.data() + static_cast<std::ptrdiff_t>(y) * stride + static_cast<std::ptrdiff_t>(x) * C;
          if (C == 1)
            dst[0] = src[0];
          else
            std::memcpy(dst, src, C);
        }
      }
}

namespace detail {

FloatBox stored_box(const FloatBox& d, int o, double W, double H) {
  switch (o) {
    case 2:
      return {W - d.x1, d.y0, W - d.x0, d.y1};
    case 3:
      return {W - d.x1, H - d.y1, W - d.x0, H - d.y0};
    case 4:
      return {d.x0, H - d.y1, d.x1, H - d.y0};
    case 5:
      return {d.y0, d.x0, d.y1, d.x1};
    case 6:
      return {d.y0, H - d.x1, d.y1, H - d.x0};
    case 7:
      return {W - d.y1, H - d.x1, W - d.y0, H - d.x0};
    case 8:
      return {W - d.y1, d.x0, W - d.y0, d.x1};
    default:
      return d;
  }
}

FloatBox display_box(const FloatBox& s, int o, double W, double H) {
  switch (o) {
    case 2:
      return {W - s.x1, s.y0, W - s.x0, s.y1};
    case 3:
      return {W - s.x1, H - s.y1, W - s.x0, H - s.y0};
    case 4:
      return {s.x0, H - s.y1, s.x1, H - s.y0};
    case 5:
      return {s.y0, s.x0, s.y1, s.x1};
    case 6:
      return {H - s.y1, s.x0, H - s.y0, s.x1};
    case 7:
      return {H - s.y1, W - s.x1, H - s.y0, W - s.x0};
    case 8:
      return {s.y0, W - s.x1, s.y1, W - s.x0};
    default:
      return s;
  }
}

}  // namespace detail
}  // namespace frugal

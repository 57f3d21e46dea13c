// Any bytes through the EXIF orientation reader, as a whole file (JPEG, PNG, WebP or TIFF by its
// magic) and as a bare TIFF structure: it must return an orientation in range, read nothing
// outside the input (ASan) and never throw. The orientation found then turns a small image and a
// box: every pixel must land inside, and the box must come back where it was.
#include <cstddef>
#include <cstdint>
#include <span>

#include "frugal/image/image.h"
#include "image/codecs.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::uint8_t> bytes(data, size);
  const int o = frugal::exif_orientation(bytes);
  if (o < 1 || o > 8) __builtin_trap();
  const int t = frugal::detail::orientation_in_tiff(bytes);
  if (t < 0 || t > 8) __builtin_trap();
  const int w = 1 + (size ? data[0] % 7 : 0), h = 1 + (size > 1 ? data[1] % 5 : 0);
  frugal::Image in, out;
  in.resize(w, h, 3);
  for (std::size_t i = 0; i < in.pixels.size(); ++i) in.pixels[i] = static_cast<std::uint8_t>(i);
  frugal::apply_orientation(in, o, out);
  const bool swap = frugal::detail::swaps_sides(o);
  if (out.width != (swap ? h : w) || out.height != (swap ? w : h) || out.pixels.size() != in.pixels.size())
    __builtin_trap();
  const frugal::detail::FloatBox box{0.5, 0.25, static_cast<double>(out.width), static_cast<double>(out.height) - 0.25};
  const frugal::detail::FloatBox s = frugal::detail::stored_box(box, o, w, h);
  if (s.x0 < 0 || s.y0 < 0 || s.x1 > w || s.y1 > h || s.x0 > s.x1 || s.y0 > s.y1) __builtin_trap();
  const frugal::detail::FloatBox back = frugal::detail::display_box(s, o, w, h);
  if (back.x0 != box.x0 || back.y0 != box.y0 || back.x1 != box.x1 || back.y1 != box.y1) __builtin_trap();
  return 0;
}

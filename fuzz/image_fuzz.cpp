// Any bytes through the decoders (JPEG, PNG, WebP, GIF, BMP, TIFF: the seeds hold each) and the
// loader's decode+transform step: they must either produce an image of the promised shape or
// throw frugal::Error, never crash or over-allocate (the pixel limit is kept small so a forged
// header cannot ask for gigabytes). The region decoder also runs with libjpeg's own entropy
// decoder: both must end the same way, with the same pixels; PNGs also go through the reduced
// (row by row) decoder, WebPs through the cropped and scaled one. EXIF orientation is applied or
// ignored as the input's last byte says.
#include <cstddef>
#include <cstdint>
#include <span>

#include "frugal/util/error.h"
#include "frugal/image/image.h"
#include "image/codecs.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::uint8_t> bytes(data, size);
  const std::uint64_t max_pixels = 4u << 20;
  std::uint8_t knob = size ? data[size - 1] : 0;  // varies the options from the input itself
  try {
    frugal::DecodeOptions o;
    o.max_pixels = max_pixels;
    o.channels = (knob & 3) == 1 ? 1 : (knob & 3) == 2 ? 3 : 0;
    o.min_width = o.min_height = (knob & 4) ? 16 : 0;
    o.exif = (knob & 64) ? frugal::ExifOrientation::ignore : frugal::ExifOrientation::apply;
    frugal::Image img = frugal::decode_image(bytes, o, "fuzz");
    if (img.pixels.size() != static_cast<std::size_t>(img.width) * img.height * img.channels) __builtin_trap();
  } catch (const frugal::Error&) {}
  try {
    // Cropped + scaled JPEG decoding, on a box taken from the input's last bytes.
    frugal::ImageInfo info = frugal::read_image_info(bytes, "fuzz", max_pixels, frugal::ExifOrientation::ignore);
    if (info.format == frugal::ImageFormat::jpeg && size >= 4) {
      frugal::CropBox b;
      b.x = data[size - 2] % info.width;
      b.y = data[size - 3] % info.height;
      b.width = 1 + data[size - 4] % (info.width - b.x);
      b.height = 1 + (data[size - 2] ^ data[size - 4]) % (info.height - b.y);
      frugal::DecodeOptions o;
      o.max_pixels = max_pixels;
      o.channels = (knob & 3) == 1 ? 1 : (knob & 3) == 2 ? 3 : 0;
      o.min_width = o.min_height = (knob & 32) ? 8 : 0;
      frugal::Image region, reference;
      bool fast_ok = false, reference_ok = false;
      frugal::JpegRegion r;
      try {
        r = frugal::decode_jpeg_region(bytes, b, o, "fuzz", region);
        fast_ok = true;
      } catch (const frugal::Error&) {}
      try {
        frugal::detail::jpeg_decode_region(bytes, b, o, "fuzz", reference, frugal::detail::EntropyDecoder::libjpeg);
        reference_ok = true;
      } catch (const frugal::Error&) {}
      if (fast_ok != reference_ok || (fast_ok && region.pixels != reference.pixels)) __builtin_trap();
      if (fast_ok && (r.x0 < 0 || r.y0 < 0 || r.x1 > region.width + 1e-9 || r.y1 > region.height + 1e-9 ||
                      region.pixels.size() != static_cast<std::size_t>(region.width) * region.height * region.channels))
        __builtin_trap();
    }
  } catch (const frugal::Error&) {}
  // Row-by-row reduced PNG decoding (png_decode_reduced) and WebP decoded into a crop scaled down
  // by libwebp (webp_decode_reduced), on a box and factor from the input.
  try {
    frugal::ImageInfo info = frugal::read_image_info(bytes, "fuzz", max_pixels, frugal::ExifOrientation::ignore);
    const bool png = info.format == frugal::ImageFormat::png, webp = info.format == frugal::ImageFormat::webp;
    if ((png || webp) && size >= 5) {
      frugal::CropBox b;
      b.x = data[size - 2] % info.width;
      b.y = data[size - 3] % info.height;
      b.width = 1 + data[size - 4] % (info.width - b.x);
      b.height = 1 + (data[size - 2] ^ data[size - 4]) % (info.height - b.y);
      const int factor = 1 + data[size - 5] % 8;
      frugal::DecodeOptions o;
      o.max_pixels = max_pixels;
      o.channels = (knob & 3) == 1 ? 1 : (knob & 3) == 2 ? 3 : 0;
      frugal::Image region;
      double x0, y0, x1, y1, slack;
      if (png) {
        const auto r = frugal::detail::png_decode_reduced(bytes, b, factor, o, "fuzz", region);
        x0 = r.x0, y0 = r.y0, x1 = r.x1, y1 = r.y1, slack = 1e-9;
      } else {
        const auto r = frugal::detail::webp_decode_reduced(bytes, b, factor, o, "fuzz", region);
        x0 = r.x0, y0 = r.y0, x1 = r.x1, y1 = r.y1, slack = 0;
      }
      if (x0 < 0 || y0 < 0 || x1 > region.width + slack || y1 > region.height + slack ||
          region.pixels.size() != static_cast<std::size_t>(region.width) * region.height * region.channels)
        __builtin_trap();
    }
  } catch (const frugal::Error&) {}
  try {
    frugal::TransformOptions t;
    t.image_size = 32;
    t.train = knob & 8;
    t.small = knob & 16;
    t.exif = (knob & 64) ? frugal::ExifOrientation::ignore : frugal::ExifOrientation::apply;
    frugal::Image scratch, out;
    frugal::decode_transform(bytes, t, max_pixels, knob, "fuzz", scratch, out);
    if (out.width != 32 || out.height != 32) __builtin_trap();
  } catch (const frugal::Error&) {}
  return 0;
}

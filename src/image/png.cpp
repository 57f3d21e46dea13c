// PNG through libspng. Decoding: alpha is dropped (not composited), palettes expanded and 16-bit
// samples reduced to their high byte, as PIL's convert("RGB") does; whole, or row by row into the
// reduced blocks of a crop (png_decode_reduced). Encoding: 8-bit gray or RGB.
#include <spng.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "frugal/util/error.h"
#include "image/codecs.h"

namespace frugal::detail {
namespace {

struct CtxDeleter {
  void operator()(spng_ctx* c) const { spng_ctx_free(c); }
};
using Ctx = std::unique_ptr<spng_ctx, CtxDeleter>;

[[noreturn]] void fail_png(int rc, const std::string& where) {
  fail(ErrorKind::invalid, where, "a decodable PNG image", std::string("libspng error: ") + spng_strerror(rc),
       "the file is corrupt; remove or replace it");
}

Ctx open_png(std::span<const std::uint8_t> bytes, const std::string& where, spng_ihdr& ihdr, std::uint64_t max_pixels) {
  Ctx ctx(spng_ctx_new(0));
  if (!ctx) fail(ErrorKind::io, "libspng", "a decoder context", "none (out of memory?)", "");
  // Ancillary chunks are not needed; a small cache limit stops chunk bombs (huge iTXt/zTXt).
  spng_set_chunk_limits(ctx.get(), 1u << 24, 1u << 24);
  int rc = spng_set_png_buffer(ctx.get(), bytes.data(), bytes.size());
  if (rc == 0) rc = spng_get_ihdr(ctx.get(), &ihdr);
  if (rc) fail_png(rc, where);
  check_pixels(static_cast<int>(std::min<std::uint32_t>(ihdr.width, 1u << 30)),
               static_cast<int>(std::min<std::uint32_t>(ihdr.height, 1u << 30)), max_pixels, where);
  return ctx;
}

bool is_gray(const spng_ihdr& ihdr) {
  return ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE || ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE_ALPHA;
}

void decode_to(spng_ctx* ctx, int fmt, std::vector<std::uint8_t>& buf, const std::string& where) {
  std::size_t len = 0;
  int rc = spng_decoded_image_size(ctx, fmt, &len);
  if (rc) fail_png(rc, where);
  buf.resize(len);
  rc = spng_decode_image(ctx, buf.data(), len, fmt, 0);
  if (rc) fail_png(rc, where);
}

}  // namespace

ImageInfo png_info(std::span<const std::uint8_t> bytes, const std::string& where, std::uint64_t max_pixels) {
  spng_ihdr ihdr{};
  Ctx ctx = open_png(bytes, where, ihdr, max_pixels);
  return {ImageFormat::png, static_cast<int>(ihdr.width), static_cast<int>(ihdr.height), is_gray(ihdr) ? 1 : 3};
}

void png_decode(std::span<const std::uint8_t> bytes, const DecodeOptions& options, const std::string& where,
                Image& out) {
  spng_ihdr ihdr{};
  Ctx ctx = open_png(bytes, where, ihdr, options.max_pixels);
  int w = static_cast<int>(ihdr.width), h = static_cast<int>(ihdr.height);
  bool gray = is_gray(ihdr);
  int channels = options.channels ? options.channels : (gray ? 1 : 3);
  std::size_t pixels = static_cast<std::size_t>(w) * h;

  if (channels == 3) {
    out.resize(w, h, 3);
    decode_to(ctx.get(), SPNG_FMT_RGB8, out.pixels, where);
    return;
  }
  if (gray && ihdr.bit_depth <= 8 && ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE) {
    out.resize(w, h, 1);
    decode_to(ctx.get(), SPNG_FMT_G8, out.pixels, where);
    return;
  }
  // Gray+alpha, 16-bit gray and colour to one channel: through RGB (gray replicated, so its first
  // channel is the gray value; colour gets PIL's luma).
  thread_local std::vector<std::uint8_t> rgb;
  decode_to(ctx.get(), SPNG_FMT_RGB8, rgb, where);
  out.resize(w, h, 1);
  const std::uint8_t* in = rgb.data();
  for (std::size_t i = 0; i < pixels; ++i, in += 3)
    out.pixels[i] =
        gray ? in[0] : static_cast<std::uint8_t>((in[0] * 19595 + in[1] * 38470 + in[2] * 7471 + 0x8000) >> 16);
}

namespace {

// A reduced decode's geometry: which source rows and columns it reads, and its output's sides.
struct Reduction {
  ReducedRegion r;
  int ow = 0, oh = 0;                      // the output's sides, in blocks
  int sx0 = 0, sx1 = 0, sy0 = 0, sy1 = 0;  // source columns and rows kept
  int C = 0, in_c = 0;                     // channels wanted and read
  bool gray = false;                       // the source is gray
};

void check_reduction(const CropBox& box, int factor, int w, int h) {
  if (factor < 1 || box.width < 1 || box.height < 1 || box.x < 0 || box.y < 0 || box.x > w - box.width ||
      box.y > h - box.height)
    fail(ErrorKind::usage, "png_decode_reduced",
         "a box inside the " + std::to_string(w) + "x" + std::to_string(h) + " image and a factor of at least 1",
         "a box at " + std::to_string(box.x) + "," + std::to_string(box.y) + " of " + std::to_string(box.width) + "x" +
             std::to_string(box.height) + ", factor " + std::to_string(factor),
         "");
}

// The blocks of factor x factor source pixels that cover `box` in a w x h image.
Reduction blocks_covering(const CropBox& box, int factor, int w, int h) {
  Reduction g;
  ReducedRegion& r = g.r;
  r.factor = factor;
  r.first_x = box.x / factor;
  r.first_y = box.y / factor;
  const int end_x = (box.x + box.width + factor - 1) / factor, end_y = (box.y + box.height + factor - 1) / factor;
  g.ow = end_x - r.first_x, g.oh = end_y - r.first_y;
  r.x0 = static_cast<double>(box.x) / factor - r.first_x;
  r.y0 = static_cast<double>(box.y) / factor - r.first_y;
  r.x1 = static_cast<double>(box.x + box.width) / factor - r.first_x;
  r.y1 = static_cast<double>(box.y + box.height) / factor - r.first_y;
  g.sx0 = r.first_x * factor, g.sx1 = std::min(w, end_x * factor);
  g.sy0 = r.first_y * factor, g.sy1 = std::min(h, end_y * factor);
  return g;
}

// Sums per block: (oh, ow, C) 32-bit, enough for 255 x factor^2 while factor <= 4096. Every row
// is decoded (one at a time), those of the window summed.
std::vector<std::uint32_t> sum_blocks(spng_ctx* ctx, const spng_ihdr& ihdr, const Reduction& g, int fmt,
                                      const std::string& where) {
  const int C = g.C, in_c = g.in_c, factor = g.r.factor, ow = g.ow;
  std::vector<std::uint32_t> sum(static_cast<std::size_t>(ow) * g.oh * C, 0);
  std::vector<std::uint8_t> row(static_cast<std::size_t>(ihdr.width) * in_c);
  int rc = spng_decode_image(ctx, nullptr, 0, fmt, SPNG_DECODE_PROGRESSIVE);
  if (rc) fail_png(rc, where);
  // Adam7's passes: which columns of a row each one carries.
  static constexpr int kPassX0[7] = {0, 4, 0, 2, 0, 1, 0}, kPassStep[7] = {8, 8, 4, 4, 2, 2, 1};
  const bool interlaced = ihdr.interlace_method != 0;
  for (;;) {
    spng_row_info info{};
    rc = spng_get_row_info(ctx, &info);
    if (rc) break;
    rc = spng_decode_row(ctx, row.data(), row.size());
    if (rc && rc != SPNG_EOI) break;
    const int y = static_cast<int>(info.row_num);
    if (y >= g.sy0 && y < g.sy1) {
      const int x_first = interlaced ? kPassX0[std::clamp(info.pass, 0, 6)] : 0;
      const int step = interlaced ? kPassStep[std::clamp(info.pass, 0, 6)] : 1;
      int x = x_first + (g.sx0 > x_first ? (g.sx0 - x_first + step - 1) / step * step : 0);
      std::uint32_t* block_row = sum.data() + static_cast<std::size_t>(y / factor - g.r.first_y) * ow * C;
      for (; x < g.sx1; x += step) {
        const std::uint8_t* px = row.data() + static_cast<std::size_t>(x) * in_c;
        std::uint32_t* acc = block_row + static_cast<std::size_t>(x / factor - g.r.first_x) * C;
        if (C == in_c) {
          for (int c = 0; c < C; ++c) acc[c] += px[c];
        } else if (C == 3) {  // gray read, RGB wanted
          acc[0] += px[0], acc[1] += px[0], acc[2] += px[0];
        } else {  // RGB read (or gray through RGB), gray wanted: PIL's luma, as png_decode
          acc[0] += g.gray ? px[0] : (px[0] * 19595 + px[1] * 38470 + px[2] * 7471 + 0x8000) >> 16;
        }
      }
    }
    if (rc == SPNG_EOI) break;
  }
  if (rc != SPNG_EOI) fail_png(rc, where);
  return sum;
}

// Each block's mean, rounded; blocks at the image's right and bottom edges hold fewer pixels.
void average_blocks(const std::vector<std::uint32_t>& sum, const Reduction& g, int w, int h, Image& out) {
  const int C = g.C, factor = g.r.factor, ow = g.ow, oh = g.oh;
  const ReducedRegion& r = g.r;
  out.resize(ow, oh, C);
  for (int j = 0; j < oh; ++j) {
    const int rows = std::min(h, (r.first_y + j + 1) * factor) - (r.first_y + j) * factor;
    for (int i = 0; i < ow; ++i) {
      const int cols = std::min(w, (r.first_x + i + 1) * factor) - (r.first_x + i) * factor;
      const std::uint32_t n = static_cast<std::uint32_t>(rows * cols);
      const std::uint32_t* acc = sum.data() + (static_cast<std::size_t>(j) * ow + i) * C;
      std::uint8_t* dst = out.row(j) + static_cast<std::size_t>(i) * C;
      for (int c = 0; c < C; ++c) dst[c] = static_cast<std::uint8_t>((acc[c] + n / 2) / n);
    }
  }
}

}  // namespace

ReducedRegion png_decode_reduced(std::span<const std::uint8_t> bytes, const CropBox& box, int factor,
                                 const DecodeOptions& options, const std::string& where, Image& out) {
  spng_ihdr ihdr{};
  Ctx ctx = open_png(bytes, where, ihdr, options.max_pixels);
  const int w = static_cast<int>(ihdr.width), h = static_cast<int>(ihdr.height);
  check_reduction(box, factor, w, h);
  Reduction g = blocks_covering(box, factor, w, h);
  g.gray = is_gray(ihdr);
  g.C = options.channels ? options.channels : (g.gray ? 1 : 3);
  // Gray of 8 bits or less is read as gray; everything else as RGB (palettes expanded, alpha
  // dropped, 16 bits to their high byte), made gray per pixel where one channel is wanted.
  const bool read_gray = g.gray && ihdr.bit_depth <= 8 && ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE;
  g.in_c = read_gray ? 1 : 3;
  if (factor > 4096)
    fail(ErrorKind::usage, "png_decode_reduced", "a factor of at most 4096", std::to_string(factor), "");
  const std::vector<std::uint32_t> sum = sum_blocks(ctx.get(), ihdr, g, read_gray ? SPNG_FMT_G8 : SPNG_FMT_RGB8, where);
  average_blocks(sum, g, w, h, out);
  return g.r;
}

}  // namespace frugal::detail

namespace frugal {

std::vector<std::uint8_t> encode_png(std::span<const std::uint8_t> pixels, std::uint32_t width, std::uint32_t height,
                                     int channels) {
  if (channels != 1 && channels != 3)
    fail(ErrorKind::usage, "encode_png", "1 (gray) or 3 (RGB) channels", std::to_string(channels), "");
  const std::uint64_t want = checked_mul(checked_mul(std::uint64_t{width}, std::uint64_t{height}, "a PNG image"),
                                         static_cast<std::uint64_t>(channels), "a PNG image");
  if (pixels.size() != want)
    fail(ErrorKind::usage, "encode_png",
         std::to_string(want) + " bytes for " + std::to_string(width) + "x" + std::to_string(height) + "x" +
             std::to_string(channels),
         std::to_string(pixels.size()), "");
  detail::Ctx ctx(spng_ctx_new(SPNG_CTX_ENCODER));
  if (!ctx) throw Error(ErrorKind::io, "libspng: cannot create an encoder (out of memory?)");
  spng_set_option(ctx.get(), SPNG_ENCODE_TO_BUFFER, 1);
  spng_ihdr ihdr{};
  ihdr.width = width;
  ihdr.height = height;
  ihdr.bit_depth = 8;
  ihdr.color_type = channels == 1 ? SPNG_COLOR_TYPE_GRAYSCALE : SPNG_COLOR_TYPE_TRUECOLOR;
  int err = spng_set_ihdr(ctx.get(), &ihdr);
  if (!err) err = spng_encode_image(ctx.get(), pixels.data(), pixels.size(), SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
  std::size_t len = 0;
  void* buf = err ? nullptr : spng_get_png_buffer(ctx.get(), &len, &err);
  if (!buf || err) throw Error(ErrorKind::io, std::string("libspng: PNG encoding failed: ") + spng_strerror(err));
  std::vector<std::uint8_t> out(static_cast<std::uint8_t*>(buf), static_cast<std::uint8_t*>(buf) + len);
  std::free(buf);
  return out;
}

}  // namespace frugal

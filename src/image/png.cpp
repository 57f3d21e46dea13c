// PNG through libspng. Decoding: alpha is dropped (not composited), palettes expanded and 16-bit
// samples reduced to their high byte, as PIL's convert("RGB") does. Encoding: 8-bit gray or RGB.
#include <spng.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "frugal/error.h"
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

Ctx open_png(std::span<const std::uint8_t> bytes, const std::string& where, spng_ihdr& ihdr,
             std::uint64_t max_pixels) {
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
    out.pixels[i] = gray ? in[0]
                         : static_cast<std::uint8_t>((in[0] * 19595 + in[1] * 38470 + in[2] * 7471 + 0x8000) >> 16);
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
    fail(ErrorKind::usage, "encode_png", std::to_string(want) + " bytes for " + std::to_string(width) + "x" +
         std::to_string(height) + "x" + std::to_string(channels), std::to_string(pixels.size()), "");
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

// WebP through libwebp: lossy, lossless, with or without alpha (dropped, not composited, as PIL's
// convert("RGB") drops it). An animation gives its first frame as libwebpdemux's WebPAnimDecoder
// (PIL's reader) composes it: the frame on a transparent black canvas of the file's canvas size.
#include <webp/decode.h>
#include <webp/demux.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "frugal/util/error.h"
#include "image/codecs.h"

namespace frugal::detail {
namespace {

const char* status_text(VP8StatusCode s) {
  switch (s) {
    case VP8_STATUS_OK:
      return "ok";
    case VP8_STATUS_OUT_OF_MEMORY:
      return "out of memory";
    case VP8_STATUS_INVALID_PARAM:
      return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR:
      return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE:
      return "unsupported feature";
    case VP8_STATUS_SUSPENDED:
      return "suspended";
    case VP8_STATUS_USER_ABORT:
      return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA:
      return "not enough data (the file is cut short)";
  }
  return "unknown error";
}

[[noreturn]] void fail_webp(const std::string& where, const std::string& why) {
  fail(ErrorKind::invalid, where, "a decodable WebP image", "libwebp: " + why,
       "the file is corrupt; remove or replace it");
}

WebPBitstreamFeatures features_of(std::span<const std::uint8_t> bytes, const std::string& where,
                                  std::uint64_t max_pixels) {
  WebPBitstreamFeatures f;
  const VP8StatusCode s = WebPGetFeatures(bytes.data(), bytes.size(), &f);
  if (s != VP8_STATUS_OK) fail_webp(where, status_text(s));
  check_pixels(f.width, f.height, max_pixels, where);  // the canvas of an animation
  return f;
}

struct AnimDeleter {
  void operator()(WebPAnimDecoder* d) const { WebPAnimDecoderDelete(d); }
};

// The first frame of an animation, as RGBA on its canvas (w x h, the size features_of checked).
const std::uint8_t* first_frame(std::span<const std::uint8_t> bytes, int w, int h, const std::string& where,
                                std::unique_ptr<WebPAnimDecoder, AnimDeleter>& dec) {
  WebPAnimDecoderOptions o;
  if (!WebPAnimDecoderOptionsInit(&o)) fail(ErrorKind::io, "libwebp", "a matching library version", "another", "");
  o.color_mode = MODE_RGBA;
  o.use_threads = 0;
  const WebPData data{bytes.data(), bytes.size()};
  dec.reset(WebPAnimDecoderNew(&data, &o));
  if (!dec) fail_webp(where, "the animation does not parse");
  WebPAnimInfo info;
  if (!WebPAnimDecoderGetInfo(dec.get(), &info) || static_cast<int>(info.canvas_width) != w ||
      static_cast<int>(info.canvas_height) != h)
    fail_webp(where, "its canvas is not the size its header says");
  std::uint8_t* frame = nullptr;
  int timestamp = 0;
  if (!WebPAnimDecoderGetNext(dec.get(), &frame, &timestamp) || !frame)
    fail_webp(where, "its first frame does not decode");
  return frame;
}

}  // namespace

ImageInfo webp_info(std::span<const std::uint8_t> bytes, const std::string& where, std::uint64_t max_pixels) {
  const WebPBitstreamFeatures f = features_of(bytes, where, max_pixels);
  return {ImageFormat::webp, f.width, f.height, 3};
}

void webp_decode(std::span<const std::uint8_t> bytes, const DecodeOptions& options, const std::string& where,
                 Image& out) {
  const WebPBitstreamFeatures f = features_of(bytes, where, options.max_pixels);
  const int w = f.width, h = f.height;
  const int channels = options.channels ? options.channels : 3;
  const std::size_t pixels = static_cast<std::size_t>(w) * h;
  if (f.has_animation) {
    std::unique_ptr<WebPAnimDecoder, AnimDeleter> dec;
    const std::uint8_t* rgba = first_frame(bytes, w, h, where, dec);
    out.resize(w, h, channels);
    std::uint8_t* dst = out.pixels.data();
    for (std::size_t i = 0; i < pixels; ++i, rgba += 4) {
      if (channels == 3) {
        dst[3 * i] = rgba[0], dst[3 * i + 1] = rgba[1], dst[3 * i + 2] = rgba[2];
      } else {
        rgb_to_luma(rgba, 1, dst + i);
      }
    }
    return;
  }
  thread_local std::vector<std::uint8_t> rgb;
  std::uint8_t* target;
  if (channels == 3) {
    out.resize(w, h, 3);
    target = out.pixels.data();
  } else {
    rgb.resize(pixels * 3);
    target = rgb.data();
  }
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) fail(ErrorKind::io, "libwebp", "a matching library version", "another", "");
  config.output.colorspace = MODE_RGB;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = target;
  config.output.u.RGBA.stride = w * 3;
  config.output.u.RGBA.size = pixels * 3;
  const VP8StatusCode s = WebPDecode(bytes.data(), bytes.size(), &config);
  WebPFreeDecBuffer(&config.output);  // external memory: frees only what libwebp kept
  if (s != VP8_STATUS_OK) fail_webp(where, status_text(s));
  if (channels == 1) {
    out.resize(w, h, 1);
    rgb_to_luma(rgb.data(), pixels, out.pixels.data());
  }
}

FloatBox webp_decode_reduced(std::span<const std::uint8_t> bytes, const CropBox& box, int factor,
                             const DecodeOptions& options, const std::string& where, Image& out) {
  const WebPBitstreamFeatures f = features_of(bytes, where, options.max_pixels);
  const int w = f.width, h = f.height;
  if (factor < 1 || box.width < 1 || box.height < 1 || box.x < 0 || box.y < 0 || box.x > w - box.width ||
      box.y > h - box.height)
    fail(ErrorKind::usage, "webp_decode_reduced",
         "a box inside the " + std::to_string(w) + "x" + std::to_string(h) + " image and a factor of at least 1",
         "a box at " + std::to_string(box.x) + "," + std::to_string(box.y) + " of " + std::to_string(box.width) + "x" +
             std::to_string(box.height) + ", factor " + std::to_string(factor),
         "");
  if (f.has_animation) {
    webp_decode(bytes, options, where, out);
    return {double(box.x), double(box.y), double(box.x + box.width), double(box.y + box.height)};
  }
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) fail(ErrorKind::io, "libwebp", "a matching library version", "another", "");
  // libwebp starts a crop on even coordinates (its chroma is subsampled): ask for that start.
  const int cx = box.x & ~1, cy = box.y & ~1;
  const int cw = box.x + box.width - cx, ch = box.y + box.height - cy;
  const int sw = std::max(1, (cw + factor - 1) / factor), sh = std::max(1, (ch + factor - 1) / factor);
  config.options.use_cropping = 1;
  config.options.crop_left = cx, config.options.crop_top = cy;
  config.options.crop_width = cw, config.options.crop_height = ch;
  config.options.use_scaling = 1;
  config.options.scaled_width = sw, config.options.scaled_height = sh;
  const int channels = options.channels ? options.channels : 3;
  const std::size_t pixels = static_cast<std::size_t>(sw) * sh;
  thread_local std::vector<std::uint8_t> rgb;
  std::uint8_t* target;
  if (channels == 3) {
    out.resize(sw, sh, 3);
    target = out.pixels.data();
  } else {
    rgb.resize(pixels * 3);
    target = rgb.data();
  }
  config.output.colorspace = MODE_RGB;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = target;
  config.output.u.RGBA.stride = sw * 3;
  config.output.u.RGBA.size = pixels * 3;
  const VP8StatusCode s = WebPDecode(bytes.data(), bytes.size(), &config);
  WebPFreeDecBuffer(&config.output);
  if (s != VP8_STATUS_OK) fail_webp(where, status_text(s));
  if (channels == 1) {
    out.resize(sw, sh, 1);
    rgb_to_luma(rgb.data(), pixels, out.pixels.data());
  }
  // Multiplied before divided: the box's far edge is then exactly the output's (cw * sw / cw == sw).
  auto sx = [&](int x) { return static_cast<double>(x - cx) * sw / cw; };
  auto sy = [&](int y) { return static_cast<double>(y - cy) * sh / ch; };
  return {sx(box.x), sy(box.y), sx(box.x + box.width), sy(box.y + box.height)};
}

}  // namespace frugal::detail

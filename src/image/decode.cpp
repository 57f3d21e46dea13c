#include <cstring>
#include <string>

#include "frugal/error.h"
#include "frugal/image.h"
#include "image/codecs.h"

namespace frugal {

ImageFormat sniff_format(std::span<const std::uint8_t> b) {
  static const std::uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return ImageFormat::jpeg;
  if (b.size() >= 8 && std::memcmp(b.data(), png_sig, 8) == 0) return ImageFormat::png;
  if (b.size() >= 6 && b[0] == 0x93 && std::memcmp(b.data() + 1, "NUMPY", 5) == 0) return ImageFormat::npy;
  return ImageFormat::unknown;
}

const char* format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::jpeg: return "JPEG";
    case ImageFormat::png: return "PNG";
    case ImageFormat::npy: return "NPY";
    default: return "unknown";
  }
}

namespace detail {
void check_pixels(int width, int height, std::uint64_t max_pixels, const std::string& where) {
  if (width <= 0 || height <= 0)
    fail(ErrorKind::invalid, where, "an image with a positive size",
         std::to_string(width) + "x" + std::to_string(height), "the file is corrupt; remove or replace it");
  std::uint64_t n = static_cast<std::uint64_t>(width) * static_cast<std::uint64_t>(height);
  if (n > max_pixels)
    fail(ErrorKind::invalid, where, "at most " + std::to_string(max_pixels) + " pixels",
         std::to_string(width) + "x" + std::to_string(height) + " = " + std::to_string(n) + " pixels",
         "raise {max_pixels} if the image is genuine (a decompression bomb otherwise)");
}
}  // namespace detail

namespace {
[[noreturn]] void fail_unknown(std::span<const std::uint8_t> bytes, const std::string& where) {
  std::string found = bytes.empty() ? std::string("an empty file") : "data starting with 0x";
  if (!bytes.empty())
    for (std::size_t i = 0; i < std::min<std::size_t>(4, bytes.size()); ++i) {
      static const char* hex = "0123456789abcdef";
      found += hex[bytes[i] >> 4];
      found += hex[bytes[i] & 15];
    }
  fail(ErrorKind::invalid, where, "a JPEG or PNG image", found, "remove the file or convert it to JPEG/PNG");
}
}  // namespace

ImageInfo read_image_info(std::span<const std::uint8_t> bytes, const std::string& where, std::uint64_t max_pixels) {
  switch (sniff_format(bytes)) {
    case ImageFormat::jpeg: return detail::jpeg_info(bytes, where, max_pixels);
    case ImageFormat::png: return detail::png_info(bytes, where, max_pixels);
    default: fail_unknown(bytes, where);
  }
}

void decode_image(std::span<const std::uint8_t> bytes, const DecodeOptions& options, const std::string& where,
                  Image& out) {
  if (options.channels != 0 && options.channels != 1 && options.channels != 3)
    fail(ErrorKind::usage, "decode", "1 or 3 channels", std::to_string(options.channels), "");
  switch (sniff_format(bytes)) {
    case ImageFormat::jpeg: return detail::jpeg_decode(bytes, options, where, out);
    case ImageFormat::png: return detail::png_decode(bytes, options, where, out);
    default: fail_unknown(bytes, where);
  }
}

JpegRegion decode_jpeg_region(std::span<const std::uint8_t> bytes, const CropBox& box, const DecodeOptions& options,
                              const std::string& where, Image& out) {
  if (options.channels != 0 && options.channels != 1 && options.channels != 3)
    fail(ErrorKind::usage, "decode", "1 or 3 channels", std::to_string(options.channels), "");
  if (sniff_format(bytes) != ImageFormat::jpeg) fail_unknown(bytes, where);
  return detail::jpeg_decode_region(bytes, box, options, where, out);
}

Image decode_image(std::span<const std::uint8_t> bytes, const DecodeOptions& options, const std::string& where) {
  Image img;
  decode_image(bytes, options, where, img);
  return img;
}

void convert_channels(const Image& in, int channels, Image& out) {
  out.resize(in.width, in.height, channels);
  std::size_t n = static_cast<std::size_t>(in.width) * in.height;
  const std::uint8_t* p = in.pixels.data();
  std::uint8_t* q = out.pixels.data();
  if (in.channels == channels) {
    std::memcpy(q, p, n * channels);
  } else if (in.channels == 1 && channels == 3) {
    for (std::size_t i = 0; i < n; ++i) q[3 * i] = q[3 * i + 1] = q[3 * i + 2] = p[i];
  } else if (in.channels == 3 && channels == 1) {
    for (std::size_t i = 0; i < n; ++i, p += 3)
      q[i] = static_cast<std::uint8_t>((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16);
  } else {
    fail(ErrorKind::unsupported, "convert_channels", "1 or 3 channels",
         std::to_string(in.channels) + " -> " + std::to_string(channels), "");
  }
}

}  // namespace frugal

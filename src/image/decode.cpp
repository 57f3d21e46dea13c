// The format by its magic bytes, the dispatch to each decoder, and the EXIF orientation applied
// after any of them.
#include <algorithm>
#include <cstring>
#include <string>

#include "frugal/util/error.h"
#include "frugal/image/image.h"
#include "image/codecs.h"

namespace frugal {

namespace {

bool starts_with(std::span<const std::uint8_t> b, std::size_t at, const char* magic, std::size_t n) {
  return b.size() >= at + n && std::memcmp(b.data() + at, magic, n) == 0;
}

std::uint32_t be32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 | p[3];
}

// ISO base media files (HEIF, AVIF, but also MP4 video) open with an 'ftyp' box: its major brand,
// then compatible brands. A HEIF that holds AV1 is AVIF, whatever its major brand ('mif1').
ImageFormat sniff_iso_bmff(std::span<const std::uint8_t> b) {
  if (!starts_with(b, 4, "ftyp", 4) || b.size() < 12) return ImageFormat::unknown;
  const std::size_t box = std::min<std::size_t>(be32(b.data()), b.size());
  auto brand_is = [&](std::size_t at, const char* name) { return at + 4 <= box && starts_with(b, at, name, 4); };
  bool heif = false;
  for (std::size_t at = 8; at + 4 <= box; at += at == 8 ? 8 : 4) {  // major brand, minor version, compatible brands
    if (brand_is(at, "avif") || brand_is(at, "avis")) return ImageFormat::avif;
    for (const char* h : {"heic", "heix", "hevc", "hevx", "heim", "heis", "hevm", "hevs", "mif1", "msf1"})
      if (brand_is(at, h)) heif = true;
  }
  return heif ? ImageFormat::heic : ImageFormat::unknown;
}

// The DIB header sizes that BMP files use (PIL's list): two bytes "BM" alone are too common at
// the start of a text file to be called a BMP.
bool bmp_header_size(std::span<const std::uint8_t> b) {
  if (b.size() < 18 || b[0] != 'B' || b[1] != 'M') return false;
  const std::uint32_t n = b[14] | b[15] << 8 | b[16] << 16 | static_cast<std::uint32_t>(b[17]) << 24;
  return n == 12 || n == 40 || n == 52 || n == 56 || n == 64 || n == 108 || n == 124;
}

std::string lower_extension(const std::string& name) {
  const auto slash = name.find_last_of('/');
  const auto dot = name.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string e = name.substr(dot + 1);
  for (char& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return e;
}

}  // namespace

ImageFormat sniff_format(std::span<const std::uint8_t> b) {
  static const std::uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  static const std::uint8_t jxl_box[12] = {0, 0, 0, 12, 'J', 'X', 'L', ' ', 0x0D, 0x0A, 0x87, 0x0A};
  static const std::uint8_t jp2_box[12] = {0, 0, 0, 12, 'j', 'P', ' ', ' ', 0x0D, 0x0A, 0x87, 0x0A};
  if (b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return ImageFormat::jpeg;
  if (b.size() >= 8 && std::memcmp(b.data(), png_sig, 8) == 0) return ImageFormat::png;
  if (b.size() >= 6 && b[0] == 0x93 && std::memcmp(b.data() + 1, "NUMPY", 5) == 0) return ImageFormat::npy;
  if (starts_with(b, 0, "RIFF", 4) && starts_with(b, 8, "WEBP", 4)) return ImageFormat::webp;
  if (starts_with(b, 0, "GIF87a", 6) || starts_with(b, 0, "GIF89a", 6)) return ImageFormat::gif;
  if (bmp_header_size(b)) return ImageFormat::bmp;
  if (starts_with(b, 0, "II*\0", 4) || starts_with(b, 0, "MM\0*", 4) || starts_with(b, 0, "II+\0", 4) ||
      starts_with(b, 0, "MM\0+", 4))
    return ImageFormat::tiff;
  if (ImageFormat f = sniff_iso_bmff(b); f != ImageFormat::unknown) return f;
  if ((b.size() >= 2 && b[0] == 0xFF && b[1] == 0x0A) || (b.size() >= 12 && std::memcmp(b.data(), jxl_box, 12) == 0))
    return ImageFormat::jpeg_xl;
  if ((b.size() >= 4 && b[0] == 0xFF && b[1] == 0x4F && b[2] == 0xFF && b[3] == 0x51) ||
      (b.size() >= 12 && std::memcmp(b.data(), jp2_box, 12) == 0))
    return ImageFormat::jpeg2000;
  return ImageFormat::unknown;
}

const char* format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::jpeg:
      return "JPEG";
    case ImageFormat::png:
      return "PNG";
    case ImageFormat::npy:
      return "NPY";
    case ImageFormat::webp:
      return "WebP";
    case ImageFormat::gif:
      return "GIF";
    case ImageFormat::bmp:
      return "BMP";
    case ImageFormat::tiff:
      return "TIFF";
    case ImageFormat::heic:
      return "HEIC";
    case ImageFormat::avif:
      return "AVIF";
    case ImageFormat::jpeg_xl:
      return "JPEG XL";
    case ImageFormat::jpeg2000:
      return "JPEG 2000";
    default:
      return "unknown";
  }
}

ImageFormat format_from_extension(const std::string& name) {
  const std::string e = lower_extension(name);
  if (e == "jpg" || e == "jpeg" || e == "jpe" || e == "jfif") return ImageFormat::jpeg;
  if (e == "png") return ImageFormat::png;
  if (e == "npy") return ImageFormat::npy;
  if (e == "webp") return ImageFormat::webp;
  if (e == "gif") return ImageFormat::gif;
  if (e == "bmp" || e == "dib") return ImageFormat::bmp;
  if (e == "tif" || e == "tiff") return ImageFormat::tiff;
  if (e == "heic" || e == "heif" || e == "hif") return ImageFormat::heic;
  if (e == "avif") return ImageFormat::avif;
  if (e == "jxl") return ImageFormat::jpeg_xl;
  if (e == "jp2" || e == "j2k" || e == "jpf" || e == "jpx" || e == "j2c") return ImageFormat::jpeg2000;
  return ImageFormat::unknown;
}

bool is_decodable(ImageFormat f) {
  switch (f) {
    case ImageFormat::jpeg:
    case ImageFormat::png:
    case ImageFormat::webp:
    case ImageFormat::gif:
    case ImageFormat::bmp:
    case ImageFormat::tiff:
      return true;
    default:
      return false;
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

void set_luma(Palette& palette) { rgb_to_luma(&palette.rgb[0][0], 256, palette.luma); }

void expand_palette(const std::uint8_t* index, std::size_t pixels, const Palette& palette, int channels,
                    std::uint8_t* out) {
  if (channels == 3) {
    for (std::size_t i = 0; i < pixels; ++i, out += 3) std::memcpy(out, palette.rgb[index[i]], 3);
    return;
  }
  for (std::size_t i = 0; i < pixels; ++i) out[i] = palette.luma[index[i]];
}
}  // namespace detail

namespace {

const char* const kDecodable = "a JPEG, PNG, WebP, GIF, BMP or TIFF image";

[[noreturn]] void fail_unknown(std::span<const std::uint8_t> bytes, const std::string& where) {
  const ImageFormat f = sniff_format(bytes);
  if (f != ImageFormat::unknown && f != ImageFormat::npy)
    fail(ErrorKind::unsupported, where, kDecodable, std::string("a ") + format_name(f) + " image",
         "convert it to JPEG or PNG (frugal does not read " + std::string(format_name(f)) + ")");
  std::string found = bytes.empty() ? std::string("an empty file") : "data starting with 0x";
  if (!bytes.empty())
    for (std::size_t i = 0; i < std::min<std::size_t>(4, bytes.size()); ++i) {
      static const char* hex = "0123456789abcdef";
      found += hex[bytes[i] >> 4];
      found += hex[bytes[i] & 15];
    }
  fail(ErrorKind::invalid, where, kDecodable, found, "remove the file or convert it to JPEG/PNG");
}

// The stored pixels, before any orientation.
void decode_stored(std::span<const std::uint8_t> bytes, const DecodeOptions& options, const std::string& where,
                   Image& out) {
  switch (sniff_format(bytes)) {
    case ImageFormat::jpeg:
      return detail::jpeg_decode(bytes, options, where, out);
    case ImageFormat::png:
      return detail::png_decode(bytes, options, where, out);
    case ImageFormat::webp:
      return detail::webp_decode(bytes, options, where, out);
    case ImageFormat::gif:
      return detail::gif_decode(bytes, options, where, out);
    case ImageFormat::bmp:
      return detail::bmp_decode(bytes, options, where, out);
    case ImageFormat::tiff:
      return detail::tiff_decode(bytes, options, where, out);
    default:
      fail_unknown(bytes, where);
  }
}

}  // namespace

ImageInfo read_image_info(std::span<const std::uint8_t> bytes, const std::string& where, std::uint64_t max_pixels,
                          ExifOrientation exif) {
  ImageInfo info;
  switch (sniff_format(bytes)) {
    case ImageFormat::jpeg:
      info = detail::jpeg_info(bytes, where, max_pixels);
      break;
    case ImageFormat::png:
      info = detail::png_info(bytes, where, max_pixels);
      break;
    case ImageFormat::webp:
      info = detail::webp_info(bytes, where, max_pixels);
      break;
    case ImageFormat::gif:
      info = detail::gif_info(bytes, where, max_pixels);
      break;
    case ImageFormat::bmp:
      info = detail::bmp_info(bytes, where, max_pixels);
      break;
    case ImageFormat::tiff:
      info = detail::tiff_info(bytes, where, max_pixels);
      break;
    default:
      fail_unknown(bytes, where);
  }
  info.orientation = exif == ExifOrientation::apply ? exif_orientation(bytes) : 1;
  if (detail::swaps_sides(info.orientation)) std::swap(info.width, info.height);
  return info;
}

void decode_image(std::span<const std::uint8_t> bytes, const DecodeOptions& options, const std::string& where,
                  Image& out) {
  if (options.channels != 0 && options.channels != 1 && options.channels != 3)
    fail(ErrorKind::usage, "decode", "1 or 3 channels", std::to_string(options.channels), "");
  const int orientation = options.exif == ExifOrientation::apply ? exif_orientation(bytes) : 1;
  if (orientation == 1) return decode_stored(bytes, options, where, out);
  // Turned through a second buffer: a photo costs twice its decoded size for a moment.
  thread_local Image stored;
  decode_stored(bytes, options, where, stored);
  apply_orientation(stored, orientation, out);
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

// Thumbnails of the worst predictions: decoded by frugal's image library, scaled down, encoded as
// JPEG (TurboJPEG) in a data: URI, so the page carries them without a request.
#include <turbojpeg.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "frugal/image/image.h"
#include "frugal/report/report.h"
#include "frugal/util/error.h"

namespace frugal::report {
namespace {

std::string base64(const unsigned char* data, std::size_t n) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (std::size_t i = 0; i < n; i += 3) {
    const std::uint32_t v = (static_cast<std::uint32_t>(data[i]) << 16) |
                            (i + 1 < n ? static_cast<std::uint32_t>(data[i + 1]) << 8 : 0) |
                            (i + 2 < n ? static_cast<std::uint32_t>(data[i + 2]) : 0);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < n ? kAlphabet[v & 63] : '=';
  }
  return out;
}

}  // namespace

std::string thumbnail_data_uri(std::span<const std::uint8_t> bytes, int max_side, const std::string& where) {
  DecodeOptions o;
  o.min_width = o.min_height = max_side;  // a large JPEG is decoded at a DCT scale near the size kept
  const Image full = decode_image(bytes, o, where);
  const double scale = std::min(1.0, static_cast<double>(max_side) / std::max(full.width, full.height));
  Image small;
  const int width = std::max(1, static_cast<int>(std::lround(full.width * scale)));
  const int height = std::max(1, static_cast<int>(std::lround(full.height * scale)));
  resize_bilinear(full, 0, 0, full.width, full.height, width, height, small);
  std::unique_ptr<void, int (*)(tjhandle)> tj(tjInitCompress(), tjDestroy);
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  const bool gray = small.channels == 1;
  if (!tj || tjCompress2(tj.get(), small.pixels.data(), small.width, 0, small.height, gray ? TJPF_GRAY : TJPF_RGB,
                         &jpeg, &size, gray ? TJSAMP_GRAY : TJSAMP_420, 85, 0) != 0) {
    if (jpeg) tjFree(jpeg);
    fail(ErrorKind::io, where, "a thumbnail encoded as JPEG", tj ? tjGetErrorStr2(tj.get()) : "no TurboJPEG handle",
         "report this as a bug");
  }
  std::string uri = "data:image/jpeg;base64," + base64(jpeg, size);
  tjFree(jpeg);
  return uri;
}

}  // namespace frugal::report

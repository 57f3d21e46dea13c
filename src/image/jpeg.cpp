// JPEG through TurboJPEG's 2.1 API. One decompressor per image: a handle keeps the Huffman and
// quantization tables of the files it read, and would decode a later file that lacks one with
// them, so a damaged file's pixels would depend on what its thread decoded before (and a handle
// that failed mid-stream can report the next image as 0x0). Creating one takes ~0.3 us.
#include <turbojpeg.h>

#include <cstring>
#include <string>
#include <utility>

#include "frugal/util/error.h"
#include "image/codecs.h"

namespace frugal::detail {
namespace {

struct Decompressor {
  tjhandle handle = tjInitDecompress();
  Decompressor() {
    if (!handle) fail(ErrorKind::io, "TurboJPEG", "a decompressor", "none (out of memory?)", "");
  }
  ~Decompressor() { tjDestroy(handle); }
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;
};

[[noreturn]] void fail_jpeg(tjhandle h, const std::string& where) {
  fail(ErrorKind::invalid, where, "a decodable JPEG image", std::string("TurboJPEG error: ") + tjGetErrorStr2(h),
       "the file is corrupt; remove or replace it");
}

struct Header {
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
};

Header read_header(tjhandle h, std::span<const std::uint8_t> bytes, const std::string& where) {
  Header hd;
  if (tjDecompressHeader3(h, bytes.data(), bytes.size(), &hd.width, &hd.height, &hd.subsamp, &hd.colorspace) != 0)
    fail_jpeg(h, where);
  return hd;
}

// The smallest of the SIMD-accelerated scales (1/2, 1/4, 1/8) that keeps the image at least
// min_w x min_h; others (3/8, 7/8...) decode slower than full size in libjpeg-turbo.
tjscalingfactor choose_scale(const Header& hd, int min_w, int min_h) {
  tjscalingfactor best{1, 1};
  if (min_w <= 0 && min_h <= 0) return best;
  for (int denom : {2, 4, 8}) {
    tjscalingfactor sf{1, denom};
    if (TJSCALED(hd.width, sf) >= min_w && TJSCALED(hd.height, sf) >= min_h) best = sf;
  }
  return best;
}

// libjpeg reports a truncated file as a warning and fills the rest with gray; we refuse it as PIL
// does. Other warnings (extraneous bytes before a marker...) are benign and PIL accepts them too.
void decompress(tjhandle h, std::span<const std::uint8_t> bytes, std::uint8_t* dst, int w, int hgt, int pf,
                const std::string& where) {
  int rc = tjDecompress2(h, bytes.data(), bytes.size(), dst, w, 0, hgt, pf, TJFLAG_LIMITSCANS);
  if (rc == 0) return;
  if (tjGetErrorCode(h) == TJERR_WARNING && std::strstr(tjGetErrorStr2(h), "Premature end") == nullptr) return;
  fail_jpeg(h, where);
}

}  // namespace

// Adobe CMYK JPEGs store inverted values; this is PIL's cmyk2rgb on the un-inverted ones, so the
// result equals Image.open(f).convert("RGB").
namespace {
inline std::uint8_t muldiv255(int a, int b) {
  int t = a * b + 128;
  return static_cast<std::uint8_t>(((t >> 8) + t) >> 8);
}
}  // namespace

void cmyk_to_rgb(const std::uint8_t* in, std::size_t pixels, std::uint8_t* out) {
  for (std::size_t i = 0; i < pixels; ++i, in += 4, out += 3) {
    int nk = in[3];  // = 255 - K, since the data is inverted
    for (int c = 0; c < 3; ++c) {
      int cc = 255 - in[c];
      out[c] = static_cast<std::uint8_t>(nk - muldiv255(cc, nk));
    }
  }
}

void rgb_to_luma(const std::uint8_t* in, std::size_t pixels, std::uint8_t* out) {
  for (std::size_t i = 0; i < pixels; ++i, in += 3)
    out[i] = static_cast<std::uint8_t>((in[0] * 19595 + in[1] * 38470 + in[2] * 7471 + 0x8000) >> 16);
}

ImageInfo jpeg_info(std::span<const std::uint8_t> bytes, const std::string& where, std::uint64_t max_pixels) {
  Decompressor d;
  Header hd = read_header(d.handle, bytes, where);
  check_pixels(hd.width, hd.height, max_pixels, where);
  return {ImageFormat::jpeg, hd.width, hd.height, hd.colorspace == TJCS_GRAY ? 1 : 3};
}

void jpeg_decode(std::span<const std::uint8_t> bytes, const DecodeOptions& options, const std::string& where,
                 Image& out) {
  Decompressor d;
  tjhandle h = d.handle;
  Header hd = read_header(h, bytes, where);
  check_pixels(hd.width, hd.height, options.max_pixels, where);
  tjscalingfactor sf = choose_scale(hd, options.min_width, options.min_height);
  int w = TJSCALED(hd.width, sf), hgt = TJSCALED(hd.height, sf);
  bool gray = hd.colorspace == TJCS_GRAY;
  int channels = options.channels ? options.channels : (gray ? 1 : 3);
  std::size_t pixels = static_cast<std::size_t>(w) * hgt;

  if (hd.colorspace == TJCS_CMYK || hd.colorspace == TJCS_YCCK) {
    thread_local std::vector<std::uint8_t> cmyk;
    cmyk.resize(pixels * 4);
    decompress(h, bytes, cmyk.data(), w, hgt, TJPF_CMYK, where);
    out.resize(w, hgt, 3);
    cmyk_to_rgb(cmyk.data(), pixels, out.pixels.data());
    if (channels == 1) {
      Image rgb = std::exchange(out, Image{});
      out.resize(w, hgt, 1);
      rgb_to_luma(rgb.pixels.data(), pixels, out.pixels.data());
    }
    return;
  }
  if (channels == 1 && !gray) {
    // Decode to RGB and take PIL's luma rather than libjpeg's Y, so "L" models see PIL's values.
    thread_local std::vector<std::uint8_t> rgb;
    rgb.resize(pixels * 3);
    decompress(h, bytes, rgb.data(), w, hgt, TJPF_RGB, where);
    out.resize(w, hgt, 1);
    rgb_to_luma(rgb.data(), pixels, out.pixels.data());
    return;
  }
  out.resize(w, hgt, channels);
  decompress(h, bytes, out.pixels.data(), w, hgt, channels == 1 ? TJPF_GRAY : TJPF_RGB, where);
}

}  // namespace frugal::detail

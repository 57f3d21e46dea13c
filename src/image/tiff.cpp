// TIFF through libtiff, the first page, from memory (the file's bytes are handed to libtiff as a
// mapping: no copy). Two readers:
//   - the samples themselves, for the kinds PIL unpacks itself and people have: 8 or 16-bit
//     unsigned gray (min-is-black or min-is-white), RGB and 8-bit palette, pixels interleaved,
//     in strips (one row at a time) or tiles (one tile at a time), any compression libtiff has.
//     As PIL: 16-bit samples keep their high byte, extra samples (alpha) are dropped, palette
//     entries are the colour map's high bytes. Memory: the output and one row or tile;
//   - libtiff's RGBA interface (TIFFRGBAImage) for everything else (YCbCr, CMYK, 1-bit,
//     planar...), in bands of rows. libtiff scales 16-bit by rounding (PIL: the high byte, at most
//     one level apart) and premultiplies unassociated alpha, which is then dropped: only such
//     images' translucent pixels can differ from PIL's.
// Neither applies the Orientation tag (libtiff's RGBA interface would flip, never transpose):
// decode.cpp applies it for every format alike, as PIL's exif_transpose does.
#include <tiffio.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "frugal/util/error.h"
#include "image/codecs.h"

namespace frugal::detail {
namespace {

// Buffers libtiff may allocate in one piece, and those frugal allocates for a row, a tile or a
// band: a damaged header must not ask for gigabytes.
constexpr std::uint64_t kMaxBuffer = 256ull << 20;

struct Memory {
  std::span<const std::uint8_t> bytes;
  toff_t at = 0;
  std::string error;  // libtiff's first error message
};

extern "C" {
tmsize_t tiff_read(thandle_t h, void* dst, tmsize_t n) {
  auto* m = static_cast<Memory*>(h);
  if (n <= 0 || m->at >= m->bytes.size()) return 0;
  const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(n), m->bytes.size() - m->at);
  std::memcpy(dst, m->bytes.data() + m->at, k);
  m->at += k;
  return static_cast<tmsize_t>(k);
}
tmsize_t tiff_write(thandle_t, void*, tmsize_t) { return 0; }
toff_t tiff_seek(thandle_t h, toff_t off, int whence) {
  auto* m = static_cast<Memory*>(h);
  const toff_t base = whence == SEEK_CUR ? m->at : whence == SEEK_END ? m->bytes.size() : 0;
  if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) return static_cast<toff_t>(-1);
  const toff_t to = base + off;  // a negative offset wraps past the size: refused below
  if (to > m->bytes.size()) return static_cast<toff_t>(-1);
  m->at = to;
  return to;
}
int tiff_close(thandle_t) { return 0; }
toff_t tiff_size(thandle_t h) { return static_cast<Memory*>(h)->bytes.size(); }
int tiff_map(thandle_t h, void** base, toff_t* size) {
  auto* m = static_cast<Memory*>(h);
  *base = const_cast<std::uint8_t*>(m->bytes.data());  // read-only: opened "r"
  *size = m->bytes.size();
  return 1;
}
void tiff_unmap(thandle_t, void*, toff_t) {}

int tiff_error(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  auto* m = static_cast<Memory*>(user);
  if (m->error.empty()) {
    char buf[512];
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    m->error = std::string(module ? module : "libtiff") + ": " + buf;
  }
  return 1;  // handled: nothing on stderr
}
int tiff_warning(TIFF*, void*, const char*, const char*, va_list) { return 1; }
}

struct TiffCloser {
  void operator()(TIFF* t) const { TIFFClose(t); }
};
using Tiff = std::unique_ptr<TIFF, TiffCloser>;

[[noreturn]] void fail_tiff(const std::string& where, const Memory& m, const std::string& fallback) {
  fail(ErrorKind::invalid, where, "a decodable TIFF image", m.error.empty() ? fallback : m.error,
       "the file is corrupt or of a kind frugal does not read; convert it to PNG");
}

Tiff open_tiff(Memory& m, const std::string& where) {
  // libtiff's process-wide handlers would print what the per-file ones do not see.
  static std::once_flag quiet;
  std::call_once(quiet, [] {
    TIFFSetErrorHandler(nullptr);
    TIFFSetWarningHandler(nullptr);
  });
  std::unique_ptr<TIFFOpenOptions, void (*)(TIFFOpenOptions*)> opts(TIFFOpenOptionsAlloc(), TIFFOpenOptionsFree);
  if (!opts) fail(ErrorKind::io, "libtiff", "open options", "none (out of memory?)", "");
  TIFFOpenOptionsSetMaxSingleMemAlloc(opts.get(), static_cast<tmsize_t>(kMaxBuffer));
  TIFFOpenOptionsSetErrorHandlerExtR(opts.get(), tiff_error, &m);
  TIFFOpenOptionsSetWarningHandlerExtR(opts.get(), tiff_warning, &m);
  Tiff t(TIFFClientOpenExt("tiff", "r", &m, tiff_read, tiff_write, tiff_seek, tiff_close, tiff_size, tiff_map,
                           tiff_unmap, opts.get()));
  if (!t) fail_tiff(where, m, "it does not open");
  return t;
}

struct Layout {
  int width = 0, height = 0;
  std::uint16_t spp = 1, bps = 1, photometric = 0, planar = PLANARCONFIG_CONTIG, format = SAMPLEFORMAT_UINT;
  bool direct = false;  // the sample reader, else the RGBA interface
  bool gray = false;
};

Layout read_layout(TIFF* t, const Memory& m, const std::string& where, std::uint64_t max_pixels) {
  std::uint32_t w = 0, h = 0;
  if (!TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &w) || !TIFFGetField(t, TIFFTAG_IMAGELENGTH, &h))
    fail_tiff(where, m, "no image size");
  Layout l;
  check_pixels(static_cast<int>(std::min<std::uint32_t>(w, 1u << 30)),
               static_cast<int>(std::min<std::uint32_t>(h, 1u << 30)), max_pixels, where);
  l.width = static_cast<int>(w), l.height = static_cast<int>(h);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &l.spp);
  TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &l.bps);
  TIFFGetFieldDefaulted(t, TIFFTAG_PLANARCONFIG, &l.planar);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &l.format);
  if (!TIFFGetField(t, TIFFTAG_PHOTOMETRIC, &l.photometric))
    l.photometric = l.spp >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK;  // libtiff's RGBA guess too
  const bool gray = l.photometric == PHOTOMETRIC_MINISBLACK || l.photometric == PHOTOMETRIC_MINISWHITE;
  l.gray = gray;
  l.direct = l.planar == PLANARCONFIG_CONTIG && l.format == SAMPLEFORMAT_UINT && l.spp >= 1 && l.spp <= 16 &&
             ((gray && (l.bps == 8 || l.bps == 16)) ||
              (l.photometric == PHOTOMETRIC_RGB && l.spp >= 3 && (l.bps == 8 || l.bps == 16)) ||
              (l.photometric == PHOTOMETRIC_PALETTE && l.spp == 1 && l.bps == 8));
  return l;
}

// Samples of n pixels (spp each, 8 or 16 bits, native byte order) -> `channels` per pixel.
struct Converter {
  const Layout& l;
  Palette palette;  // PHOTOMETRIC_PALETTE
  int channels;
  std::uint8_t sample(const std::uint8_t* p, std::size_t i) const {
    if (l.bps == 8) return p[i];
    std::uint16_t v;
    std::memcpy(&v, p + 2 * i, 2);
    return static_cast<std::uint8_t>(v >> 8);
  }
  void row(const std::uint8_t* src, std::size_t n, std::uint8_t* dst) const {
    const std::size_t spp = l.spp;
    if (l.photometric == PHOTOMETRIC_PALETTE) {
      thread_local std::vector<std::uint8_t> index;
      index.assign(src, src + n);
      expand_palette(index.data(), n, palette, channels, dst);
      return;
    }
    const bool invert = l.photometric == PHOTOMETRIC_MINISWHITE;
    for (std::size_t x = 0; x < n; ++x) {
      if (l.gray) {
        std::uint8_t v = sample(src, x * spp);
        if (invert) v = static_cast<std::uint8_t>(255 - v);
        if (channels == 1)
          dst[x] = v;
        else
          dst[3 * x] = dst[3 * x + 1] = dst[3 * x + 2] = v;
        continue;
      }
      const std::uint8_t rgb[3] = {sample(src, x * spp), sample(src, x * spp + 1), sample(src, x * spp + 2)};
      if (channels == 3)
        std::memcpy(dst + 3 * x, rgb, 3);
      else
        rgb_to_luma(rgb, 1, dst + x);
    }
  }
};

void read_direct(TIFF* t, const Memory& m, const Layout& l, int channels, const std::string& where, Image& out) {
  Converter conv{l, {}, channels};
  if (l.photometric == PHOTOMETRIC_PALETTE) {
    std::uint16_t *r = nullptr, *g = nullptr, *b = nullptr;
    if (!TIFFGetField(t, TIFFTAG_COLORMAP, &r, &g, &b)) fail_tiff(where, m, "a palette image without a colour map");
    for (int i = 0; i < 256; ++i)
      conv.palette.rgb[i][0] = static_cast<std::uint8_t>(r[i] >> 8),
      conv.palette.rgb[i][1] = static_cast<std::uint8_t>(g[i] >> 8),
      conv.palette.rgb[i][2] = static_cast<std::uint8_t>(b[i] >> 8);
    set_luma(conv.palette);
  }
  const std::size_t pixel_bytes = static_cast<std::size_t>(l.spp) * (l.bps / 8);
  if (!TIFFIsTiled(t)) {
    const std::uint64_t size = TIFFScanlineSize64(t);
    if (size < pixel_bytes * static_cast<std::uint64_t>(l.width) || size > kMaxBuffer)
      fail_tiff(where, m, "a row of " + std::to_string(size) + " bytes");
    std::vector<std::uint8_t> row(size);
    for (int y = 0; y < l.height; ++y) {
      if (TIFFReadScanline(t, row.data(), static_cast<std::uint32_t>(y), 0) < 0)
        fail_tiff(where, m, "row " + std::to_string(y) + " does not decode");
      conv.row(row.data(), static_cast<std::size_t>(l.width), out.row(y));
    }
    return;
  }
  std::uint32_t tw = 0, th = 0;
  TIFFGetField(t, TIFFTAG_TILEWIDTH, &tw);
  TIFFGetField(t, TIFFTAG_TILELENGTH, &th);
  const std::uint64_t size = TIFFTileSize64(t);
  if (tw == 0 || th == 0 || size < pixel_bytes * std::uint64_t{tw} * th || size > kMaxBuffer)
    fail_tiff(where, m,
              "tiles of " + std::to_string(tw) + "x" + std::to_string(th) + " (" + std::to_string(size) + " bytes)");
  std::vector<std::uint8_t> tile(size);
  for (std::uint32_t y0 = 0; y0 < static_cast<std::uint32_t>(l.height); y0 += th)
    for (std::uint32_t x0 = 0; x0 < static_cast<std::uint32_t>(l.width); x0 += tw) {
      if (TIFFReadTile(t, tile.data(), x0, y0, 0, 0) < 0)
        fail_tiff(where, m, "the tile at " + std::to_string(x0) + "," + std::to_string(y0) + " does not decode");
      const std::uint32_t n = std::min<std::uint32_t>(tw, static_cast<std::uint32_t>(l.width) - x0);
      for (std::uint32_t j = 0; j < th && y0 + j < static_cast<std::uint32_t>(l.height); ++j)
        conv.row(tile.data() + std::size_t{j} * tw * pixel_bytes, n,
                 out.row(static_cast<int>(y0 + j)) + std::size_t{x0} * channels);
    }
}

void read_rgba(TIFF* t, Memory& m, const Layout& l, int channels, const std::string& where, Image& out) {
  char emsg[1024] = {};
  if (!TIFFRGBAImageOK(t, emsg)) fail_tiff(where, m, emsg);
  TIFFRGBAImage img;
  if (!TIFFRGBAImageBegin(&img, t, 0, emsg)) fail_tiff(where, m, emsg);
  std::unique_ptr<TIFFRGBAImage, void (*)(TIFFRGBAImage*)> end(&img, TIFFRGBAImageEnd);
  // Rows as stored, top first: no flip for the Orientation tag (decode.cpp turns the image).
  img.req_orientation = ORIENTATION_TOPLEFT;
  img.orientation = ORIENTATION_TOPLEFT;
  const std::size_t W = static_cast<std::size_t>(l.width);
  const int band =
      static_cast<int>(std::clamp<std::uint64_t>(kMaxBuffer / 16 / (W * 4), 1, static_cast<std::uint64_t>(l.height)));
  std::vector<std::uint32_t> raster(W * band);
  for (int y0 = 0; y0 < l.height; y0 += band) {
    const int rows = std::min(band, l.height - y0);
    img.row_offset = y0;
    img.col_offset = 0;
    if (!TIFFRGBAImageGet(&img, raster.data(), static_cast<std::uint32_t>(W), static_cast<std::uint32_t>(rows)))
      fail_tiff(where, m, "rows from " + std::to_string(y0) + " do not decode");
    for (int j = 0; j < rows; ++j) {
      std::uint8_t* dst = out.row(y0 + j);
      const std::uint32_t* src = raster.data() + static_cast<std::size_t>(j) * W;
      for (std::size_t x = 0; x < W; ++x) {
        const std::uint8_t rgb[3] = {static_cast<std::uint8_t>(TIFFGetR(src[x])),
                                     static_cast<std::uint8_t>(TIFFGetG(src[x])),
                                     static_cast<std::uint8_t>(TIFFGetB(src[x]))};
        if (channels == 3)
          std::memcpy(dst + 3 * x, rgb, 3);
        else
          rgb_to_luma(rgb, 1, dst + x);
      }
    }
  }
}

}  // namespace

ImageInfo tiff_info(std::span<const std::uint8_t> bytes, const std::string& where, std::uint64_t max_pixels) {
  Memory m;
  m.bytes = bytes;
  Tiff t = open_tiff(m, where);
  const Layout l = read_layout(t.get(), m, where, max_pixels);
  return {ImageFormat::tiff, l.width, l.height, l.gray ? 1 : 3};
}

void tiff_decode(std::span<const std::uint8_t> bytes, const DecodeOptions& options, const std::string& where,
                 Image& out) {
  Memory m;
  m.bytes = bytes;
  Tiff t = open_tiff(m, where);
  const Layout l = read_layout(t.get(), m, where, options.max_pixels);
  const int channels = options.channels ? options.channels : (l.gray ? 1 : 3);
  out.resize(l.width, l.height, channels);
  if (l.direct)
    read_direct(t.get(), m, l, channels, where, out);
  else
    read_rgba(t.get(), m, l, channels, where, out);
}

}  // namespace frugal::detail

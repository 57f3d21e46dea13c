// GIF through giflib's low-level API: the records up to the first image only, its lines read one
// at a time into an index canvas (never DGifSlurp, which would hold every frame of an animation).
// The first frame as PIL's Image.open(f).convert("RGB") gives it:
//   - the canvas is the logical screen, grown to hold the frame when the frame reaches past it;
//   - it starts filled with the frame's transparent index when its graphic control extension
//     names one, else with index 0; the frame is drawn over it, transparent pixels included;
//   - indices go through the frame's local colour table, else the global one; a table that is the
//     identity grey ramp, or none at all, makes a greyscale ("L") image whose indices are the
//     levels; entries past a table's end are black.
#include <gif_lib.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "frugal/util/error.h"
#include "image/codecs.h"

namespace frugal::detail {
namespace {

struct Cursor {
  std::span<const std::uint8_t> bytes;
  std::size_t at = 0;
};

extern "C" int read_from_cursor(GifFileType* gif, GifByteType* dst, int n) {
  auto* c = static_cast<Cursor*>(gif->UserData);
  const std::size_t k = std::min<std::size_t>(n < 0 ? 0 : static_cast<std::size_t>(n), c->bytes.size() - c->at);
  std::memcpy(dst, c->bytes.data() + c->at, k);
  c->at += k;
  return static_cast<int>(k);
}

struct GifCloser {
  void operator()(GifFileType* g) const {
    int err = 0;
    DGifCloseFile(g, &err);
  }
};
using Gif = std::unique_ptr<GifFileType, GifCloser>;

[[noreturn]] void fail_gif(const std::string& where, int code) {
  const char* why = GifErrorString(code);
  fail(ErrorKind::invalid, where, "a decodable GIF image", std::string("giflib: ") + (why ? why : "unknown error"),
       "the file is corrupt; remove or replace it");
}

// The first frame's geometry and colours, read up to its image descriptor (no pixels yet).
struct FirstFrame {
  Gif gif;
  Cursor cursor;
  int canvas_w = 0, canvas_h = 0;
  int left = 0, top = 0, width = 0, height = 0;
  bool interlaced = false;
  int transparent = -1;
  bool gray = false;  // no colour table, or the identity grey ramp
  Palette palette;
};

bool identity_ramp(const ColorMapObject* map) {
  for (int i = 0; i < map->ColorCount; ++i) {
    const GifColorType& c = map->Colors[i];
    if (c.Red != i || c.Green != i || c.Blue != i) return false;
  }
  return true;
}

void open_first_frame(std::span<const std::uint8_t> bytes, const std::string& where, std::uint64_t max_pixels,
                      FirstFrame& f) {
  f.cursor.bytes = bytes;
  int err = 0;
  f.gif.reset(DGifOpen(&f.cursor, read_from_cursor, &err));
  if (!f.gif) fail_gif(where, err);
  GifFileType* g = f.gif.get();
  for (;;) {
    GifRecordType type;
    if (DGifGetRecordType(g, &type) == GIF_ERROR) fail_gif(where, g->Error);
    if (type == TERMINATE_RECORD_TYPE)
      fail(ErrorKind::invalid, where, "a GIF with an image", "none before its end", "remove or replace the file");
    if (type == EXTENSION_RECORD_TYPE) {
      int code = 0;
      GifByteType* ext = nullptr;
      if (DGifGetExtension(g, &code, &ext) == GIF_ERROR) fail_gif(where, g->Error);
      // A control block that names a transparent index sets it; one that names none leaves it (PIL).
      if (code == GRAPHICS_EXT_FUNC_CODE && ext && ext[0] >= 4 && (ext[1] & 1)) f.transparent = ext[4];
      while (ext)
        if (DGifGetExtensionNext(g, &ext) == GIF_ERROR) fail_gif(where, g->Error);
      continue;
    }
    if (type != IMAGE_DESC_RECORD_TYPE) continue;
    if (DGifGetImageDesc(g) == GIF_ERROR) fail_gif(where, g->Error);
    break;
  }
  const GifImageDesc& d = g->Image;
  f.left = d.Left, f.top = d.Top, f.width = d.Width, f.height = d.Height;
  f.interlaced = d.Interlace;
  if (f.width <= 0 || f.height <= 0)
    fail(ErrorKind::invalid, where, "a first frame with a positive size",
         std::to_string(f.width) + "x" + std::to_string(f.height), "the file is corrupt; remove or replace it");
  // GIF sides are 16-bit: these sums cannot overflow an int.
  f.canvas_w = std::max(g->SWidth, f.left + f.width);
  f.canvas_h = std::max(g->SHeight, f.top + f.height);
  check_pixels(f.canvas_w, f.canvas_h, max_pixels, where);
  const ColorMapObject* map = d.ColorMap ? d.ColorMap : g->SColorMap;
  f.gray = !map || identity_ramp(map);
  if (f.gray) {
    for (int i = 0; i < 256; ++i)
      f.palette.rgb[i][0] = f.palette.rgb[i][1] = f.palette.rgb[i][2] = static_cast<std::uint8_t>(i);
  } else {
    for (int i = 0; i < std::min(map->ColorCount, 256); ++i)
      f.palette.rgb[i][0] = map->Colors[i].Red, f.palette.rgb[i][1] = map->Colors[i].Green,
      f.palette.rgb[i][2] = map->Colors[i].Blue;
  }
  set_luma(f.palette);
}

}  // namespace

ImageInfo gif_info(std::span<const std::uint8_t> bytes, const std::string& where, std::uint64_t max_pixels) {
  FirstFrame f;
  open_first_frame(bytes, where, max_pixels, f);
  return {ImageFormat::gif, f.canvas_w, f.canvas_h, f.gray ? 1 : 3};
}

void gif_decode(std::span<const std::uint8_t> bytes, const DecodeOptions& options, const std::string& where,
                Image& out) {
  FirstFrame f;
  open_first_frame(bytes, where, options.max_pixels, f);
  GifFileType* g = f.gif.get();
  const std::size_t W = static_cast<std::size_t>(f.canvas_w), H = static_cast<std::size_t>(f.canvas_h);
  thread_local std::vector<std::uint8_t> canvas;
  canvas.assign(W * H, static_cast<std::uint8_t>(f.transparent >= 0 ? f.transparent : 0));
  // Interlaced frames send rows 0, 8, 16... then 4, 12..., then 2, 6..., then the odd ones.
  static constexpr int kStart[4] = {0, 4, 2, 1}, kStep[4] = {8, 8, 4, 2};
  const int passes = f.interlaced ? 4 : 1;
  for (int pass = 0; pass < passes; ++pass)
    for (int y = f.interlaced ? kStart[pass] : 0; y < f.height; y += f.interlaced ? kStep[pass] : 1) {
      GifPixelType* row = canvas.data() + (static_cast<std::size_t>(f.top) + y) * W + f.left;
      if (DGifGetLine(g, row, f.width) == GIF_ERROR) fail_gif(where, g->Error);
    }
  const int channels = options.channels ? options.channels : (f.gray ? 1 : 3);
  out.resize(f.canvas_w, f.canvas_h, channels);
  expand_palette(canvas.data(), W * H, f.palette, channels, out.pixels.data());
}

}  // namespace frugal::detail

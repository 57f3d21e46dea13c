// BMP by frugal's own reader. Why not a library: Debian ships BMP readers only inside large
// toolkits (ImageMagick, GraphicsMagick, SDL_image) or stb_image (libstb-dev), whose record on
// hostile input is poor; the format is a header, a palette and rows, and a reader that checks each
// offset and size against the file is ~250 lines we can fuzz (fuzz/image_fuzz.cpp).
//
// Read as PIL reads it: headers of 12 (OS/2), 40, 52, 56, 64, 108 and 124 bytes; 1, 4 and 8-bit
// palettes (RLE8 and RLE4 too), 16-bit (5-5-5 unless bit fields say otherwise), 24-bit, 32-bit
// (the fourth byte ignored unless a bit field names it alpha, which is dropped anyway); bottom-up
// or top-down rows. A bit field of n bits is scaled to 8 as v * 255 / (2^n - 1), rounded down, as
// PIL's 5- and 6-bit unpackers do. A palette that is black and white (2 colours) or the identity
// grey ramp makes a greyscale image, as PIL's "1" and "L" modes. Pixel data past the end of the
// file is refused (PIL says "truncated"); an RLE stream that ends early with its end-of-bitmap
// code leaves the rest at index 0.
#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "frugal/util/error.h"
#include "image/codecs.h"

namespace frugal::detail {
namespace {

constexpr std::uint32_t kRgb = 0, kRle8 = 1, kRle4 = 2, kBitfields = 3;

std::uint32_t le32(std::span<const std::uint8_t> b, std::size_t at) {
  return b[at] | b[at + 1] << 8 | b[at + 2] << 16 | static_cast<std::uint32_t>(b[at + 3]) << 24;
}
std::uint32_t le16(std::span<const std::uint8_t> b, std::size_t at) { return b[at] | b[at + 1] << 8; }

[[noreturn]] void fail_bmp(const std::string& where, const std::string& expected, const std::string& found) {
  fail(ErrorKind::invalid, where, expected, found,
       "the file is corrupt or of a kind frugal does not read; convert it to PNG");
}

// One colour channel of a bit-field pixel: where it lies and how it scales to 8 bits.
struct Field {
  std::uint32_t mask = 0;
  int shift = 0, bits = 0;
  std::uint8_t get(std::uint32_t px) const {
    if (bits == 0) return 0;
    const std::uint64_t v = (px & mask) >> shift;
    return static_cast<std::uint8_t>(bits == 8 ? v : v * 255 / ((std::uint64_t{1} << bits) - 1));
  }
};

struct Header {
  std::uint64_t data_offset = 0;
  int width = 0, height = 0;
  bool top_down = false;
  int bits = 0;
  std::uint32_t compression = kRgb;
  Field r, g, b;  // 16 and 32 bits
  bool gray = false;
  int palette_colors = 0;  // entries the file defines (at most 256 kept)
  Palette palette;
};

Field field(std::uint32_t mask, const std::string& where) {
  Field f;
  if (mask == 0) return f;
  f.mask = mask;
  f.shift = std::countr_zero(mask);
  f.bits = std::popcount(mask);
  if ((mask >> f.shift) != (std::uint64_t{1} << f.bits) - 1)
    fail_bmp(
        where, "bit fields of contiguous bits", "a mask of 0x" + [&] {
          char buf[16];
          std::snprintf(buf, sizeof buf, "%08x", mask);
          return std::string(buf);
        }());
  return f;
}

// Sides, bits per pixel and compression from the core header (12 bytes, OS/2) or an info header
// (40 and more); returns the palette's colours the header declares (0: all 2^bits).
std::uint32_t read_info(std::span<const std::uint8_t> b, std::uint32_t header_size, const std::string& where,
                        Header& h) {
  if (header_size == 12) {
    h.width = static_cast<int>(le16(b, 18));
    h.height = static_cast<int>(le16(b, 20));
    h.bits = static_cast<int>(le16(b, 24));
    return 0;
  }
  const auto w = static_cast<std::int32_t>(le32(b, 18)), ht = static_cast<std::int32_t>(le32(b, 22));
  if (w <= 0 || ht == 0 || ht == INT32_MIN)
    fail_bmp(where, "a BMP of positive width and non-zero height", std::to_string(w) + "x" + std::to_string(ht));
  h.width = w;
  h.top_down = ht < 0;
  h.height = ht < 0 ? -ht : ht;
  h.bits = static_cast<int>(le16(b, 28));
  h.compression = le32(b, 30);
  return le32(b, 46);
}

// The bit fields of 16, 24 and 32-bit pixels; refuses bits and compressions PIL does not read.
void read_pixel_format(std::span<const std::uint8_t> b, const std::string& where, Header& h) {
  const int bits = h.bits;
  if (bits != 1 && bits != 4 && bits != 8 && bits != 16 && bits != 24 && bits != 32)
    fail_bmp(where, "1, 4, 8, 16, 24 or 32 bits per pixel", std::to_string(bits));
  const bool rle = h.compression == kRle8 || h.compression == kRle4;
  if (h.compression == kBitfields) {
    if (bits != 16 && bits != 32 && bits != 24)
      fail_bmp(where, "bit fields on 16, 24 or 32-bit pixels", std::to_string(bits) + " bits");
    if (b.size() < 66) fail_bmp(where, "the bit field masks", "a file cut short before them");
    const std::uint32_t rm = le32(b, 54), gm = le32(b, 58), bm = le32(b, 62);
    if (rm == 0 && gm == 0 && bm == 0 && bits == 32) {
      h.r = field(0xFF0000, where), h.g = field(0xFF00, where), h.b = field(0xFF, where);
    } else {
      h.r = field(rm, where), h.g = field(gm, where), h.b = field(bm, where);
    }
    if (bits == 24 && !(rm == 0xFF0000 && gm == 0xFF00 && bm == 0xFF))
      fail_bmp(where, "24-bit bit fields of 0xff0000, 0xff00, 0xff", "other masks");
  } else if (h.compression == kRgb) {
    if (bits == 16) h.r = field(0x7C00, where), h.g = field(0x3E0, where), h.b = field(0x1F, where);
    if (bits == 32) h.r = field(0xFF0000, where), h.g = field(0xFF00, where), h.b = field(0xFF, where);
  } else if (rle) {
    if ((h.compression == kRle8 && bits != 8) || (h.compression == kRle4 && bits != 4))
      fail_bmp(where, h.compression == kRle8 ? "RLE8 on 8-bit pixels" : "RLE4 on 4-bit pixels",
               std::to_string(bits) + " bits");
  } else {
    fail_bmp(where, "an uncompressed, RLE or bit-field BMP",
             h.compression == 4   ? "a BMP holding a JPEG"
             : h.compression == 5 ? "a BMP holding a PNG"
                                  : "compression " + std::to_string(h.compression));
  }
}

// The palette of a 1, 4 or 8-bit BMP, `colors` declared (0: all 2^bits), right after the header.
void read_palette(std::span<const std::uint8_t> b, std::uint32_t header_size, std::uint32_t colors,
                  const std::string& where, Header& h) {
  const int palette_entry = header_size == 12 ? 3 : 4;
  // Entries the header declares (all 2^bits when 0); more than 256 cannot be indexed.
  const std::uint64_t declared = colors ? colors : (1u << h.bits);
  if (declared > 65536) fail_bmp(where, "a palette of at most 65536 colours", std::to_string(declared));
  const std::uint64_t at = 14 + std::uint64_t{header_size};
  const std::uint64_t kept = std::min<std::uint64_t>(declared, 256);
  if (at + kept * palette_entry > b.size()) fail_bmp(where, "the whole palette", "a file cut short inside it");
  h.palette_colors = static_cast<int>(kept);
  bool gray = true;
  for (int i = 0; i < h.palette_colors; ++i) {
    const std::uint8_t* e = b.data() + at + static_cast<std::size_t>(i) * palette_entry;
    h.palette.rgb[i][0] = e[2], h.palette.rgb[i][1] = e[1], h.palette.rgb[i][2] = e[0];
    const int want = declared == 2 ? (i == 0 ? 0 : 255) : i;
    if (e[0] != want || e[1] != want || e[2] != want) gray = false;
  }
  h.gray = gray;
  // A grey image's indices are its levels (PIL's "L"), also past the entries the file defines.
  if (gray && declared != 2)
    for (int i = h.palette_colors; i < 256; ++i)
      h.palette.rgb[i][0] = h.palette.rgb[i][1] = h.palette.rgb[i][2] = static_cast<std::uint8_t>(i);
  set_luma(h.palette);
  // PIL's rule: pixel data announced right after the header means the palette lies between.
  if (h.data_offset == at) h.data_offset += declared * palette_entry;
}

Header read_header(std::span<const std::uint8_t> b, const std::string& where, std::uint64_t max_pixels) {
  if (b.size() < 26) fail_bmp(where, "a BMP header", "a file of " + std::to_string(b.size()) + " bytes");
  Header h;
  h.data_offset = le32(b, 10);
  const std::uint32_t header_size = le32(b, 14);
  if (header_size != 12 && header_size != 40 && header_size != 52 && header_size != 56 && header_size != 64 &&
      header_size != 108 && header_size != 124)
    fail_bmp(where, "a BMP header of 12, 40, 52, 56, 64, 108 or 124 bytes", std::to_string(header_size) + " bytes");
  if (b.size() < 14 + header_size) fail_bmp(where, "the whole BMP header", "a file cut short inside it");
  const std::uint32_t colors = read_info(b, header_size, where, h);
  check_pixels(h.width, h.height, max_pixels, where);
  read_pixel_format(b, where, h);
  if (h.bits <= 8) read_palette(b, header_size, colors, where, h);
  if (h.data_offset == 0) h.data_offset = 14 + std::uint64_t{header_size};
  if (h.data_offset > b.size()) fail_bmp(where, "pixel data inside the file", "an offset past its end");
  return h;
}

// RLE8 / RLE4 into one index per pixel, in the file's row order, exactly as PIL's BmpRleDecoder
// walks it (escapes: 0 end of line, 1 end of bitmap, 2 delta, n >= 3 n literal pixels).
void decode_rle(std::span<const std::uint8_t> b, const Header& h, const std::string& where,
                std::vector<std::uint8_t>& idx) {
  const bool rle4 = h.compression == kRle4;
  const std::size_t W = static_cast<std::size_t>(h.width), total = W * h.height;
  idx.assign(total, 0);
  std::size_t n = 0, x = 0, p = h.data_offset;
  auto put = [&](std::uint8_t v) {
    if (n < total) idx[n++] = v;
  };
  bool ended = false;
  while (n < total) {
    if (p + 2 > b.size()) break;
    const std::uint8_t count = b[p], byte = b[p + 1];
    p += 2;
    if (count) {  // a run
      const std::size_t k = x + count > W ? (W > x ? W - x : 0) : count;
      for (std::size_t i = 0; i < k; ++i) put(rle4 ? (i % 2 == 0 ? byte >> 4 : byte & 15) : byte);
      x += k;
    } else if (byte == 0) {  // end of line
      while (n % W != 0) put(0);
      x = 0;
    } else if (byte == 1) {  // end of bitmap
      ended = true;
      break;
    } else if (byte == 2) {  // delta: right, up
      if (p + 2 > b.size()) break;
      const std::size_t skip = std::min(total - n, b[p] + std::size_t{b[p + 1]} * W);
      p += 2;
      for (std::size_t i = 0; i < skip; ++i) put(0);
      x = n % W;
    } else {  // literal pixels, their bytes padded to a 16-bit boundary of the file
      const std::size_t k = std::min<std::size_t>(total - n, byte);
      const std::size_t bytes = rle4 ? (k + 1) / 2 : k;
      const std::size_t have = std::min(bytes, b.size() - p);
      for (std::size_t i = 0; i < have; ++i) {
        if (!rle4) {
          put(b[p + i]);
        } else {
          put(b[p + i] >> 4);
          if (i * 2 + 1 < k) put(b[p + i] & 15);
        }
      }
      p += have;
      if (have < bytes || n == total) break;
      x += byte;
      if (p % 2 && p < b.size()) ++p;
    }
  }
  if (n < total && !ended)
    fail_bmp(where, "RLE data for " + std::to_string(total) + " pixels",
             "data for " + std::to_string(n) + " (cut short)");
}

}  // namespace

ImageInfo bmp_info(std::span<const std::uint8_t> bytes, const std::string& where, std::uint64_t max_pixels) {
  const Header h = read_header(bytes, where, max_pixels);
  return {ImageFormat::bmp, h.width, h.height, h.bits <= 8 && h.gray ? 1 : 3};
}

void bmp_decode(std::span<const std::uint8_t> b, const DecodeOptions& options, const std::string& where, Image& out) {
  const Header h = read_header(b, where, options.max_pixels);
  const int C = options.channels ? options.channels : (h.bits <= 8 && h.gray ? 1 : 3);
  const std::size_t W = static_cast<std::size_t>(h.width);
  out.resize(h.width, h.height, C);
  auto out_row = [&](int file_row) { return out.row(h.top_down ? file_row : h.height - 1 - file_row); };
  if (h.compression == kRle8 || h.compression == kRle4) {
    thread_local std::vector<std::uint8_t> idx;
    decode_rle(b, h, where, idx);
    for (int y = 0; y < h.height; ++y) expand_palette(idx.data() + y * W, W, h.palette, C, out_row(y));
    return;
  }
  const std::uint64_t stride = ((std::uint64_t{W} * h.bits + 31) >> 3) & ~std::uint64_t{3};
  if (h.data_offset + stride * static_cast<std::uint64_t>(h.height) > b.size())
    fail_bmp(where, std::to_string(stride * static_cast<std::uint64_t>(h.height)) + " bytes of pixels",
             std::to_string(b.size() - h.data_offset) + " (the file is cut short)");
  thread_local std::vector<std::uint8_t> line;
  line.resize(W * 3);
  for (int y = 0; y < h.height; ++y) {
    const std::uint8_t* src = b.data() + h.data_offset + stride * static_cast<std::uint64_t>(y);
    std::uint8_t* dst = out_row(y);
    if (h.bits <= 8) {
      std::uint8_t* index = line.data();
      const int per_byte = 8 / h.bits, mask = (1 << h.bits) - 1;
      for (std::size_t x = 0; x < W; ++x)
        index[x] = static_cast<std::uint8_t>(
            (src[x / per_byte] >> ((per_byte - 1 - static_cast<int>(x % per_byte)) * h.bits)) & mask);
      expand_palette(index, W, h.palette, C, dst);
      continue;
    }
    std::uint8_t* rgb = C == 3 ? dst : line.data();
    if (h.bits == 24) {
      for (std::size_t x = 0; x < W; ++x, src += 3)
        rgb[3 * x] = src[2], rgb[3 * x + 1] = src[1], rgb[3 * x + 2] = src[0];
    } else {
      const int bytes = h.bits / 8;
      for (std::size_t x = 0; x < W; ++x, src += bytes) {
        const std::uint32_t px = bytes == 2 ? le16({src, 2}, 0) : le32({src, 4}, 0);
        rgb[3 * x] = h.r.get(px), rgb[3 * x + 1] = h.g.get(px), rgb[3 * x + 2] = h.b.get(px);
      }
    }
    if (C == 1) rgb_to_luma(rgb, W, dst);
  }
}

}  // namespace frugal::detail

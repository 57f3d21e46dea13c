// The EXIF orientation, found where PIL's getexif() finds it: a JPEG's first APP1 "Exif" segment,
// a PNG's eXIf chunk, a WebP's EXIF chunk, a TIFF's first IFD; and, when that holds no
// Orientation tag, `tiff:Orientation` in the XMP packet (JPEG APP1, PNG tEXt/iTXt, WebP "XMP ").
//
// Written by hand, not through libexif or exiv2: one tag of one IFD is needed, the parse is ~100
// lines that only compare offsets against the span they index (no allocation, at most
// kMaxExifEntries entries per IFD, a fixed number of segments or chunks per byte read), and the
// data comes from untrusted files (fuzz/exif_fuzz.cpp). A metadata library would parse every
// tag, maker notes included, to give us one number.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string_view>

#include "frugal/image/image.h"
#include "image/codecs.h"

namespace frugal {
namespace detail {
namespace {

struct Reader {
  std::span<const std::uint8_t> b;
  bool little = true;
  bool has(std::uint64_t at, std::uint64_t n) const { return at <= b.size() && n <= b.size() - at; }
  std::uint64_t u(std::uint64_t at, int n) const {  // caller checked has(at, n)
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= std::uint64_t{b[at + (little ? i : n - 1 - i)]} << (8 * i);
    return v;
  }
};

// The value of a one-value integer entry as PIL reads it (BYTE, SHORT, LONG, their signed kinds,
// BigTIFF's LONG8); nullopt for another type or count (PIL then holds a tuple or text, which
// exif_transpose ignores). `value` is the entry's inline value field.
std::optional<std::int64_t> integer_value(const Reader& r, std::uint32_t type, std::uint64_t count, std::uint64_t value,
                                          int field_bytes) {
  if (count != 1) return std::nullopt;
  if (type == 16 && field_bytes < 8) return std::nullopt;  // not inline in a classic TIFF; never an orientation
  switch (type) {
    case 1:
      return static_cast<std::int64_t>(r.u(value, 1));  // BYTE
    case 3:
      return static_cast<std::int64_t>(r.u(value, 2));  // SHORT
    case 4:
      return static_cast<std::int64_t>(r.u(value, 4));  // LONG
    case 6:
      return static_cast<std::int8_t>(r.u(value, 1));  // SBYTE
    case 8:
      return static_cast<std::int16_t>(r.u(value, 2));  // SSHORT
    case 9:
      return static_cast<std::int32_t>(r.u(value, 4));  // SLONG
    case 16:
      return static_cast<std::int64_t>(r.u(value, 8) & 0x7FFFFFFFFFFFFFFFull);  // LONG8
    default:
      return std::nullopt;
  }
}

// -1: no Orientation tag in the first IFD (or no IFD that parses); else its value, 0 when it is
// not one integer in 1-8.
int tiff_orientation_tag(std::span<const std::uint8_t> tiff) {
  Reader r{tiff};
  if (!r.has(0, 8)) return -1;
  if (tiff[0] == 'I' && tiff[1] == 'I') {
    r.little = true;
  } else if (tiff[0] == 'M' && tiff[1] == 'M') {
    r.little = false;
  } else {
    return -1;
  }
  const std::uint64_t magic = r.u(2, 2);
  const bool big = magic == 43;
  if (!big && magic != 42) return -1;
  if (big && (!r.has(0, 16) || r.u(4, 2) != 8 || r.u(6, 2) != 0)) return -1;
  const std::uint64_t ifd = big ? r.u(8, 8) : r.u(4, 4);
  const int count_bytes = big ? 8 : 2, entry_bytes = big ? 20 : 12, field_bytes = big ? 8 : 4;
  if (!r.has(ifd, count_bytes)) return -1;
  const std::uint64_t declared = r.u(ifd, count_bytes);
  const std::uint64_t first = ifd + count_bytes;
  // Only entries that lie whole inside the data, and a bounded number of them.
  const std::uint64_t room = (tiff.size() - first) / entry_bytes;
  const std::uint64_t n = std::min({declared, room, kMaxExifEntries});
  int found = -1;
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t e = first + i * entry_bytes;
    if (r.u(e, 2) != 0x0112) continue;
    const auto type = static_cast<std::uint32_t>(r.u(e + 2, 2));
    const std::uint64_t count = big ? r.u(e + 4, 8) : r.u(e + 4, 4);
    const std::optional<std::int64_t> v = integer_value(r, type, count, e + 4 + (big ? 8 : 4), field_bytes);
    // The last of duplicate tags wins, as in PIL's dict of tags.
    found = v && *v >= 1 && *v <= 8 ? static_cast<int>(*v) : 0;
  }
  return found;
}

// "tiff:Orientation" then '="' or '>' then one digit, as PIL's regular expression reads XMP:
// -1 when absent, else the digit (0 and 9 are not orientations).
int xmp_orientation(std::string_view xmp) {
  static constexpr std::string_view key = "tiff:Orientation";
  for (std::size_t at = xmp.find(key); at != std::string_view::npos; at = xmp.find(key, at + 1)) {
    std::size_t p = at + key.size();
    if (xmp.substr(p, 2) == "=\"")
      p += 2;
    else if (xmp.substr(p, 1) == ">")
      p += 1;
    else
      continue;
    if (p < xmp.size() && xmp[p] >= '0' && xmp[p] <= '9') return xmp[p] - '0';
  }
  return -1;
}

std::string_view text(std::span<const std::uint8_t> b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

// A found EXIF block after its "Exif\0\0" prefix (PIL strips one or two), then XMP if no tag.
int orientation_of(std::optional<std::span<const std::uint8_t>> exif, std::optional<std::string_view> xmp) {
  int tag = -1;
  if (exif) {
    std::span<const std::uint8_t> e = *exif;
    for (int k = 0; k < 2 && e.size() >= 6 && std::memcmp(e.data(), "Exif\0\0", 6) == 0; ++k) e = e.subspan(6);
    tag = tiff_orientation_tag(e);
  }
  if (tag < 0 && xmp) tag = xmp_orientation(*xmp);
  return tag >= 1 && tag <= 8 ? tag : 1;
}

int jpeg_orientation(std::span<const std::uint8_t> b) {
  static constexpr std::string_view xmp_id("http://ns.adobe.com/xap/1.0/\0", 29);
  std::optional<std::span<const std::uint8_t>> exif;
  std::optional<std::string_view> xmp;
  std::size_t p = 2;
  while (p + 1 < b.size()) {
    if (b[p] != 0xFF) break;  // not a marker: the header is damaged; what was found stands
    const std::uint8_t marker = b[p + 1];
    if (marker == 0xFF) {  // fill byte
      ++p;
      continue;
    }
    p += 2;
    if (marker == 0xDA || marker == 0xD9) break;                         // the scan (or the end): no metadata after it
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;  // no length
    if (p + 2 > b.size()) break;
    const std::size_t len = std::size_t{b[p]} << 8 | b[p + 1];
    if (len < 2 || p + len > b.size()) break;
    const std::span<const std::uint8_t> data = b.subspan(p + 2, len - 2);
    if (marker == 0xE1) {
      if (!exif && data.size() >= 6 && std::memcmp(data.data(), "Exif\0\0", 6) == 0)
        exif = data;
      else if (text(data).substr(0, xmp_id.size()) == xmp_id)
        xmp = text(data).substr(xmp_id.size());
    }
    p += len;
  }
  return orientation_of(exif, xmp);
}

// PIL reads an eXIf chunk before the image data at open; only when none is there does getexif()
// read the rest of the file, whose last eXIf then counts.
int png_orientation(std::span<const std::uint8_t> b) {
  std::optional<std::span<const std::uint8_t>> before_idat, after_idat;
  std::optional<std::string_view> xmp;
  bool seen_idat = false;
  static constexpr std::string_view xmp_key("XML:com.adobe.xmp\0", 18);
  Reader r{b, false};
  for (std::uint64_t p = 8; r.has(p, 8);) {
    const std::uint64_t len = r.u(p, 4);
    const std::string_view type = text(b.subspan(p + 4, 4));
    if (!r.has(p + 8, len)) break;
    const std::span<const std::uint8_t> data = b.subspan(p + 8, len);
    if (type == "IDAT") seen_idat = true;
    if (type == "IEND") break;
    if (type == "eXIf") (seen_idat ? after_idat : before_idat) = data;
    const std::string_view t = text(data);
    if (type == "tEXt" && t.substr(0, xmp_key.size()) == xmp_key) xmp = t.substr(xmp_key.size());
    // iTXt: keyword\0, compression flag, method, language\0, translated keyword\0, text. Only
    // uncompressed XMP is read (compressed XMP is rare; inflating it is not worth an orientation).
    if (type == "iTXt" && t.substr(0, xmp_key.size()) == xmp_key && t.size() > xmp_key.size() + 2 &&
        t[xmp_key.size()] == 0) {
      std::string_view rest = t.substr(xmp_key.size() + 2);
      for (int field = 0; field < 2; ++field) {
        const auto nul = rest.find('\0');
        rest = nul == std::string_view::npos ? std::string_view() : rest.substr(nul + 1);
      }
      xmp = rest;
    }
    p += 12 + len;
  }
  return orientation_of(before_idat ? before_idat : after_idat, xmp);
}

// libwebp's demuxer (PIL's reader) keeps EXIF and XMP chunks only of an extended file (VP8X)
// whose flags announce them; the first of each counts.
int webp_orientation(std::span<const std::uint8_t> b) {
  Reader r{b, true};
  if (!r.has(12, 18) || text(b.subspan(12, 4)) != "VP8X") return 1;
  const std::uint8_t flags = b[20];
  const bool has_exif = flags & 0x08, has_xmp = flags & 0x04;
  std::optional<std::span<const std::uint8_t>> exif;
  std::optional<std::string_view> xmp;
  for (std::uint64_t p = 12; r.has(p, 8);) {
    const std::uint64_t len = r.u(p + 4, 4);
    if (!r.has(p + 8, len)) break;
    const std::string_view type = text(b.subspan(p, 4));
    if (type == "EXIF" && has_exif && !exif) exif = b.subspan(p + 8, len);
    if (type == "XMP " && has_xmp && !xmp) xmp = text(b.subspan(p + 8, len));
    p += 8 + len + (len & 1);
  }
  return orientation_of(exif, xmp);
}

}  // namespace

int orientation_in_tiff(std::span<const std::uint8_t> tiff) {
  const int tag = tiff_orientation_tag(tiff);
  return tag >= 1 ? tag : 0;
}

}  // namespace detail

int exif_orientation(std::span<const std::uint8_t> bytes) {
  switch (sniff_format(bytes)) {
    case ImageFormat::jpeg:
      return detail::jpeg_orientation(bytes);
    case ImageFormat::png:
      return detail::png_orientation(bytes);
    case ImageFormat::webp:
      return detail::webp_orientation(bytes);
    case ImageFormat::tiff: {
      const int tag = detail::orientation_in_tiff(bytes);
      return tag >= 1 ? tag : 1;
    }
    default:
      return 1;
  }
}

}  // namespace frugal

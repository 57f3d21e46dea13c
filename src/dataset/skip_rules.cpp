// The rules are those layout.cpp applied inline; they live here so that predict counts what it
// skips by the same reasons as training.
#include "dataset/skip_rules.h"

#include <algorithm>
#include <cctype>

#include "frugal/archive/name_encoding.h"
#include "frugal/util/fs.h"

namespace frugal::detail {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string junk_reason(const std::vector<std::string>& parts) {
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    if (parts[i] == "__MACOSX") return "junk (__MACOSX)";
    if (parts[i][0] == '.') return "hidden";
  }
  const std::string& base = parts.back();
  // What a killed extract, pack or join left behind (a complete temporary is a valid image, and
  // was trained on): never a sample, wherever it was packed from.
  if (base.find(kTempMarker) != std::string::npos || base.ends_with(".frugal-join") ||
      base.ends_with(".frugal-join.state"))
    return "left by an interrupted write (*.frugal-tmp-*, *.frugal-join)";
  if (base.rfind("._", 0) == 0) return "junk (AppleDouble ._ file)";
  if (base == ".DS_Store" || base == "Thumbs.db" || lower(base) == "desktop.ini") return "junk (" + base + ")";
  if (base[0] == '.') return "hidden";
  return "";
}

std::string never_read_reason(const ZipEntry& e) {
  if (is_unsafe_name(e.raw_name) || is_unsafe_name(e.name)) return kUnsafeNameSkip;
  if (e.special == SpecialMember::sparse) return "sparse file (never read; extract it with tar)";
  if (e.special == SpecialMember::other) return "member of a kind frugal does not read (never read)";
  if (e.is_symlink || e.special != SpecialMember::none) return "link, device or FIFO (never read)";
  return "";
}

ImageFormat entry_format(const Archive& a, std::size_t i, const std::string& base) {
  if (auto v = a.stored_view(i)) return sniff_format(v->first(std::min<std::size_t>(v->size(), 32)));
  return format_from_extension(base);
}

std::string format_skip_reason(const ZipEntry& e, ImageFormat f) {
  if (e.size == 0) return "empty file";
  if (f == ImageFormat::unknown) return "not an image";
  if (f != ImageFormat::npy && !is_decodable(f)) return std::string("unsupported format (") + format_name(f) + ")";
  return "";
}

}  // namespace frugal::detail

// The rules are those layout.cpp applied inline; they live here so that predict counts what it
// skips by the same reasons as training.
#include "dataset/skip_rules.h"

#include <algorithm>
#include <cctype>

#include "frugal/archive/name_encoding.h"
#include "frugal/archive/read_limit.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"

namespace frugal::detail {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Extensions that say a file is no image (labels, metadata, code, documents, archives, other
// media): such a file is not opened to look at its bytes. Lower case, without the dot.
bool names_no_image(const std::string& base) {
  static constexpr std::string_view kNotImages[] = {
      "txt",    "csv", "tsv", "json",        "jsonl", "xml", "md",    "rst", "html", "htm",     "yaml",  "yml",
      "toml",   "ini", "cfg", "log",         "py",    "sh",  "ipynb", "pdf", "doc",  "docx",    "xls",   "xlsx",
      "zip",    "tar", "gz",  "tgz",         "bz2",   "xz",  "zst",   "7z",  "rar",  "parquet", "arrow", "pkl",
      "pickle", "pt",  "pth", "safetensors", "onnx",  "h5",  "hdf5",  "mat", "npz",  "mp4",     "avi",   "mov",
      "mkv",    "wav", "mp3", "flac",        "c",     "h",   "cpp",   "js",  "css",  "exe",     "dll",   "so"};
  const auto dot = base.rfind('.');
  if (dot == std::string::npos || dot == 0) return false;
  const std::string ext = lower(base.substr(dot + 1));
  return std::find(std::begin(kNotImages), std::end(kNotImages), ext) != std::end(kNotImages);
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
  if (e.is_symlink) switch (e.link_target) {
      case LinkTarget::folder_outside:
        return "link to a folder outside the data (never followed)";
      case LinkTarget::file_outside:
        return "link to a file outside the data (never read)";
      case LinkTarget::folder_cycle:
        return "link to a folder holding it (a cycle; never followed)";
      case LinkTarget::dangling:
        return "broken link (never read)";
      case LinkTarget::unknown:
        break;
    }
  if (e.is_symlink || e.special != SpecialMember::none) return "link, device or FIFO (never read)";
  return "";
}

ImageFormat entry_format(const Archive& a, std::size_t i, const std::string& base) {
  if (auto v = a.stored_view(i)) return sniff_format(v->first(std::min<std::size_t>(v->size(), 32)));
  const ImageFormat by_name = format_from_extension(base);
  if (by_name != ImageFormat::unknown || a.entries()[i].size == 0 || names_no_image(base)) return by_name;
  // A name that says nothing (no extension, or one of no known kind): its first bytes say.
  try {
    return sniff_format(read_entry_head(a, i, 32));
  } catch (const Error&) {
    return ImageFormat::unknown;  // unreadable here (encrypted, damaged): not taken as an image
  }
}

std::string format_skip_reason(const ZipEntry& e, ImageFormat f) {
  if (e.size == 0) return "empty file";
  if (f == ImageFormat::unknown) return "not an image";
  if (f != ImageFormat::npy && !is_decodable(f)) return std::string("unsupported format (") + format_name(f) + ")";
  return "";
}

}  // namespace frugal::detail

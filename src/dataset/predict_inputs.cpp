// predict's INPUTs to a list of images (predict_inputs.h says what each INPUT may be).
#include "frugal/dataset/predict_inputs.h"

#include <sys/stat.h>

#include <algorithm>
#include <sstream>

#include "dataset/skip_rules.h"
#include "frugal/archive/data_source.h"
#include "frugal/util/fs.h"
#include "frugal/util/input_path.h"
#include "frugal/util/text.h"

namespace frugal {
namespace fs = std::filesystem;

namespace {

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Formats predict decodes or names when it refuses them ("unsupported format (HEIC)"): a file
// given by name in one of them is an image to try, never DATA.
bool names_an_image(ImageFormat f) { return f != ImageFormat::unknown && f != ImageFormat::npy; }

ImageFormat sniff_file(const std::string& path) {
  UniqueFd fd = open_regular(path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ImageFormat::unknown;
  std::uint8_t head[32];
  const auto n = static_cast<std::size_t>(std::min<off_t>(st.st_size, sizeof head));
  pread_full(fd.get(), head, n, 0, path);
  return sniff_format({head, n});
}

// Why entry i of `a` is no image for predict, or "" when it is one to predict.
std::string skip_reason(const Archive& a, std::size_t i, const std::vector<std::string>& parts) {
  const ZipEntry& e = a.entries()[i];
  if (std::string why = detail::never_read_reason(e); !why.empty()) return why;
  if (std::string why = detail::junk_reason(parts); !why.empty()) return why;
  const ImageFormat f = detail::entry_format(a, i, parts.back());
  if (std::string why = detail::format_skip_reason(e, f); !why.empty()) return why;
  if (f == ImageFormat::npy) return "a .npy array (predict reads image files)";
  return "";
}

}  // namespace

PredictInputs PredictInputs::expand(const std::vector<std::string>& inputs, const ArchiveOptions& options) {
  PredictInputs p;
  for (const std::string& input : inputs) {
    try {
      const DataSpec spec = parse_data_spec(input);
      if (spec.rest.empty() && exists(input)) {
        if (is_dir(input))
          p.add_archive(input, input, "", options);
        else
          p.add_file(input, options);
      } else if (spec.rest.empty()) {
        if (is_shard_pattern(input)) {
          p.add_archive(input, input, "", options);
        } else {
          check_input(input, InputKind::file);  // throws: no such file, with a near name when there is one
          fail(ErrorKind::usage, input, "an image, a folder or DATA", "neither", "check the path");
        }
      } else if (const auto glob = spec.rest.find_first_of("*?["); glob != std::string::npos) {
        // ARCHIVE:GLOB; what stands before the glob's last ':' is DATA (outer.zip:inner.zip:*.jpg).
        const auto colon = spec.rest.rfind(':', glob);
        if (colon == std::string::npos)
          p.add_archive(input, spec.base.string(), spec.rest, options);
        else
          p.add_archive(input, spec.base.string() + ":" + spec.rest.substr(0, colon), spec.rest.substr(colon + 1),
                        options);
      } else {
        p.add_entry_or_data(input, spec.base.string(), spec.rest, options);
      }
    } catch (const Error& e) {
      p.problems_.push_back({input, e.kind(), e.what()});
    }
  }
  return p;
}

const Archive& PredictInputs::archive(const std::string& spec, const ArchiveOptions& options) {
  auto& a = archives_[spec];
  if (!a) {
    try {
      a = Archive::open(spec, options);
    } catch (...) {
      archives_.erase(spec);
      throw;
    }
  }
  return *a;
}

void PredictInputs::add_file(const std::string& input, const ArchiveOptions& options) {
  // An image is known by its extension without opening it (a shell's glob may give thousands);
  // a file without one is known by its bytes, and anything else is DATA, whose reader names what
  // it found (a tar, a parquet file, a text file, ...).
  if (!names_an_image(format_from_extension(input)) && !names_an_image(sniff_file(input))) {
    add_archive(input, input, "", options);
    return;
  }
  image_files_.push_back(check_input(input, InputKind::file));
  images_.push_back({input, image_id(input), nullptr, 0});
}

void PredictInputs::add_archive(const std::string& input, const std::string& spec, const std::string& glob,
                                const ArchiveOptions& options) {
  const Archive& a = archive(spec, options);
  const auto& entries = a.entries();
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (!entries[i].is_dir && (glob.empty() || entry_glob_match(glob, entries[i].name))) order.push_back(i);
  std::sort(order.begin(), order.end(),
            [&](std::size_t x, std::size_t y) { return entries[x].name < entries[y].name; });
  // A folder's images are named by their paths, which a user can open; an archive's as
  // ARCHIVE:entry, which predict takes back.
  const bool folder = options.root.empty() && is_dir(spec);
  SkipReport skips;
  std::vector<PredictImage> found;
  for (std::size_t i : order) {
    const std::string& name = entries[i].name;
    const std::vector<std::string> parts = split_path(name);
    if (parts.empty()) continue;
    if (std::string why = skip_reason(a, i, parts); !why.empty()) {
      if (skips.counts[why]++ == 0) skips.examples[why] = name;
      continue;
    }
    found.push_back(
        {folder ? (fs::path(spec) / name).generic_string() : a.display_name() + ":" + name, image_id(name), &a, i});
  }
  if (found.empty()) {
    const std::string what = glob.empty() ? "images" : "entries matching '" + glob + "'";
    const std::string there = order.empty() ? "none" : "only files that are not images: " + skips.summary();
    fail(ErrorKind::usage, glob.empty() ? input : a.display_name(), what, there,
         "list what it holds with 'frugal ls " + spec + "'");
  }
  images_.insert(images_.end(), found.begin(), found.end());
  if (skips.total() > 0) skipped_.push_back({input, std::move(skips)});
}

void PredictInputs::add_entry_or_data(const std::string& input, const std::string& base, const std::string& rest,
                                      const ArchiveOptions& options) {
  if (rest.ends_with('/')) return add_archive(input, input, "", options);
  // ARCHIVE:entry where the entry's name may hold a ':' itself; else the entry after the last ':'
  // of an archive inside another (outer.zip:inner.zip:a.jpg).
  std::string spec = base, entry = rest;
  const Archive* a = &archive(base, options);
  auto i = a->find(rest);
  if ((!i || a->entries()[*i].is_dir) && rest.find(':') != std::string::npos) {
    const auto colon = rest.rfind(':');
    spec = base + ":" + rest.substr(0, colon);
    entry = rest.substr(colon + 1);
    if (entry.empty()) return add_archive(input, spec, "", options);
    a = &archive(spec, options);
    i = a->find(entry);
  }
  if (!i || a->entries()[*i].is_dir) {
    // Not a file entry: a folder inside (DATA:SUB without its '/') or a name that is not there.
    if (names_an_image(format_from_extension(entry)))
      fail(ErrorKind::usage, a->display_name(), "an entry named '" + entry + "'", "none",
           "list the entries with 'frugal ls " + spec + "'");
    return add_archive(input, input, "", options);
  }
  const std::vector<std::string> parts = split_path(entry);
  if (!names_an_image(format_from_extension(entry)) && !parts.empty() &&
      !names_an_image(detail::entry_format(*a, *i, parts.back())))
    return add_archive(input, input, "", options);  // an archive inside, or what Archive::open names
  const bool folder = options.root.empty() && is_dir(spec);
  images_.push_back(
      {folder ? (fs::path(spec) / entry).generic_string() : a->display_name() + ":" + entry, image_id(entry), a, *i});
}

std::vector<fs::path> PredictInputs::files() const {
  std::vector<fs::path> out = image_files_;
  for (const auto& [spec, a] : archives_) {
    for (const fs::path& f : a->source().files()) out.push_back(f);
    if (is_dir(spec)) out.push_back(spec);
  }
  return out;
}

void PredictInputs::read(const PredictImage& image, std::vector<std::uint8_t>& out, std::uint64_t max_bytes) const {
  if (image.archive) return read_entry_capped(*image.archive, image.entry, out, max_bytes);
  out = read_file_capped(check_input(image.name, InputKind::file), max_bytes);
}

namespace {

// One character of a "[...]" set at p (after '['): whether `c` is in it, and where the set ends
// (npos when there is no ']': the '[' is then an ordinary character).
std::pair<bool, std::size_t> match_set(std::string_view pat, std::size_t p, char c) {
  std::size_t q = p;
  const bool negate = q < pat.size() && (pat[q] == '!' || pat[q] == '^');
  if (negate) ++q;
  bool in = false;
  for (bool first = true; q < pat.size() && (first || pat[q] != ']'); first = false) {
    char lo = pat[q++];
    if (lo == '\\' && q < pat.size()) lo = pat[q++];
    char hi = lo;
    if (q + 1 < pat.size() && pat[q] == '-' && pat[q + 1] != ']') {
      hi = pat[q + 1];
      q += 2;
    }
    if (static_cast<unsigned char>(lo) <= static_cast<unsigned char>(c) &&
        static_cast<unsigned char>(c) <= static_cast<unsigned char>(hi))
      in = true;
  }
  if (q >= pat.size()) return {false, std::string_view::npos};
  return {in != negate, q + 1};
}

// Memoised on (pattern position, name position): polynomial however many stars.
struct GlobMatcher {
  std::string_view pat, name;
  std::vector<signed char> memo;  // -1 unknown, else the answer

  bool at(std::size_t p, std::size_t n) {
    signed char& m = memo[p * (name.size() + 1) + n];
    if (m < 0) m = compute(p, n) ? 1 : 0;
    return m == 1;
  }

  bool compute(std::size_t p, std::size_t n) {
    if (p == pat.size()) return n == name.size();
    const char c = pat[p];
    if (c == '*' && p + 1 < pat.size() && pat[p + 1] == '*') {
      std::size_t after = p + 2;
      while (after < pat.size() && pat[after] == '*') ++after;
      if (after < pat.size() && pat[after] == '/' && at(after + 1, n)) return true;  // "**/": no folder at all
      for (std::size_t k = n; k <= name.size(); ++k)
        if (at(after, k)) return true;
      return false;
    }
    if (c == '*') {
      for (std::size_t k = n;; ++k) {
        if (at(p + 1, k)) return true;
        if (k == name.size() || name[k] == '/') return false;
      }
    }
    if (n == name.size()) return false;
    if (c == '?') return name[n] != '/' && at(p + 1, n + 1);
    if (c == '[') {
      const auto [in, end] = match_set(pat, p + 1, name[n]);
      if (end != std::string_view::npos) return name[n] != '/' && in && at(end, n + 1);
    }
    if (c == '\\' && p + 1 < pat.size()) return name[n] == pat[p + 1] && at(p + 2, n + 1);
    return name[n] == c && at(p + 1, n + 1);
  }
};

}  // namespace

bool entry_glob_match(std::string_view pattern, std::string_view name) {
  GlobMatcher m{pattern, name, std::vector<signed char>((pattern.size() + 1) * (name.size() + 1), -1)};
  return m.at(0, 0);
}

std::string image_id(std::string_view name) {
  if (const auto slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
  if (const auto dot = name.rfind('.'); dot != std::string_view::npos && dot > 0) name = name.substr(0, dot);
  return std::string(name);
}

}  // namespace frugal

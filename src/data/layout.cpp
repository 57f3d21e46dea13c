// From archive entries to labelled samples: junk and non-images skipped and counted, labels from
// a pattern, a labels.csv or class folders, and .npy members.
#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "data/dataset_shared.h"
#include "data/labels_csv.h"
#include "frugal/checked.h"
#include "frugal/settings_text.h"
#include "frugal/error.h"

namespace frugal {
namespace {

std::vector<std::string> split_path(const std::string& name) {
  std::vector<std::string> parts;
  std::stringstream s(name);
  for (std::string p; std::getline(s, p, '/');)
    if (!p.empty()) parts.push_back(p);
  return parts;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string extension(const std::string& base) {
  auto dot = base.rfind('.');
  return dot == std::string::npos ? "" : lower(base.substr(dot));
}

// The reason an entry is not a sample, or empty when it may be one.
std::string junk_reason(const std::vector<std::string>& parts) {
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    if (parts[i] == "__MACOSX") return "junk (__MACOSX)";
    if (parts[i][0] == '.') return "hidden";
  }
  const std::string& base = parts.back();
  if (base.rfind("._", 0) == 0) return "junk (AppleDouble ._ file)";
  if (base == ".DS_Store" || base == "Thumbs.db" || lower(base) == "desktop.ini") return "junk (" + base + ")";
  if (base[0] == '.') return "hidden";
  return "";
}

void count(SkipReport& r, const std::string& reason, const std::string& name) {
  if (r.counts[reason]++ == 0) r.examples[reason] = name;
}

// The format of entry i: by magic bytes when it is stored (a mapped view costs nothing), else by
// extension, checked again when decoding.
ImageFormat entry_format(const Archive& a, std::size_t i, const std::string& base) {
  if (auto v = a.stored_view(i)) return sniff_format(v->first(std::min<std::size_t>(v->size(), 8)));
  const std::string ext = extension(base);
  if (ext == ".jpg" || ext == ".jpeg" || ext == ".jpe" || ext == ".jfif") return ImageFormat::jpeg;
  if (ext == ".png") return ImageFormat::png;
  if (ext == ".npy") return ImageFormat::npy;
  return ImageFormat::unknown;
}

struct Candidate {
  std::size_t entry;
  std::vector<std::string> parts;
  ImageFormat format;
};

std::string join(const std::vector<std::string>& parts, std::size_t from, std::size_t to) {
  std::string s;
  for (std::size_t i = from; i < to; ++i) s += (s.empty() ? "" : "/") + parts[i];
  return s;
}

// Class names from the folder right below the deepest directory shared by every file; files
// lying in that shared directory itself are left out when others are in class folders.
std::vector<std::string> folder_labels(const std::vector<Candidate>& files) {
  std::vector<std::string> common;
  bool init = false;
  for (const auto& f : files) {
    std::vector<std::string> dir(f.parts.begin(), f.parts.end() - 1);
    if (!init) {
      common = dir;
      init = true;
    } else {
      std::size_t k = 0;
      while (k < common.size() && k < dir.size() && common[k] == dir[k]) ++k;
      common.resize(k);
    }
  }
  bool any_deeper = std::any_of(files.begin(), files.end(), [&](const Candidate& f) {
    return f.parts.size() - 1 > common.size();
  });
  std::vector<std::string> labels;
  for (const auto& f : files) {
    if (f.parts.size() - 1 > common.size())
      labels.push_back(f.parts[common.size()]);
    else if (!any_deeper && !common.empty())
      labels.push_back(common.back());  // one class folder holds everything
    else
      labels.push_back("");
  }
  return labels;
}

bool all_integers(const std::vector<std::string>& v) {
  return !v.empty() && std::all_of(v.begin(), v.end(), [](const std::string& s) {
    return !s.empty() && s.size() < 18 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  });
}

}  // namespace

// parse_npy has checked that the whole shape's byte size fits, and an array with samples has
// shape[0] >= 1, so these products cannot wrap.
std::size_t NpyArray::sample_bytes() const {
  std::size_t n = static_cast<std::size_t>(header.item_size);
  for (std::size_t i = 1; i < header.shape.size(); ++i) n *= static_cast<std::size_t>(header.shape[i]);
  return n;
}

std::span<const std::uint8_t> NpyArray::sample(std::int64_t i) const {
  return bytes.subspan(header.data_offset + static_cast<std::size_t>(i) * sample_bytes(), sample_bytes());
}

namespace {

struct LabelArray {
  std::size_t entry;
  std::string name;
  detail::NpyHeader header;
  std::vector<std::uint8_t> bytes;
  std::string damage;  // NpyArray::damage
};

std::string npy_stem(const std::string& name) {
  std::string base = lower(split_path(name).back());
  return base.size() > 4 ? base.substr(0, base.size() - 4) : base;
}

// The labels array's expected name for a data array's name: x_train -> y_train, images -> labels.
std::string labels_name_for(std::string stem) {
  for (auto [a, b] : {std::pair{"images", "labels"}, {"image", "label"}, {"data", "labels"}, {"x", "y"}}) {
    auto p = stem.find(a);
    if (p != std::string::npos) return stem.replace(p, std::string(a).size(), b);
  }
  return stem + "_labels";
}

// Pairs each (N, H, W[, C]) uint8 array with the (N,) integer array whose name matches it
// (x/y, images/labels, data/labels), or the only one of length N.
void pair_arrays(DatasetShared& d, std::vector<Candidate>& arrays, std::vector<std::pair<std::string, Sample>>& out) {
  std::vector<LabelArray> label_arrays;
  std::vector<NpyArray> data_arrays;
  std::vector<std::size_t> data_entries;
  for (const auto& c : arrays) {
    const Archive& a = *d.archive;
    const std::string& name = a.entries()[c.entry].name;
    NpyArray arr;
    arr.name = name;
    if (auto v = a.stored_view(c.entry)) {
      arr.bytes = *v;
      // Checked once here rather than per sample: one pass over the array at open.
      arr.damage = view_crc_problem(a, c.entry, arr.bytes);
    } else {
      arr.owned = a.read(c.entry);
      arr.bytes = arr.owned;
    }
    arr.header = detail::parse_npy(arr.bytes, a.display_name() + ":" + name);
    const auto& h = arr.header;
    if (h.shape.size() == 1 && (h.kind == 'i' || h.kind == 'u')) {
      label_arrays.push_back(
          {c.entry, name, h, std::vector<std::uint8_t>(arr.bytes.begin(), arr.bytes.end()), arr.damage});
    } else if (h.shape.size() >= 3 && h.kind == 'u' && h.item_size == 1) {
      data_arrays.push_back(std::move(arr));
    } else {
      count(d.open_skips, "unsupported .npy (not uint8 images or integer labels)", name);
    }
  }
  for (auto& arr : data_arrays) {
    const LabelArray* match = nullptr;
    int same_n = 0;
    for (const auto& l : label_arrays) {
      if (l.header.shape[0] != arr.header.shape[0]) continue;
      ++same_n;
      if (npy_stem(l.name) == labels_name_for(npy_stem(arr.name))) match = &l;
    }
    if (!match && same_n == 1)
      for (const auto& l : label_arrays)
        if (l.header.shape[0] == arr.header.shape[0]) match = &l;
    if (!match) {
      count(d.open_skips, "no label (array without a matching labels array)", arr.name);
      continue;
    }
    // Labels that fail their CRC could be any labels: the array's samples are as damaged.
    if (arr.damage.empty() && !match->damage.empty()) arr.damage = match->name + ": " + match->damage;
    std::size_t index = d.arrays.size();
    for (std::int64_t i = 0; i < arr.header.shape[0]; ++i) {
      Sample s;
      s.entry = index;
      s.item = i;
      s.name = arr.name + "[" + std::to_string(i) + "]";
      out.emplace_back(std::to_string(detail::npy_int(match->header, match->bytes, i)), std::move(s));
    }
    d.arrays.push_back(std::move(arr));
  }
}

}  // namespace

void scan_layout(DatasetShared& d) {
  const Archive& a = *d.archive;
  refuse_duplicate_names(a);  // "d/f" and "d/./f": which sample, which label? (exit 3, both named)
  std::vector<Candidate> files, arrays;
  std::optional<std::size_t> csv;
  std::size_t csv_depth = 0;
  for (std::size_t i = 0; i < a.entries().size(); ++i) {
    const ZipEntry& e = a.entries()[i];
    if (e.is_dir) continue;
    std::vector<std::string> parts = split_path(e.name);
    if (parts.empty()) continue;
    if (std::string why = junk_reason(parts); !why.empty()) {
      count(d.open_skips, why, e.name);
      continue;
    }
    if (lower(parts.back()) == "labels.csv" && (!csv || parts.size() < csv_depth)) {
      csv = i;
      csv_depth = parts.size();
      continue;
    }
    ImageFormat f = entry_format(a, i, parts.back());
    if (f == ImageFormat::unknown) {
      count(d.open_skips, "not an image", e.name);
      continue;
    }
    bool npy_array = false;
    if (f == ImageFormat::npy) {
      // Arrays of samples and label arrays are told apart by their header: ndim 1 or >= 3.
      // A header that does not parse makes a one-sample file: the loader meets it, skips it and
      // counts it against --max-bad-fraction like any undecodable image.
      try {
        std::vector<std::uint8_t> head;
        std::span<const std::uint8_t> bytes;
        if (auto v = a.stored_view(i)) {
          bytes = *v;
        } else {
          head = a.read(i);
          bytes = head;
        }
        auto h = detail::parse_npy(bytes, a.display_name() + ":" + e.name);
        // (H, W) and (H, W, C) are one sample; (N,) labels; (N, H, W) and (N, H, W, C) samples.
        npy_array = h.shape.size() == 1 || h.shape.size() == 4 ||
                    (h.shape.size() == 3 && !(h.shape[2] == 1 || h.shape[2] == 3 || h.shape[2] == 4));
      } catch (const Error& err) {
        if (err.kind() != ErrorKind::invalid && err.kind() != ErrorKind::unsupported) throw;
      }
    }
    (npy_array ? arrays : files).push_back({i, std::move(parts), f});
  }

  std::vector<std::pair<std::string, Sample>> labelled;  // (class name, sample)
  std::vector<std::string> labels;
  if (!d.options.label_pattern.empty()) {
    std::regex re;
    try {
      re = std::regex(d.options.label_pattern);
    } catch (const std::regex_error& err) {
      fail(ErrorKind::usage, "{label_pattern}", "a regular expression with one capture group",
           "\"" + d.options.label_pattern + "\" (" + err.what() + ")", "");
    }
    if (re.mark_count() != 1)
      fail(ErrorKind::usage, "{label_pattern}", "exactly one capture group",
           std::to_string(re.mark_count()) + " in \"" + d.options.label_pattern + "\"", "e.g. '^([a-z]+)\\.'");
    for (const auto& f : files) {
      std::smatch m;
      labels.push_back(std::regex_search(f.parts.back(), m, re) ? m[1].str() : "");
    }
  } else if (csv) {
    const std::vector<std::uint8_t> bytes = a.read(*csv);
    auto table = detail::parse_labels_csv(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                                          a.display_name() + ":" + a.entries()[*csv].name);
    std::vector<std::string> csv_dir = split_path(a.entries()[*csv].name);
    csv_dir.pop_back();
    for (const auto& f : files) {
      std::string full = join(f.parts, 0, f.parts.size());
      std::string rel = f.parts.size() > csv_dir.size() && std::equal(csv_dir.begin(), csv_dir.end(), f.parts.begin())
                            ? join(f.parts, csv_dir.size(), f.parts.size())
                            : full;
      auto it = table.find(rel);
      if (it == table.end()) it = table.find(full);
      labels.push_back(it == table.end() ? "" : it->second);
    }
  } else {
    labels = folder_labels(files);
  }
  for (std::size_t k = 0; k < files.size(); ++k) {
    const std::string& name = a.entries()[files[k].entry].name;
    if (labels[k].empty()) {
      count(d.open_skips,
            !d.options.label_pattern.empty() ? spell_settings("no label ({label_pattern} did not match)")
            : csv                            ? "no label (not in labels.csv)"
                                             : "no label (not in a class folder)",
            name);
      continue;
    }
    Sample s;
    s.entry = files[k].entry;
    s.name = name;
    labelled.emplace_back(labels[k], std::move(s));
  }
  pair_arrays(d, arrays, labelled);

  std::set<std::string> names;
  for (const auto& [c, s] : labelled) names.insert(c);
  d.classes.assign(names.begin(), names.end());
  if (all_integers(d.classes))  // "2" before "10", as the numbers were meant
    std::sort(d.classes.begin(), d.classes.end(), [](const std::string& x, const std::string& y) {
      return std::stoll(x) < std::stoll(y);
    });
  std::map<std::string, int> index;
  for (std::size_t i = 0; i < d.classes.size(); ++i)
    index[d.classes[i]] = checked_cast<int>(i, d.archive->display_name(), "the number of classes");
  d.samples.reserve(labelled.size());
  for (auto& [c, s] : labelled) {
    s.label = index[c];
    d.samples.push_back(std::move(s));
  }
}

}  // namespace frugal

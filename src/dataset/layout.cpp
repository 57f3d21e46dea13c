// From archive entries to labelled samples: junk and non-images skipped and counted, labels from
// a pattern, a labels.csv or class folders, and .npy members.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include <re2/re2.h>

#include "dataset/dataset_shared.h"
#include "dataset/labels_csv.h"
#include "dataset/skip_rules.h"
#include "frugal/dataset/predict_inputs.h"
#include "frugal/archive/read_limit.h"
#include "frugal/util/checked.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/archive/name_encoding.h"
#include "frugal/util/progress.h"
#include "frugal/util/settings_text.h"
#include "frugal/util/terminal.h"
#include "frugal/util/text.h"
#include "frugal/util/units.h"

namespace frugal {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The skip rules are predict's too (skip_rules.h).
using detail::entry_format;
using detail::format_skip_reason;
using detail::junk_reason;

void count(SkipReport& r, const std::string& reason, const std::string& name) {
  if (r.counts[reason]++ == 0) r.examples[reason] = name;
}

// Whether entry e's shown name lost bytes: stored without UTF-8 and repaired with U+FFFD (no
// --name-encoding, or one that did not decode it), so two such names can show alike and differ.
bool name_is_lossy(const ZipEntry& e) { return !e.name_is_utf8 && e.name.find("\xEF\xBF\xBD") != std::string::npos; }

// The name a sample is known by: the entry's name, or for a lossy one its stored bytes with each
// byte that is not UTF-8 escaped ("cls\xff/a.png", printable()): distinct per stored name, so the
// class folders "cls\xff" and "cls\xfe" stay two classes (both showed as "cls\uFFFD" and were
// trained as one), and safe to print and to store in a checkpoint.
std::string sample_name(const ZipEntry& e) { return name_is_lossy(e) ? printable(e.raw_name) : e.name; }

// Two entries naming one path ("d/f" and "d/./f") leave unclear which sample and label is meant:
// exit 3, both named. Compared by sample_name, so names that only show alike are not one path.
void refuse_duplicate_samples(const Archive& a, const std::vector<std::string>& names) {
  std::unordered_map<std::string, std::size_t> first;
  std::string list;
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.entries().size(); ++i) {
    if (!a.entries()[i].duplicate_name) continue;
    for (const std::size_t j : {static_cast<std::size_t>(a.entries()[i].duplicate_of), i}) {
      std::string key = normalize_relative(names[j]);
      if (key.empty()) key = names[j];
      const auto [it, added] = first.emplace(std::move(key), j);
      if (added || it->second == j) continue;
      if (++n <= 5) list += (list.empty() ? "'" : ", '") + names[j] + "' and '" + names[it->second] + "'";
    }
  }
  if (n == 0) return;
  if (n > 5) list += ", and " + std::to_string(n - 5) + " more";
  fail(ErrorKind::invalid, a.display_name(), "one entry per path",
       std::to_string(n) + " entr" + (n == 1 ? "y" : "ies") + " naming the same path as another: " + list,
       "it is unclear which one is meant; repack the archive without the duplicates ('frugal ls' marks them)");
}

// Said once per archive: which names are not UTF-8, how they are shown, and the encoding they
// look like (name_encoding.h's guess), for {name_encoding}.
void note_names_not_utf8(const Archive& a, const std::vector<std::size_t>& lossy) {
  if (lossy.empty()) return;
  std::vector<std::string> raw;
  for (std::size_t i : lossy) raw.push_back(a.entries()[i].raw_name);
  const std::vector<std::string> guess = guess_name_encodings(raw);
  std::string text = a.display_name() + ": " + std::to_string(lossy.size()) + " entry name" +
                     (lossy.size() == 1 ? " is" : "s are") + " not UTF-8 (e.g. " + sample_name(a.entries()[lossy[0]]) +
                     "); classes and messages show their bytes escaped as \\xHH. ";
  if (guess.empty()) {
    text += "If you know the encoding they were written in, give {name_encoding} (e.g. cp437, gbk, shift_jis)";
  } else {
    text += "They look like " + guess[0];
    for (std::size_t i = 1; i < guess.size(); ++i) text += (i + 1 == guess.size() ? " or " : ", ") + guess[i];
    text += ": if so, give {name_encoding} " + guess[0];
  }
  note(text);
}

struct Candidate {
  std::size_t entry;
  std::string name;  // sample_name()
  std::vector<std::string> parts;
  ImageFormat format;
};

std::string join(const std::vector<std::string>& parts, std::size_t from, std::size_t to) {
  std::string s;
  for (std::size_t i = from; i < to; ++i) s += (s.empty() ? "" : "/") + parts[i];
  return s;
}

// The directory shared by every file and whether any file lies below it (folder_labels' rule).
std::pair<std::vector<std::string>, bool> common_folder(const std::vector<Candidate>& files) {
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
  bool any_deeper =
      std::any_of(files.begin(), files.end(), [&](const Candidate& f) { return f.parts.size() - 1 > common.size(); });
  return {common, any_deeper};
}

// Class names from the folder right below the deepest directory shared by every file; files
// lying in that shared directory itself are left out when others are in class folders.
std::vector<std::string> folder_labels(const std::vector<Candidate>& files) {
  const auto [common, any_deeper] = common_folder(files);
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

// Where folder_labels found the class folders of the files kept (`files`): the folder their
// shared one is, or the one holding it when they all lie in one class folder (a class of JPEGs
// beside a class of only HEIC photos). nullopt when there are no files to tell.
std::optional<std::vector<std::string>> class_root(const std::vector<Candidate>& files) {
  if (files.empty()) return std::nullopt;
  auto [root, any_deeper] = common_folder(files);
  if (!any_deeper && !root.empty()) root.pop_back();
  return root;
}

// The class folder below `root` that a skipped file lies in; "" when it lies in none.
std::string folder_class_of(const std::optional<std::vector<std::string>>& root,
                            const std::vector<std::string>& parts) {
  if (!root || parts.size() - 1 <= root->size() || !std::equal(root->begin(), root->end(), parts.begin())) return "";
  return parts[root->size()];
}

bool all_integers(const std::vector<std::string>& v) {
  return !v.empty() && std::all_of(v.begin(), v.end(), [](const std::string& s) {
    return !s.empty() && s.size() < 18 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  });
}

// labels.csv in pieces as the archive reads it: memory is one line plus the table, whatever size
// the entry declares or inflates to (a line or a file past its bound stops the read at once).
std::map<std::string, std::string> read_labels_csv(const Archive& a, std::size_t entry) {
  const std::string where = a.display_name() + ":" + sample_name(a.entries()[entry]);
  if (a.entries()[entry].size > detail::kMaxLabelsCsvBytes)
    fail(ErrorKind::invalid, where, "a labels.csv of at most " + format_size(detail::kMaxLabelsCsvBytes),
         format_size(a.entries()[entry].size) + " declared",
         "split the labels over class folders, or shorten the file");
  detail::LabelsCsvParser parser(where);
  a.read_to(entry, [&parser](std::span<const std::uint8_t> piece) {
    parser.feed(std::string_view(reinterpret_cast<const char*>(piece.data()), piece.size()));
  });
  return parser.finish();
}

// --label-pattern: group 1 of a search in the file name, else (nothing found there) in the path:
// name patterns (fastai's '^(.+)_\d+\.jpg$') keep their meaning, patterns that need the folders
// ('^train/([a-z]+)\.') reach them. RE2, not std::regex: std::regex
// recurses per character (a 36 KB entry name overflowed the stack, SIGSEGV) and can backtrack
// exponentially; RE2 runs in time linear in the name, so any name a zip can hold (64 KiB) is safe.
class LabelPattern {
 public:
  explicit LabelPattern(const std::string& text) : re_(text, options()) {
    if (!re_.ok())
      fail(ErrorKind::usage, "{label_pattern}",
           "a regular expression in RE2 syntax (no backreferences or lookaround) with one capture group",
           "\"" + text + "\" (" + re_.error() + ")", "e.g. '^([a-z]+)_'");
    if (re_.NumberOfCapturingGroups() != 1)
      fail(ErrorKind::usage, "{label_pattern}", "exactly one capture group",
           std::to_string(re_.NumberOfCapturingGroups()) + " in \"" + text + "\"",
           "e.g. '^([a-z]+)_'; group without capturing as (?:...)");
  }
  // "" when the pattern matches neither or its group is empty: the file has no label.
  std::string label(const std::string& name, const std::string& path) const {
    std::string group;
    if (RE2::PartialMatch(name, re_, &group) && !group.empty()) return group;
    return RE2::PartialMatch(path, re_, &group) ? group : "";
  }

 private:
  static RE2::Options options() {
    RE2::Options o;
    o.set_log_errors(false);  // said once, in the usage error
    return o;
  }
  RE2 re_;
};

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
void pair_arrays(DatasetShared& d, std::vector<Candidate>& arrays, std::vector<std::pair<std::string, Sample>>& out,
                 std::string& paired) {
  std::vector<LabelArray> label_arrays;
  std::vector<NpyArray> data_arrays;
  std::vector<std::size_t> data_entries;
  for (const auto& c : arrays) {
    const Archive& a = *d.archive;
    const std::string& name = c.name;
    NpyArray arr;
    arr.name = name;
    if (auto v = a.stored_view(c.entry)) {
      arr.bytes = *v;
      // Checked once here rather than per sample: one pass over the array at open.
      arr.damage = view_crc_problem(a, c.entry, arr.bytes);
    } else {
      read_entry_capped(a, c.entry, arr.owned, d.options.max_file_bytes);  // sort_entries skipped larger ones
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
    const bool by_name = match != nullptr;
    if (!match && same_n == 1)
      for (const auto& l : label_arrays)
        if (l.header.shape[0] == arr.header.shape[0]) match = &l;
    if (!match) {
      count(d.open_skips, "no label (array without a matching labels array)", arr.name);
      continue;
    }
    paired += (paired.empty() ? "" : ", ") + arr.name + " by " + match->name +
              (by_name ? " (their names pair)" : " (the only labels array of its length)");
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

// A class the layout names (a folder, a labels.csv row, the pattern's group) whose every file was
// skipped is no class of the dataset: said by name with its files' reasons, and kept in the skip
// report, so that "found only class a" is not the whole story (a folder of HEIC photos).
void note_classes_without_images(DatasetShared& d, const std::vector<std::pair<Candidate, std::string>>& unusable,
                                 const std::vector<std::string>& labels, const std::set<std::string>& classes) {
  std::map<std::string, SkipReport> by_class;
  for (std::size_t k = 0; k < unusable.size(); ++k)
    if (!labels[k].empty() && !classes.count(labels[k]))
      count(by_class[labels[k]], unusable[k].second, unusable[k].first.name);
  constexpr std::size_t kShown = 5;
  std::size_t shown = 0;
  for (const auto& [name, report] : by_class) {
    std::string why;
    for (const auto& [reason, n] : report.counts) why += (why.empty() ? "" : ", ") + std::to_string(n) + " " + reason;
    d.open_skips.empty_classes[name] = why + " (e.g. " + report.examples.begin()->second + ")";
    if (shown++ < kShown)
      note(d.archive->display_name() + ": class \"" + printable(name) +
           "\" has no image frugal reads: every file was skipped (" + d.open_skips.empty_classes[name] + ")");
  }
  if (by_class.size() > kShown)
    note(std::to_string(by_class.size() - kShown) + " more classes have no image frugal reads");
}

// Whether the .npy entry `i` holds many samples or labels rather than one sample. Arrays of
// samples and label arrays are told apart by their header: ndim 1 or >= 3. A header that does not
// parse makes a one-sample file: the loader meets it, skips it and counts it against
// --max-bad-fraction like any undecodable image.
bool is_npy_array(const Archive& a, std::size_t i, const std::string& name) {
  try {
    const std::string where = a.display_name() + ":" + name;
    // The header only, read by its size: a 2 GB array was read whole for its 128 bytes (11 s).
    std::vector<std::uint8_t> head = read_entry_head(a, i, 12);
    const std::uint64_t header = detail::npy_header_size(head, where);
    if (header > detail::kMaxNpyHeaderBytes)
      fail(ErrorKind::invalid, where, "a .npy header of at most " + format_size(detail::kMaxNpyHeaderBytes),
           format_size(header), "save the array again with numpy.save");
    head = read_entry_head(a, i, static_cast<std::size_t>(header));
    auto h = detail::parse_npy_header(head, a.entries()[i].size, where);
    // (H, W) and (H, W, C) are one sample; (N,) labels; (N, H, W) and (N, H, W, C) samples.
    return h.shape.size() == 1 || h.shape.size() == 4 ||
           (h.shape.size() == 3 && !(h.shape[2] == 1 || h.shape[2] == 3 || h.shape[2] == 4));
  } catch (const Error& err) {
    if (err.kind() != ErrorKind::invalid && err.kind() != ErrorKind::unsupported) throw;
  }
  return false;
}

// Why entry i is too large to be read whole, or "": above {max_file_bytes}, decided from the size
// the archive lists before a byte is read, as an empty file is; an array of samples that is read in
// place (a mapped view, nothing copied) is exempt.
std::string size_skip_reason(const Archive& a, std::size_t i, bool npy_array, std::uint64_t max_bytes) {
  const std::uint64_t size = a.entries()[i].size;
  if (size <= max_bytes || (npy_array && a.stored_view(i))) return "";
  return file_size_skip_reason(size, max_bytes);
}

// The labels a reader holds beside its images (a parquet label column), unless {label_pattern} or
// {labels} says where the labels are.
const EntryLabels* reader_labels(const DatasetShared& d) {
  if (!d.options.label_pattern.empty() || d.csv_labels) return nullptr;
  return d.archive->entry_labels();
}

// {exclude}: whether the file is one of them. `full` is its path from the data's top (split folder
// included), `name` from the folder read; a pattern without '/' matches the file's name in any
// folder. A pattern is the path itself or a glob (entry_glob_match).
bool excluded(const std::vector<std::string>& patterns, const std::string& full, const std::string& name) {
  for (const std::string& p : patterns) {
    if (p == full || p == name) return true;
    if (p.find('/') == std::string::npos) {
      const auto slash = name.rfind('/');
      if (entry_glob_match(p, slash == std::string::npos ? name : name.substr(slash + 1))) return true;
    } else if (entry_glob_match(p, full) || entry_glob_match(p, name)) {
      return true;
    }
  }
  return false;
}

// The archive's entries sorted by what they are to the dataset.
struct Entries {
  std::vector<std::string> names;  // sample_name() of every entry
  std::vector<Candidate> files, arrays;
  std::vector<std::pair<Candidate, std::string>> unusable;  // skipped for their size or format, and why
  std::optional<std::size_t> csv;                           // the shallowest labels.csv
  std::uint64_t by_bytes = 0;  // samples whose name does not say image (no extension, .dat): taken by their bytes
  std::string by_bytes_example;
};

Entries sort_entries(DatasetShared& d) {
  const Archive& a = *d.archive;
  Entries out;
  std::vector<std::string>& names = out.names;
  names.reserve(a.entries().size());
  for (const ZipEntry& e : a.entries()) names.push_back(sample_name(e));
  refuse_duplicate_samples(a, names);
  std::vector<std::size_t> lossy;
  std::size_t csv_depth = 0;
  for (std::size_t i = 0; i < a.entries().size(); ++i) {
    const ZipEntry& e = a.entries()[i];
    if (e.is_dir) continue;
    // "/tmp/x.jpg", "../x.jpg", links, sparse files: never read, so never a sample (nor class "tmp").
    if (std::string why = detail::never_read_reason(e); !why.empty()) {
      const EntryLabels* el = reader_labels(d);  // a reader's own members are its to count (WebDataset)
      if (!el || el->sample_member.empty() || !el->sample_member[i]) count(d.open_skips, why, names[i]);
      continue;
    }
    std::vector<std::string> parts = split_path(names[i]);
    if (parts.empty()) continue;
    if (std::string why = junk_reason(parts); !why.empty()) {
      count(d.open_skips, why, names[i]);
      continue;
    }
    if (d.is_label_file(d.split_folder + names[i])) continue;
    if (const EntryLabels* el = reader_labels(d); el && !el->sample_member.empty() && el->sample_member[i]) continue;
    // {exclude}: what would be read as a sample is not (junk, links and label files keep their reasons).
    if (!d.options.exclude.empty() && excluded(d.options.exclude, d.split_folder + names[i], names[i])) {
      count(d.open_skips, "excluded", names[i]);
      continue;
    }
    if (name_is_lossy(e)) lossy.push_back(i);
    if (lower(parts.back()) == "labels.csv" && (!out.csv || parts.size() < csv_depth)) {
      out.csv = i;
      csv_depth = parts.size();
      continue;
    }
    ImageFormat f = entry_format(a, i, parts.back());
    if (std::string why = format_skip_reason(e, f); !why.empty()) {
      count(d.open_skips, why, names[i]);
      out.unusable.push_back({{i, names[i], std::move(parts), f}, std::move(why)});
      continue;
    }
    const bool npy_array = f == ImageFormat::npy && is_npy_array(a, i, names[i]);
    if (std::string why = size_skip_reason(a, i, npy_array, d.options.max_file_bytes); !why.empty()) {
      count(d.open_skips, why, names[i] + ", " + format_size(e.size));
      out.unusable.push_back({{i, names[i], std::move(parts), f}, std::move(why)});
      continue;
    }
    if (format_from_extension(parts.back()) == ImageFormat::unknown && out.by_bytes++ == 0)
      out.by_bytes_example = names[i];
    (npy_array ? out.arrays : out.files).push_back({i, names[i], std::move(parts), f});
  }
  note_names_not_utf8(a, lossy);
  return out;
}

// The class of each file and of each unusable file ("" for none), by the layout's rule: the label
// pattern, labels.csv, or class folders.
struct Labels {
  std::vector<std::string> files;
  std::vector<std::string> unusable;  // the class each skipped file would have had
  // Multi-label data: each file's tag set (CsvLabels::tag_sets()), its `files` entry kTagged
  std::vector<std::uint32_t> tag_sets;
};

// A file's class on multi-label data, where its tags are in Labels::tag_sets: only not "" (no row).
constexpr const char* kTagged = "(tags)";

// Classes from labels.csv: a file's row is its path from the csv's folder, else from the root.
// Labels that look like tag lists are refused as {labels}' are (CsvLabels::open): read as classes
// they would train one class per combination of tags.
Labels labels_from_csv(const Archive& a, const Entries& en, bool labels_are_classes) {
  auto table = read_labels_csv(a, *en.csv);
  if (!labels_are_classes) {
    std::set<std::string> distinct;
    for (const auto& [path, label] : table) distinct.insert(label);
    char sep = ' ';
    if (const std::string tags = detail::tag_lists_seen({distinct.begin(), distinct.end()}, &sep); !tags.empty())
      fail(ErrorKind::usage, a.display_name() + ":" + en.names[*en.csv], "one class per label", tags,
           std::string("if each image has several tags (multi-label), give {label_separator} '") + sep +
               "' (it reads this labels.csv as {labels} does); if each whole label is one class, add "
               "{labels_are_classes}");
  }
  std::vector<std::string> csv_dir = split_path(en.names[*en.csv]);
  csv_dir.pop_back();
  auto label_of = [&](const Candidate& f) {
    std::string full = join(f.parts, 0, f.parts.size());
    std::string rel = f.parts.size() > csv_dir.size() && std::equal(csv_dir.begin(), csv_dir.end(), f.parts.begin())
                          ? join(f.parts, csv_dir.size(), f.parts.size())
                          : full;
    auto it = table.find(rel);
    if (it == table.end()) it = table.find(full);
    return it == table.end() ? std::string() : it->second;
  };
  Labels out;
  for (const auto& f : en.files) out.files.push_back(label_of(f));
  for (const auto& [f, why] : en.unusable) out.unusable.push_back(label_of(f));
  return out;
}

Labels labels_from_reader(const EntryLabels& el, const Entries& en) {
  auto label_of = [&](std::size_t entry) {
    const auto& l = el.label[entry];
    return l ? std::to_string(*l) : el.text.empty() ? std::string() : el.text[entry];
  };
  Labels out;
  for (const auto& f : en.files) out.files.push_back(label_of(f.entry));
  for (const auto& [f, why] : en.unusable) out.unusable.push_back(label_of(f.entry));
  return out;
}

// The words of a folder name, lower-cased: "seg_train" -> seg, train.
std::vector<std::string> name_words(const std::string& name) {
  std::vector<std::string> words(1);
  for (const char c : lower(name))
    if (std::isalnum(static_cast<unsigned char>(c)))
      words.back() += c;
    else if (!words.back().empty())
      words.emplace_back();
  return words;
}

// Class folders named as splits (seg_train/ and seg_test/, train_images/ and test_images/) are
// no classes: trained on, a model would learn which split an image is from, test images included.
// Exit 2 naming {data_root}, which says which one to train on.
void refuse_split_like_classes(const DatasetShared& d, const std::vector<std::string>& classes) {
  std::string train, other;
  for (const std::string& c : classes)
    for (const std::string& w : name_words(c)) {
      if (w == "train" || w == "training") train = c;
      if (w == "test" || w == "testing" || w == "val" || w == "valid" || w == "validation") other = c;
    }
  if (train.empty() || other.empty() || train == other) return;
  fail(ErrorKind::usage, d.archive->display_name(), "class folders (one folder per class)",
       "folders named as splits, \"" + printable(train) + "\" and \"" + printable(other) + "\", as its classes",
       "name the folder to read: " + printable(d.archive->display_name()) + ":" + printable(train) + "/ ({data_root} " +
           printable(train) + "/ in train; " + printable(d.archive->display_name()) + ":" + printable(other) +
           "/ to validate or evaluate on the other)");
}

Labels label_entries(DatasetShared& d, const Entries& en) {
  Labels out;
  if (!d.options.label_pattern.empty()) {
    const LabelPattern pattern(d.options.label_pattern);
    for (const auto& f : en.files) out.files.push_back(pattern.label(f.parts.back(), f.name));
    for (const auto& [f, why] : en.unusable) out.unusable.push_back(pattern.label(f.parts.back(), f.name));
  } else if (d.csv_labels && d.csv_labels->multi_label()) {
    std::vector<std::string> paths;  // relative to the data, as the CSV's ids are
    for (const auto& f : en.files) {
      const auto set = d.csv_labels->tag_set(paths.emplace_back(d.split_folder + f.name));
      out.files.push_back(set ? kTagged : "");
      out.tag_sets.push_back(set.value_or(0));
    }
    out.unusable.assign(en.unusable.size(), "");  // no class to say is left without images
    d.csv_labels->finish(d.open_skips, d.split_folder, paths);
  } else if (d.csv_labels) {
    std::vector<std::string> paths;  // relative to the data, as the CSV's ids are
    for (const auto& f : en.files)
      out.files.push_back(d.csv_labels->label(paths.emplace_back(d.split_folder + f.name)));
    for (const auto& [f, why] : en.unusable) out.unusable.push_back(d.csv_labels->label(d.split_folder + f.name));
    d.csv_labels->finish(d.open_skips, d.split_folder, paths);
  } else if (const EntryLabels* el = reader_labels(d)) {
    out = labels_from_reader(*el, en);
  } else if (en.csv) {
    out = labels_from_csv(*d.archive, en, d.options.labels_are_classes);
  } else {
    out.files = folder_labels(en.files);
    refuse_split_like_classes(d, out.files);
    const auto root = class_root(en.files);
    for (const auto& [f, why] : en.unusable) out.unusable.push_back(folder_class_of(root, f.parts));
  }
  return out;
}

// (class name, sample) for every file with a class; the others are counted as skipped.
std::vector<std::pair<std::string, Sample>> labelled_files(DatasetShared& d, const Entries& en, const Labels& labels) {
  std::vector<std::pair<std::string, Sample>> labelled;
  for (std::size_t k = 0; k < en.files.size(); ++k) {
    const std::string& name = en.files[k].name;
    if (labels.files[k].empty()) {
      const EntryLabels* el = reader_labels(d);
      count(d.open_skips,
            !d.options.label_pattern.empty() ? spell_settings("no label ({label_pattern} did not match)")
            : d.csv_labels                   ? d.csv_labels->no_label_reason()
            : el && !el->no_label.empty()    ? el->no_label
            : el && el->column.empty()       ? "no label (no integer label column)"
            : el                             ? "no label (null or negative in column " + el->column + ")"
            : en.csv                         ? "no label (not in labels.csv)"
                                             : "no label (not in a class folder)",
            name);
      continue;
    }
    Sample s;
    s.entry = en.files[k].entry;
    s.name = name;
    if (!labels.tag_sets.empty()) s.tag_set = labels.tag_sets[k];
    labelled.emplace_back(labels.files[k], std::move(s));
  }
  return labelled;
}

// A tag the labels file names that no image of the data read has: a class of no positive sample
// (its rows' images missing, skipped, or in another split), said with up to 5 names.
void note_tags_without_images(const DatasetShared& d) {
  std::vector<bool> seen(d.classes.size());
  for (const Sample& s : d.samples)
    for (const std::uint32_t t : d.tag_sets[s.tag_set]) seen[t] = true;
  std::string names;
  std::size_t n = 0;
  for (std::size_t k = 0; k < seen.size(); ++k)
    if (!seen[k] && n++ < 5) names += (names.empty() ? "\"" : ", \"") + printable(d.classes[k]) + "\"";
  if (n > 5) names += ", and " + std::to_string(n - 5) + " more";
  if (n > 0)
    note(d.archive->display_name() + ": " + count_of(n, "tag") + " of the labels no image read here has (" + names +
         "): " + (n == 1 ? "it is kept as a class" : "they are kept as classes") + " with no positive sample");
}

// Multi-label data: the classes are every tag the labels file names (so that each split of one
// file has the same ones), in the order classes have; the samples keep their tag sets, renumbered.
void assign_tags(DatasetShared& d, std::vector<std::pair<std::string, Sample>>& labelled) {
  const CsvLabels& csv = *d.csv_labels;
  const std::vector<std::string>& names = csv.tag_names();
  std::vector<std::uint32_t> order(names.size());
  for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  const bool numbers = all_integers(names);
  std::sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) {
    return numbers ? std::stoll(names[x]) < std::stoll(names[y]) : names[x] < names[y];
  });
  std::vector<std::uint32_t> rank(names.size());
  d.classes.clear();
  for (std::uint32_t k = 0; k < order.size(); ++k) {
    rank[order[k]] = k;
    d.classes.push_back(names[order[k]]);
  }
  d.multi_label = true;
  d.tag_sets.clear();
  for (const auto& set : csv.tag_sets()) {
    std::vector<std::uint32_t>& tags = d.tag_sets.emplace_back();
    for (const std::uint32_t t : set) tags.push_back(rank[t]);
    std::sort(tags.begin(), tags.end());
  }
  d.samples.reserve(labelled.size());
  for (auto& [c, s] : labelled) {
    if (s.item >= 0)
      fail(ErrorKind::usage, d.where(s), "images labelled by {labels} on multi-label data",
           "a sample of an array labelled by a labels array", "give the images as files, or leave out the arrays");
    s.label = -1;
    d.samples.push_back(std::move(s));
  }
  if (d.class_names) name_classes(d.classes, *d.class_names);
  note_tags_without_images(d);
}

// The dataset's classes (numbers in numeric order, names sorted) and its samples with their labels.
void assign_classes(DatasetShared& d, std::vector<std::pair<std::string, Sample>>& labelled, const Entries& en,
                    const Labels& labels) {
  std::set<std::string> class_names;
  for (const auto& [c, s] : labelled) {
    // A class folder, a {label_pattern} group, a reader's label: the limit of label files too.
    if (c.size() > detail::kMaxClassNameBytes)
      detail::check_class_name_length(c, d.archive->display_name() + ":" + s.name);
    class_names.insert(c);
  }
  d.classes.assign(class_names.begin(), class_names.end());
  if (all_integers(d.classes))  // "2" before "10", as the numbers were meant
    std::sort(d.classes.begin(), d.classes.end(),
              [](const std::string& x, const std::string& y) { return std::stoll(x) < std::stoll(y); });
  note_classes_without_images(d, en.unusable, labels.unusable, class_names);
  std::map<std::string, int> index;
  for (std::size_t i = 0; i < d.classes.size(); ++i)
    index[d.classes[i]] = checked_cast<int>(i, d.archive->display_name(), "the number of classes");
  d.samples.reserve(labelled.size());
  for (auto& [c, s] : labelled) {
    s.label = index[c];
    d.samples.push_back(std::move(s));
  }
  if (d.class_names) {
    name_classes(d.classes, *d.class_names);  // the same order, named
  } else if (const EntryLabels* el = reader_labels(d); el && !el->class_names.empty()) {
    ClassNames names;
    names.where = d.archive->display_name() + " (its huggingface metadata)";
    for (std::size_t i = 0; i < el->class_names.size(); ++i)
      names.names[static_cast<long long>(i)] = el->class_names[i];
    name_classes(d.classes, names);
  }
}

// What a reader's labels are, in words: the parquet column taken (and why that one), WebDataset
// members, CIFAR's label lists.
std::string reader_labels_read(const DatasetShared& d, const EntryLabels& el) {
  const std::string format = d.archive->format();
  if (format == "cifar")
    return "CIFAR's " + el.column + " lists" +
           (el.column == "fine_labels" && d.options.label_kind.empty()
                ? spell_settings(" (the 100 fine labels; {label_kind} coarse takes the 20 superclasses)")
                : std::string());
  if (format != "parquet" && format != "arrow") return "each sample's .cls, .txt or .json member (WebDataset)";
  if (el.column.empty()) return "none: its rows have no integer column";
  return "column '" + el.column + "' of its rows" +
         (el.column == "label" || el.column == "labels" ? "" : " (the first integer column: none is named label)") +
         "; class names " +
         (d.class_names             ? "from " + d.class_names->where
          : !el.class_names.empty() ? std::string("from its ClassLabel metadata")
                                    : spell_settings("are its integers ({class_names} names them)"));
}

// Where the labels came from and by which rule (Dataset::label_source(), labels_read()): what the
// line at the start and the "data" record say of them.
void describe_labels(DatasetShared& d, const Entries& en, const std::string& paired) {
  const std::string data = d.archive->display_name();
  const char* as_classes = d.options.labels_are_classes ? ": each whole label one class (labels_are_classes set)"
                                                        : ": each label one class (no label looked like a tag list)";
  if (!d.options.label_pattern.empty()) {
    d.label_source = "label_pattern";
    d.labels_read = "group 1 of '" + d.options.label_pattern + "' ({label_pattern}) in each file's name, else its path";
  } else if (d.csv_labels) {
    d.label_source = "labels";
    // {labels}, or the labels.csv in the data that {label_separator} and the like read as it;
    // multi-label: how the tags were read is train_val.cpp's to say.
    const std::string file = d.options.labels.empty() ? d.csv_labels->where() : d.options.labels;
    d.labels_read = file + (d.csv_labels->multi_label() ? "" : as_classes);
  } else if (const EntryLabels* el = reader_labels(d)) {
    d.label_source = "reader";
    d.labels_read = reader_labels_read(d, *el);
  } else if (en.csv) {
    d.label_source = "labels_csv";
    d.labels_read = data + ":" + en.names[*en.csv] + " (a labels.csv found in the data, path,label rows)" + as_classes;
  } else if (!en.files.empty() || paired.empty()) {
    const auto root = class_root(en.files);
    d.label_source = "class_folders";
    d.labels_read = "class folders: the folders right below " +
                    (root && !root->empty() ? data + ":" + join(*root, 0, root->size()) + "/" : "the top of " + data);
  } else {
    d.label_source = "arrays";
  }
  if (!paired.empty()) d.labels_read += (d.labels_read.empty() ? "" : "; ") + (".npy labels arrays: " + paired);
  d.labels_read = spell_settings(d.labels_read);
}

}  // namespace

void scan_layout(DatasetShared& d) {
  if (const EntryLabels* el = d.archive->entry_labels())  // rows that are no entry (no image bytes)
    for (const auto& [why, n] : el->skipped) {
      if (d.open_skips.counts[why] == 0) d.open_skips.examples[why] = el->examples.at(why);
      d.open_skips.counts[why] += n;
    }
  Entries entries = sort_entries(d);
  if (entries.by_bytes > 0) {  // decided by the bytes, not said by the names: said, and recorded
    d.taken_by_bytes = count_of(entries.by_bytes, "file") + " whose name does not say image (e.g. " +
                       entries.by_bytes_example + ") " +
                       (entries.by_bytes == 1 ? "is an image by its bytes" : "are images by their bytes");
    note(d.archive->display_name() + ": " + d.taken_by_bytes + ": read as such");
  }
  const Labels labels = label_entries(d, entries);
  std::vector<std::pair<std::string, Sample>> labelled = labelled_files(d, entries, labels);
  std::string paired;  // which arrays label which
  pair_arrays(d, entries.arrays, labelled, paired);
  describe_labels(d, entries, paired);
  if (d.csv_labels && d.csv_labels->multi_label())
    assign_tags(d, labelled);
  else
    assign_classes(d, labelled, entries, labels);
}

}  // namespace frugal

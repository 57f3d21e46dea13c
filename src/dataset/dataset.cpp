#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>

#include "dataset/dataset_shared.h"
#include "frugal/archive/archive.h"
#include "frugal/archive/data_source.h"
#include "frugal/archive/webdataset.h"
#include "frugal/util/error.h"
#include "frugal/util/hash.h"
#include "frugal/util/progress.h"

namespace frugal {

std::uint64_t SkipReport::total() const {
  std::uint64_t n = 0;
  for (const auto& [reason, c] : counts) n += c;
  return n;
}

std::string SkipReport::summary() const {
  std::string s;
  for (const auto& [reason, c] : counts) {
    if (!s.empty()) s += ", ";
    s += std::to_string(c) + " " + reason;
    auto ex = examples.find(reason);
    if (ex != examples.end()) s += " (e.g. " + ex->second + ")";
  }
  return s.empty() ? "nothing" : s;
}

namespace {
// Off only for bench/loader.sh's A/B of what the check costs; never a user option.
bool crc_checks_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("FRUGAL_BENCH_NO_CRC");
    return !(v && std::string(v) == "1");
  }();
  return on;
}

// The split folders at the top of the data (under one wrapping folder at most), or nullopt when
// its top level is anything else: every folder there must be a split name, train/ among them.
struct SplitFolders {
  std::string train, validation, test;  // "prefix/name/" as in the data; "" when absent
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::optional<SplitFolders> find_split_folders(const Archive& a) {
  auto folders_under = [&](const std::string& prefix) {
    std::set<std::string> names;
    for (const ZipEntry& e : a.entries()) {
      if (e.name.size() <= prefix.size() || e.name.compare(0, prefix.size(), prefix) != 0) continue;
      const std::string rest = e.name.substr(prefix.size());
      const auto slash = rest.find('/');
      if (slash == std::string::npos || slash == 0) continue;  // a file at this level
      const std::string first = rest.substr(0, slash);
      if (first == "__MACOSX" || first[0] == '.') continue;  // junk, hidden: never classes either
      names.insert(first);
    }
    return names;
  };
  std::string prefix;
  std::set<std::string> names = folders_under(prefix);
  if (names.size() == 1 && lower(*names.begin()) != "train") {
    prefix = *names.begin() + "/";
    names = folders_under(prefix);
  }
  SplitFolders f;
  for (const std::string& n : names) {
    const std::string l = lower(n);
    std::string* slot = l == "train"                                      ? &f.train
                        : l == "val" || l == "valid" || l == "validation" ? &f.validation
                        : l == "test"                                     ? &f.test
                                                                          : nullptr;
    if (!slot || !slot->empty()) return std::nullopt;  // a class folder, or two spellings of a split
    *slot = prefix + n + "/";
  }
  // train/ alone is a common root of class folders, as it always was: splits take two of them.
  if (f.train.empty() || (f.validation.empty() && f.test.empty())) return std::nullopt;
  return f;
}

// A Hugging Face data/ folder holds one split per file name (train-00000-of-00001.parquet,
// validation-*, test-*): split files, read one split at a time as split folders are, so that
// test rows never train. Nullopt unless DATA is a folder of parquet files only (the folder
// data_source.cpp reads as one parquet set) with two splits or more among their names.
std::optional<SplitFiles> dataset_dict_split_files(const std::filesystem::path& path);

// Files of one set named as splits elsewhere than first (mnist_train.parquet and
// mnist_test.parquet; shards-train-000.tar and shards-test-000.tar): read as one set, the test
// rows would train. Exit 2 naming {data}, which says which files to read.
// Which split a file name names by a word of it ("mnist_test.parquet": 't'; 'v' validation,
// 'T' train), else 0.
char split_word(const std::string& name) {
  char seen = 0;
  std::string word;
  for (const char c : lower(name) + ".") {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word += c;
      continue;
    }
    if (word == "train" || word == "training") seen = 'T';
    if (!seen && (word == "test" || word == "testing")) seen = 't';
    if (!seen && (word == "val" || word == "valid" || word == "validation")) seen = 'v';
    word.clear();
  }
  return seen;
}

void refuse_split_named_set(const std::string& data, const std::vector<std::string>& names, const std::string& glob) {
  std::string train, other;
  for (const std::string& n : names) {
    const char w = split_word(std::filesystem::path(n).filename().string());
    if (w == 'T') train = n;
    if (w == 't' || w == 'v') other = n;
  }
  if (train.empty() || other.empty()) return;
  fail(ErrorKind::usage, data, "the files of one split, or files named by split (train-*, validation-*, test-*)",
       "files named as two splits, " + std::filesystem::path(train).filename().string() + " and " +
           std::filesystem::path(other).filename().string() + ", read as one set (the test rows would train)",
       "give the files to train on as a glob: {data} '" + glob + "'");
}

std::optional<SplitFiles> find_split_files(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return std::nullopt;
  if (auto dict = dataset_dict_split_files(path)) return dict;
  std::vector<std::string> names, arrow;  // .arrow files (data/train-*.arrow) when there is no .parquet
  for (const auto& e : fs::directory_iterator(path, ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    if (e.is_directory(ec)) return std::nullopt;
    if (e.path().extension() == ".parquet" && e.is_regular_file(ec)) names.push_back(name);
    if (e.path().extension() == ".arrow" && e.is_regular_file(ec)) arrow.push_back(name);
  }
  const std::string ext = names.empty() && !arrow.empty() ? ".arrow" : ".parquet";
  if (names.empty()) names = std::move(arrow);
  std::sort(names.begin(), names.end());
  SplitFiles f;
  std::string prefix[3], unnamed;  // the spelling of each split ("train-"), as the glob takes it
  for (const std::string& n : names) {
    const auto end = n.find_first_of("-_.");
    const std::string l = lower(n.substr(0, end));
    const int k = l == "train" ? 0 : l == "val" || l == "valid" || l == "validation" ? 1 : l == "test" ? 2 : -1;
    if (k < 0) {
      unnamed = n;
      continue;
    }
    const std::string p = n.substr(0, end + 1);
    if (!prefix[k].empty() && prefix[k] != p)
      fail(ErrorKind::usage, path.string(), "one spelling of each split in its parquet files' names",
           "both " + prefix[k] + "* and " + p + "*",
           "give the files to read as a glob, e.g. '{data} DIR/train-*.parquet'");
    prefix[k] = p;
    std::string& list = k == 0 ? f.train : k == 1 ? f.validation : f.test;
    list += (list.empty() ? "" : ", ") + n;
  }
  if ((prefix[0].empty() ? 0 : 1) + (prefix[1].empty() ? 0 : 1) + (prefix[2].empty() ? 0 : 1) < 2) {
    refuse_split_named_set(path.string(), names, (path / ("*train*" + ext)).string());
    return std::nullopt;
  }
  if (prefix[0].empty() || !unnamed.empty())
    fail(ErrorKind::usage, path.string(), "parquet files of a train split (train-*.parquet) beside the others",
         prefix[0].empty() ? "validation or test files only" : "split files and " + unnamed + ", of no split",
         "give the files to train on as a glob: {data} '" + (path / "NAME-*.parquet").string() + "'");
  for (int k = 0; k < 3; ++k)
    if (!prefix[k].empty()) f.glob[k] = (path / (prefix[k] + "*" + ext)).string();
  if (ext == ".arrow") f.what = "Arrow files named by split";
  return f;
}

// A DatasetDict.save_to_disk folder: its train, validation (val, valid) and test splits, each read
// by its folder; a split of another name is never read. Exit 2 when it has no train split.
std::optional<SplitFiles> dataset_dict_split_files(const std::filesystem::path& path) {
  const auto splits = hf_dataset_dict_splits(path);
  if (!splits) return std::nullopt;
  SplitFiles f;
  f.what = "a Hugging Face DatasetDict folder (dataset_dict.json)";
  std::string all;
  for (const std::string& s : *splits) {
    all += (all.empty() ? "" : ", ") + s;
    const std::string l = lower(s);
    const int k = l == "train" ? 0 : l == "val" || l == "valid" || l == "validation" ? 1 : l == "test" ? 2 : -1;
    if (k < 0 || !f.glob[k].empty()) continue;
    std::string& list = k == 0 ? f.train : k == 1 ? f.validation : f.test;
    for (const std::string& n : hf_saved_files(path / s)) list += (list.empty() ? "" : ", ") + s + "/" + n;
    f.glob[k] = (path / s).string();
    if (k == 2) f.test_data = path.string() + ":" + s;
  }
  if (f.glob[0].empty())
    fail(ErrorKind::usage, path.string(), "a train split among its splits (dataset_dict.json)", all,
         "name the split to read: {data} " + path.string() + ":" + splits->front());
  return f;
}

}  // namespace

std::string view_crc_problem(const Archive& a, std::size_t entry, std::span<const std::uint8_t> bytes) {
  const ZipEntry& e = a.entries()[entry];
  if (!crc_checks_enabled() || !e.has_crc32) return "";  // tar members, a folder's files: nothing to check
  const std::uint32_t crc = crc32(0, bytes.data(), bytes.size());
  if (crc == e.crc32) return "";
  // A part that shrank under its mapping reads as zeros: that is exit 3 for the whole set, not a
  // damaged sample to skip (Archive::read checks the same before its CRC).
  a.source().check_intact();
  char buf[64];
  std::snprintf(buf, sizeof buf, "CRC-32 %08x (the archive records %08x)", crc, e.crc32);
  return buf;
}

namespace {

// The bytes of a file sample, checked as `frugal verify` checks them: a view into the mapped
// archive when stored (its CRC-32 computed here: libdeflate's runs at 10+ GB/s, microseconds per
// photo), else inflated into `buf` by Archive::read, which checks it.
std::span<const std::uint8_t> entry_bytes(const Archive& a, std::size_t entry, std::vector<std::uint8_t>& buf,
                                          std::uint64_t max_bytes) {
  // open() left larger files out (layout.cpp); held here too, so no caller reads one whole.
  check_file_size(a.display_name() + ":" + a.entries()[entry].name, a.entries()[entry].size, max_bytes);
  if (auto v = a.stored_view(entry)) {
    if (auto why = view_crc_problem(a, entry, *v); !why.empty())
      fail(ErrorKind::invalid, a.display_name() + ":" + a.entries()[entry].name, "bytes matching their CRC-32", why,
           "the archive is damaged; copy it again (frugal verify lists every damaged entry)");
    return *v;
  }
  a.read(entry, buf);
  return buf;
}

// The calling thread's buffer for entries that are inflated to be decoded.
std::vector<std::uint8_t>& thread_buffer() {
  thread_local std::vector<std::uint8_t> buf;
  return buf;
}

struct Probe {
  int channels = 3;
  int side = 0;
  int largest = 0;  // the largest of the sampled images' shorter sides
};

// Channels and typical side from up to 32 samples spread over the dataset.
Probe probe(const DatasetShared& d) {
  std::vector<int> sides;
  bool all_gray = true;
  std::size_t n = d.samples.size(), step = std::max<std::size_t>(1, n / 32);
  for (std::size_t i = 0; i < n && sides.size() < 32; i += step) {
    const Sample& s = d.samples[i];
    int w = 0, h = 0, c = 0;
    try {
      if (s.item >= 0) {
        const auto& shape = d.arrays[s.entry].header.shape;
        auto g = detail::npy_image_shape(std::vector<std::int64_t>(shape.begin() + 1, shape.end()), d.where(s));
        w = g.width, h = g.height, c = g.channels;
      } else {
        auto bytes = entry_bytes(*d.archive, s.entry, thread_buffer(), d.options.max_file_bytes);
        if (sniff_format(bytes) == ImageFormat::npy) {
          auto g = detail::npy_image_shape(detail::parse_npy(bytes, d.where(s)).shape, d.where(s));
          w = g.width, h = g.height, c = g.channels;
        } else {
          ImageInfo info = read_image_info(bytes, d.where(s), d.options.max_pixels, d.options.exif_orientation);
          w = info.width, h = info.height, c = info.channels;
        }
      }
    } catch (const Error&) {
      continue;  // counted when a loader meets it
    }
    sides.push_back(std::min(w, h));
    if (c != 1) all_gray = false;
  }
  Probe p;
  if (sides.empty()) return p;
  const auto middle = sides.begin() + static_cast<std::ptrdiff_t>(sides.size() / 2);
  std::nth_element(sides.begin(), middle, sides.end());
  p.side = *middle;
  p.largest = *std::max_element(sides.begin(), sides.end());
  p.channels = all_gray ? 1 : 3;
  return p;
}

}  // namespace

std::shared_ptr<Dataset> Dataset::open(const std::filesystem::path& path, const DatasetOptions& options) {
  if (options.channels != 0 && options.channels != 1 && options.channels != 3)
    fail(ErrorKind::usage, "{channels}", "1 or 3", std::to_string(options.channels), "");
  if (options.max_file_bytes == 0) fail(ErrorKind::usage, "{max_file_bytes}", "a size above 0", "0", "");
  if (!(options.max_bad_fraction >= 0 && options.max_bad_fraction <= 1))
    fail(ErrorKind::usage, "{max_bad_fraction}", "a fraction in [0, 1]", std::to_string(options.max_bad_fraction), "");
  auto d = std::make_shared<DatasetShared>();
  d->path = path;
  d->options = options;
  ArchiveOptions ao;
  ao.name_encoding = options.name_encoding;
  ao.root = options.root;
  ao.cache_decompressed = options.cache_decompressed;
  ao.label_kind = options.label_kind;
  ao.decompressed_max_bytes = options.decompressed_max_bytes;
  const bool val = options.split == SplitFolder::validation;
  d->split_files = options.root.empty() ? find_split_files(path) : std::nullopt;
  // A glob of shards, parquet or Arrow files that names no split itself ('shards/*.tar').
  if (is_shard_pattern(path.string()) && !split_word(path.filename().string()))
    refuse_split_named_set(path.string(), expand_shard_pattern(path.string()), "DIR/*train*");
  std::filesystem::path read = path;
  // Their rows are named by file name, as the folder's are: no split folder prefixes them.
  if (const auto& files = d->split_files) read = files->glob[!val ? 0 : !files->validation.empty() ? 1 : 2];
  d->archive = Archive::open(read, ao);
  // Found in the data as given: a CSV at its top labels the files of its split folders too.
  d->csv_labels = CsvLabels::open(*d->archive, path, options);
  d->class_names = read_class_names(*d->archive, path, options);
  if (options.root.empty() && !d->split_files)
    if (const auto splits = find_split_folders(*d->archive)) {
      const std::string& chosen = !val                          ? splits->train
                                  : !splits->validation.empty() ? splits->validation
                                                                : splits->test;
      d->split_folder = chosen;
      d->validation_folder = splits->validation;
      ao.root = chosen;
      d->archive = Archive::open(path, ao);
    }
  scan_layout(*d);
  if (d->samples.empty())
    fail(ErrorKind::invalid, d->archive->display_name(),
         "labelled images (JPEG, PNG, WebP, GIF, BMP, TIFF) or .npy arrays",
         "none (skipped: " + d->open_skips.summary() + ")",
         "use class folders (class/file.jpg), a labels.csv (path,label), {labels} FILE or {label_pattern}");
  Probe p = probe(*d);
  d->channels = options.channels ? options.channels : p.channels;
  d->native_size = p.side;
  d->largest_sampled_size = p.largest;
  std::vector<std::size_t> all(d->samples.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  return std::make_shared<Dataset>(std::move(d), std::move(all));
}

Dataset::Dataset(std::shared_ptr<DatasetShared> shared, std::vector<std::size_t> indices)
    : shared_(std::move(shared)), indices_(std::move(indices)) {}

const std::vector<std::string>& Dataset::classes() const { return shared_->classes; }
std::size_t Dataset::size() const { return indices_.size(); }
int Dataset::label(std::size_t i) const { return shared_->samples[indices_.at(i)].label; }
bool Dataset::multi_label() const { return shared_->multi_label; }
const std::vector<std::uint32_t>& Dataset::tags(std::size_t i) const {
  static const std::vector<std::uint32_t> kNone;
  const Sample& s = shared_->samples[indices_.at(i)];
  return shared_->multi_label ? shared_->tag_sets[s.tag_set] : kNone;
}
const std::string& Dataset::name(std::size_t i) const { return shared_->samples[indices_.at(i)].name; }
int Dataset::channels() const { return shared_->channels; }
int Dataset::native_size() const { return shared_->native_size; }
int Dataset::largest_sampled_size() const { return shared_->largest_sampled_size; }
const DatasetOptions& Dataset::options() const { return shared_->options; }
const std::filesystem::path& Dataset::path() const { return shared_->path; }
const std::string& Dataset::split_folder() const { return shared_->split_folder; }
const std::string& Dataset::validation_folder() const { return shared_->validation_folder; }
const std::optional<SplitFiles>& Dataset::split_files() const { return shared_->split_files; }
const std::string& Dataset::taken_by_bytes() const { return shared_->taken_by_bytes; }
const char* Dataset::reader() const { return shared_->archive->format(); }
const std::string& Dataset::label_source() const { return shared_->label_source; }
const std::string& Dataset::labels_read() const { return shared_->labels_read; }

std::shared_ptr<Dataset> Dataset::subset(std::vector<std::size_t> indices) const {
  for (auto& i : indices) {
    if (i >= indices_.size())
      fail(ErrorKind::usage, "Dataset::subset", "indices below " + std::to_string(indices_.size()), std::to_string(i),
           "");
    i = indices_[i];
  }
  return std::make_shared<Dataset>(shared_, std::move(indices));
}

std::pair<std::shared_ptr<Dataset>, std::shared_ptr<Dataset>> Dataset::split_val(double fraction) const {
  if (!(fraction >= 0 && fraction < 1))
    fail(ErrorKind::usage, "{val_split}", "a fraction in [0, 1)", std::to_string(fraction), "");
  std::vector<std::size_t> train, val;
  for (std::size_t i = 0; i < indices_.size(); ++i) {
    const std::string& n = name(i);
    double u = static_cast<double>(xxh3_64(n.data(), n.size()) >> 11) * 0x1.0p-53;
    (u < fraction ? val : train).push_back(i);
  }
  return {subset(std::move(train)), subset(std::move(val))};
}

SkipReport Dataset::skipped() const {
  SkipReport r = shared_->open_skips;
  std::lock_guard<std::mutex> lock(shared_->bad_mu);
  for (const auto& [reason, c] : shared_->bad.counts) {
    r.counts[reason] += c;
    if (!r.examples.count(reason)) r.examples[reason] = shared_->bad.examples.at(reason);
  }
  return r;
}

IoGroups Dataset::io_groups() const {
  IoGroups g;
  const EntryLabels* el = shared_->archive->entry_labels();
  if (!el || el->io_group.empty()) return g;
  g.bytes = el->io_group_bytes;
  g.group.reserve(indices_.size());
  for (const std::size_t i : indices_) g.group.push_back(el->io_group[shared_->samples[i].entry]);
  return g;
}

void Dataset::record_bad(std::size_t i, const std::string& why) const {
  std::lock_guard<std::mutex> lock(shared_->bad_mu);
  const std::string reason = "undecodable";
  const std::uint64_t n = shared_->bad.counts[reason]++;
  if (shared_->bad_names.size() < kMaxBadNames) shared_->bad_names.insert(name(i));
  if (n == 0) shared_->bad.examples[reason] = why.empty() ? name(i) : why;
  // Said, not only counted: a run that stays under --max-bad-fraction still names what it skipped;
  // a warning, so that it reaches stderr under --json too (where notes are quiet).
  constexpr std::uint64_t kShown = 3;
  if (n < kShown)
    warn("skipping " + (why.empty() ? name(i) : why) + " (counted against {max_bad_fraction}" +
         (n + 1 == kShown ? "; further bad samples are counted without a line each)" : ")"));
}

std::vector<std::string> Dataset::bad_files() const {
  std::lock_guard<std::mutex> lock(shared_->bad_mu);
  return {shared_->bad_names.begin(), shared_->bad_names.end()};
}

std::optional<std::span<const std::uint8_t>> Dataset::file_bytes(std::size_t i,
                                                                 std::vector<std::uint8_t>& buffer) const {
  const Sample& s = shared_->samples[indices_.at(i)];
  if (s.item >= 0) return std::nullopt;
  return entry_bytes(*shared_->archive, s.entry, buffer, shared_->options.max_file_bytes);
}

void Dataset::load(std::size_t i, const TransformOptions& transform, std::uint64_t seed, Image& scratch,
                   Image& out) const {
  const DatasetShared& d = *shared_;
  const Sample& s = d.samples[indices_.at(i)];
  TransformOptions t = transform;
  t.channels = d.channels;
  t.exif = d.options.exif_orientation;
  if (s.item >= 0) {
    const NpyArray& arr = d.arrays[s.entry];
    if (!arr.damage.empty()) fail(ErrorKind::invalid, d.where(s), "an undamaged array", arr.damage, "");
    std::vector<std::int64_t> shape(arr.header.shape.begin() + 1, arr.header.shape.end());
    detail::npy_image(arr.sample(s.item), shape, d.where(s), scratch);
    transform_image(scratch, t, seed, out);
    return;
  }
  auto bytes = entry_bytes(*d.archive, s.entry, thread_buffer(), d.options.max_file_bytes);
  if (sniff_format(bytes) == ImageFormat::npy) {
    auto h = detail::parse_npy(bytes, d.where(s));
    if (h.kind != 'u' || h.item_size != 1)
      fail(ErrorKind::invalid, d.where(s), "a uint8 image array",
           std::string(1, h.kind) + std::to_string(h.item_size * 8), "save the image as uint8");
    detail::npy_image(bytes.subspan(h.data_offset), h.shape, d.where(s), scratch);
    transform_image(scratch, t, seed, out);
    return;
  }
  decode_transform(bytes, t, d.options.max_pixels, seed, d.where(s), scratch, out);
}

}  // namespace frugal

#include "archive/part_set.h"

#include <algorithm>
#include <string>
#include <system_error>

#include "archive/manifest.h"
#include "frugal/util/error.h"
#include "frugal/util/input_path.h"

namespace frugal {
namespace fs = std::filesystem;

namespace {

bool all_of(const std::string& s, bool (*pred)(char)) { return !s.empty() && std::all_of(s.begin(), s.end(), pred); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_lower(char c) { return c >= 'a' && c <= 'z'; }

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// "NAME.partNNNN": the frugal split naming; `digits` is the width of the first part's number.
std::optional<PartSet> frugal_parts(const fs::path& path) {
  const std::string file = path.filename().string();
  const auto dot = file.rfind(".part");
  if (dot == std::string::npos) return std::nullopt;
  const std::string num = file.substr(dot + 5);
  if (num.size() < 4 || !all_of(num, is_digit)) return std::nullopt;
  const std::string stem = file.substr(0, dot);
  const fs::path manifest = path.parent_path() / (stem + ".manifest.json");
  if (num.find_first_not_of('0') != std::string::npos)  // not stoull: 30 digits must not throw out_of_range
    fail(ErrorKind::invalid, path.string(),
         "the first part of the set (" + stem + ".part" + std::string(num.size(), '0') + ")", "part " + num,
         "give the first part or the manifest");
  PartSet set;
  if (is_file(manifest)) {
    SplitManifest m = SplitManifest::load(manifest);
    set.kind = PartSet::Kind::manifest;
    for (std::size_t i = 0; i < m.parts.size(); ++i) {
      set.files.push_back(m.part_path(i));
      set.expected_sizes.push_back(m.parts[i].size);
    }
    return set;
  }
  set.kind = PartSet::Kind::numbered;
  auto part = [&](std::size_t i) {
    std::string n = std::to_string(i);
    if (n.size() < num.size()) n.insert(0, num.size() - n.size(), '0');
    return path.parent_path() / (stem + ".part" + n);
  };
  std::size_t i = 0;
  for (; is_file(part(i)); ++i) set.files.push_back(part(i));
  if (is_file(part(i + 1)))
    fail(ErrorKind::invalid, path.string(), "part " + part(i).filename().string(), "it missing while later parts exist",
         "copy every part of the split set into one folder");
  return set;
}

// A missing middle part would silently shift every later offset; catch it while the suffixes
// still have one width (GNU split's widened suffixes, past "yz", are taken as listed).
void check_no_gap(const fs::path& path, const std::vector<std::string>& names, std::size_t prefix, char lo, char hi) {
  for (std::size_t i = 1; i < names.size(); ++i) {
    std::string want = names[i - 1].substr(prefix);
    if (names[i].size() != names[i - 1].size()) return;
    std::size_t k = want.size();
    while (k > 0 && want[k - 1] == hi) want[--k] = lo;
    if (k == 0) return;
    ++want[k - 1];
    if (names[i].substr(prefix) != want)
      fail(ErrorKind::invalid, path.string(),
           "part " + names[i - 1].substr(0, prefix) + want + " after " + names[i - 1], names[i],
           "a part of the split set is missing; copy every part into one folder");
  }
}

// Plain `split`: NAME_aa, NAME_ab, … (or NAME.000, NAME.001, … with -d). GNU split widens the suffix
// past the last two-letter one ("yz" -> "zaaa"); byte order of the suffixes is still the part order.
std::optional<PartSet> plain_split_parts(const fs::path& path) {
  const std::string file = path.filename().string();
  const auto sep = file.find_last_of("_.-");
  if (sep == std::string::npos || sep == 0) return std::nullopt;
  const std::string suffix = file.substr(sep + 1);
  const bool letters = suffix.size() >= 2 && suffix.find_first_not_of('a') == std::string::npos;
  const bool digits = suffix.size() >= 2 && suffix.find_first_not_of('0') == std::string::npos;
  if (!letters && !digits) return std::nullopt;
  const std::string prefix = file.substr(0, sep + 1);
  PartSet set;
  set.kind = PartSet::Kind::numbered;
  std::vector<std::string> names;
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  for (const auto& de : fs::directory_iterator(dir)) {
    const std::string n = de.path().filename().string();
    if (n.size() < prefix.size() + suffix.size() || n.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string s = n.substr(prefix.size());
    if (letters ? all_of(s, is_lower) : all_of(s, is_digit)) names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  if (names.empty() || names.front() != file) return std::nullopt;
  check_no_gap(path, names, prefix.size(), letters ? 'a' : '0', letters ? 'z' : '9');
  for (const auto& n : names) set.files.push_back(path.parent_path() / n);
  return set;
}

// `zip -s`: the set ends with NAME.zip; the user may name it or NAME.z01.
std::optional<PartSet> zip_spanned_parts(const fs::path& path) {
  const std::string ext = path.extension().string();
  const fs::path stem = path.parent_path() / path.stem();
  auto disk = [&](int i) {
    std::string n = std::to_string(i);
    if (n.size() < 2) n.insert(0, "0");
    return fs::path(stem.string() + ".z" + n);
  };
  if (ext == ".zip") {
    if (!is_file(disk(1))) return std::nullopt;
  } else if (ext.size() >= 4 && ext[1] == 'z' && all_of(ext.substr(2), is_digit)) {
    if (ext != ".z01")
      fail(ErrorKind::invalid, path.string(), "the first part of a 'zip -s' set (.z01) or its .zip", "a later part",
           "give " + disk(1).filename().string() + " or " + stem.filename().string() + ".zip");
    if (!is_file(stem.string() + ".zip"))
      fail(ErrorKind::invalid, path.string(), "the last part " + stem.filename().string() + ".zip beside it",
           "no such file", "copy every part of the 'zip -s' set into one folder");
  } else {
    return std::nullopt;
  }
  PartSet set;
  set.kind = PartSet::Kind::zip_spanned;
  for (int i = 1; is_file(disk(i)); ++i) set.files.push_back(disk(i));
  set.files.push_back(stem.string() + ".zip");
  return set;
}

}  // namespace

PartSet find_part_set(const fs::path& given) {
  // One answer for a missing name, a folder or a typo, whichever command opened it (input_path.h).
  const fs::path path = check_input(given, InputKind::archive);
  if (is_manifest_path(path)) {
    SplitManifest m = SplitManifest::load(path);
    PartSet set;
    set.kind = PartSet::Kind::manifest;
    for (std::size_t i = 0; i < m.parts.size(); ++i) {
      set.files.push_back(m.part_path(i));
      set.expected_sizes.push_back(m.parts[i].size);
    }
    return set;
  }
  if (auto s = frugal_parts(path)) return *s;
  if (auto s = zip_spanned_parts(path)) return *s;
  if (auto s = plain_split_parts(path)) return *s;
  return PartSet{PartSet::Kind::single, {path}, {}};
}

}  // namespace frugal

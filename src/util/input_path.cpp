#include "frugal/util/input_path.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <cctype>
#include <system_error>
#include <vector>

#include "frugal/util/error.h"

namespace frugal {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxEntries = 4096;  // a folder searched for a near name or an archive inside

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Optimal string alignment distance (Levenshtein plus adjacent swaps), on lower-cased names.
std::size_t distance(const std::string& a, const std::string& b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

// The name as typed without trailing separators ("photos/" -> "photos"), for messages and suggestions.
std::string bare(const fs::path& path) {
  std::string s = path.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

fs::path folder_of(const fs::path& path) {
  fs::path dir = fs::path(bare(path)).parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

// Names in `dir` for which keep(name) holds, at most kMaxEntries looked at.
std::vector<std::string> names_in(const fs::path& dir, bool (*keep)(const std::string&)) {
  std::vector<std::string> out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  for (std::size_t seen = 0; !ec && it != end && seen < kMaxEntries; it.increment(ec), ++seen) {
    std::string n = it->path().filename().string();
    if (keep(n)) out.push_back(std::move(n));
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool is_manifest_name(const std::string& n) { return ends_with(n, ".manifest.json"); }

// A manifest is a JSON object: its first byte past white space is '{'.
bool starts_like_json(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  for (char c; in.get(c);)
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return c == '{';
  return false;
}

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

[[noreturn]] void fail_missing(const fs::path& path, InputKind kind) {
  std::error_code ec;
  const std::string found = kind == InputKind::folder ? "no such folder" : "no such file or folder";
  std::string hint;
  // "photos.zip" not packed yet, "photos/" beside it.
  if (kind == InputKind::archive && ends_with(lower(bare(path)), ".zip")) {
    const std::string s = bare(path);
    const fs::path folder = s.substr(0, s.size() - 4);
    if (fs::is_directory(folder, ec))
      hint = bare(folder) + "/ is a folder, read as it is: give " + bare(folder) + "/ (no need to pack it)";
  }
  if (hint.empty()) {
    if (fs::path near = near_name(path); !near.empty()) {
      hint = "did you mean " + quoted(near) + "?";
    } else if (const fs::path dir = folder_of(path); !fs::is_directory(dir, ec)) {
      hint = "there is no folder " + quoted(dir) + " either; check the path";
    } else {
      hint = "check the path";
    }
  }
  fail(ErrorKind::usage, bare(path), input_kind_name(kind), found, hint);
}

// A folder where a file or a manifest belongs (a folder is data where data belongs: never here).
[[noreturn]] void fail_folder(const fs::path& path, InputKind kind) {
  std::string hint;
  if (kind == InputKind::manifest) {
    auto inside = names_in(path, is_manifest_name);
    if (inside.size() == 1) hint = "give the manifest inside it: " + (fs::path(bare(path)) / inside.front()).string();
  }
  if (hint.empty())
    hint = kind == InputKind::manifest ? std::string("give the FILE.manifest.json that frugal split wrote")
                                       : std::string("give a file inside it");
  fail(ErrorKind::usage, bare(path), input_kind_name(kind), "a folder", hint);
}

}  // namespace

std::string input_kind_name(InputKind kind) {
  switch (kind) {
    case InputKind::archive:
      return "data (a folder, a .zip or .tar, a split set's manifest or first part, or a shard pattern)";
    case InputKind::file:
      return "a file";
    case InputKind::manifest:
      return "a split manifest (FILE.manifest.json)";
    case InputKind::checkpoint:
      return "a checkpoint file or run folder";
    case InputKind::folder:
      return "a folder";
    case InputKind::pack_source:
      return "a folder of class sub-folders or an IDX file";
  }
  return "an input";
}

fs::path near_name(const fs::path& path) {
  const std::string name = fs::path(bare(path)).filename().string();
  if (name.empty()) return {};
  const std::string want = lower(name);
  const std::size_t limit = want.size() <= 4 ? 1 : want.size() <= 10 ? 2 : 3;
  std::string best;
  std::size_t best_d = limit + 1;
  for (const std::string& n : names_in(folder_of(path), [](const std::string&) { return true; })) {
    if (n == name) continue;
    const std::string c = lower(n);
    // A case slip or a left-out extension ("photos" for "photos.zip") counts as one edit.
    std::size_t d = c == want ? 0 : c.rfind(want + ".", 0) == 0 ? 1 : distance(want, c);
    if (d < best_d) best_d = d, best = n;  // names are sorted: ties go to the first
  }
  if (best.empty()) return {};
  const fs::path parent = fs::path(bare(path)).parent_path();
  return parent.empty() ? fs::path(best) : parent / best;
}

fs::path check_input(const fs::path& path, InputKind kind) {
  if (path.empty()) fail(ErrorKind::usage, "\"\"", input_kind_name(kind), "an empty path", "give a path");
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) {
    // `frugal split` and `pack --split` leave NAME.manifest.json beside the parts, no NAME.
    if (kind == InputKind::archive || kind == InputKind::manifest) {
      const fs::path manifest = bare(path) + ".manifest.json";
      if (fs::is_regular_file(manifest, ec)) return manifest;
    }
    fail_missing(path, kind);
  }
  const bool dir = fs::is_directory(st);
  if (kind == InputKind::archive && dir) return path;  // a folder is data, read in place (data_source.h)
  switch (kind) {
    case InputKind::archive:
    case InputKind::file:
    case InputKind::manifest:
      if (dir) fail_folder(path, kind);
      if (!fs::is_regular_file(st))
        fail(ErrorKind::usage, bare(path), input_kind_name(kind), "a special file (a device, pipe or socket)",
             "give a regular file");
      break;
    case InputKind::folder:
      if (!dir)
        fail(ErrorKind::usage, bare(path), input_kind_name(kind), "a file",
             "give the folder that holds it: " + folder_of(path).string());
      break;
    case InputKind::checkpoint:
    case InputKind::pack_source:
      break;
  }
  if (::access(path.c_str(), dir ? R_OK | X_OK : R_OK) != 0 && (errno == EACCES || errno == EPERM))
    fail(ErrorKind::usage, bare(path), input_kind_name(kind),
         std::string(dir ? "a folder" : "a file") + " this user may not read (permission denied)",
         "check its permissions (ls -l " + bare(path) + ")");
  // `join photos.zip` (the data, not its manifest): the wrong file named, not a damaged manifest.
  if (kind == InputKind::manifest && !is_manifest_name(path.filename().string()) && !starts_like_json(path)) {
    const fs::path beside = bare(path) + ".manifest.json";
    fail(ErrorKind::usage, bare(path), input_kind_name(kind), "a file that is not JSON",
         fs::is_regular_file(beside, ec)
             ? "give its manifest: " + beside.string()
             : std::string("give the FILE.manifest.json that frugal split wrote beside the parts"));
  }
  return path;
}

}  // namespace frugal

// Run folders: finding them, whose a folder is (run_folder_owner), reading their config.json, and
// the disk budget it asks for. Every file here may be anything (a FIFO, a link out, /dev/zero): it
// is read only when it is a regular file in the folder, and only up to a size cap.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/checkpoint_files/run_folder.h"
#include "frugal/util/terminal.h"
#include "frugal/util/units.h"

namespace fs = std::filesystem;

namespace frugal {

namespace {

// A config.json is at most this big (a real one is a few KB); beyond it is not a run's config, and
// it is not read into memory (a link to /dev/zero would never end).
constexpr std::uint64_t kMaxConfigBytes = 1u << 20;

// "format": "frugal-run-config" (every frugal train writes it): a folder whose config.json says so
// is a run folder even before its first checkpoint. Never throws: a config that cannot be read as
// frugal's only says the folder is not recognised by it.
bool has_frugal_config(const fs::path& dir) {
  struct stat st {};
  const fs::path config = dir / kConfigFile;
  if (::lstat(config.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  try {
    auto text = read_regular_at_most(config, kMaxConfigBytes, Links::refuse);
    if (!text) return false;
    const auto j = parse_json_bounded(*text, config.string());
    return j.is_object() && j.value("format", nlohmann::json()) == "frugal-run-config";
  } catch (const Error&) {
    return false;
  }
}

bool has_suffix(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// TensorBoard files of other writers ("...<host>.<pid>.0") are the user's, never frugal's.
bool is_own_events(const std::string& name) {
  return name.rfind("events.out.tfevents.", 0) == 0 && has_suffix(name, ".frugal");
}

// The names frugal reads, appends to or replaces in a run folder: regular files, or nothing.
bool is_own_file(const std::string& name) {
  return name == kConfigFile || name == kMetricsFile || name == kBestFile || is_own_events(name);
}

}  // namespace

bool is_run_folder(const fs::path& dir) {
  // Another program's folder with a config.json of its own (a Hugging Face model: config.json and
  // model.safetensors) is not a run folder: `frugal clean` would apply retention to it.
  if (has_frugal_config(dir)) return true;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (parse_checkpoint_name(e.path().filename().string())) return true;
  return false;
}

std::optional<std::uint64_t> config_whole_number(const nlohmann::json& v, std::uint64_t max) {
  if (v.is_number_unsigned()) {
    const auto n = v.get<std::uint64_t>();
    return n <= max ? std::optional(n) : std::nullopt;
  }
  if (v.is_number_integer()) return std::nullopt;  // negative
  if (!v.is_number_float()) return std::nullopt;
  const double d = v.get<double>();
  // Below 2^53 every whole number is exact in a double, so 10.0 and 1e1 are 10 and nothing else.
  if (!(d >= 0) || d >= 9007199254740992.0 || d != static_cast<double>(static_cast<std::uint64_t>(d)))
    return std::nullopt;
  const auto n = static_cast<std::uint64_t>(d);
  return n <= max ? std::optional(n) : std::nullopt;
}

std::optional<nlohmann::json> read_run_config(const fs::path& run) {
  const fs::path config = run / kConfigFile;
  struct stat st {};
  if (::lstat(config.c_str(), &st) != 0) return std::nullopt;
  auto text = read_regular_at_most(config, kMaxConfigBytes, Links::refuse);
  if (!text)
    fail(ErrorKind::invalid, config.string(), "a run's config of at most 1 MiB", "a larger file",
         "it is not frugal's; move it out of the run folder; nothing was changed");
  nlohmann::json j = parse_json_bounded(*text, config.string());
  if (!j.is_object())
    fail(ErrorKind::invalid, config.string(), "a JSON object", j.type_name(),
         "fix or remove the file; nothing was changed");
  return j;
}

std::vector<fs::path> find_run_folders(const fs::path& dir) {
  if (is_run_folder(dir)) return {dir};
  std::vector<fs::path> out;
  std::error_code ec;
  auto opts = fs::directory_options::skip_permission_denied;
  for (auto it = fs::recursive_directory_iterator(dir, opts, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code ec2;
    if (!it->is_directory(ec2) || it->is_symlink(ec2)) continue;
    if (is_run_folder(it->path())) {
      out.push_back(it->path());
      it.disable_recursion_pending();
    } else if (it.depth() >= 2) {
      it.disable_recursion_pending();
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::pair<std::uint64_t, fs::path>> budget_from_runs(const std::vector<fs::path>& runs) {
  std::optional<std::pair<std::uint64_t, fs::path>> best;
  for (const auto& run : runs) {
    const fs::path config = run / kConfigFile;
    const auto j = read_run_config(run);
    if (!j || !j->contains("disk_budget") || (*j)["disk_budget"].is_null()) continue;
    const auto& v = (*j)["disk_budget"];
    std::uint64_t bytes = 0;
    if (v.is_number()) {
      const auto n = config_whole_number(v, UINT64_MAX);
      if (!n)
        fail(ErrorKind::invalid, config.string() + ": disk_budget", "a size like \"20G\" or a whole number of bytes",
             json_text(v).substr(0, 100), "fix the file; nothing was changed");
      bytes = *n;
    } else if (v.is_string()) {
      if (!v.get<std::string>().empty()) {  // "" = no budget (train's default)
        try {
          bytes = parse_size(v.get<std::string>());
        } catch (const Error&) {
          fail(ErrorKind::invalid, config.string() + ": disk_budget", "a size like 20G", json_text(v).substr(0, 100),
               "fix the file; nothing was changed");
        }
      }
    } else {
      fail(ErrorKind::invalid, config.string() + ": disk_budget", "a size like \"20G\" or a whole number of bytes",
           json_text(v).substr(0, 100), "fix the file; nothing was changed");
    }
    if (bytes && (!best || bytes < best->first)) best = std::make_pair(bytes, config);
  }
  return best;
}

namespace {

bool is_frugal_checkpoint(const fs::path& file) {
  try {
    auto md = read_safetensors_header(file, Links::refuse).metadata;
    return md["format"] == kCheckpointFormat;
  } catch (const Error&) {
    return false;
  }
}

// The names in `dir` but hidden ones (".x"), sorted.
std::vector<std::string> visible_names(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (!name.empty() && name[0] != '.') names.push_back(std::move(name));
  }
  if (ec) fail_errno("read folder", dir.string(), ec.value());
  std::sort(names.begin(), names.end());
  return names;
}

void refuse_special_own_files(const fs::path& dir, const std::vector<std::string>& names) {
  for (const auto& name : names)
    if (is_own_file(name) && file_kind(dir / name) != "a regular file")
      fail(ErrorKind::invalid, (dir / name).string(), "a regular file (frugal writes it in a run folder)",
           file_kind(dir / name),
           "frugal reads and appends its own files only as regular files (a FIFO would block it, a device "
           "never end, a link lead out of the folder): remove it, then run the same command again");
}

}  // namespace

RunFolderOwner run_folder_owner(const fs::path& dir) {
  RunFolderOwner out;
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return out;
    fail_errno("stat", dir.string(), errno);
  }
  auto foreign = [&out](std::string reason) {
    if (out.reasons.size() < kForeignShown) out.reasons.push_back(std::move(reason));
    ++out.foreign;
    out.kind = RunFolderOwner::Kind::foreign;
  };
  if (!S_ISDIR(st.st_mode)) {
    foreign(file_kind(dir) + ", not a folder");
    return out;
  }
  const std::vector<std::string> names = visible_names(dir);
  if (names.empty()) {
    out.kind = RunFolderOwner::Kind::empty;
    return out;
  }
  refuse_special_own_files(dir, names);
  bool config = std::binary_search(names.begin(), names.end(), std::string(kConfigFile));
  if (config && has_frugal_config(dir)) {
    out.kind = RunFolderOwner::Kind::frugal;
    return out;
  }
  if (config) foreign(std::string(kConfigFile) + " is not a frugal run configuration");
  bool checkpoint = false, metrics = false;
  for (const auto& name : names) {
    if (name == kConfigFile || is_own_events(name) || is_temp_path(name)) continue;
    if (name == kMetricsFile) {
      metrics = true;
    } else if (name == kBestFile || parse_checkpoint_name(name)) {
      if (is_frugal_checkpoint(dir / name))
        checkpoint = true;
      else
        foreign(name + " is not a frugal checkpoint");
    } else {
      std::error_code kind_ec;
      const bool folder = fs::symlink_status(dir / name, kind_ec).type() == fs::file_type::directory;
      foreign(folder ? name + "/" : name);
    }
  }
  // Lines of someone else's metrics.jsonl would mix with frugal's: without a config or checkpoint
  // of frugal's beside it, the file is not frugal's.
  if (metrics && !checkpoint)
    foreign(std::string(kMetricsFile) + " without a frugal config.json or checkpoint beside it");
  if (out.kind != RunFolderOwner::Kind::foreign) out.kind = RunFolderOwner::Kind::frugal;
  return out;
}

std::vector<std::filesystem::path> make_folders(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::path top = std::filesystem::absolute(dir, ec).lexically_normal();
  if (!top.has_filename()) top = top.parent_path();  // "runs/a/"
  std::vector<std::filesystem::path> missing;        // deepest first
  for (std::filesystem::path p = top; !p.empty() && !std::filesystem::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  std::vector<std::filesystem::path> made;
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0777) == 0)
      made.insert(made.begin(), *it);
    else if (errno != EEXIST)
      fail_errno("create folder", it->string(), errno);
  }
  return made;
}

void RunFolderClaim::undo() const {
  for (const auto& p : created) ::rmdir(p.c_str());
}

RunFolderClaim claim_run_folder(const std::filesystem::path& run, bool lock, const std::string& doing) {
  RunFolderClaim claim;
  claim.created = make_folders(run);
  if (!lock) return claim;
  try {
    claim.lock.emplace(FileLock::lock(run, doing));
    const RunFolderOwner owner = run_folder_owner(run);
    if (owner.kind != RunFolderOwner::Kind::foreign) return claim;
    std::string found;
    for (const auto& r : owner.reasons) found += (found.empty() ? "" : "; ") + r;
    if (owner.foreign > owner.reasons.size())
      found += "; and " + std::to_string(owner.foreign - owner.reasons.size()) + " more";
    fail(ErrorKind::usage, run.string(), "a new or empty folder, or a run folder frugal made",
         "a folder frugal did not make (" + found + ")",
         "train into a new or empty folder (e.g. runs/NAME); frugal would replace or delete files here; nothing was "
         "changed");
  } catch (...) {
    claim.undo();
    throw;
  }
}

}  // namespace frugal

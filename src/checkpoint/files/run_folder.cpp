// Run folders: finding them and the disk budget their config.json asks for.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

#include "frugal/error.h"
#include "frugal/fs.h"
#include "frugal/run_folder.h"
#include "frugal/units.h"

namespace fs = std::filesystem;

namespace frugal {

bool is_run_folder(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / kConfigFile, ec) || fs::exists(dir / kBestFile, ec)) return true;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (parse_checkpoint_name(e.path().filename().string())) return true;
  return false;
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
    std::error_code ec;
    fs::path config = run / kConfigFile;
    if (!fs::exists(config, ec)) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(read_file(config));
    } catch (const nlohmann::json::exception& e) {
      fail(ErrorKind::invalid, config.string(), "a JSON object", std::string("unparsable JSON (") + e.what() + ")",
           "fix or remove the file");
    }
    if (!j.is_object() || !j.contains("disk_budget") || j["disk_budget"].is_null()) continue;
    const auto& v = j["disk_budget"];
    std::uint64_t bytes = 0;
    if (v.is_number_unsigned()) {
      bytes = v.get<std::uint64_t>();
    } else if (v.is_string() && !v.get<std::string>().empty()) {  // "" = no budget (train's default)
      try {
        bytes = parse_size(v.get<std::string>());
      } catch (const Error&) {
        fail(ErrorKind::invalid, config.string() + ": disk_budget", "a size like 20G", v.dump(), "fix the file");
      }
    }
    if (bytes && (!best || bytes < best->first)) best = std::make_pair(bytes, config);
  }
  return best;
}

}  // namespace frugal

namespace frugal {
namespace {

constexpr std::uint64_t kMaxRunConfigBytes = 1ull << 20;  // ours are a few KiB

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

bool is_run_config(const fs::path& file) {
  auto text = read_regular_at_most(file, kMaxRunConfigBytes, Links::refuse);
  if (!text) return false;
  try {
    auto j = parse_json_bounded(*text, file.string());
    return j.is_object() && j.contains("format") && j["format"] == "frugal-run-config";
  } catch (const Error&) {
    return false;
  }
}

bool is_frugal_checkpoint(const fs::path& file) {
  try {
    auto md = read_safetensors_header(file, Links::refuse).metadata;
    return md["format"] == kCheckpointFormat;
  } catch (const Error&) {
    return false;
  }
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
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (!name.empty() && name[0] != '.') names.push_back(std::move(name));
  }
  if (ec) fail_errno("read folder", dir.string(), ec.value());
  std::sort(names.begin(), names.end());
  if (names.empty()) {
    out.kind = RunFolderOwner::Kind::empty;
    return out;
  }
  for (const auto& name : names)
    if (is_own_file(name) && file_kind(dir / name) != "a regular file")
      fail(ErrorKind::invalid, (dir / name).string(), "a regular file (frugal writes it in a run folder)",
           file_kind(dir / name),
           "frugal reads and appends its own files only as regular files (a FIFO would block it, a device "
           "never end, a link lead out of the folder): remove it, then run the same command again");
  bool config = std::binary_search(names.begin(), names.end(), std::string(kConfigFile));
  if (config && is_run_config(dir / kConfigFile)) {
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
      if (is_frugal_checkpoint(dir / name)) checkpoint = true;
      else foreign(name + " is not a frugal checkpoint");
    } else {
      std::error_code kind_ec;
      const bool folder = fs::symlink_status(dir / name, kind_ec).type() == fs::file_type::directory;
      foreign(folder ? name + "/" : name);
    }
  }
  // Lines of someone else's metrics.jsonl would mix with frugal's: without a config or checkpoint
  // of frugal's beside it, the file is not frugal's.
  if (metrics && !checkpoint) foreign(std::string(kMetricsFile) + " without a frugal config.json or checkpoint beside it");
  if (out.kind != RunFolderOwner::Kind::foreign) out.kind = RunFolderOwner::Kind::frugal;
  return out;
}

}  // namespace frugal

// Run folders: finding them and the disk budget their config.json asks for.
#include <algorithm>

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

#include "archive/leftovers.h"

#include <sys/stat.h>

#include "frugal/util/fs.h"

namespace frugal {
namespace {
constexpr std::size_t kNameMax = 255;  // as temp_path_for
constexpr std::size_t kRandomDigits = 12;
}  // namespace

bool temp_prefix_matches(std::string_view temp_name, const std::function<bool(std::string_view, bool)>& ours) {
  const std::size_t suffix = kTempMarker.size() + kRandomDigits;
  if (temp_name.size() <= suffix) return false;
  const std::string_view prefix = temp_name.substr(0, temp_name.size() - suffix);
  const std::string_view tail = temp_name.substr(prefix.size());
  if (!tail.starts_with(kTempMarker)) return false;
  for (char c : tail.substr(kTempMarker.size()))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  // temp_path_for cuts a name to NAME_MAX less the suffix, then back to a character boundary
  // (at most 3 bytes more).
  const bool cut = prefix.size() + suffix + 3 >= kNameMax;
  return ours(prefix, cut);
}

bool is_temp_for(std::string_view temp_name, std::string_view target_name) {
  return temp_prefix_matches(temp_name, [&](std::string_view prefix, bool cut) {
    return prefix == target_name || (cut && target_name.starts_with(prefix));
  });
}

std::size_t remove_abandoned_temporaries(const std::filesystem::path& dir,
                                         const std::function<bool(const std::string&)>& ours) {
  std::size_t removed = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.find(kTempMarker) == std::string::npos || !ours(name)) continue;
    if (remove_if_abandoned(e.path())) ++removed;
  }
  return removed;
}

}  // namespace frugal

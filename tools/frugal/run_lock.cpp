#include "run_lock.h"

#include "frugal/checkpoint_files/run_folder.h"

namespace frugal::cli {

std::optional<FileLock> lock_run_folder_of(const std::filesystem::path& out_file, const std::string& doing) {
  const std::filesystem::path dir = std::filesystem::absolute(out_file).parent_path();
  if (run_folder_owner(dir).kind != RunFolderOwner::Kind::frugal) return std::nullopt;
  return FileLock::lock(dir, doing);
}

}  // namespace frugal::cli

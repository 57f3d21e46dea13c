// Commands that write a file into a folder (compress -o, export -o) take the run folder's lock
// when that folder is a frugal run folder, as a training of it does (run_folder.h): a file written
// there while a training runs would meet its retention and its best.safetensors.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "frugal/util/fs.h"

namespace frugal::cli {

// The lock of `out_file`'s folder when that folder is a frugal run folder (FileLock::lock: exit 1
// naming the training that holds it); nullopt for any other folder.
std::optional<FileLock> lock_run_folder_of(const std::filesystem::path& out_file, const std::string& doing);

}  // namespace frugal::cli

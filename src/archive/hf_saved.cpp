// Hugging Face datasets' save_to_disk folders (data_source.h): Dataset.save_to_disk(DIR) writes
// data-00000-of-0000N.arrow (Arrow IPC streams), dataset_info.json (the features: ClassLabel names)
// and state.json (which data files, in order); DatasetDict.save_to_disk(DIR) writes
// dataset_dict.json ({"splits": [...]}) and one such folder per split. Their JSON is read within
// kMaxJsonBytes, and every file they name must be a plain name inside the folder.
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "archive/readers.h"
#include "frugal/archive/data_source.h"
#include "frugal/util/error.h"
#include "frugal/util/text.h"
#include "frugal/util/units.h"

namespace frugal {
namespace fs = std::filesystem;

namespace {

// state.json lists a file per shard (tens); dataset_dict.json a few splits: kilobytes.
constexpr std::uint64_t kMaxJsonBytes = std::uint64_t{1} << 20;
constexpr std::size_t kMaxDataFiles = 100000;

bool regular(const fs::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool directory(const fs::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// A file or folder name of one component, as datasets writes them.
bool plain_name(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find_first_of(std::string("/\\\0", 3)) == std::string::npos;
}

// The JSON object in `file` (exit 3 naming it when it is larger than kMaxJsonBytes, no JSON, or
// no object).
nlohmann::json read_json(const fs::path& file, const std::string& advice) {
  auto src = open_byte_source(file);
  if (src->size() > kMaxJsonBytes)
    fail(ErrorKind::invalid, file.string(), "a file of at most " + format_size(kMaxJsonBytes), format_size(src->size()),
         advice);
  std::string text(static_cast<std::size_t>(src->size()), '\0');
  if (!text.empty()) src->read_at(0, text.data(), text.size());
  nlohmann::json j = json_nesting(text) > 16 ? nlohmann::json(nlohmann::json::value_t::discarded)
                                             : nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object())
    fail(ErrorKind::invalid, file.string(), "the JSON object Hugging Face datasets writes",
         j.is_discarded() ? "text that is no JSON (or nested too deep)" : std::string("JSON ") + j.type_name(), advice);
  return j;
}

bool has_arrow_file(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".arrow" && e.is_regular_file(ec)) return true;
  return false;
}

const char* kSaveAgain = "save the dataset again (save_to_disk), or copy the whole folder again";

}  // namespace

std::vector<std::string> hf_saved_files(const fs::path& dir) {
  const fs::path state = dir / "state.json";
  if (!regular(state) || !has_arrow_file(dir)) return {};
  const nlohmann::json j = read_json(state, kSaveAgain);
  auto list = j.find("_data_files");
  if (list == j.end() || !list->is_array() || list->empty() || list->size() > kMaxDataFiles)
    fail(ErrorKind::invalid, state.string(),
         "\"_data_files\": the folder's .arrow files (at most " + std::to_string(kMaxDataFiles) + ")",
         list == j.end()    ? "none"
         : list->is_array() ? std::to_string(list->size()) + " of them"
                            : "no list",
         kSaveAgain);
  std::vector<std::string> names;
  for (const auto& item : *list) {
    const auto name = item.is_object() ? item.find("filename") : item.end();
    if (!item.is_object() || name == item.end() || !name->is_string() || !plain_name(name->get<std::string>()))
      fail(ErrorKind::invalid, state.string(), "data files named {\"filename\": NAME}, NAME a file beside it",
           item.dump().substr(0, 120), kSaveAgain);
    if (!regular(dir / name->get<std::string>()))
      fail(ErrorKind::invalid, state.string(), "its data files in " + dir.string(),
           name->get<std::string>() + " missing", kSaveAgain);
    names.push_back(name->get<std::string>());
  }
  return names;
}

std::optional<std::vector<std::string>> hf_dataset_dict_splits(const fs::path& dir) {
  const fs::path file = dir / "dataset_dict.json";
  if (!regular(file)) return std::nullopt;
  const nlohmann::json j = read_json(file, kSaveAgain);
  auto splits = j.find("splits");
  if (splits == j.end() || !splits->is_array() || splits->empty() || splits->size() > 64)
    fail(ErrorKind::invalid, file.string(), "\"splits\": the names of its split folders", "no such list", kSaveAgain);
  std::vector<std::string> out;
  for (const auto& s : *splits) {
    if (!s.is_string() || !plain_name(s.get<std::string>()))
      fail(ErrorKind::invalid, file.string(), "split names that are folders beside it", s.dump().substr(0, 120),
           kSaveAgain);
    const std::string name = s.get<std::string>();
    if (!directory(dir / name) || hf_saved_files(dir / name).empty())
      fail(ErrorKind::invalid, file.string(), "a save_to_disk folder per split (state.json and data-*.arrow)",
           "none at " + (dir / name).string(), kSaveAgain);
    out.push_back(name);
  }
  return out;
}

std::unique_ptr<Archive> open_hf_saved(const fs::path& dir, const ArchiveOptions& options) {
  std::vector<ParquetFile> files;
  fs::path info;
  if (auto splits = hf_dataset_dict_splits(dir)) {
    for (const std::string& split : *splits)
      for (const std::string& name : hf_saved_files(dir / split))
        files.push_back({open_byte_source(dir / split / name), (dir / split / name).string(), split + "/" + name});
    info = dir / splits->front() / "dataset_info.json";
  } else {
    for (const std::string& name : hf_saved_files(dir))
      files.push_back({open_byte_source(dir / name), (dir / name).string(), name});
    info = dir / "dataset_info.json";
  }
  if (files.empty()) return nullptr;
  return open_arrow_archive(std::move(files), dir.string(), regular(info) ? info.string() : "", options);
}

}  // namespace frugal

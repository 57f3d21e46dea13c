// Weights made by other tools (weights_file.h): which format a file is, told by its bytes, and its
// tensors made from what the torch-free readers of the weights library describe.
#include "frugal/checkpoint/weights_file.h"

#include <unistd.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "frugal/checkpoint/checkpoint.h"
#include "frugal/checkpoint/safetensors.h"
#include "frugal/checkpoint_files/checkpoint_files.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/text.h"
#include "frugal/weights/timm_names.h"
#include "frugal/weights/torch_save.h"

namespace frugal {
namespace fs = std::filesystem;
namespace {

std::string head_of(const fs::path& path) {
  UniqueFd fd = open_regular(path);
  std::string head(16, '\0');
  const ssize_t n = ::pread(fd.get(), head.data(), head.size(), 0);
  head.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return head;
}

WeightsFile from_torch_save(const fs::path& path) {
  const TorchSaveFile file = TorchSaveFile::open(path);
  WeightsFile w;
  for (const SavedTensor& t : file.tensors()) {
    const std::vector<std::uint8_t> bytes = file.tensor_bytes(t);
    torch::Tensor out = torch::empty(t.shape, torch::TensorOptions().dtype(torch_dtype(t.dtype, path.string())));
    if (static_cast<std::uint64_t>(out.nbytes()) != bytes.size())
      fail(ErrorKind::invalid, path.string() + ": " + t.name, std::to_string(out.nbytes()) + " bytes of data",
           std::to_string(bytes.size()), "the file is damaged; save it again");
    if (!bytes.empty()) std::memcpy(out.data_ptr(), bytes.data(), bytes.size());
    w.tensors[t.name] = out;
  }
  w.described = "a torch.save state dict";
  if (!file.found_under().empty()) w.described += " under '" + file.found_under() + "'";
  if (!file.prefix_removed().empty()) w.described += ", prefix '" + file.prefix_removed() + "' removed";
  return w;
}

WeightsFile from_safetensors(const fs::path& path) {
  SafetensorsFile file = load_safetensors(path);
  const bool checkpoint = file.metadata.count("format") && file.metadata.at("format") == kCheckpointFormat;
  WeightsFile w;
  for (auto& [name, t] : file.tensors)
    if (!checkpoint || name.rfind(kStatePrefix, 0) != 0) w.tensors[name] = t;
  return w;
}

// A Hugging Face hub folder: its weights file, and the architecture its config.json names.
WeightsFile from_hub_folder(const fs::path& dir) {
  std::string architecture;
  if (auto text = read_regular_at_most(dir / "config.json", 1 << 20)) {
    // A config.json is a flat object: anything nested deeper is not parsed (util/text.h).
    const auto j = json_nesting(*text) > 8 ? nlohmann::json() : nlohmann::json::parse(*text, nullptr, false);
    if (j.is_object() && j.contains("architecture") && j["architecture"].is_string())
      architecture = j["architecture"].get<std::string>();
  }
  if (architecture.rfind("tf_", 0) == 0)
    fail(ErrorKind::unsupported, (dir / "config.json").string(), "weights of a model frugal's zoo defines",
         "timm's " + architecture + " (TensorFlow's 'same' padding and batch norm eps 1e-3)",
         "use timm's or torchvision's efficientnet_b0 weights, or script the timm model and give it to {model}");
  for (const char* name : {"model.safetensors", "pytorch_model.bin"})
    if (std::error_code ec; fs::is_regular_file(dir / name, ec)) {  // a folder or FIFO is no weights file
      WeightsFile w = load_weights_file(dir / name);
      const std::string from = std::string("a Hugging Face folder's ") + name +
                               (architecture.empty() ? std::string() : " (" + architecture + ")");
      w.described = w.described.empty() ? from : from + ": " + w.described;
      return w;
    }
  fail(ErrorKind::invalid, dir.string(), "weights: a file, or a Hugging Face folder with model.safetensors",
       "a folder without model.safetensors or pytorch_model.bin", "give the weights file itself");
}

void map_timm_names(WeightsFile& w) {
  std::vector<std::string> names;
  for (const auto& [name, t] : w.tensors) names.push_back(name);
  const auto renamed = from_timm_names(names);
  if (!renamed) return;
  std::map<std::string, torch::Tensor> out;
  for (std::size_t i = 0; i < names.size(); ++i) out[renamed->names[i]] = w.tensors.at(names[i]);
  w.tensors = std::move(out);
  const std::string said = renamed->naming + " names (" + std::to_string(renamed->renamed) + " renamed)";
  w.described = w.described.empty() ? said : w.described + "; " + said;
}

}  // namespace

WeightsFile load_weights_file(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    WeightsFile w = from_hub_folder(path);
    return w;
  }
  const std::string head = head_of(path);
  const std::string kind =
      torch_file_kind(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(head.data()), head.size()));
  WeightsFile w = kind.empty() ? from_safetensors(path) : from_torch_save(path);
  map_timm_names(w);
  return w;
}

}  // namespace frugal

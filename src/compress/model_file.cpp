// Compressed model files and the loader that takes any CKPT.
#include <filesystem>

#include "frugal/checkpoint.h"
#include "frugal/compress.h"
#include "frugal/error.h"
#include "frugal/progress.h"

namespace frugal {
namespace {

constexpr const char* kCompressionKey = "compression";
constexpr const char* kCompressedFormat = "frugal-compressed";
constexpr int kCompressedVersion = 1;

std::string scope_name(PruneScope s) { return s == PruneScope::layer ? "layer" : "global"; }

nlohmann::json parse_compression(const Checkpoint& c, const std::string& source) {
  auto it = c.extra.find(kCompressionKey);
  if (it == c.extra.end()) return nullptr;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(it->second);
    if (!j.is_object() || !j.contains("tensors") || !j["tensors"].is_object())
      fail(ErrorKind::invalid, source, "metadata \"compression\" as an object with a \"tensors\" index",
           j.is_object() ? "no tensor index" : std::string("a JSON ") + j.type_name(),
           "the file is damaged; compress the checkpoint again");
    if (j.value("format", "") != kCompressedFormat || j.value("version", 0) != kCompressedVersion)
      fail(ErrorKind::unsupported, source, std::string(kCompressedFormat) + " version " +
           std::to_string(kCompressedVersion), j.value("format", "?") + " version " +
           std::to_string(j.value("version", 0)), "use the frugal that wrote this file, or compress again");
  } catch (const nlohmann::json::exception& e) {  // values of the wrong JSON type
    fail(ErrorKind::invalid, source, "JSON in metadata \"compression\"", e.what(),
         "the file is damaged; compress the checkpoint again");
  }
  return j;
}

}  // namespace

void save_compressed_model(const std::filesystem::path& out, const ModelInfo& info, Model& model,
                           const CompressOptions& options) {
  std::vector<std::string> compressible;
  for (const auto& [name, w] : prunable_weights(model)) compressible.push_back(name);
  auto encoded = encode_weights(state_dict(model), compressible, options.weights);

  nlohmann::json compression{{"format", kCompressedFormat},
                             {"version", kCompressedVersion},
                             {"prune", options.prune},
                             {"prune_scope", scope_name(options.prune_scope)},
                             {"weights", to_string(options.weights)},
                             {"finetune_epochs", options.finetune_epochs},
                             {"tensors", encoded.index}};
  Checkpoint ckpt;
  ckpt.kind = "model";
  ckpt.model = info;
  ckpt.weights = std::move(encoded.tensors);
  ckpt.extra[kCompressionKey] = compression.dump();
  save_checkpoint(out, ckpt);
}

LoadedModel load_model_any(const std::filesystem::path& ckpt) {
  const auto file = resolve_ckpt(ckpt);
  Checkpoint c = load_checkpoint(file);
  const auto compression = parse_compression(c, file.string());
  std::map<std::string, torch::Tensor> weights;
  if (compression.is_null()) {
    weights = c.weight_map();
  } else {
    weights = decode_weights(c.weights, compression.at("tensors"), file.string());
    // LibTorch's dynamic int8 kernels are reachable only through modules the zoo does not use
    // (docs/compressed-model.md), so int8 weights run as float32; only the file is smaller.
    if (compression.contains("weights") && compression["weights"] == "int8")
      note(file.string() + ": int8 weights dequantized to float32 at load (stored as int8 + scales; "
           "inference runs in float32)");
  }
  LoadedModel out{c.model, make_model(c.model.name, static_cast<int>(c.model.classes.size()), c.model.channels)};
  load_weights(*out.model, weights, /*allow_head_mismatch=*/false);
  out.model->eval();
  return out;
}

ModelFileSummary summarize_model_file(const std::filesystem::path& ckpt) {
  ModelFileSummary s;
  s.file = resolve_ckpt(ckpt);
  s.bytes = std::filesystem::file_size(s.file);
  auto header = read_safetensors_header(s.file);
  auto it = header.metadata.find(kCompressionKey);
  s.compression = nullptr;
  if (it != header.metadata.end()) {
    try {
      s.compression = nlohmann::json::parse(it->second);
      s.compression.erase("tensors");  // per-tensor detail is for the loader, not for reports
    } catch (const nlohmann::json::exception&) {
      s.compression = nullptr;
    }
  }
  return s;
}

}  // namespace frugal

// Writing compressed model files (reading them, and any CKPT, is checkpoint's load_model_any).
#include <filesystem>

#include "frugal/checkpoint/checkpoint.h"
#include "frugal/compress/compress.h"
#include "frugal/util/error.h"

namespace frugal {
namespace {

std::string scope_name(PruneScope s) { return s == PruneScope::layer ? "layer" : "global"; }

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

}  // namespace frugal

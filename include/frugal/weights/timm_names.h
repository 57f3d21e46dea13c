// Weights named as timm names them, for the zoo models whose torchvision names differ (src/weights/,
// library frugal_weights; torch-free: names only). frugal's zoo uses torchvision's names; timm's
// EfficientNet holds the same tensors under other names (conv_stem, blocks.S.B.conv_dw, se.conv_reduce,
// conv_head, ...), as safetensors on the Hugging Face hub and in timm's torch.save checkpoints.
// Recognised from the names, renamed one by one; shapes are left to the loader, which checks them
// against the model as for any weights.
//
// The same tensors make the same model only where timm's and torchvision's definitions agree:
// timm's `efficientnet_b0` does (symmetric padding, BatchNorm eps 1e-5, SiLU in squeeze-excite); its
// `tf_efficientnet_*` ports use TensorFlow's "same" padding and eps 1e-3, and their names are the same,
// so the names cannot tell them apart: a Hugging Face folder's config.json ("architecture") can.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace frugal {

struct RenamedWeights {
  // What the names were recognised as, for the log: "timm efficientnet_b0" when the blocks per
  // stage are b0's (1, 2, 2, 3, 3, 4, 1), else "timm EfficientNet".
  std::string naming;
  std::vector<std::string> names;  // each given name in torchvision's naming, in the same order
  std::size_t renamed = 0;         // how many differ from the name given; the others are kept as given
};

// nullopt unless `names` are timm's EfficientNet names (conv_stem.weight, conv_head.weight and
// blocks.*): torchvision's own names, or any other model's, are not touched.
std::optional<RenamedWeights> from_timm_names(std::span<const std::string> names);

}  // namespace frugal

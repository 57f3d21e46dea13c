// Weights made by other tools, as tensors under torchvision's names, wherever frugal takes weights
// (`train --init`): a safetensors file (frugal's checkpoints and models, torchvision's or timm's
// weights), a torch.save state dict (.pth/.pt, read by weights/torch_save.h without running pickle
// code), or a Hugging Face hub folder (model.safetensors, else pytorch_model.bin, beside a
// config.json). timm's EfficientNet names are mapped to torchvision's (weights/timm_names.h).
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include <torch/torch.h>

namespace frugal {

struct WeightsFile {
  std::map<std::string, torch::Tensor> tensors;  // on the CPU, owning their memory
  // For the log, "" when the file was plain weights under torchvision's names: "a torch.save state
  // dict under 'state_dict', prefix 'module.' removed; timm efficientnet_b0 names (211 renamed)".
  std::string described;
};

// Throws Error naming the file: invalid for damaged or crafted bytes (a pickle naming any global a
// state dict does not need is refused before anything could run), unsupported for formats frugal
// does not read (the legacy torch.save format: with the line of Python that converts it; a
// TorchScript module; a hub folder of timm's TensorFlow ports, whose padding differs). A frugal
// checkpoint's trainer state ("frugal.*") is left out: only the model's tensors come back.
WeightsFile load_weights_file(const std::filesystem::path& path);

}  // namespace frugal

// The model zoo: small CNN for 28x28 images and torchvision-compatible ResNet / EfficientNet.
//
// Parameter and buffer names equal torchvision's (0.26), so weights exported from torchvision as
// safetensors load by name (scripts/export-torchvision-weights.py).
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace frugal {

// What using a model file needs besides its tensors (stored in checkpoint metadata).
struct ModelInfo {
  std::string name;                  // make_model() name: "cnn", "resnet18", ...
  std::vector<std::string> classes;  // index -> class name
  int image_size = 28;               // square input side in pixels
  int channels = 1;                  // 1 or 3
  std::vector<float> mean, std;      // per-channel normalization of [0,1] pixels
  // name == kTorchScriptModel: the module file (absolute) and its SHA-256, which the weights are for.
  std::string module_file, module_sha256;
  // Multi-label (trained on tag lists, docs/cli.md, --label-separator): each output is a tag of its
  // own, its probability the sigmoid of its logit; a tag is predicted when that reaches its
  // threshold: thresholds[c] (tuned on validation, --tune-thresholds), else one for all.
  bool multi_label = false;
  std::vector<float> thresholds;  // per class, or empty
  float threshold = 0.5f;         // when thresholds is empty (--threshold)
  float threshold_of(std::size_t c) const { return c < thresholds.size() ? thresholds[c] : threshold; }
};

// ModelInfo::name of a user's TorchScript module (--model FILE.pt).
inline constexpr const char* kTorchScriptModel = "torchscript";

// One piece of a model's forward, the unit a pipeline (train --pipeline) cuts between: `run` maps
// the previous piece's output to this piece's; `modules` are the name prefixes of the parameters
// and buffers it uses (each of the model's tensors belongs to exactly one piece).
struct ModelPiece {
  std::string name;
  std::vector<std::string> modules;
  std::function<torch::Tensor(const torch::Tensor&)> run;
};

class Model : public torch::nn::Module {
 public:
  // (B, C, H, W) float, normalized -> (B, num_classes) logits.
  virtual torch::Tensor forward(torch::Tensor x) = 0;
  // The forward as an ordered list of pieces: forward(x) is pieces [0, n) run in turn. Empty when
  // the model cannot be cut (a TorchScript module whose forward does more than call its top-level
  // children in turn).
  const std::vector<ModelPiece>& pieces() const { return pieces_; }
  // Why pieces() is empty, for a refusal to say (a TorchScript module: what in its forward is not
  // a call of a top-level child); empty when the model has pieces.
  const std::string& why_uncut() const { return why_uncut_; }
  // Pieces [begin, end) run in turn on x.
  torch::Tensor run_pieces(torch::Tensor x, std::size_t begin, std::size_t end) const;
  // Name prefix of the classifier head, e.g. "fc" or "classifier.1".
  virtual std::string head_prefix() const = 0;
  // Runs the model with each block's activations recomputed in backward (--grad-checkpoint).
  // Off by default; forward() honours it.
  void set_grad_checkpoint(bool on) { grad_checkpoint_ = on; }
  bool grad_checkpoint() const { return grad_checkpoint_; }
  // Names of the weights of standard layers (Conv2d, Linear) that are not torch::nn modules here: a
  // TorchScript module's, which compress prunes and quantizes. Empty for the zoo, whose layers are
  // found by their type.
  virtual std::vector<std::string> scripted_layer_weights() const { return {}; }

 protected:
  bool grad_checkpoint_ = false;
  std::vector<ModelPiece> pieces_;  // filled by the zoo's constructors
  std::string why_uncut_;
};

// A model's input defaults for `channels` (1 or 3): image_size, mean and std (classes left empty).
// The ImageNet models take ImageNet's statistics, as torchvision's pretrained weights expect.
ModelInfo default_model_info(const std::string& name, int channels);

// Throws Error(usage) listing model_names() when `name` is unknown.
std::shared_ptr<Model> make_model(const std::string& name, int num_classes, int channels);
std::vector<std::string> model_names();

// Copies torchvision-named tensors into the model. With allow_head_mismatch, a classifier head of
// another shape keeps its fresh initialization and the returned message says so (else empty).
// Unknown or missing names, or other shape mismatches -> Error(invalid).
std::string load_weights(Model& model, const std::map<std::string, torch::Tensor>& tensors, bool allow_head_mismatch);

// The zoo model whose tensors (all but the classifier head's) these are, by name and shape, or
// nullopt: what a failed load_weights suggests, and how --init's weights name the model.
std::optional<std::string> zoo_model_for(const std::map<std::string, torch::Tensor>& tensors);

// --sync-bn: while training, every batch norm layer computes its batch statistics over all the
// processes of a data-parallel run; `all_reduce_sum` sums a tensor over them in place (called in
// forward and in backward, in the same order on every process). nullptr (the default): each
// process normalises by its own batch, as torch::nn::BatchNorm2d.
void set_batch_norm_sync(std::function<void(torch::Tensor&)> all_reduce_sum);

// --- A user's own model: a TorchScript module (src/models/torchscript.cpp) ---------------------
struct ScriptedModule {
  std::shared_ptr<Model> model;  // on the CPU; parameters and buffers under the module's own names
  std::string sha256;            // of the file
};
// Loads torch.jit.save's file. Error(usage) when there is no such file; Error(invalid) for a
// torch.save state dict (weights, not a model: says to use {init}) or a module LibTorch refuses.
// A module is code that runs with the user's rights (docs/models.md), so before it runs:
//  - its zip directory is read and a module whose entries unpack to more than the file's size plus
//    kMaxModuleUnpackExtra is refused (Error(invalid)) before torch::jit::load reads any of them;
//  - unless model code is allowed (set_allow_model_code): a module with a __setstate__ (code that
//    torch::jit::load would run) is refused before loading, and once loaded every op its forward
//    (and the methods, functions and hooks it calls, followed recursively) may run is held to an
//    allowlist of side-effect-free tensor ops (script_op_allowed); the first op outside it is
//    Error(invalid) naming the op, the method and the source line.
ScriptedModule load_torchscript(const std::filesystem::path& file);
inline constexpr std::uint64_t kMaxModuleUnpackExtra = std::uint64_t{256} << 20;
// Process-wide (the commands set it from {allow_model_code}): run any op a module holds. Off by default.
void set_allow_model_code(bool on);
// Whether an op ("aten::conv2d", "prim::If") is on the allowlist: the ops torchvision's and timm's
// models use, scripted and traced, and common tensor math; never file, process, network, RNG-seeding,
// printing or another namespace's ops.
bool script_op_allowed(const std::string& op);
// TorchScript's graph executor runs a module's first calls as written and later ones optimized
// (fused), which computes differently: a resumed run would not repeat an uninterrupted one bit for
// bit. Off (process-wide) for --deterministic.
void set_torchscript_optimized(bool on);
// Input defaults for a module: 224 px and ImageNet's statistics, as timm's and torchvision's expect.
ModelInfo torchscript_model_info(const std::filesystem::path& file, const std::string& sha256, int channels);
// The model `info` describes: a zoo model, or its TorchScript module, loaded from info.module_file
// when the file is still the one trained (its SHA-256), else Error naming the file.
std::shared_ptr<Model> make_model_for(const ModelInfo& info);

// Parameters + buffers (num_batches_tracked included) under torchvision names, on the CPU.
std::map<std::string, torch::Tensor> state_dict(const Model& model);

}  // namespace frugal

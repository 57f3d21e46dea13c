// make_model() and name-based weight exchange in torchvision's naming.
#include <sstream>

#include "frugal/util/error.h"
#include "models/zoo.h"

namespace frugal {
namespace {

// `imagenet_input`: trained at 224 px with ImageNet's normalization, as torchvision's weights are;
// the cnn is made for 28 px images normalized to [-1, 1].
struct Entry {
  const char* name;
  std::shared_ptr<Model> (*make)(int, int);
  bool imagenet_input;
};

const Entry kModels[] = {
    {"cnn", detail::make_cnn, false},
    {"resnet18", detail::make_resnet18, true},
    {"resnet50", detail::make_resnet50, true},
    {"efficientnet_b0", detail::make_efficientnet_b0, true},
};

bool imagenet_input(const std::string& name) {
  for (auto& e : kModels)
    if (name == e.name) return e.imagenet_input;
  return true;
}

std::string shape_str(const torch::Tensor& t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

bool in_head(const std::string& name, const std::string& head) { return name.rfind(head + ".", 0) == 0; }

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (auto& e : kModels) names.push_back(e.name);
  return names;
}

ModelInfo default_model_info(const std::string& name, int channels) {
  ModelInfo info;
  info.name = name;
  info.channels = channels;
  if (!imagenet_input(name)) {
    info.image_size = 28;
    info.mean = info.std = std::vector<float>(static_cast<std::size_t>(channels), 0.5f);
  } else if (channels == 1) {
    info.image_size = 224;
    info.mean = {0.449f};
    info.std = {0.226f};
  } else {
    info.image_size = 224;
    info.mean = {0.485f, 0.456f, 0.406f};
    info.std = {0.229f, 0.224f, 0.225f};
  }
  return info;
}

std::shared_ptr<Model> make_model(const std::string& name, int num_classes, int channels) {
  if (channels != 1 && channels != 3) fail(ErrorKind::usage, "{channels}", "1 or 3", std::to_string(channels), "");
  for (auto& e : kModels)
    if (name == e.name) return e.make(num_classes, channels);
  std::string list;
  for (auto& n : model_names()) list += (list.empty() ? "" : ", ") + n;
  fail(ErrorKind::usage, "{model}", "one of " + list, "'" + name + "'", "pick one of the listed models");
}

torch::Tensor Model::run_pieces(torch::Tensor x, std::size_t begin, std::size_t end) const {
  for (std::size_t i = begin; i < end && i < pieces_.size(); ++i) x = pieces_[i].run(x);
  return x;
}

std::map<std::string, torch::Tensor> state_dict(const Model& model) {
  std::map<std::string, torch::Tensor> out;
  torch::NoGradGuard no_grad;
  for (auto& p : model.named_parameters()) out[p.key()] = p.value().detach().to(torch::kCPU).contiguous();
  for (auto& b : model.named_buffers()) out[b.key()] = b.value().detach().to(torch::kCPU).contiguous();
  return out;
}

std::optional<std::string> zoo_model_for(const std::map<std::string, torch::Tensor>& tensors) {
  for (const std::string& name : model_names())
    for (int channels : {3, 1}) {
      const auto model = make_model(name, 10, channels);
      const std::string head = model->head_prefix();
      std::map<std::string, torch::Tensor> own;
      for (auto& p : model->named_parameters()) own[p.key()] = p.value();
      for (auto& b : model->named_buffers()) own[b.key()] = b.value();
      auto body_size = [&](const std::map<std::string, torch::Tensor>& m) {
        std::size_t n = 0;
        for (const auto& [k, v] : m) n += !in_head(k, head);
        return n;
      };
      if (body_size(own) != body_size(tensors)) continue;
      bool same = true;
      for (const auto& [k, v] : own) {
        if (in_head(k, head)) continue;
        auto it = tensors.find(k);
        if (it == tensors.end() || it->second.sizes() != v.sizes()) {
          same = false;
          break;
        }
      }
      if (same) return name;
    }
  return std::nullopt;
}

std::string load_weights(Model& model, const std::map<std::string, torch::Tensor>& tensors, bool allow_head_mismatch) {
  std::map<std::string, torch::Tensor> targets;
  for (auto& p : model.named_parameters()) targets[p.key()] = p.value();
  for (auto& b : model.named_buffers()) targets[b.key()] = b.value();
  const std::string head = model.head_prefix();

  std::vector<std::string> unknown, missing, mismatched;
  bool head_replaced = false;
  for (auto& [name, t] : tensors)
    if (!targets.count(name)) unknown.push_back(name);
  for (auto& [name, target] : targets) {
    auto it = tensors.find(name);
    if (it == tensors.end()) {
      missing.push_back(name);
    } else if (it->second.sizes() != target.sizes()) {
      if (allow_head_mismatch && in_head(name, head)) {
        head_replaced = true;
      } else {
        mismatched.push_back(name + " (model " + shape_str(target) + ", file " + shape_str(it->second) + ")");
      }
    }
  }
  auto first = [](const std::vector<std::string>& v) {
    std::string s;
    for (std::size_t i = 0; i < v.size() && i < 5; ++i) s += (i ? ", " : "") + v[i];
    if (v.size() > 5) s += ", ... (" + std::to_string(v.size()) + " in all)";
    return s;
  };
  if (!unknown.empty() || !missing.empty() || !mismatched.empty()) {
    // Other names (not only other shapes): the weights of another zoo model, maybe.
    const std::optional<std::string> theirs =
        unknown.empty() && missing.empty() ? std::nullopt : zoo_model_for(tensors);
    std::string found;
    if (!unknown.empty()) found += "unknown tensors " + first(unknown);
    if (!missing.empty()) found += std::string(found.empty() ? "" : "; ") + "missing tensors " + first(missing);
    if (!mismatched.empty()) found += std::string(found.empty() ? "" : "; ") + "other shapes: " + first(mismatched);
    if (theirs)
      fail(ErrorKind::invalid, "weights", "the tensor names and shapes of the model trained", found,
           "these are " + *theirs + "'s weights: give {model} " + *theirs);
    fail(ErrorKind::invalid, "weights", "the tensor names and shapes of the model trained", found,
         "give weights of the same architecture (torchvision's or timm's names, a torch.save state dict or "
         "safetensors), or leave {init} out to start from scratch");
  }

  torch::NoGradGuard no_grad;
  for (auto& [name, target] : targets) {
    if (head_replaced && in_head(name, head)) continue;
    target.copy_(tensors.at(name).to(target.device(), target.scalar_type()));
  }
  if (!head_replaced) return "";
  return "classifier head '" + head +
         "' has another number of classes in the weights; it was replaced by a "
         "freshly initialized one";
}

}  // namespace frugal

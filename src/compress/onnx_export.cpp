// Per-architecture ONNX graph builders. Each walks the model's modules under their torchvision
// names and emits the same computation as the model's forward() in eval mode.
#include "frugal/compress/onnx.h"

#include <nlohmann/json.hpp>

#include "compress/onnx_graph.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"

namespace frugal {
namespace {

std::vector<float> to_floats(const torch::Tensor& t) {
  auto c = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

std::vector<std::int64_t> dims_of(const torch::Tensor& t) { return t.sizes().vec(); }

class Builder {
 public:
  Builder(const ModelInfo& info, Model& model) : info_(info) {
    for (const auto& item : model.named_modules()) modules_[item.key()] = item.value();
    g.input_chw = {info.channels, info.image_size, info.image_size};
    g.num_outputs = static_cast<std::int64_t>(info.classes.size());
  }

  bool has(const std::string& path) const { return modules_.count(path) > 0; }

  template <class Impl>
  Impl& module(const std::string& path) const {
    auto it = modules_.find(path);
    Impl* m = it == modules_.end() ? nullptr : it->second->as<Impl>();
    if (!m)
      throw Error(ErrorKind::unsupported,
                  message("onnx export of " + info_.name, "a " + type_name<Impl>() + " named " + path, "none",
                          "this model's layout is not "
                          "the one its graph builder expects"));
    return *m;
  }

  // Conv (+ the batch norm after it, folded into weights and bias).
  std::string conv(const std::string& x, const std::string& conv_path, const std::string& bn_path = "") {
    auto& c = module<torch::nn::Conv2dImpl>(conv_path);
    const auto& o = c.options;
    torch::NoGradGuard no_grad;
    auto w = c.weight.detach().to(torch::kFloat32);
    auto b = o.bias() ? c.bias.detach().to(torch::kFloat32) : torch::zeros({w.size(0)});
    if (!bn_path.empty()) {
      auto& n = module<torch::nn::BatchNorm2dImpl>(bn_path);
      auto scale = n.weight.detach() / torch::sqrt(n.running_var.detach() + n.options.eps());
      w = w * scale.view({-1, 1, 1, 1});
      b = (b - n.running_mean.detach()) * scale + n.bias.detach();
    }
    if (!std::holds_alternative<torch::ExpandingArray<2>>(o.padding()) ||
        !std::holds_alternative<torch::enumtype::kZeros>(o.padding_mode()))
      throw Error(ErrorKind::unsupported, "onnx export: " + conv_path + " uses a padding this exporter lacks");
    auto pad = std::get<torch::ExpandingArray<2>>(o.padding());
    const std::string name = conv_path + ".weight";
    std::vector<onnx::Attribute> attrs{onnx::ints_attr("kernel_shape", {w.size(2), w.size(3)}),
                                       onnx::ints_attr("strides", {o.stride()->at(0), o.stride()->at(1)}),
                                       onnx::ints_attr("pads", {pad->at(0), pad->at(1), pad->at(0), pad->at(1)}),
                                       onnx::ints_attr("dilations", {o.dilation()->at(0), o.dilation()->at(1)}),
                                       onnx::int_attr("group", o.groups())};
    g.constant(name, dims_of(w), to_floats(w));
    g.constant(conv_path + ".bias", {w.size(0)}, to_floats(b));
    return g.add("Conv", {x, name, conv_path + ".bias"}, conv_path, std::move(attrs));
  }

  std::string linear(const std::string& x, const std::string& path) {
    auto& l = module<torch::nn::LinearImpl>(path);
    auto w = l.weight.detach();
    g.constant(path + ".weight", dims_of(w), to_floats(w));
    std::vector<std::string> inputs{x, path + ".weight"};
    if (l.options.bias()) inputs.push_back(g.constant(path + ".bias", dims_of(l.bias), to_floats(l.bias)));
    return g.add("Gemm", std::move(inputs), path, {onnx::int_attr("transB", 1)});
  }

  std::string relu(const std::string& x) { return g.add("Relu", {x}, x + ".relu"); }
  std::string sigmoid(const std::string& x) { return g.add("Sigmoid", {x}, x + ".sigmoid"); }
  std::string silu(const std::string& x) { return g.add("Mul", {x, sigmoid(x)}, x + ".silu"); }
  std::string add(const std::string& a, const std::string& b) { return g.add("Add", {a, b}, a + ".add"); }
  std::string mul(const std::string& a, const std::string& b) { return g.add("Mul", {a, b}, a + ".mul"); }
  std::string global_avg_pool(const std::string& x) { return g.add("GlobalAveragePool", {x}, x + ".pool"); }
  std::string flatten(const std::string& x) { return g.add("Flatten", {x}, x + ".flat", {onnx::int_attr("axis", 1)}); }
  std::string max_pool(const std::string& x, std::int64_t k, std::int64_t stride, std::int64_t pad) {
    return g.add("MaxPool", {x}, x + ".maxpool",
                 {onnx::ints_attr("kernel_shape", {k, k}), onnx::ints_attr("strides", {stride, stride}),
                  onnx::ints_attr("pads", {pad, pad, pad, pad})});
  }

  // Number of children "prefix.0", "prefix.1", ...
  int count(const std::string& prefix) const {
    int n = 0;
    while (has(prefix + "." + std::to_string(n))) ++n;
    return n;
  }

  onnx::Graph g;

 private:
  template <class Impl>
  static std::string type_name() {
    if constexpr (std::is_same_v<Impl, torch::nn::Conv2dImpl>)
      return "Conv2d";
    else if constexpr (std::is_same_v<Impl, torch::nn::BatchNorm2dImpl>)
      return "BatchNorm2d";
    else if constexpr (std::is_same_v<Impl, torch::nn::LinearImpl>)
      return "Linear";
    else
      return "module";
  }

  const ModelInfo& info_;
  std::map<std::string, std::shared_ptr<torch::nn::Module>> modules_;
};

// torchvision ResNet: BasicBlock (conv1, conv2) or Bottleneck (conv1..conv3), downsample = conv+bn.
std::string build_resnet(Builder& b) {
  std::string x = b.relu(b.conv(b.g.input_name, "conv1", "bn1"));
  x = b.max_pool(x, 3, 2, 1);
  for (int s = 1; s <= 4; ++s) {
    const std::string layer = "layer" + std::to_string(s);
    const int blocks = b.count(layer);
    for (int i = 0; i < blocks; ++i) {
      const std::string p = layer + "." + std::to_string(i) + ".";
      const bool bottleneck = b.has(p + "conv3");
      std::string identity = b.has(p + "downsample") ? b.conv(x, p + "downsample.0", p + "downsample.1") : x;
      std::string out = b.relu(b.conv(x, p + "conv1", p + "bn1"));
      out = b.conv(out, p + "conv2", p + "bn2");
      if (bottleneck) out = b.conv(b.relu(out), p + "conv3", p + "bn3");
      x = b.relu(b.add(out, identity));
    }
  }
  return b.linear(b.flatten(b.global_avg_pool(x)), "fc");
}

// Conv2dNormActivation "prefix.0" conv, "prefix.1" bn, SiLU when "prefix.2" exists.
std::string conv_norm_act(Builder& b, const std::string& x, const std::string& prefix) {
  std::string y = b.conv(x, prefix + ".0", prefix + ".1");
  return b.has(prefix + ".2") ? b.silu(y) : y;
}

// torchvision EfficientNet: features.0 stem, features.1..N-2 stages of MBConv, features.N-1 head.
std::string build_efficientnet(Builder& b) {
  const int n = b.count("features");
  std::string x = conv_norm_act(b, b.g.input_name, "features.0");
  for (int s = 1; s < n - 1; ++s) {
    const std::string stage = "features." + std::to_string(s);
    for (int i = 0, blocks = b.count(stage); i < blocks; ++i) {
      const std::string blk = stage + "." + std::to_string(i) + ".block";
      const int parts = b.count(blk);
      std::string y = x;
      for (int k = 0; k < parts; ++k) {
        const std::string part = blk + "." + std::to_string(k);
        if (b.has(part + ".fc1")) {  // squeeze-and-excitation
          std::string sc = b.silu(b.conv(b.global_avg_pool(y), part + ".fc1"));
          y = b.mul(y, b.sigmoid(b.conv(sc, part + ".fc2")));
        } else {
          y = conv_norm_act(b, y, part);
        }
      }
      // MBConv keeps a residual when the block preserves shape (stride 1, in == out channels).
      auto& first = b.module<torch::nn::Conv2dImpl>(blk + ".0.0");
      auto& last = b.module<torch::nn::Conv2dImpl>(blk + "." + std::to_string(parts - 1) + ".0");
      bool strided = false;
      for (int k = 0; k < parts; ++k) {
        const std::string c = blk + "." + std::to_string(k) + ".0";
        if (b.has(c) && b.module<torch::nn::Conv2dImpl>(c).options.stride()->at(0) != 1) strided = true;
      }
      x = !strided && first.options.in_channels() == last.options.out_channels() ? b.add(y, x) : y;
    }
  }
  x = conv_norm_act(b, x, "features." + std::to_string(n - 1));
  return b.linear(b.flatten(b.global_avg_pool(x)), "classifier.1");
}

// frugal's cnn: features.N = [conv, bn, relu] + maxpool(2) for all but the last stage, then fc1,
// relu, fc (see src/models/cnn.cpp).
std::string build_cnn(Builder& b, int image_size) {
  std::string x = b.g.input_name;
  int side = image_size;
  for (int s = 0, stages = b.count("features"); s < stages; ++s) {
    const std::string p = "features." + std::to_string(s) + ".";
    x = b.relu(b.conv(x, p + "0", p + "1"));
    if (s + 1 == stages) break;
    x = b.g.add("MaxPool", {x}, x + ".maxpool",
                {onnx::ints_attr("kernel_shape", {2, 2}), onnx::ints_attr("strides", {2, 2})});
    side /= 2;
  }
  // forward() pools adaptively to 7x7; with the input side fixed that is a plain average pool
  // when the side is a multiple of 7 (and nothing at 28x28 inputs).
  if (side % 7 != 0)
    throw Error(ErrorKind::unsupported, message("onnx export of cnn",
                                                "an input side whose feature map is a "
                                                "multiple of 7 (28, 56, ...)",
                                                std::to_string(image_size), "export a model trained at such a size"));
  if (side != 7) {
    const std::int64_t k = side / 7;
    x = b.g.add("AveragePool", {x}, x + ".avgpool",
                {onnx::ints_attr("kernel_shape", {k, k}), onnx::ints_attr("strides", {k, k})});
  }
  x = b.relu(b.linear(b.flatten(x), "fc1"));
  return b.linear(x, "fc");
}

}  // namespace

std::string onnx_model_bytes(const ModelInfo& info, Model& model) {
  Builder b(info, model);
  std::string out;
  if (info.name == "resnet18" || info.name == "resnet50")
    out = build_resnet(b);
  else if (info.name == "efficientnet_b0")
    out = build_efficientnet(b);
  else if (info.name == "cnn")
    out = build_cnn(b, info.image_size);
  else if (info.name == kTorchScriptModel)
    // LibTorch has no ONNX exporter, and frugal's writes the zoo's graphs only; Python's exports
    // the module's own code.
    throw Error(ErrorKind::unsupported,
                message("onnx export", "a model of the zoo (cnn, resnet18, resnet50, efficientnet_b0)",
                        "a TorchScript module (" + info.module_file + ")",
                        "export it in Python with the trained weights: m = torch.jit.load('" + info.module_file +
                            "'); m.load_state_dict(safetensors.torch.load_file(CKPT)); m.eval(); "
                            "torch.onnx.export(m, torch.zeros(1, " +
                            std::to_string(info.channels) + ", " + std::to_string(info.image_size) + ", " +
                            std::to_string(info.image_size) + "), 'model.onnx', dynamo=False)"));
  else
    throw Error(ErrorKind::unsupported, message("onnx export",
                                                "a model of the zoo (cnn, resnet18, resnet50, "
                                                "efficientnet_b0)",
                                                info.name, "export a zoo model"));
  b.g.mark_output(out);

  const nlohmann::json classes = info.classes;
  std::map<std::string, std::string> metadata{
      {"frugal.model", info.name},
      {"frugal.classes", classes.dump()},
      {"frugal.image_size", std::to_string(info.image_size)},
      {"frugal.channels", std::to_string(info.channels)},
      {"frugal.mean", nlohmann::json(info.mean).dump()},
      {"frugal.std", nlohmann::json(info.std).dump()},
      {"frugal.preprocessing", "input: float32 NCHW (batch, " + std::to_string(info.channels) + ", " +
                                   std::to_string(info.image_size) + ", " + std::to_string(info.image_size) +
                                   "); pixels scaled to [0,1], resized to the input size, "
                                   "then (x - mean[c]) / std[c] per channel; output: logits over frugal.classes" +
                                   std::string(info.multi_label ? " (multi-label: a sigmoid per class; a tag is "
                                                                  "predicted when it reaches frugal.thresholds)"
                                                                : " (softmax for probabilities)")},
  };
  if (info.multi_label) {  // the head: one sigmoid per class, each with its threshold
    metadata["frugal.multi_label"] = "true";
    std::vector<float> thresholds = info.thresholds;
    if (thresholds.empty()) thresholds.assign(info.classes.size(), info.threshold);
    metadata["frugal.thresholds"] = nlohmann::json(thresholds).dump();
  }
  return b.g.serialize("frugal_" + info.name, metadata);
}

void export_onnx(const ModelInfo& info, Model& model, const std::filesystem::path& out, Env& env) {
  write_file_atomic(env, out, onnx_model_bytes(info, model));
}

}  // namespace frugal

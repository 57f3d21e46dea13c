// A user's own model as a TorchScript module (--model FILE.pt), trained as a zoo model is.
//
// TorchScript is in maintenance mode upstream, and it is still the one way LibTorch runs a model
// defined in Python (torch.jit.script / torch.jit.trace). Everything that knows the format is in
// this file, so another one (torch.export, once LibTorch can train what it writes) can take its place.
//
// How it is a Model: the module's parameters and buffers are registered again in a tree of plain
// torch::nn::Modules under the module's own names ("layer1.0.conv1.weight"). They are the same
// tensors (one TensorImpl each), so the optimizer, .to(device), channels-last, freezing, the
// checkpoint (names as the module's state_dict has them) and data parallel work on them unchanged,
// while forward() runs the module's own code in TorchScript's interpreter. Autocast applies there
// too: it works at the dispatcher, below the interpreter.
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#include <torch/script.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "frugal/models/models.h"
#include "frugal/util/error.h"
#include "frugal/util/hash.h"

namespace frugal {
namespace {

class ScriptedModel : public Model {
 public:
  explicit ScriptedModel(torch::jit::Module module) : module_(std::move(module)) {
    for (const auto& p : module_.named_parameters(/*recurse=*/true)) register_at(p.name, p.value, /*parameter=*/true);
    for (const auto& b : module_.named_buffers(/*recurse=*/true)) register_at(b.name, b.value, /*parameter=*/false);
    // The head: the last 2-D weight (a Linear's), which --init may replace when its width differs.
    for (const auto& p : module_.named_parameters(true))
      if (p.value.dim() == 2 && p.name.size() > 7 && p.name.ends_with(".weight"))
        head_ = p.name.substr(0, p.name.size() - 7);
    why_uncut_ = cut_into_children();
  }
  torch::Tensor forward(torch::Tensor x) override {
    torch::jit::IValue out = module_.forward({std::move(x)});
    if (!out.isTensor())
      fail(ErrorKind::invalid, "the TorchScript module", "forward(images) returning a tensor of logits",
           "a " + out.tagKind(), "return the logits tensor alone from forward");
    return out.toTensor();
  }
  std::string head_prefix() const override { return head_; }
  std::vector<std::string> scripted_layer_weights() const override {
    std::vector<std::string> out;
    for (const auto& m : module_.named_modules()) {
      const std::string type = m.value.type()->name() ? m.value.type()->name()->qualifiedName() : "";
      // "__torch__.torch.nn.modules.conv.Conv2d", or "...conv.___torch_mangle_3.Conv2d" when the
      // module holds several differently configured ones.
      auto is = [&](const char* module, const char* cls) {
        return type.starts_with(std::string("__torch__.torch.nn.modules.") + module + ".") &&
               type.ends_with(std::string(".") + cls);
      };
      const bool layer = is("conv", "Conv2d") || is("linear", "Linear");
      if (layer && m.value.hasattr("weight") && m.value.attr("weight").isTensor())
        out.push_back(m.name.empty() ? "weight" : m.name + ".weight");
    }
    return out;
  }
  void train(bool on) override {
    torch::nn::Module::train(on);
    module_.train(on);
  }

 private:
  // Registers `tensor` under its dotted name, making the plain modules of the path on the way.
  void register_at(const std::string& name, const torch::Tensor& tensor, bool parameter) {
    torch::nn::Module* at = this;
    std::size_t from = 0;
    for (std::size_t dot; (dot = name.find('.', from)) != std::string::npos; from = dot + 1) {
      const std::string part = name.substr(from, dot - from);
      auto children = at->named_children();
      if (auto* found = children.find(part))
        at = found->get();
      else
        at = at->register_module(part, std::make_shared<torch::nn::Module>()).get();
    }
    const std::string leaf = name.substr(from);
    if (parameter)
      at->register_parameter(leaf, tensor, tensor.requires_grad());
    else
      at->register_buffer(leaf, tensor);
  }

  // The pieces a pipeline cuts between (Model::pieces): the module's top-level children, when its
  // forward does nothing but call them in turn, each on the one before's output (an nn.Sequential,
  // scripted or traced, or a forward of `x = self.a(x); return self.b(x)`; a child's own forward
  // may do anything), and each of its tensors is under one of them; then "". Otherwise no pieces,
  // and what is in the way (train --pipeline refuses the module saying it). Read from the
  // forward's graph: GetAttr of a child of self, then CallMethod forward on the running value
  // (constants aside: they compute nothing).
  std::string cut_into_children() {
    namespace jit = torch::jit;
    auto method = module_.find_method("forward");
    if (!method) return "it has no forward method";
    const std::shared_ptr<jit::Graph> graph = method->graph();
    if (graph->inputs().size() != 2 || graph->outputs().size() != 1)
      return "its forward takes more than the images or returns more than one value";
    jit::Value* self = graph->inputs()[0];
    jit::Value* running = graph->inputs()[1];
    std::map<const jit::Value*, std::string> child_of;  // a GetAttr's value -> the child's name
    std::vector<std::string> order;
    auto after = [&] { return order.empty() ? std::string() : " after its child \"" + order.back() + "\""; };
    auto nodes = graph->nodes();
    for (auto it = nodes.begin(); it != nodes.end(); ++it) {
      jit::Node* node = *it;
      if (node->kind() == jit::prim::Constant) continue;
      if (node->kind() == jit::prim::GetAttr && node->input(0) == self) {
        const std::string name = node->s(jit::attr::name);
        if (!module_.hasattr(name) || !module_.attr(name).isModule())
          return "its forward reads \"" + name + "\", which is not a child module";
        if (node->output()->uses().size() > 1) return "its forward uses its child \"" + name + "\" more than once";
        child_of[node->output()] = name;
      } else if (node->kind() == jit::prim::CallMethod && node->s(jit::attr::name) == "forward" &&
                 node->inputs().size() == 2 && child_of.count(node->input(0)) && node->input(1) == running) {
        const std::string& name = child_of[node->input(0)];
        if (std::find(order.begin(), order.end(), name) != order.end())
          return "its forward calls its child \"" + name + "\" twice";  // shared tensors
        order.push_back(name);
        running = node->output();
      } else {
        // The module's own code: named by its first step on the running value (the list or
        // constant a call is given comes before the call).
        jit::Node* step = node;
        for (auto later = it; later != nodes.end(); ++later)
          if (std::find((*later)->inputs().begin(), (*later)->inputs().end(), running) != (*later)->inputs().end()) {
            step = *later;
            break;
          }
        return "its forward computes " + operation_name(step) + " itself" + after();
      }
    }
    if (order.empty()) return "its forward calls no child";
    if (graph->outputs()[0] != running) return "its forward does not return its last child's output";
    const std::set<std::string> called(order.begin(), order.end());
    auto under_a_child = [&](const std::string& tensor) {
      const auto dot = tensor.find('.');
      return dot != std::string::npos && called.count(tensor.substr(0, dot));
    };
    for (const auto& p : module_.named_parameters(true))
      if (!under_a_child(p.name)) return "its tensor \"" + p.name + "\" is not in a child its forward calls";
    for (const auto& b : module_.named_buffers(true))
      if (!under_a_child(b.name)) return "its tensor \"" + b.name + "\" is not in a child its forward calls";
    for (const auto& name : order) {
      torch::jit::Module child = module_.attr(name).toModule();
      pieces_.push_back({name, {name}, [child, name](const torch::Tensor& x) mutable {
                           torch::jit::IValue out = child.forward({x});
                           if (!out.isTensor())
                             fail(ErrorKind::invalid, "the TorchScript module's child \"" + name + "\"",
                                  "a forward returning one tensor (it is a pipeline piece)", "a " + out.tagKind(),
                                  "return one tensor from each top-level child's forward");
                           return out.toTensor();
                         }});
    }
    return "";
  }

  // "adaptive_avg_pool2d" for a call of a TorchScript function, "aten::flatten" for an operator.
  static std::string operation_name(torch::jit::Node* node) {
    if (node->kind() == torch::jit::prim::CallFunction) {
      torch::jit::Node* callee = node->input(0)->node();
      if (callee->kind() == torch::jit::prim::Constant && callee->hasAttribute(torch::jit::attr::name))
        return callee->s(torch::jit::attr::name);
    }
    if (node->kind() == torch::jit::prim::CallMethod) return "method " + node->s(torch::jit::attr::name);
    return node->kind().toQualString();
  }

  torch::jit::Module module_;
  std::string head_;
};

std::string file_sha256(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(ErrorKind::io, file.string(), "a readable file", "none that can be opened", "check the path");
  Sha256 h;
  std::vector<char> buf(1 << 20);
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0)
    h.update(buf.data(), static_cast<std::size_t>(in.gcount()));
  return h.hex_digest();
}

// A torch.save file (a zip holding data.pkl and no code/) is weights, not a module.
bool holds_code(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string head(1 << 16, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return head.find("/code/") != std::string::npos || head.find("constants.pkl") != std::string::npos;
}

}  // namespace

ScriptedModule load_torchscript(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    fail(ErrorKind::usage, file.string(), "a TorchScript module file ({model} FILE.pt)", "no such file",
         "give the file torch.jit.save wrote, or a zoo model name (cnn, resnet18, resnet50, efficientnet_b0)");
  ScriptedModule out;
  out.sha256 = file_sha256(file);
  torch::jit::Module module;
  try {
    module = torch::jit::load(file.string(), torch::kCPU);
  } catch (const std::exception& e) {
    if (!holds_code(file))
      fail(ErrorKind::invalid, file.string(),
           "a TorchScript module (torch.jit.script or torch.jit.trace, then torch.jit.save)",
           "no TorchScript code: a torch.save file holds weights, not a model",
           "give {model} NAME of its architecture with {init} " + file.string() +
               ", or script the model in Python: torch.jit.save(torch.jit.script(model), 'model.pt')");
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    fail(ErrorKind::invalid, file.string(), "a TorchScript module LibTorch " TORCH_VERSION " can load",
         "one it refused: " + what, "save it again with torch.jit.save from a PyTorch no newer than " TORCH_VERSION);
  }
  out.model = std::make_shared<ScriptedModel>(std::move(module));
  return out;
}

void set_torchscript_optimized(bool on) { torch::jit::setGraphExecutorOptimize(on); }

ModelInfo torchscript_model_info(const std::filesystem::path& file, const std::string& sha256, int channels) {
  ModelInfo info =
      default_model_info("resnet18", channels);  // ImageNet's input: what timm's and torchvision's models expect
  info.name = kTorchScriptModel;
  info.module_file = std::filesystem::absolute(file).lexically_normal().string();
  info.module_sha256 = sha256;
  return info;
}

std::shared_ptr<Model> make_model_for(const ModelInfo& info) {
  if (info.name != kTorchScriptModel)
    return make_model(info.name, static_cast<int>(info.classes.size()), info.channels);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(info.module_file, ec))
    fail(ErrorKind::usage, info.module_file,
         "the TorchScript module this model was trained with (sha256 " + info.module_sha256.substr(0, 12) + "...)",
         "no such file", "put the module file back at that path");
  ScriptedModule m = load_torchscript(info.module_file);
  if (m.sha256 != info.module_sha256)
    fail(ErrorKind::invalid, info.module_file,
         "the TorchScript module this model was trained with (sha256 " + info.module_sha256.substr(0, 12) + "...)",
         "another module (sha256 " + m.sha256.substr(0, 12) + "...)",
         "put back the module file the run was trained with (its weights are for that module's code)");
  return m.model;
}

}  // namespace frugal

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
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#include <torch/script.h>

#include <algorithm>
#include <atomic>
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
    std::vector<std::string> order;
    if (std::string why = children_in_order(order); !why.empty()) return why;
    if (std::string why = tensor_outside(order); !why.empty()) return why;
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

  // The children the forward calls, in `order`, when it does nothing else; else what it does besides.
  std::string children_in_order(std::vector<std::string>& order) {
    namespace jit = torch::jit;
    auto method = module_.find_method("forward");
    if (!method) return "it has no forward method";
    const std::shared_ptr<jit::Graph> graph = method->graph();
    if (graph->inputs().size() != 2 || graph->outputs().size() != 1)
      return "its forward takes more than the images or returns more than one value";
    jit::Value* self = graph->inputs()[0];
    jit::Value* running = graph->inputs()[1];
    std::map<const jit::Value*, std::string> child_of;  // a GetAttr's value -> the child's name
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
    return "";
  }

  // A tensor of the module that is in none of the children called, named; else "".
  std::string tensor_outside(const std::vector<std::string>& order) {
    const std::set<std::string> called(order.begin(), order.end());
    auto under_a_child = [&](const std::string& tensor) {
      const auto dot = tensor.find('.');
      return dot != std::string::npos && called.count(tensor.substr(0, dot));
    };
    for (const auto& p : module_.named_parameters(true))
      if (!under_a_child(p.name)) return "its tensor \"" + p.name + "\" is not in a child its forward calls";
    for (const auto& b : module_.named_buffers(true))
      if (!under_a_child(b.name)) return "its tensor \"" + b.name + "\" is not in a child its forward calls";
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

std::atomic<bool> g_allow_model_code{false};

// Before torch::jit::load reads a byte of an entry: the zip directory's uncompressed sizes, summed
// (a 1 MB file whose deflated entry unpacks to 1 GiB would otherwise be unpacked whole), and the
// module's code searched for a __setstate__, which loading would run. A file that is no zip of
// records is left to torch::jit::load to refuse.
void check_before_loading(const std::filesystem::path& file) {
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> reader;
  std::vector<std::string> records;
  try {
    reader = std::make_unique<caffe2::serialize::PyTorchStreamReader>(file.string());
    records = reader->getAllRecords();
  } catch (const std::exception&) {
    return;
  }
  std::error_code ec;
  const std::uint64_t on_disk = std::filesystem::file_size(file, ec);
  std::uint64_t unpacked = 0;
  for (const auto& name : records) unpacked += reader->getRecordSize(name);
  if (unpacked > on_disk + kMaxModuleUnpackExtra)
    fail(ErrorKind::invalid, file.string(),
         "a TorchScript module whose entries unpack to at most its size plus " +
             std::to_string(kMaxModuleUnpackExtra >> 20) + " MiB (torch.jit.save stores tensors uncompressed)",
         "entries that unpack to " + std::to_string(unpacked >> 20) + " MiB from a file of " +
             std::to_string(on_disk >> 10) + " KiB (nothing was unpacked)",
         "save the module again with torch.jit.save, which does not compress it");
  if (g_allow_model_code) return;
  for (const auto& name : records) {
    if (!name.starts_with("code/") || !name.ends_with(".py") || reader->getRecordSize(name) > (16u << 20)) continue;
    auto [data, size] = reader->getRecord(name);
    const std::string_view code(static_cast<const char*>(data.get()), size);
    if (code.find("def __setstate__(") != std::string_view::npos)
      fail(ErrorKind::invalid, file.string() + ":" + name,
           "a TorchScript module without code that runs as it is loaded",
           "a __setstate__ method (code that loading the module runs, before anything can check it)",
           "load it only if you trust its author: {allow_model_code} runs code from this file");
  }
}

// Every op a module's forward can run: its graph's, and those of each method and function it
// calls (followed through submodules, once each) and of its hooks. The first op outside the
// allowlist is named with the chain of calls to it, "aten::from_file in forward -> Child.helper
// (code/__torch__.py:12)"; a call that cannot be followed (through an interface) is refused too.
class OpCheck {
 public:
  // "" when every op is allowed, else where the first refused one is.
  std::string function(const torch::jit::Function& fn, const std::string& chain) {
    if (!seen_.insert(&fn).second) return "";
    return block(torch::jit::toGraphFunction(fn).graph()->block(), chain);
  }

 private:
  std::string block(const torch::jit::Block* b, const std::string& chain) {
    namespace jit = torch::jit;
    for (const jit::Node* node : b->nodes()) {
      std::string found;
      if (node->kind() == jit::prim::CallMethod || node->kind() == jit::prim::CallFunction) {
        const auto [callee, name] = callee_of(node);
        found =
            callee ? function(*callee, chain + " -> " + name) : where(node, chain) + " (a call frugal cannot follow)";
      } else if (!script_op_allowed(node->kind().toQualString())) {
        found = where(node, chain);
      }
      for (const jit::Block* inner : node->blocks())
        if (found.empty()) found = block(inner, chain);
      if (!found.empty()) return found;
    }
    return "";
  }

  // A call's function and its name ("Child.helper", "reseed"), or nullptr (an interface's method).
  static std::pair<const torch::jit::Function*, std::string> callee_of(const torch::jit::Node* node) {
    if (node->kind() == torch::jit::prim::CallFunction) {
      if (auto type = node->input(0)->type()->cast<c10::FunctionType>())
        return {type->function(), type->function()->name()};
      return {nullptr, ""};
    }
    const std::string name = node->s(torch::jit::attr::name);
    auto cls = node->input(0)->type()->cast<c10::ClassType>();
    if (!cls) return {nullptr, ""};
    const torch::jit::Function* fn = cls->findMethod(name);
    if (!fn) fn = cls->findForwardHook(name);
    if (!fn) fn = cls->findForwardPreHook(name);
    return {fn, (cls->name() ? cls->name()->name() + "." : "") + name};
  }

  static std::string where(const torch::jit::Node* node, const std::string& chain) {
    std::string out = node->kind().toQualString() + std::string(" in ") + chain;
    if (auto flc = node->sourceRange().file_line_col())
      out += " (" + std::get<0>(*flc) + ":" + std::to_string(std::get<1>(*flc)) + ")";
    return out;
  }

  std::set<const torch::jit::Function*> seen_;
};

void check_ops(const torch::jit::Module& module, const std::filesystem::path& file) {
  std::vector<std::pair<std::string, const torch::jit::Function*>> entries;
  if (auto forward = module.find_method("forward")) entries.emplace_back("forward", &forward->function());
  for (const auto& m : module.named_modules()) {
    const auto type = m.value.type();
    const std::string owner = m.name.empty() ? "the module" : "\"" + m.name + "\"";
    for (auto* hook : type->getForwardPreHooks()) entries.emplace_back(owner + "'s pre-hook " + hook->name(), hook);
    for (auto* hook : type->getForwardHooks()) entries.emplace_back(owner + "'s hook " + hook->name(), hook);
  }
  OpCheck check;
  for (const auto& [method, fn] : entries)
    if (std::string found = check.function(*fn, method); !found.empty())
      fail(ErrorKind::invalid, file.string(),
           "a TorchScript module of side-effect-free tensor ops (docs/models.md: the allowlist)", found,
           "load it only if you trust its author: {allow_model_code} runs code from this file with your rights");
}

}  // namespace

void set_allow_model_code(bool on) { g_allow_model_code = on; }

ScriptedModule load_torchscript(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    fail(ErrorKind::usage, file.string(), "a TorchScript module file ({model} FILE.pt)", "no such file",
         "give the file torch.jit.save wrote, or a zoo model name (cnn, resnet18, resnet50, efficientnet_b0)");
  ScriptedModule out;
  out.sha256 = file_sha256(file);
  check_before_loading(file);
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
  if (!g_allow_model_code) check_ops(module, file);
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
  // Held to the recorded SHA-256 before anything of it is loaded, and again after (the file read).
  auto same_module = [&](const std::string& sha256) {
    if (sha256 != info.module_sha256)
      fail(ErrorKind::invalid, info.module_file,
           "the TorchScript module this model was trained with (sha256 " + info.module_sha256.substr(0, 12) + "...)",
           "another module (sha256 " + sha256.substr(0, 12) + "...)",
           "put back the module file the run was trained with (its weights are for that module's code)");
  };
  same_module(file_sha256(info.module_file));
  ScriptedModule m = load_torchscript(info.module_file);
  same_module(m.sha256);
  return m.model;
}

}  // namespace frugal

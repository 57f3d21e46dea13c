// Reading model files: any CKPT (a checkpoint, best.safetensors, a run folder, a compressed
// model) as a model ready to run, and the compressed models' stored weights decoded to float32
// (docs/compressed-model.md). Writing compressed models is compress's.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <span>
#include <map>

#include "frugal/util/checked.h"
#include "frugal/checkpoint/checkpoint.h"
#include "frugal/checkpoint/weights_file.h"
#include "frugal/weights/torch_save.h"
#include "frugal/checkpoint_files/run_folder.h"
#include "frugal/util/error.h"
#include "frugal/util/progress.h"

namespace frugal {
namespace {

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
      fail(ErrorKind::unsupported, source,
           std::string(kCompressedFormat) + " version " + std::to_string(kCompressedVersion),
           j.value("format", "?") + " version " + std::to_string(j.value("version", 0)),
           "use the frugal that wrote this file, or compress again");
  } catch (const nlohmann::json::exception& e) {  // values of the wrong JSON type
    fail(ErrorKind::invalid, source, "JSON in metadata \"compression\"", e.what(),
         "the file is damaged; compress the checkpoint again");
  }
  return j;
}

torch::Tensor unpack_bits(const torch::Tensor& packed, std::int64_t n) {
  auto shifts = torch::arange(8, torch::kInt32);
  auto bits = packed.to(torch::kInt32).unsqueeze(1).bitwise_right_shift(shifts).bitwise_and(1);
  return bits.flatten().slice(0, 0, n).to(torch::kBool);
}

std::vector<std::int64_t> channel_view(const torch::Tensor& w) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(w.dim()), 1);
  v[0] = -1;
  return v;
}

[[noreturn]] void bad(const std::string& source, const std::string& name, const std::string& expected,
                      const std::string& found) {
  fail(ErrorKind::invalid, source + ": " + name, expected, found,
       "the compressed model is damaged; compress the checkpoint again");
}

torch::Tensor decode_one(const std::map<std::string, torch::Tensor>& stored, const std::string& name,
                         const nlohmann::json& entry, const std::string& source) {
  auto get = [&](const std::string& n) -> const torch::Tensor& {
    auto it = stored.find(n);
    if (it == stored.end()) bad(source, n, "a tensor of that name", "none");
    return it->second;
  };
  const auto shape = entry.at("shape").get<std::vector<std::int64_t>>();
  const auto dtype = entry.at("dtype").get<std::string>();
  const auto encoding = entry.at("encoding").get<std::string>();
  // Checked: the product sizes an allocation below, and every stored size is compared with it.
  std::int64_t n = 1;
  for (auto d : shape) {
    if (d < 0) bad(source, name, "dimensions of zero or more", std::to_string(d));
    n = checked_mul(n, d, source + ": " + name, "an element count");
  }
  auto values = get(name).to(torch::kFloat32).flatten();
  torch::Tensor w;
  if (encoding == "bitmask") {
    const auto& packed = get(name + kCompressedMaskSuffix);
    if (packed.scalar_type() != torch::kUInt8 || packed.numel() != (n + 7) / 8)
      bad(source, name + kCompressedMaskSuffix, "U8 of " + std::to_string((n + 7) / 8) + " bytes",
          std::to_string(packed.numel()) + " entries");
    auto keep = unpack_bits(packed, n);
    const auto kept = keep.sum().item<std::int64_t>();
    if (kept != values.numel())
      bad(source, name, std::to_string(kept) + " values (the mask's bits)", std::to_string(values.numel()));
    w = torch::zeros({n}, torch::kFloat32).masked_scatter(keep, values);
  } else if (encoding == "dense") {
    if (values.numel() != n) bad(source, name, std::to_string(n) + " values", std::to_string(values.numel()));
    w = values;
  } else {
    bad(source, name, "encoding \"dense\" or \"bitmask\"", "\"" + encoding + "\"");
  }
  w = w.view(shape);
  if (dtype == "int8") {
    const auto& scale = get(name + kCompressedScaleSuffix);
    if (shape.empty() || scale.numel() != shape[0])
      bad(source, name + kCompressedScaleSuffix, std::to_string(shape.empty() ? 0 : shape[0]) + " scales",
          std::to_string(scale.numel()));
    w = w * scale.to(torch::kFloat32).view(channel_view(w));
  } else if (dtype != "float16" && dtype != "float32") {
    bad(source, name, "dtype int8, float16 or float32", dtype);
  }
  return w.contiguous();
}

}  // namespace

std::map<std::string, torch::Tensor> decode_weights(const NamedTensors& stored, const nlohmann::json& index,
                                                    const std::string& source) {
  std::map<std::string, torch::Tensor> by_name(stored.begin(), stored.end());
  std::map<std::string, torch::Tensor> out;
  for (const auto& [name, t] : stored) {
    if (name.find('@') != std::string::npos) continue;
    try {
      out[name] = index.contains(name) ? decode_one(by_name, name, index.at(name), source)
                                       : t.to(t.is_floating_point() ? torch::kFloat32 : t.scalar_type());
    } catch (const nlohmann::json::exception& e) {
      bad(source, name, "a valid compression index entry", e.what());
    } catch (const c10::Error& e) {  // a shape LibTorch refuses (view, masked_scatter)
      bad(source, name, "a shape that fits its stored values", e.what_without_backtrace());
    }
  }
  for (const auto& [name, entry] : index.items())
    if (!out.count(name)) bad(source, name, "the tensor the compression index lists", "none");
  return out;
}

bool is_foreign_weights(const std::filesystem::path& ckpt) {
  std::error_code ec;
  // A Hugging Face folder holds config.json and model.safetensors; a run folder neither.
  if (std::filesystem::is_directory(ckpt, ec))
    return !std::filesystem::exists(ckpt / kBestFile, ec) && std::filesystem::exists(ckpt / "config.json", ec);
  if (!std::filesystem::is_regular_file(ckpt, ec)) return false;  // missing or special: said as a CKPT problem
  try {
    const auto md = read_safetensors_header(ckpt).metadata;
    const auto it = md.find("format");
    return it == md.end() || it->second != kCheckpointFormat;
  } catch (const Error&) {}
  // torch.save's zip (its pickle, data.pkl, is written first) or its legacy pickle; any other file
  // (the data given by mistake, a damaged checkpoint) is said as a CKPT problem.
  std::ifstream in(ckpt, std::ios::binary);
  std::string head(1 << 12, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  const std::string kind =
      torch_file_kind(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(head.data()), head.size()));
  return kind == "legacy" || (kind == "zip" && head.find("data.pkl") != std::string::npos);
}

namespace {

// The size of `name`'s dimension `dim` in the weights; Error(invalid) when they lack it.
std::int64_t dimension(const std::map<std::string, torch::Tensor>& weights, const std::string& name, std::int64_t dim,
                       const std::string& file, const std::string& model) {
  const auto it = weights.find(name);
  if (it == weights.end() || it->second.dim() <= dim)
    fail(ErrorKind::invalid, file, "the weights of " + model + " (tensor " + name + ")", "none of that name and shape",
         "give {model} the model these weights are for");
  return it->second.size(dim);
}

LoadedModel load_foreign_model(const std::filesystem::path& file, const ForeignModelOptions& o) {
  WeightsFile w = load_weights_file(file);
  LoadedModel out;
  out.foreign = true;
  std::string name = o.model, why = "{model}";
  ScriptedModule scripted;
  if (name.empty()) {
    const std::optional<std::string> theirs = zoo_model_for(w.tensors);
    if (!theirs)
      fail(ErrorKind::usage, file.string(), "a frugal checkpoint, or weights of a zoo model",
           "weights of no zoo model" + (w.described.empty() ? std::string() : " (" + w.described + ")"),
           "give {model} NAME or {model} FILE.pt, the model these weights are for");
    name = *theirs;
    why = "chosen by its tensors' names and shapes";
  }
  const std::vector<std::string> zoo = model_names();
  if (std::find(zoo.begin(), zoo.end(), name) == zoo.end()) scripted = load_torchscript(name);  // --model FILE.pt
  // The input channels and the class count, from the first convolution's and the head's weights.
  auto probe = scripted.model ? scripted.model : make_model(name, 2, 3);
  std::string first_conv;
  for (const auto& p : probe->named_parameters())
    if (p.value().dim() == 4) {
      first_conv = p.key();
      break;
    }
  const std::string head = probe->head_prefix() + ".weight";
  const int channels =
      first_conv.empty() ? 3 : static_cast<int>(dimension(w.tensors, first_conv, 1, file.string(), name));
  const std::int64_t classes = dimension(w.tensors, head, 0, file.string(), name);
  out.info =
      scripted.model ? torchscript_model_info(name, scripted.sha256, channels) : default_model_info(name, channels);
  if (o.image_size > 0) out.info.image_size = o.image_size;
  for (std::int64_t i = 0; i < classes; ++i) out.info.classes.push_back(std::to_string(i));
  out.model = scripted.model ? scripted.model : make_model(name, static_cast<int>(classes), channels);
  load_weights(*out.model, w.tensors, /*allow_head_mismatch=*/false);
  out.model->eval();
  note(file.string() + ": " + (w.described.empty() ? std::string("weights") : w.described) + ", read as " +
       (scripted.model ? "the TorchScript module " + name : name) + " (" + why + "), " + std::to_string(classes) +
       " classes, " + std::to_string(out.info.image_size) + " px");
  return out;
}

}  // namespace

void use_data_classes(LoadedModel& loaded, const std::vector<std::string>& data_classes, const std::string& data) {
  if (!loaded.foreign) return;
  if (data_classes.size() != loaded.info.classes.size())
    fail(ErrorKind::invalid, data,
         "the " + std::to_string(loaded.info.classes.size()) + " classes the weights' head classifies",
         std::to_string(data_classes.size()) + " classes",
         "give data with one folder (or label) per class the weights were trained on");
  loaded.info.classes = data_classes;
  note(data +
       ": the weights' class i is the data's i-th class in sorted order, as torchvision's ImageFolder numbers them");
}

LoadedModel load_model_any(const std::filesystem::path& ckpt, const ForeignModelOptions& foreign) {
  set_allow_model_code(foreign.allow_model_code);
  if (is_foreign_weights(ckpt)) return load_foreign_model(ckpt, foreign);
  const CkptFile resolved = resolve_ckpt_file(ckpt);
  const auto& file = resolved.path;
  Checkpoint c = load_checkpoint(file, resolved.links);
  const auto compression = parse_compression(c, file.string());
  std::map<std::string, torch::Tensor> weights;
  if (compression.is_null()) {
    weights = c.weight_map();
  } else {
    weights = decode_weights(c.weights, compression.at("tensors"), file.string());
    // LibTorch's dynamic int8 kernels are reachable only through modules the zoo does not use
    // (docs/compressed-model.md), so int8 weights run as float32; only the file is smaller.
    if (compression.contains("weights") && compression["weights"] == "int8")
      note(file.string() +
           ": int8 weights dequantized to float32 at load (stored as int8 + scales; "
           "inference runs in float32)");
  }
  LoadedModel out{c.model, make_model_for(c.model)};
  load_weights(*out.model, weights, /*allow_head_mismatch=*/false);
  out.model->eval();
  return out;
}

ModelFileSummary summarize_model_file(const std::filesystem::path& ckpt) {
  ModelFileSummary s;
  s.compression = nullptr;
  if (is_foreign_weights(ckpt)) {  // weights from elsewhere: no frugal metadata, their size is the report's
    std::error_code ec;
    s.file = ckpt;
    s.bytes = std::filesystem::is_regular_file(ckpt, ec) ? std::filesystem::file_size(ckpt, ec) : 0;
    return s;
  }
  const CkptFile resolved = resolve_ckpt_file(ckpt);
  s.file = resolved.path;
  auto header = read_safetensors_header(s.file, resolved.links);  // a regular file: its size is known
  s.bytes = std::filesystem::file_size(s.file);
  auto it = header.metadata.find(kCompressionKey);
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

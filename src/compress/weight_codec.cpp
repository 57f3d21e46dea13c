// The stored form of compressed weights (docs/compressed-model.md, "Tensors"):
//   NAME        values: the weight itself (dense) or its nonzero entries in C order (bitmask)
//               as F32, F16 or I8
//   NAME@mask   U8 (ceil(numel / 8),): bit j (LSB first) of byte i set <=> entry 8i+j is stored
//   NAME@scale  F32 (out_channels,): int8 only; weight = values * scale[out channel]
#include <set>

#include "frugal/compress.h"
#include "frugal/checked.h"
#include "frugal/error.h"

namespace frugal {

std::string to_string(WeightFormat f) {
  switch (f) {
    case WeightFormat::float32: return "float32";
    case WeightFormat::float16: return "float16";
    case WeightFormat::int8: return "int8";
  }
  return "?";
}

namespace {

constexpr const char* kMaskSuffix = "@mask";
constexpr const char* kScaleSuffix = "@scale";

std::int64_t bytes_per_value(WeightFormat f) {
  return f == WeightFormat::int8 ? 1 : f == WeightFormat::float16 ? 2 : 4;
}

// (numel,) bool -> (ceil(numel/8),) uint8, LSB first.
torch::Tensor pack_bits(const torch::Tensor& keep) {
  const std::int64_t n = keep.numel(), bytes = (n + 7) / 8;
  auto padded = torch::zeros({bytes * 8}, torch::kUInt8);
  padded.slice(0, 0, n).copy_(keep.flatten().to(torch::kUInt8));
  auto weights = torch::tensor({1, 2, 4, 8, 16, 32, 64, 128}, torch::kUInt8);
  return (padded.view({bytes, 8}).to(torch::kInt32) * weights.to(torch::kInt32)).sum(1).to(torch::kUInt8);
}

torch::Tensor unpack_bits(const torch::Tensor& packed, std::int64_t n) {
  auto shifts = torch::arange(8, torch::kInt32);
  auto bits = packed.to(torch::kInt32).unsqueeze(1).bitwise_right_shift(shifts).bitwise_and(1);
  return bits.flatten().slice(0, 0, n).to(torch::kBool);
}

// Symmetric per-output-channel scales: max |w| over the channel maps to 127.
torch::Tensor int8_scales(const torch::Tensor& w) {
  auto max_abs = std::get<0>(w.abs().view({w.size(0), -1}).max(1));
  return torch::where(max_abs > 0, max_abs / 127.0, torch::ones_like(max_abs));
}

std::vector<std::int64_t> channel_view(const torch::Tensor& w) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(w.dim()), 1);
  v[0] = -1;
  return v;
}

}  // namespace

EncodedWeights encode_weights(const std::map<std::string, torch::Tensor>& state,
                              const std::vector<std::string>& compressible, WeightFormat format) {
  const std::set<std::string> targets(compressible.begin(), compressible.end());
  EncodedWeights out;
  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : state) {
    if (!targets.count(name)) {
      out.tensors.emplace_back(name, tensor.detach().cpu().contiguous());
      continue;
    }
    auto w = tensor.detach().cpu().to(torch::kFloat32).contiguous();
    auto keep = (w != 0).flatten();
    const std::int64_t n = w.numel(), nnz = keep.sum().item<std::int64_t>();
    const std::int64_t b = bytes_per_value(format);
    const bool sparse = nnz * b + (n + 7) / 8 < n * b;
    if (!sparse && format == WeightFormat::float32) {  // nothing to gain: store as a plain weight
      out.tensors.emplace_back(name, w);
      continue;
    }
    torch::Tensor values;
    nlohmann::json entry{{"shape", w.sizes().vec()}, {"encoding", sparse ? "bitmask" : "dense"},
                         {"dtype", to_string(format)}, {"nonzero", nnz}};
    if (format == WeightFormat::int8) {
      auto scale = int8_scales(w);
      values = (w / scale.view(channel_view(w))).round().clamp(-127, 127).to(torch::kInt8);
      out.tensors.emplace_back(name + kScaleSuffix, scale.to(torch::kFloat32).contiguous());
    } else {
      values = format == WeightFormat::float16 ? w.to(torch::kFloat16) : w;
    }
    if (sparse) {
      out.tensors.emplace_back(name + kMaskSuffix, pack_bits(keep));
      values = values.flatten().masked_select(keep);
    }
    out.tensors.emplace_back(name, values.contiguous());
    out.index[name] = entry;
  }
  return out;
}

namespace {

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
    const auto& packed = get(name + kMaskSuffix);
    if (packed.scalar_type() != torch::kUInt8 || packed.numel() != (n + 7) / 8)
      bad(source, name + kMaskSuffix, "U8 of " + std::to_string((n + 7) / 8) + " bytes",
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
    const auto& scale = get(name + kScaleSuffix);
    if (shape.empty() || scale.numel() != shape[0])
      bad(source, name + kScaleSuffix, std::to_string(shape.empty() ? 0 : shape[0]) + " scales",
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

}  // namespace frugal

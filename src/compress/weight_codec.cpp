// Encoding weights into the stored form of compressed models (docs/compressed-model.md, "Tensors";
// reading it back is checkpoint's, src/checkpoint/model_file.cpp):
//   NAME        values: the weight itself (dense) or its nonzero entries in C order (bitmask)
//               as F32, F16 or I8
//   NAME@mask   U8 (ceil(numel / 8),): bit j (LSB first) of byte i set <=> entry 8i+j is stored
//   NAME@scale  F32 (out_channels,): int8 only; weight = values * scale[out channel]
#include <set>

#include "frugal/checkpoint/checkpoint.h"
#include "frugal/compress/compress.h"
#include "frugal/util/checked.h"
#include "frugal/util/error.h"

namespace frugal {

std::string to_string(WeightFormat f) {
  switch (f) {
    case WeightFormat::float32:
      return "float32";
    case WeightFormat::float16:
      return "float16";
    case WeightFormat::int8:
      return "int8";
  }
  return "?";
}

namespace {

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
    nlohmann::json entry{{"shape", w.sizes().vec()},
                         {"encoding", sparse ? "bitmask" : "dense"},
                         {"dtype", to_string(format)},
                         {"nonzero", nnz}};
    if (format == WeightFormat::int8) {
      auto scale = int8_scales(w);
      values = (w / scale.view(channel_view(w))).round().clamp(-127, 127).to(torch::kInt8);
      out.tensors.emplace_back(name + kCompressedScaleSuffix, scale.to(torch::kFloat32).contiguous());
    } else {
      values = format == WeightFormat::float16 ? w.to(torch::kFloat16) : w;
    }
    if (sparse) {
      out.tensors.emplace_back(name + kCompressedMaskSuffix, pack_bits(keep));
      values = values.flatten().masked_select(keep);
    }
    out.tensors.emplace_back(name, values.contiguous());
    out.index[name] = entry;
  }
  return out;
}

}  // namespace frugal

// timm's EfficientNet (timm/models/_efficientnet_blocks.py, _efficientnet_builder.py) against
// torchvision's (torchvision/models/efficientnet.py), layer by layer:
//
//   timm                          torchvision
//   conv_stem, bn1                features.0.0, features.0.1
//   blocks.S.B (stage S, block B) features.(S+1).B.block
//   conv_head, bn2                features.(stages+1).0, features.(stages+1).1
//   classifier                    classifier.1 (classifier.0 is the Dropout)
//
// Inside a block, by its kind: a depthwise-separable block (timm's DepthwiseSeparableConv, the first
// stage; it has no conv_pwl) is conv_dw, bn1, se, conv_pw, bn2; an inverted residual
// (InvertedResidual) is conv_pw, bn1, conv_dw, bn2, se, conv_pwl, bn3. torchvision numbers the same
// layers in order inside `block`: Conv2dNormActivation's conv and norm are .0 and .1, and
// SqueezeExcitation's convolutions are fc1 and fc2 where timm has se.conv_reduce and se.conv_expand.
#include "frugal/weights/timm_names.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string_view>
#include <utility>

namespace frugal {
namespace {

struct Layer {
  std::string_view timm, torchvision;
};
constexpr std::array<Layer, 6> kSeparable = {{{"conv_dw", "0.0"},
                                              {"bn1", "0.1"},
                                              {"se.conv_reduce", "1.fc1"},
                                              {"se.conv_expand", "1.fc2"},
                                              {"conv_pw", "2.0"},
                                              {"bn2", "2.1"}}};
constexpr std::array<Layer, 8> kInverted = {{{"conv_pw", "0.0"},
                                             {"bn1", "0.1"},
                                             {"conv_dw", "1.0"},
                                             {"bn2", "1.1"},
                                             {"se.conv_reduce", "2.fc1"},
                                             {"se.conv_expand", "2.fc2"},
                                             {"conv_pwl", "3.0"},
                                             {"bn3", "3.1"}}};
constexpr std::array<int, 7> kB0Blocks = {1, 2, 2, 3, 3, 4, 1};

// "blocks.3.1.conv_dw.weight" -> stage 3, block 1, rest "conv_dw.weight".
struct BlockName {
  int stage = 0, block = 0;
  std::string_view rest;
};
std::optional<int> number(std::string_view s) {
  if (s.empty() || s.size() > 4 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  int v = 0;
  for (char c : s) v = v * 10 + (c - '0');
  return v;
}
std::optional<BlockName> block_name(std::string_view name) {
  if (!name.starts_with("blocks.")) return std::nullopt;
  name.remove_prefix(7);
  const auto dot1 = name.find('.');
  if (dot1 == std::string_view::npos) return std::nullopt;
  const auto dot2 = name.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos) return std::nullopt;
  const auto stage = number(name.substr(0, dot1)), block = number(name.substr(dot1 + 1, dot2 - dot1 - 1));
  if (!stage || !block) return std::nullopt;
  return BlockName{*stage, *block, name.substr(dot2 + 1)};
}

// `rest` with the first matching layer's prefix replaced, or nullopt.
template <std::size_t N>
std::optional<std::string> rename_layer(std::string_view rest, const std::array<Layer, N>& table) {
  for (const Layer& l : table)
    if (rest.starts_with(l.timm) && rest.size() > l.timm.size() && rest[l.timm.size()] == '.')
      return std::string(l.torchvision) + std::string(rest.substr(l.timm.size()));
  return std::nullopt;
}

std::optional<std::string> replace_prefix(std::string_view name, std::string_view from, const std::string& to) {
  if (!name.starts_with(from)) return std::nullopt;
  return to + std::string(name.substr(from.size()));
}

}  // namespace

std::optional<RenamedWeights> from_timm_names(std::span<const std::string> names) {
  auto has = [&](std::string_view n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  if (!has("conv_stem.weight") || !has("conv_head.weight")) return std::nullopt;

  std::map<int, std::set<int>> blocks;     // stage -> its blocks
  std::set<std::pair<int, int>> inverted;  // blocks with conv_pwl: inverted residuals
  for (const std::string& n : names)
    if (const auto b = block_name(n)) {
      blocks[b->stage].insert(b->block);
      if (b->rest.starts_with("conv_pwl.")) inverted.insert({b->stage, b->block});
    }
  if (blocks.empty()) return std::nullopt;
  const int stages = blocks.rbegin()->first + 1;

  RenamedWeights out;
  std::vector<int> per_stage;
  for (int s = 0; s < stages; ++s) per_stage.push_back(blocks.count(s) ? static_cast<int>(blocks[s].size()) : 0);
  out.naming = std::equal(per_stage.begin(), per_stage.end(), kB0Blocks.begin(), kB0Blocks.end())
                   ? "timm efficientnet_b0"
                   : "timm EfficientNet";
  const std::string head = "features." + std::to_string(stages + 1) + ".";
  for (const std::string& n : names) {
    std::optional<std::string> tv;
    if (const auto b = block_name(n)) {
      const auto layer =
          inverted.count({b->stage, b->block}) ? rename_layer(b->rest, kInverted) : rename_layer(b->rest, kSeparable);
      if (layer) tv = "features." + std::to_string(b->stage + 1) + "." + std::to_string(b->block) + ".block." + *layer;
    } else {
      tv = replace_prefix(n, "conv_stem.", "features.0.0.");
      if (!tv) tv = replace_prefix(n, "bn1.", "features.0.1.");
      if (!tv) tv = replace_prefix(n, "conv_head.", head + "0.");
      if (!tv) tv = replace_prefix(n, "bn2.", head + "1.");
      if (!tv) tv = replace_prefix(n, "classifier.", "classifier.1.");
    }
    out.renamed += tv && *tv != n;
    out.names.push_back(tv ? *tv : n);
  }
  return out;
}

}  // namespace frugal

#include <algorithm>

#include "frugal/compress/compress.h"
#include "frugal/util/error.h"

namespace frugal {

std::vector<std::pair<std::string, torch::Tensor>> prunable_weights(Model& model) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  if (const std::vector<std::string> names = model.scripted_layer_weights(); !names.empty()) {
    const auto params = model.named_parameters();
    for (const std::string& name : names)
      if (const torch::Tensor* w = params.find(name)) out.emplace_back(name, *w);
    return out;
  }
  for (const auto& item : model.named_modules()) {
    auto& m = *item.value();
    if (auto* conv = m.as<torch::nn::Conv2dImpl>())
      out.emplace_back(item.key() + ".weight", conv->weight);
    else if (auto* linear = m.as<torch::nn::LinearImpl>())
      out.emplace_back(item.key() + ".weight", linear->weight);
  }
  return out;
}

namespace {

// A mask keeping all but the `k` entries with the smallest |value| (ties: earlier position first).
torch::Tensor keep_all_but_smallest(const torch::Tensor& magnitudes, std::int64_t k) {
  auto keep = torch::ones({magnitudes.numel()}, torch::kBool);
  if (k > 0) {
    auto order = std::get<1>(magnitudes.flatten().sort(/*stable=*/true, /*dim=*/0, /*descending=*/false));
    keep.index_put_({order.slice(0, 0, k)}, false);
  }
  return keep;
}

}  // namespace

PruneMasks l1_prune_masks(Model& model, double fraction, PruneScope scope) {
  if (!(fraction >= 0 && fraction < 1))
    throw Error(ErrorKind::usage, message("{prune}", "a fraction in [0, 1)", std::to_string(fraction),
                                          "e.g. {prune} 0.5 zeroes half of the weights"));
  torch::NoGradGuard no_grad;
  const auto weights = prunable_weights(model);
  PruneMasks masks;
  if (scope == PruneScope::layer) {
    for (const auto& [name, w] : weights) {
      auto k = static_cast<std::int64_t>(fraction * static_cast<double>(w.numel()));
      masks[name] = keep_all_but_smallest(w.detach().abs().cpu(), k).view(w.sizes());
    }
    return masks;
  }
  std::vector<torch::Tensor> flat;
  for (const auto& [name, w] : weights) flat.push_back(w.detach().abs().cpu().flatten().to(torch::kFloat32));
  auto all = torch::cat(flat);
  auto keep = keep_all_but_smallest(all, static_cast<std::int64_t>(fraction * static_cast<double>(all.numel())));
  std::int64_t offset = 0;
  for (const auto& [name, w] : weights) {
    masks[name] = keep.slice(0, offset, offset + w.numel()).view(w.sizes()).clone();
    offset += w.numel();
  }
  return masks;
}

void apply_masks(Model& model, const PruneMasks& masks) {
  torch::NoGradGuard no_grad;
  for (auto& [name, w] : prunable_weights(model)) {
    auto it = masks.find(name);
    if (it != masks.end()) w.mul_(it->second.to(w.device(), w.scalar_type()));
  }
}

}  // namespace frugal

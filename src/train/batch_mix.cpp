// Mixup and cutmix of a training batch (train/batch_mix.h).
#include "train/batch_mix.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace frugal {
namespace {

// Beta(a, a) as X / (X + Y) of two Gamma(a, 1) draws (what numpy's beta does for a > 1; its
// small-a branch differs, but the draw only has to be Beta-distributed and the same on resume).
double beta(double a, std::mt19937_64& gen) {
  std::gamma_distribution<double> gamma(a, 1.0);
  const double x = gamma(gen), y = gamma(gen);
  return x + y > 0 ? x / (x + y) : 0.5;
}

}  // namespace

MixDraw cutmix_box(std::int64_t height, std::int64_t width, double lambda, std::int64_t cy, std::int64_t cx) {
  const double ratio = std::sqrt(1.0 - lambda);
  const auto cut_h = static_cast<std::int64_t>(static_cast<double>(height) * ratio);
  const auto cut_w = static_cast<std::int64_t>(static_cast<double>(width) * ratio);
  MixDraw d;
  d.cutmix = true;
  d.y0 = std::clamp<std::int64_t>(cy - cut_h / 2, 0, height);
  d.y1 = std::clamp<std::int64_t>(cy + (cut_h + 1) / 2, 0, height);
  d.x0 = std::clamp<std::int64_t>(cx - cut_w / 2, 0, width);
  d.x1 = std::clamp<std::int64_t>(cx + (cut_w + 1) / 2, 0, width);
  const auto area = static_cast<double>((d.y1 - d.y0) * (d.x1 - d.x0));
  d.lambda = 1.0 - area / static_cast<double>(height * width);
  return d;
}

MixDraw draw_mix(const MixOptions& o, std::int64_t height, std::int64_t width, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  MixDraw d;
  if (!o.enabled()) return d;
  bool use_cutmix = o.mixup <= 0;
  if (o.mixup > 0 && o.cutmix > 0) use_cutmix = std::uniform_real_distribution<double>(0, 1)(gen) < 0.5;
  const double lambda = beta(use_cutmix ? o.cutmix : o.mixup, gen);
  if (!use_cutmix) {
    d.lambda = lambda;
    return d;
  }
  const auto cy = std::uniform_int_distribution<std::int64_t>(0, height - 1)(gen);
  const auto cx = std::uniform_int_distribution<std::int64_t>(0, width - 1)(gen);
  return cutmix_box(height, width, lambda, cy, cx);
}

torch::Tensor mix_batch(torch::Tensor& x, const torch::Tensor& labels, const MixDraw& d, const MixOptions& o) {
  torch::NoGradGuard no_grad;
  const double e = o.label_smoothing;
  torch::Tensor y1;
  if (o.multi_label) {
    y1 = labels.to(torch::kFloat32) * (1.0 - e) + 0.5 * e;
  } else {
    const double off = e / o.classes, on = 1.0 - e + off;
    y1 = torch::full({labels.size(0), o.classes}, off, torch::TensorOptions().device(labels.device()))
             .scatter_(1, labels.to(torch::kLong).view({-1, 1}), on);
  }
  using torch::indexing::Slice;
  if (d.lambda == 1.0) {
    // timm leaves the images as they are (its targets are still "mixed", with weight 0)
  } else if (d.cutmix) {
    const auto box = std::vector<torch::indexing::TensorIndex>{Slice(), Slice(), Slice(d.y0, d.y1), Slice(d.x0, d.x1)};
    x.index_put_(box, x.flip(0).index(box));
  } else {
    torch::Tensor flipped = x.flip(0).mul_(1.0 - d.lambda);
    x.mul_(d.lambda).add_(flipped);
  }
  return y1 * d.lambda + y1.flip(0) * (1.0 - d.lambda);
}

torch::Tensor soft_target_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets) {
  return torch::sum(-targets * torch::log_softmax(logits, -1), -1).mean();
}

}  // namespace frugal

// --mixup A and --cutmix A: each training batch mixed with itself reversed, held to timm's Mixup in
// its default 'batch' mode (one draw per batch: with both on, cutmix half the time; lambda from
// Beta(A, A); cutmix's box square in proportion sqrt(1 - lambda), its centre uniform, clipped, and
// lambda corrected to the area kept), with the label-smoothed soft targets its mixup_target makes
// (multi-label: tags smoothed toward 0.5, then mixed). Internal to the training step.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace frugal {

struct MixOptions {
  double mixup = 0, cutmix = 0;  // Beta's alpha for each; 0: off
  double label_smoothing = 0;
  int classes = 0;
  bool multi_label = false;
  bool enabled() const { return mixup > 0 || cutmix > 0; }
};

// One batch's draw. `lambda` is the weight of the batch itself (after cutmix's correction).
struct MixDraw {
  bool cutmix = false;
  double lambda = 1;
  std::int64_t y0 = 0, y1 = 0, x0 = 0, x1 = 0;  // cutmix's box, rows [y0, y1) and columns [x0, x1)
};

// timm's rand_bbox and cutmix_bbox_and_lam (no margin, correct_lam) for a box centred at (cy, cx).
MixDraw cutmix_box(std::int64_t height, std::int64_t width, double lambda, std::int64_t cy, std::int64_t cx);

// The draw for one batch of height x width images, from a generator seeded by `seed` (the run's
// seed, the step, the replica and the batch's place in the step: a resumed run draws the same).
MixDraw draw_mix(const MixOptions& options, std::int64_t height, std::int64_t width, std::uint64_t seed);

// Mixes (B, C, H, W) float images in place and returns the (B, classes) float targets of `labels`
// ((B) class indices, or (B, classes) 0/1 tags when multi_label), as timm's Mixup.__call__ does.
torch::Tensor mix_batch(torch::Tensor& images, const torch::Tensor& labels, const MixDraw& draw,
                        const MixOptions& options);

// SoftTargetCrossEntropy: the mean over the batch of -sum(targets * log_softmax(logits)).
torch::Tensor soft_target_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets);

}  // namespace frugal

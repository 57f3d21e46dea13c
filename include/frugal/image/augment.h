// Training augmentations after the crop, on the (H, W, C) uint8 image the crop plan made, held to
// torchvision.transforms.v2: TrivialAugmentWide and RandAugment (their ops, magnitude bins and
// signs; nearest interpolation and fill 0 for the geometric ops, as their defaults are) and
// RandomErasing (scale (0.02, 0.33), ratio (0.3, 3.3), value 0). The op, its magnitude and the
// erased box are drawn from the sample's seed on a stream of their own (augment_seed), so a sample
// is augmented alike on every epoch of a resumed run and its crop plan is the one it was before.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "frugal/image/image.h"

namespace frugal {

// torchvision's op names, in its _AUGMENTATION_SPACE order (the order a draw indexes).
enum class AugmentOp {
  identity,
  shear_x,
  shear_y,
  translate_x,
  translate_y,
  rotate,
  brightness,
  color,
  contrast,
  sharpness,
  posterize,
  solarize,
  autocontrast,
  equalize
};
inline constexpr int kAugmentOps = 14;
inline constexpr int kMagnitudeBins = 31;   // torchvision's num_magnitude_bins default
const char* augment_op_name(AugmentOp op);  // "Identity", "ShearX", ... (torchvision's)

// "none", "flip", "trivial", "randaugment" or "randaugment:N,M" (N 0..16, M 0..30). Returns "" or,
// when refused, what is allowed (the option's table reports it with the option's name).
std::string parse_augment(const std::string& text, AugmentOptions& out);
// The --augment value as config.json records it ("randaugment:2,9": N and M always written).
std::string augment_text(const AugmentOptions& options);

// One op as a policy drew it: `magnitude` is the signed value torchvision passes to the op
// (degrees, pixels, a factor minus 1, bits, a threshold fraction; 0 for ops without one).
struct AugmentDraw {
  AugmentOp op = AugmentOp::identity;
  int bin = -1;  // the magnitude bin; -1 for ops without magnitudes
  bool negative = false;
  double magnitude = 0;
};

// The magnitude of `op` at `bin` (unsigned), as the policy's table holds it for a width x height
// image (RandAugment's translations scale with the image); nullopt for ops without magnitudes.
// Tables are torch.linspace's float32 values, as double.
std::optional<double> augment_magnitude(AugmentOptions::Policy policy, AugmentOp op, int bin, int width, int height);
// Whether torchvision flips the sign of op's magnitude half the time.
bool augment_signed(AugmentOp op);

// The ops for one sample: TrivialAugmentWide one (op uniform over the 14, bin uniform over 31, then
// the sign), RandAugment num_ops (each op uniform, bin `magnitude`, then the sign); none otherwise.
std::vector<AugmentDraw> draw_augment(const AugmentOptions& options, Rng& rng, int width, int height);

// Applies one op with its (signed) magnitude as torchvision.transforms.v2's functional ops do on a
// uint8 tensor; deterministic. Channels 1 or 3 (Color leaves a 1-channel image as it is).
void apply_augment_op(const Image& in, AugmentOp op, double magnitude, Image& out);

// RandomErasing.get_params: up to 10 tries of an area in scale of the image's and a log-uniform
// aspect ratio in `ratio`, h = round(sqrt(area * r)), w = round(sqrt(area / r)), kept when h < height
// and w < width, then its top-left corner uniform; nullopt when no try fits (nothing is erased).
std::optional<CropBox> random_erasing_box(int width, int height, Rng& rng, double scale_lo = 0.02,
                                          double scale_hi = 0.33, double ratio_lo = 0.3, double ratio_hi = 3.3);
// Sets every channel of `box` (clipped to the image) to `value`.
void erase(Image& img, const CropBox& box, std::uint8_t value = 0);

// The seed of a sample's augmentation stream: derived from its sample seed, apart from the crop
// plan's draws (plan_crop), which stay what they were without augmentation.
std::uint64_t augment_seed(std::uint64_t sample_seed);

// What training adds after the crop plan, in torchvision's order: the policy's ops, then random
// erasing (drawn with probability options.erasing). In place on `img`; `tmp` is scratch space.
void augment_sample(Image& img, const AugmentOptions& options, std::uint64_t sample_seed, Image& tmp);

}  // namespace frugal

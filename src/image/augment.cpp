// The augmentation policies (TrivialAugmentWide, RandAugment, RandomErasing): their options, their
// magnitude tables and draws, and the order they run in. The ops themselves: augment_ops.cpp.
#include "frugal/image/augment.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace frugal {

namespace {

constexpr const char* kOpNames[kAugmentOps] = {"Identity",  "ShearX",     "ShearY",       "TranslateX", "TranslateY",
                                               "Rotate",    "Brightness", "Color",        "Contrast",   "Sharpness",
                                               "Posterize", "Solarize",   "AutoContrast", "Equalize"};

// torch.linspace(start, end, bins)[i] in float32, as double (float(tensor[i]) in Python): the
// first half from start, the second from end, each a fused multiply-add as torch's CPU kernel
// computes it (equal to torch's every table entry, tests/image/augment_test.cpp).
double linspace(double start, double end, int bins, int i) {
  const float s = static_cast<float>(start), e = static_cast<float>(end);
  const float step = (e - s) / static_cast<float>(bins - 1);
  return i < bins / 2 ? std::fma(step, static_cast<float>(i), s) : std::fma(-step, static_cast<float>(bins - 1 - i), e);
}

// (8 - arange(bins) / ((bins - 1) / k)).round().int(): float32 arithmetic, ties to even.
int posterize_bits(int bin, double k) {
  const float step = static_cast<float>((kMagnitudeBins - 1) / k);
  const float v = 8.0f - static_cast<float>(bin) / step;
  return static_cast<int>(std::nearbyint(v));
}

bool whole(const std::string& text, int& v) {
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && p == text.data() + text.size();
}

}  // namespace

const char* augment_op_name(AugmentOp op) { return kOpNames[static_cast<int>(op)]; }

std::string parse_augment(const std::string& text, AugmentOptions& out) {
  using P = AugmentOptions::Policy;
  const char* allowed = "none, flip, trivial, randaugment or randaugment:N,M (N ops 0 to 16, magnitude M 0 to 30)";
  AugmentOptions a = out;
  a.num_ops = 2;
  a.magnitude = 9;
  if (text == "none") {
    a.policy = P::none;
  } else if (text == "flip") {
    a.policy = P::flip;
  } else if (text == "trivial") {
    a.policy = P::trivial;
  } else if (text.rfind("randaugment", 0) == 0) {
    a.policy = P::randaugment;
    const std::string rest = text.substr(11);
    if (!rest.empty()) {
      const auto comma = rest.find(',');
      if (rest[0] != ':' || comma == std::string::npos || !whole(rest.substr(1, comma - 1), a.num_ops) ||
          !whole(rest.substr(comma + 1), a.magnitude) || a.num_ops < 0 || a.num_ops > 16 || a.magnitude < 0 ||
          a.magnitude >= kMagnitudeBins)
        return allowed;
    }
  } else {
    return allowed;
  }
  out = a;
  return "";
}

std::string augment_text(const AugmentOptions& a) {
  switch (a.policy) {
    case AugmentOptions::Policy::none:
      return "none";
    case AugmentOptions::Policy::flip:
      return "flip";
    case AugmentOptions::Policy::trivial:
      return "trivial";
    case AugmentOptions::Policy::randaugment:
      return "randaugment:" + std::to_string(a.num_ops) + "," + std::to_string(a.magnitude);
  }
  return "flip";
}

bool augment_signed(AugmentOp op) {
  switch (op) {
    case AugmentOp::shear_x:
    case AugmentOp::shear_y:
    case AugmentOp::translate_x:
    case AugmentOp::translate_y:
    case AugmentOp::rotate:
    case AugmentOp::brightness:
    case AugmentOp::color:
    case AugmentOp::contrast:
    case AugmentOp::sharpness:
      return true;
    default:
      return false;
  }
}

// The two policies' _AUGMENTATION_SPACE tables (torchvision.transforms.v2._auto_augment).
std::optional<double> augment_magnitude(AugmentOptions::Policy policy, AugmentOp op, int bin, int width, int height) {
  const bool wide = policy != AugmentOptions::Policy::randaugment;  // TrivialAugmentWide's tables
  const int n = kMagnitudeBins;
  switch (op) {
    case AugmentOp::shear_x:
    case AugmentOp::shear_y:
      return linspace(0.0, wide ? 0.99 : 0.3, n, bin);
    case AugmentOp::translate_x:
      return linspace(0.0, wide ? 32.0 : static_cast<double>(static_cast<float>(150.0 / 331.0 * width)), n, bin);
    case AugmentOp::translate_y:
      return linspace(0.0, wide ? 32.0 : static_cast<double>(static_cast<float>(150.0 / 331.0 * height)), n, bin);
    case AugmentOp::rotate:
      return linspace(0.0, wide ? 135.0 : 30.0, n, bin);
    case AugmentOp::brightness:
    case AugmentOp::color:
    case AugmentOp::contrast:
    case AugmentOp::sharpness:
      return linspace(0.0, wide ? 0.99 : 0.9, n, bin);
    case AugmentOp::posterize:
      return posterize_bits(bin, wide ? 6.0 : 4.0);
    case AugmentOp::solarize:
      return linspace(1.0, 0.0, n, bin);
    default:
      return std::nullopt;
  }
}

// TrivialAugmentWide.forward / RandAugment.forward: the op uniform over the table, then (for ops
// with magnitudes) the bin (TrivialAugment: uniform; RandAugment: fixed), then the sign, negative
// when a uniform draw is <= 0.5 (torch.rand(()) <= 0.5).
std::vector<AugmentDraw> draw_augment(const AugmentOptions& a, Rng& rng, int width, int height) {
  using P = AugmentOptions::Policy;
  std::vector<AugmentDraw> draws;
  if (a.policy != P::trivial && a.policy != P::randaugment) return draws;
  const int count = a.policy == P::trivial ? 1 : a.num_ops;
  for (int i = 0; i < count; ++i) {
    AugmentDraw d;
    d.op = static_cast<AugmentOp>(rng.randint(0, kAugmentOps));
    const int bin = a.policy == P::trivial ? 0 : a.magnitude;
    if (augment_magnitude(a.policy, d.op, bin, width, height)) {
      d.bin = a.policy == P::trivial ? static_cast<int>(rng.randint(0, kMagnitudeBins)) : a.magnitude;
      d.magnitude = *augment_magnitude(a.policy, d.op, d.bin, width, height);
      if (augment_signed(d.op) && rng.uniform() <= 0.5) {
        d.negative = true;
        d.magnitude = -d.magnitude;
      }
    }
    draws.push_back(d);
  }
  return draws;
}

// RandomErasing.make_params (torchvision.transforms.v2._augment).
std::optional<CropBox> random_erasing_box(int width, int height, Rng& rng, double scale_lo, double scale_hi,
                                          double ratio_lo, double ratio_hi) {
  const double area = static_cast<double>(width) * height;
  const double log_lo = std::log(ratio_lo), log_hi = std::log(ratio_hi);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double erase_area = area * rng.uniform(scale_lo, scale_hi);
    const double aspect = std::exp(rng.uniform(log_lo, log_hi));
    const int h = static_cast<int>(std::nearbyint(std::sqrt(erase_area * aspect)));
    const int w = static_cast<int>(std::nearbyint(std::sqrt(erase_area / aspect)));
    if (!(h < height && w < width)) continue;
    const int y = static_cast<int>(rng.randint(0, height - h + 1));
    const int x = static_cast<int>(rng.randint(0, width - w + 1));
    return CropBox{x, y, w, h};
  }
  return std::nullopt;
}

void erase(Image& img, const CropBox& box, std::uint8_t value) {
  const int x0 = std::max(box.x, 0), y0 = std::max(box.y, 0);
  const int x1 = std::min(box.x + box.width, img.width), y1 = std::min(box.y + box.height, img.height);
  if (x1 <= x0 || y1 <= y0) return;
  const std::size_t C = static_cast<std::size_t>(img.channels);
  for (int y = y0; y < y1; ++y) std::fill(img.row(y) + x0 * C, img.row(y) + x1 * C, value);
}

std::uint64_t augment_seed(std::uint64_t sample_seed) {
  return mix_seed(sample_seed, 0x6175676d656e74ULL);  // "augment"
}

// torchvision's classification recipe (references/classification/presets.py): the crop, the flip,
// the policy, then (after ToTensor) RandomErasing; applied with probability p when a uniform draw
// is below it (torch.rand(1) >= p skips it).
void augment_sample(Image& img, const AugmentOptions& a, std::uint64_t sample_seed, Image& tmp) {
  Rng rng(augment_seed(sample_seed));
  for (const AugmentDraw& d : draw_augment(a, rng, img.width, img.height)) {
    apply_augment_op(img, d.op, d.magnitude, tmp);
    std::swap(img, tmp);
  }
  if (a.erasing > 0 && rng.uniform() < a.erasing)
    if (auto box = random_erasing_box(img.width, img.height, rng)) erase(img, *box, 0);
}

}  // namespace frugal

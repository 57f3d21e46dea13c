// Shared by the GPU tests: test images and the CPU transform's output in the kernel's layout.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "frugal/image/image.h"

namespace frugal::testing {

// Smooth gradients plus noise: both the filter's averaging and its edges get exercised.
inline Image test_image(int w, int h, int channels, std::uint64_t seed) {
  Image img;
  img.resize(w, h, channels);
  Rng rng(seed);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < channels; ++c) {
        double v = 128 + 90 * std::sin(0.05 * x * (c + 1) + 0.03 * y) + rng.uniform(-30, 30);
        img.row(y)[x * channels + c] = static_cast<std::uint8_t>(std::clamp(v, 0.0, 255.0));
      }
  return img;
}

// (H, W, C) -> (C, H, W) floats.
inline std::vector<float> planar(const Image& img) {
  const std::size_t plane = static_cast<std::size_t>(img.width) * img.height;
  std::vector<float> out(plane * img.channels);
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x)
      for (int c = 0; c < img.channels; ++c)
        out[c * plane + static_cast<std::size_t>(y) * img.width + x] = img.row(y)[x * img.channels + c];
  return out;
}

}  // namespace frugal::testing

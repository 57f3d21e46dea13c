// Batches of random 1x4x4 uint8 images and labels of 3 classes, for the training step tests.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <torch/torch.h>

namespace frugal::testing {

// `n` batches of `size` images, deterministic in `seed`.
inline std::vector<std::pair<torch::Tensor, torch::Tensor>> random_batches(int n, int size, std::uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<std::pair<torch::Tensor, torch::Tensor>> b;
  for (int i = 0; i < n; ++i)
    b.emplace_back(torch::randint(0, 256, {size, 1, 4, 4}, torch::kUInt8), torch::randint(0, 3, {size}, torch::kInt64));
  return b;
}

}  // namespace frugal::testing

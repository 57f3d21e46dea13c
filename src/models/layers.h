// Building blocks shared by the model families (internal).
#pragma once

#include <torch/torch.h>

#include <functional>

namespace frugal::detail {

inline torch::nn::Conv2d conv(int in, int out, int k, int stride = 1, int groups = 1, bool bias = false) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in, out, k).stride(stride).padding((k - 1) / 2).groups(groups).bias(bias));
}

// A Sequential that can sit inside another (torch::nn::Sequential's templated forward cannot).
struct SeqImpl : torch::nn::SequentialImpl {
  using SequentialImpl::SequentialImpl;
  torch::Tensor forward(torch::Tensor x) { return SequentialImpl::forward(x); }
};
TORCH_MODULE(Seq);

// torch::nn::BatchNorm2d (the same parameters, buffers and names) whose training forward computes
// the batch statistics over every process of a data-parallel run when set_batch_norm_sync() gave
// it a collective (--sync-bn; batch_norm.cpp); otherwise it is BatchNorm2d's own forward.
struct Norm2dImpl : torch::nn::BatchNorm2dImpl {
  using torch::nn::BatchNorm2dImpl::BatchNorm2dImpl;
  torch::Tensor forward(const torch::Tensor& x);
};
TORCH_MODULE(Norm2d);

inline Norm2d bn(int channels) { return Norm2d(channels); }

// Runs `fn(x)` (the forward of `block`) without keeping its activations; backward recomputes them
// with the RNG and autocast state of the first pass restored, and `block`'s buffers (batch-norm
// running statistics) put back afterwards so they are updated once per step, as without it.
using BlockFn = std::function<torch::Tensor(const torch::Tensor&)>;
torch::Tensor checkpoint_block(torch::nn::Module& block, const BlockFn& fn, const torch::Tensor& x);

// checkpoint_block() when `on` and gradients are being recorded, else fn(x).
inline torch::Tensor run_block(bool on, torch::nn::Module& block, const BlockFn& fn, const torch::Tensor& x) {
  if (on && torch::GradMode::is_enabled()) return checkpoint_block(block, fn, x);
  return fn(x);
}

// torchvision's initializations: kaiming_normal_(fan_out) for convolutions, (1, 0) for norms,
// zero biases.
void init_conv_bn(torch::nn::Module& root);

}  // namespace frugal::detail

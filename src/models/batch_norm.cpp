// Batch norm whose batch statistics may span several processes (--sync-bn): see layers.h.
#include <torch/torch.h>

#include "models/layers.h"
#include "frugal/models/models.h"

namespace frugal {
namespace {

std::function<void(torch::Tensor&)> g_sync;  // set by the trainer before training, read by forward

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// torch.nn.SyncBatchNorm's algorithm: the per-channel sums, sums of squares and counts of every
// rank are summed (one collective), mean and biased variance normalise, the unbiased variance goes
// into the running statistics. In backward the input's gradient needs the sums of dy and dy * x̂
// over all ranks (a second collective); the weight's and bias's gradients stay this rank's, as the
// gradient all-reduce after backward sums them over the ranks.
struct SyncBatchNormFunction : torch::autograd::Function<SyncBatchNormFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& bias, torch::Tensor running_mean, torch::Tensor running_var,
                               torch::Tensor batches_tracked, double eps, double momentum) {
    const auto c = x.size(1);
    auto xf = x.to(torch::kFloat32);
    auto stats =
        torch::cat({xf.sum({0, 2, 3}, false, torch::kFloat64), (xf * xf).sum({0, 2, 3}, false, torch::kFloat64),
                    torch::full({1}, static_cast<double>(x.numel() / std::max<std::int64_t>(c, 1)),
                                xf.options().dtype(torch::kFloat64))});
    g_sync(stats);
    // No host read of the count (a GPU would wait at every layer): an empty global batch (every
    // rank's chunk empty, as the last chunks of an uneven batch can be) is handled on the device.
    auto n = stats.slice(0, 2 * c, 2 * c + 1);
    auto any = n > 0;
    auto safe_n = n.clamp_min(1);
    auto mean64 = stats.slice(0, 0, c) / safe_n;
    auto var64 = (stats.slice(0, c, 2 * c) / safe_n - mean64 * mean64).clamp_min(0);
    auto mean = mean64.to(torch::kFloat32), var = var64.to(torch::kFloat32);
    auto invstd = torch::rsqrt(var + eps);
    auto shape = std::vector<std::int64_t>{1, c, 1, 1};
    auto y = (xf - mean.view(shape)) * (invstd * weight.to(torch::kFloat32)).view(shape) +
             bias.to(torch::kFloat32).view(shape);
    {
      torch::NoGradGuard no_grad;
      batches_tracked.add_(any.to(batches_tracked.scalar_type()).reshape({}));
      auto unbiased = var64 * (safe_n / (n - 1).clamp_min(1));
      running_mean.copy_(
          torch::where(any, running_mean * (1 - momentum) + mean.to(running_mean.dtype()) * momentum, running_mean));
      running_var.copy_(
          torch::where(any, running_var * (1 - momentum) + unbiased.to(running_var.dtype()) * momentum, running_var));
    }
    ctx->save_for_backward({xf, weight, mean, invstd, safe_n});
    ctx->saved_data["dtype"] = static_cast<std::int64_t>(x.scalar_type());
    return y.to(x.scalar_type());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto& xf = saved[0];
    const auto& weight = saved[1];
    const auto& mean = saved[2];
    const auto& invstd = saved[3];
    const auto& n = saved[4];  // the global count, at least 1
    const auto c = xf.size(1);
    auto shape = std::vector<std::int64_t>{1, c, 1, 1};
    auto dy = grads[0].to(torch::kFloat32);
    auto xhat = (xf - mean.view(shape)) * invstd.view(shape);
    auto sum_dy = dy.sum({0, 2, 3});
    auto sum_dy_xhat = (dy * xhat).sum({0, 2, 3});
    auto all = torch::cat({sum_dy, sum_dy_xhat}).to(torch::kFloat64);
    g_sync(all);
    auto g_dy = (all.slice(0, 0, c) / n).to(torch::kFloat32),
         g_dy_xhat = (all.slice(0, c, 2 * c) / n).to(torch::kFloat32);
    auto dx =
        (weight.to(torch::kFloat32) * invstd).view(shape) * (dy - g_dy.view(shape) - xhat * g_dy_xhat.view(shape));
    auto dtype = static_cast<c10::ScalarType>(ctx->saved_data["dtype"].toInt());
    return {dx.to(dtype),
            sum_dy_xhat.to(weight.scalar_type()),
            sum_dy.to(weight.scalar_type()),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor()};
  }
};

}  // namespace

void set_batch_norm_sync(std::function<void(torch::Tensor&)> all_reduce_sum) { g_sync = std::move(all_reduce_sum); }

namespace detail {

torch::Tensor Norm2dImpl::forward(const torch::Tensor& x) {
  if (!g_sync || !is_training() || !options.track_running_stats() || !options.affine())
    return torch::nn::BatchNorm2dImpl::forward(x);
  TORCH_CHECK(x.dim() == 4, "Norm2d: expected a 4-d input");
  const double momentum = options.momentum() ? *options.momentum() : 0.1;
  return SyncBatchNormFunction::apply(x, weight, bias, running_mean, running_var, num_batches_tracked, options.eps(),
                                      momentum);
}

}  // namespace detail
}  // namespace frugal

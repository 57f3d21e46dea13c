// Activation checkpointing as a custom autograd function (LibTorch has no torch.utils.checkpoint).
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "models/layers.h"

namespace frugal::detail {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// What the recomputation needs besides the saved input; travels in a capsule through saved_data.
struct Recompute : torch::CustomClassHolder {
  torch::nn::Module* block = nullptr;
  BlockFn fn;
  std::vector<torch::Tensor> params;  // the block's parameters that require grad
  bool input_requires_grad = false;
  torch::Device device{torch::kCPU};
  torch::Tensor rng_state;
  bool autocast = false, autocast_cache = true;
  at::ScalarType autocast_dtype = at::kFloat;
};

// The recompute's autocast region, entered and left as torch.autocast's __enter__/__exit__ do
// (what torch.utils.checkpoint recomputes under): state, dtype and cache flag as in forward, and
// the nesting count, whose return to zero clears the cast-weight cache. That cache is
// process-wide: casts made here and left behind would outlive optimizer.step(), and the next
// forward would run on the previous step's weights.
class AutocastState {
 public:
  AutocastState(at::DeviceType type, bool enabled, at::ScalarType dtype, bool cache)
      : type_(type),
        was_(at::autocast::is_autocast_enabled(type)),
        was_cache_(at::autocast::is_autocast_cache_enabled()),
        was_dtype_(at::autocast::get_autocast_dtype(type)) {
    at::autocast::set_autocast_enabled(type, enabled);
    at::autocast::set_autocast_dtype(type, dtype);
    at::autocast::increment_nesting();
    at::autocast::set_autocast_cache_enabled(cache);
  }
  ~AutocastState() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(type_, was_);
    at::autocast::set_autocast_dtype(type_, was_dtype_);
    at::autocast::set_autocast_cache_enabled(was_cache_);
  }
  AutocastState(const AutocastState&) = delete;
  AutocastState& operator=(const AutocastState&) = delete;

 private:
  at::DeviceType type_;
  bool was_, was_cache_;
  at::ScalarType was_dtype_;
};

class CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, at::TensorList params,
                               c10::intrusive_ptr<Recompute> r) {
    (void)params;  // inputs only so that autograd routes their gradients through backward()
    r->device = x.device();
    r->rng_state = at::globalContext().defaultGenerator(x.device()).get_state();
    r->autocast = at::autocast::is_autocast_enabled(x.device().type());
    r->autocast_dtype = at::autocast::get_autocast_dtype(x.device().type());
    r->autocast_cache = at::autocast::is_autocast_cache_enabled();
    ctx->save_for_backward({x});
    ctx->saved_data["r"] = c10::IValue::make_capsule(r);
    torch::NoGradGuard no_grad;
    return r->fn(x);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    auto r = c10::static_intrusive_pointer_cast<Recompute>(ctx->saved_data["r"].toCapsule());
    auto x = ctx->get_saved_variables()[0].detach().requires_grad_(r->input_requires_grad);

    auto generator = at::globalContext().defaultGenerator(r->device);
    auto rng_now = generator.get_state();
    std::vector<torch::Tensor> buffers_before;
    for (auto& b : r->block->buffers()) buffers_before.push_back(b.clone());

    torch::Tensor y;
    {
      generator.set_state(r->rng_state);
      AutocastState autocast(r->device.type(), r->autocast, r->autocast_dtype, r->autocast_cache);
      torch::AutoGradMode grad_on(true);
      y = r->fn(x);
    }
    generator.set_state(rng_now);

    std::vector<torch::Tensor> inputs;
    if (r->input_requires_grad) inputs.push_back(x);
    inputs.insert(inputs.end(), r->params.begin(), r->params.end());
    auto grads = torch::autograd::grad({y}, inputs, {grad_out[0]}, /*retain_graph=*/false,
                                       /*create_graph=*/false, /*allow_unused=*/true);
    {
      // After grad(): batch norm's backward reads the running statistics it was given.
      torch::NoGradGuard no_grad;
      auto buffers = r->block->buffers();
      for (std::size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(buffers_before[i]);
    }
    variable_list result;
    std::size_t next = 0;
    result.push_back(r->input_requires_grad ? grads[next++] : torch::Tensor());
    for (std::size_t i = 0; i < r->params.size(); ++i) result.push_back(grads[next++]);
    result.push_back(torch::Tensor());  // the Recompute argument
    return result;
  }
};

}  // namespace

torch::Tensor checkpoint_block(torch::nn::Module& block, const BlockFn& fn, const torch::Tensor& x) {
  auto r = c10::make_intrusive<Recompute>();
  r->block = &block;
  r->fn = fn;
  for (auto& p : block.parameters())
    if (p.requires_grad()) r->params.push_back(p);
  r->input_requires_grad = x.requires_grad();
  if (r->params.empty() && !r->input_requires_grad) return fn(x);  // nothing to differentiate
  return CheckpointFunction::apply(x, at::TensorList(r->params), r);
}

void init_conv_bn(torch::nn::Module& root) {
  torch::NoGradGuard no_grad;
  for (auto& m : root.modules(/*include_self=*/false)) {
    if (auto* c = m->as<torch::nn::Conv2d>()) {
      torch::nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
      if (c->bias.defined()) c->bias.zero_();
    } else if (auto* b = m->as<torch::nn::BatchNorm2d>()) {
      b->weight.fill_(1.0);
      b->bias.zero_();
    }
  }
}

}  // namespace frugal::detail

// Optimizer and RNG state as named tensors, so a resumed run continues bit for bit.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>

#include "frugal/checkpoint/checkpoint.h"
#include "frugal/util/error.h"

namespace frugal {
namespace {

void* key_of(const torch::Tensor& p) { return p.unsafeGetTensorImpl(); }

torch::Tensor step_tensor(std::int64_t step) { return torch::tensor({step}, torch::kInt64); }

}  // namespace

NamedTensors optimizer_state(torch::optim::Optimizer& optimizer, const NamedTensors& params) {
  NamedTensors out;
  auto& state = optimizer.state();
  for (const auto& [name, p] : params) {
    auto it = state.find(key_of(p));
    if (it == state.end()) continue;
    std::string pre = "optim." + name + ".";
    auto add = [&](const char* field, const torch::Tensor& t) {
      if (t.defined()) out.emplace_back(pre + field, t);
    };
    if (auto* s = dynamic_cast<torch::optim::AdamWParamState*>(it->second.get())) {
      out.emplace_back(pre + "step", step_tensor(s->step()));
      add("exp_avg", s->exp_avg());
      add("exp_avg_sq", s->exp_avg_sq());
      add("max_exp_avg_sq", s->max_exp_avg_sq());
    } else if (auto* s = dynamic_cast<torch::optim::AdamParamState*>(it->second.get())) {
      out.emplace_back(pre + "step", step_tensor(s->step()));
      add("exp_avg", s->exp_avg());
      add("exp_avg_sq", s->exp_avg_sq());
      add("max_exp_avg_sq", s->max_exp_avg_sq());
    } else if (auto* s = dynamic_cast<torch::optim::SGDParamState*>(it->second.get())) {
      add("momentum_buffer", s->momentum_buffer());
    } else {
      fail(ErrorKind::unsupported, "optimizer state of \"" + name + "\"", "AdamW, Adam or SGD state",
           "another optimizer's", "use {optimizer} adamw or sgd");
    }
  }
  return out;
}

void load_optimizer_state(torch::optim::Optimizer& optimizer, const NamedTensors& params, const Checkpoint& ckpt) {
  auto& state = optimizer.state();
  bool adamw = dynamic_cast<torch::optim::AdamW*>(&optimizer) != nullptr;
  bool adam = dynamic_cast<torch::optim::Adam*>(&optimizer) != nullptr;
  bool sgd = dynamic_cast<torch::optim::SGD*>(&optimizer) != nullptr;
  if (!adamw && !adam && !sgd)
    fail(ErrorKind::unsupported, "optimizer", "AdamW, Adam or SGD", "another optimizer",
         "use {optimizer} adamw or sgd");
  for (const auto& [name, p] : params) {
    std::string pre = "optim." + name + ".";
    auto get = [&](const char* field) -> torch::Tensor {
      const auto* t = ckpt.find_state(pre + field);
      return t ? t->to(p.device()).clone() : torch::Tensor();
    };
    const auto* step = ckpt.find_state(pre + "step");
    if (adamw || adam) {
      if (!step) continue;  // this parameter had not been stepped (e.g. frozen)
      auto fill = [&](auto s) {
        s->step(step->item<std::int64_t>());
        s->exp_avg(get("exp_avg"));
        s->exp_avg_sq(get("exp_avg_sq"));
        if (auto m = get("max_exp_avg_sq"); m.defined()) s->max_exp_avg_sq(m);
        state[key_of(p)] = std::move(s);
      };
      if (adamw)
        fill(std::make_unique<torch::optim::AdamWParamState>());
      else
        fill(std::make_unique<torch::optim::AdamParamState>());
    } else {
      auto m = get("momentum_buffer");
      if (!m.defined()) continue;
      auto s = std::make_unique<torch::optim::SGDParamState>();
      s->momentum_buffer(m);
      state[key_of(p)] = std::move(s);
    }
  }
}

torch::Tensor cpu_rng_state() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_cpu_rng_state(const torch::Tensor& state) {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

// Through the accelerator hooks, so this file needs no CUDA headers and links without CUDA.
torch::Tensor device_rng_state(const torch::Device& device) {
  if (!device.is_cuda() || !at::globalContext().hasCUDA()) return {};
  auto gen = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_device_rng_state(const torch::Device& device, const torch::Tensor& state) {
  if (!device.is_cuda() || !at::globalContext().hasCUDA() || !state.defined()) return;
  auto gen = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

}  // namespace frugal

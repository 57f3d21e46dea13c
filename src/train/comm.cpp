// The wire between a run's processes (see comm.h).
#include "train/comm.h"

namespace frugal {

std::unique_ptr<Comm> Comm::join(const std::optional<DistEnv>& env, const torch::Device& device,
                                 std::chrono::milliseconds timeout, const std::function<bool()>& stop_requested) {
  if (!env) return std::make_unique<Comm>();
  return std::make_unique<Comm>(ProcessGroup::join(*env, device, timeout, stop_requested));
}

Comm::StepPlan Comm::agree_on_step(const StepPlan& mine) {
  if (!g_) return mine;
  // One small collective per step, on the CPU (no wait for the GPU).
  auto t = torch::zeros({6}, torch::kFloat64);
  auto a = t.accessor<double, 1>();
  a[0] = mine.stop == StepPlan::Stop::signal ? 1 : 0;
  a[1] = mine.stop == StepPlan::Stop::deadline ? 1 : 0;
  a[2] = static_cast<double>(mine.samples);
  if (rank0()) {
    a[3] = static_cast<double>(mine.total_steps);
    a[4] = mine.lr;
    a[5] = mine.save_after ? 1 : 0;
  }
  g_->control_all_reduce_sum(t);
  auto r = t.accessor<double, 1>();
  StepPlan out;
  out.stop = r[0] > 0 ? StepPlan::Stop::signal : r[1] > 0 ? StepPlan::Stop::deadline : StepPlan::Stop::none;
  out.samples = static_cast<std::int64_t>(r[2]);
  out.total_steps = static_cast<std::int64_t>(r[3]);
  out.lr = r[4];
  out.save_after = r[5] > 0;
  return out;
}

bool Comm::any(bool mine) {
  if (!g_) return mine;
  auto t = torch::full({1}, mine ? 1.0 : 0.0, torch::kFloat64);
  g_->control_all_reduce_sum(t);
  return t.item<double>() > 0;
}

std::int64_t Comm::from_rank0(std::int64_t value) {
  if (!g_) return value;
  auto t = torch::full({1}, value, torch::kInt64);
  g_->control_broadcast(t);
  return t.item<std::int64_t>();
}

void Comm::broadcast_from_rank0(std::vector<torch::Tensor>& tensors) {
  if (g_) g_->broadcast(tensors);
}

void Comm::sum(std::vector<torch::Tensor>& tensors) {
  if (g_) g_->all_reduce_sum(tensors);
}

void Comm::average(std::vector<torch::Tensor>& tensors) {
  if (!g_ || tensors.empty()) return;
  g_->all_reduce_sum(tensors);
  for (auto& b : tensors) b.div_(world());
}

ProcessGroup& Comm::subgroup(const std::vector<int>& ranks, const std::string& name) {
  subgroups_.push_back(g_->subgroup(ranks, name));
  return *subgroups_.back();
}

double Comm::comm_seconds() const {
  double s = g_ ? g_->comm_seconds() : 0;
  for (const auto& sub : subgroups_) s += sub->comm_seconds();
  return s;
}

double Comm::gradient_seconds() const {
  double s = g_ ? g_->gradient_seconds() : 0;
  for (const auto& sub : subgroups_) s += sub->gradient_seconds();
  return s;
}

}  // namespace frugal

#include "train/collective.h"

#include "frugal/image/image.h"
#include "train/pipeline.h"

namespace frugal {

Collective::StepPlan GroupCollective::agree_on_step(const StepPlan& mine) {
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

bool GroupCollective::any(bool mine) {
  auto t = torch::full({1}, mine ? 1.0 : 0.0, torch::kFloat64);
  g_->control_all_reduce_sum(t);
  return t.item<double>() > 0;
}

std::int64_t GroupCollective::from_rank0(std::int64_t value) {
  auto t = torch::full({1}, value, torch::kInt64);
  g_->control_broadcast(t);
  return t.item<std::int64_t>();
}

void GroupCollective::average(std::vector<torch::Tensor>& tensors) {
  if (tensors.empty()) return;
  g_->all_reduce_sum(tensors);
  for (auto& b : tensors) b.div_(world());
}

void GroupCollective::attach(TrainStep& step) {
  step.zero_gradients = [g = g_.get()](const std::vector<torch::Tensor>& params) { g->prepare_gradients(params); };
  step.reduce_gradients = [g = g_.get()](const std::vector<torch::Tensor>& params, std::vector<torch::Tensor> extra) {
    g->all_reduce_gradients(params, std::move(extra));
  };
}

void GroupCollective::seed_step(std::uint64_t seed, std::int64_t step) {
  torch::manual_seed(mix_seed(mix_seed(seed, static_cast<std::uint64_t>(rank())), static_cast<std::uint64_t>(step)));
}

std::string GroupCollective::describe() const {
  return "distributed: rank " + std::to_string(rank()) + " of " + std::to_string(world()) + " (" + g_->backend() + ")";
}

std::unique_ptr<TrainStep> Collective::make_step(Model& model, torch::optim::Optimizer& optimizer, LossScaler& scaler,
                                                 const StepOptions& options) {
  auto step = std::make_unique<TrainStep>(model, optimizer, scaler, options);
  attach(*step);
  return step;
}

std::unique_ptr<Collective> Collective::join(const std::optional<DistEnv>& env, const torch::Device& device,
                                             std::chrono::milliseconds timeout,
                                             const std::function<bool()>& stop_requested,
                                             const PipelineOptions& pipeline) {
  if (!env) return std::make_unique<Collective>();
  auto group = ProcessGroup::join(*env, device, timeout, stop_requested);
  if (pipeline.stages > 1) return make_pipeline(std::move(group), pipeline);
  return std::make_unique<GroupCollective>(std::move(group));
}

}  // namespace frugal

// The wire between the processes of a training run (internal): what data parallelism and a
// pipeline both ask of the others: sums, means and broadcasts, one agreement before each step,
// and the seconds all of it took. Through c10d's process group (train/distributed.h) for the
// ranks torchrun started; a single process is a Comm of none, whose answers are its own values,
// so it trains exactly as before the seam existed. Which copy of the model a process holds and
// how its steps run over the others is the Parallelism's (train/parallelism.h).
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "train/distributed.h"

namespace frugal {

class Comm {
 public:
  // What every process agrees on before a step: a stop asked for anywhere stops all, the step's
  // samples over all processes weigh each loss, and rank 0's plan is everyone's.
  struct StepPlan {
    enum class Stop { none, deadline, signal } stop = Stop::none;  // a signal anywhere wins over a deadline
    std::int64_t samples = 0;      // this process's, summed over all (solo: 0, the batches are the step)
    std::int64_t total_steps = 0;  // rank 0's
    double lr = 0;                 // rank 0's
    bool save_after = false;       // rank 0's cadence
  };

  // Solo unless `env` names a launch of several ranks: then joins their group (ProcessGroup::join).
  static std::unique_ptr<Comm> join(const std::optional<DistEnv>& env, const torch::Device& device,
                                    std::chrono::milliseconds timeout, const std::function<bool()>& stop_requested);
  Comm() = default;  // solo
  explicit Comm(std::unique_ptr<ProcessGroup> group) : g_(std::move(group)) {}

  bool grouped() const { return g_ != nullptr; }
  int rank() const { return g_ ? g_->rank() : 0; }
  int world() const { return g_ ? g_->world() : 1; }
  bool rank0() const { return rank() == 0; }
  std::string backend() const { return g_ ? g_->backend() : ""; }

  StepPlan agree_on_step(const StepPlan& mine);
  // Whether any process says true (solo: this one).
  bool any(bool mine);
  std::int64_t from_rank0(std::int64_t value);
  // Rank 0's values into every process's tensors.
  void broadcast_from_rank0(std::vector<torch::Tensor>& tensors);
  // Sums over the processes, in place (evaluation counts, synchronised batch norm).
  void sum(std::vector<torch::Tensor>& tensors);
  // The mean over the processes, in place.
  void average(std::vector<torch::Tensor>& tensors);

  // The process group (null when solo): what a pipeline's stages send each other, and the
  // gradient buckets of a data-parallel step.
  ProcessGroup* group() { return g_.get(); }
  // A group of some of the ranks (ProcessGroup::subgroup; grouped() only), kept here, so that its
  // seconds count in comm_seconds(): e.g. the data-parallel replicas of one pipeline stage.
  ProcessGroup& subgroup(const std::vector<int>& ranks, const std::string& name);

  // Seconds spent in collectives (waiting for the slowest included), and in the gradients' share,
  // over the group and its subgroups.
  double comm_seconds() const;
  double gradient_seconds() const;

 private:
  std::unique_ptr<ProcessGroup> g_;
  std::vector<std::unique_ptr<ProcessGroup>> subgroups_;
};

}  // namespace frugal

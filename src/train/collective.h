// What a training session needs from the other processes of its run, behind one seam (internal):
// nothing for a single process (solo), the c10d process group for the ranks torchrun started, and
// later the stages of a pipeline. The session asks the same questions either way; a solo run's
// answers are its own values, so it trains exactly as before the seam existed.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "frugal/train/train.h"
#include "train/distributed.h"

namespace frugal {

class Collective {
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
  static std::unique_ptr<Collective> join(const std::optional<DistEnv>& env, const torch::Device& device,
                                          std::chrono::milliseconds timeout,
                                          const std::function<bool()>& stop_requested);
  virtual ~Collective() = default;

  virtual bool grouped() const { return false; }
  virtual int rank() const { return 0; }
  virtual int world() const { return 1; }
  bool rank0() const { return rank() == 0; }

  virtual StepPlan agree_on_step(const StepPlan& mine) { return mine; }
  // Whether any process says true (solo: this one).
  virtual bool any(bool mine) { return mine; }
  virtual std::int64_t from_rank0(std::int64_t value) { return value; }
  // Rank 0's values into every process's tensors.
  virtual void broadcast_from_rank0(std::vector<torch::Tensor>&) {}
  // Sums over the processes, in place (evaluation counts, synchronised batch norm).
  virtual void sum(std::vector<torch::Tensor>&) {}
  // The mean over the processes, in place (batch-norm statistics before evaluating and saving).
  virtual void average(std::vector<torch::Tensor>&) {}
  // Gradients summed over the processes at each step (TrainStep's hooks); solo: none needed.
  virtual void attach(TrainStep&) {}
  // Before a step: each process's dropout draws from a generator of (seed, rank, step), so that
  // ranks resume as they ran whatever the world size before; solo: the one generator goes on.
  virtual void seed_step(std::uint64_t, std::int64_t) {}
  // Seconds spent in collectives (waiting for the slowest included), and in the gradients' share.
  virtual double comm_seconds() const { return 0; }
  virtual double gradient_seconds() const { return 0; }
  // "distributed: rank 0 of 2 (gloo)"; empty when solo.
  virtual std::string describe() const { return ""; }
};

}  // namespace frugal

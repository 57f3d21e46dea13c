// Data-parallel training through torch.distributed's c10d (internal): the process group a
// `frugal train` joins when torchrun (or Slurm + torchrun, Kubernetes) started it as one of
// several ranks. Rendezvous, transport and launch are c10d's and torchrun's: TCPStore,
// ProcessGroupGloo on the CPU, ProcessGroupNCCL on CUDA. Nothing here is a transport of our own.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace frugal {

// What the launcher put in the environment (torch.distributed's env:// contract).
struct DistEnv {
  int rank = 0, world = 1, local_rank = 0, local_world = 1;
  std::string master_addr;
  int master_port = 0;
  // TORCHELASTIC_USE_AGENT_STORE=True: torchrun's agent hosts the TCPStore and every rank is a
  // client; keys live under /worker/attempt_<restart count>, as torch's env:// rendezvous does.
  bool agent_store = false;
  std::string restart_count = "0";
  // FRUGAL_DIST_BACKEND: "" (Gloo on the CPU, NCCL on CUDA) or "gloo", which also carries CUDA
  // tensors (point to point through host memory): for ranks that share one GPU, which NCCL refuses
  // ("Duplicate GPU detected", NVIDIA/nccl#418).
  std::string backend;
};

// nullopt when WORLD_SIZE is absent or 1 (a single process: exactly the undistributed run),
// unless FRUGAL_FORCE_GROUP=1 (a group of one, for measuring the group's overhead).
// FRUGAL_DIST_BACKEND other than gloo or nccl is Error(usage).
// Error(usage) naming the variable when one is missing or out of range.
std::optional<DistEnv> dist_env_from(const std::function<const char*(const char*)>& getenv);
std::optional<DistEnv> dist_env();  // from this process's environment

class ProcessGroup {
 public:
  // Joins the group: TCPStore at MASTER_ADDR:MASTER_PORT, then Gloo (CPU) or NCCL (CUDA; the
  // device must be cuda:LOCAL_RANK, set current before), or Gloo on CUDA when env.backend says so. Every collective fails with
  // Error(io) "lost contact with the other ranks" when a peer dies or does not answer in `timeout`.
  // The rendezvous is bounded by `timeout` too: a rank whose store (rank 0, or torchrun's agent)
  // never answers ends with Error(io) naming the address, and `stop_requested` (a signal) ends the
  // wait at once with Error(interrupted): nothing has been written before the group exists.
  static std::unique_ptr<ProcessGroup> join(const DistEnv& env, const torch::Device& device,
                                            std::chrono::milliseconds timeout,
                                            const std::function<bool()>& stop_requested = {});
  virtual ~ProcessGroup() = default;

  int rank() const { return env_.rank; }
  int world() const { return env_.world; }
  const DistEnv& env() const { return env_; }
  const std::string& backend() const { return backend_; }

  // Sums each tensor over the ranks, in place (one collective for the list).
  virtual void all_reduce_sum(std::vector<torch::Tensor>& tensors) = 0;
  // Rank `root`'s values into every rank's tensors, in place.
  virtual void broadcast(std::vector<torch::Tensor>& tensors, int root = 0) = 0;
  // The same on small CPU tensors through a Gloo group beside the data group: the per-step
  // agreement of a CUDA run then neither waits for the GPU nor goes through NCCL.
  virtual void control_all_reduce_sum(torch::Tensor& cpu_tensor) = 0;
  virtual void control_broadcast(torch::Tensor& cpu_tensor, int root = 0) = 0;
  // Point to point, for pipeline stages (train/pipeline.cpp): send() returns at once and keeps the
  // tensor (dense) until wait_sends(); recv() fills `t`, dense, in place from rank `src`. Messages
  // between two ranks with one tag arrive in the order they were sent.
  virtual void send(const torch::Tensor& t, int dst, int tag) = 0;
  virtual void recv(torch::Tensor& t, int src, int tag) = 0;
  virtual void wait_sends() = 0;
  // A group of some of this group's ranks (this one among them), e.g. the data-parallel replicas of
  // one pipeline stage: made by each of its ranks, with the same `name`, rendezvoused through this
  // group's store; its ranks are numbered in the order of `ranks`.
  virtual std::unique_ptr<ProcessGroup> subgroup(const std::vector<int>& ranks, const std::string& name) = 0;
  // Before a step's backward: makes each parameter's gradient a view of a flat bucket (about
  // bucket_bytes per bucket and dtype, laid out as the parameter: channels-last too) and zeroes
  // the buckets, so that backward accumulates straight into them (DDP's gradient_as_bucket_view).
  void prepare_gradients(const std::vector<torch::Tensor>& params);
  // Gradients of `params` (undefined ones as zeros) plus `extra` summed over the ranks, in place:
  // the buckets themselves when the gradients are still their views, else copied into buckets
  // and back. One collective per bucket.
  void all_reduce_gradients(const std::vector<torch::Tensor>& params, std::vector<torch::Tensor> extra);

  double comm_seconds() const { return comm_seconds_; }          // time spent in collectives so far
  double gradient_seconds() const { return gradient_seconds_; }  // of which in all_reduce_gradients
  // Gradient reductions that found backward's results already in the buckets (no copy).
  std::int64_t in_place_reductions() const { return in_place_; }

 protected:
  ProcessGroup(DistEnv env, std::string backend) : env_(std::move(env)), backend_(std::move(backend)) {}
  DistEnv env_;
  std::string backend_;
  double comm_seconds_ = 0, gradient_seconds_ = 0;
  std::int64_t bucket_bytes_ = 25ll << 20;
  struct Bucket {
    torch::Tensor flat;
    std::vector<torch::Tensor> params;  // whose gradients are views of flat
  };
  std::vector<Bucket> buckets_;
  std::int64_t in_place_ = 0;
  bool views_intact(const std::vector<torch::Tensor>& params) const;
};

}  // namespace frugal

// Training: configuration, mixed precision with dynamic loss scaling, the accumulated training
// step with OOM recovery, evaluation, and the run driver behind `frugal train`.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "frugal/budget.h"
#include "frugal/env.h"
#include "frugal/models.h"

namespace frugal {

// ---------------------------------------------------------------------------------------------
// Mixed precision

enum class AmpMode { off, fp16, bf16 };
const char* to_string(AmpMode mode);
// "off" | "fp16" | "bf16"; "auto" is resolved by choose_amp(). Throws Error(usage).
AmpMode parse_amp(const std::string& text);

// `--amp auto`: fp16 on CUDA before sm_80 (P100 sm_60, V100, T4: no fast bf16), bf16 on sm_80+,
// off on consumer Pascal (sm_61/62: fp16 at 1/64 of the fp32 rate) and older GPUs, and off on the
// CPU (bf16 autocast there is slower than fp32 on CPUs without AMX; on CPUs with it, `frugal train`
// suggests --amp bf16, see cpu_has_native_bf16()).
// `device_kind`: "cpu" or "cuda"; major/minor: the compute capability (ignored on the CPU).
AmpMode choose_amp(const std::string& device_kind, int major, int minor);

// Enables autocast for one device type while alive (off: does nothing).
class AutocastGuard {
 public:
  AutocastGuard(torch::DeviceType device, AmpMode mode);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  torch::DeviceType device_;
  bool active_ = false, was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kFloat;
};

// Dynamic loss scaling for fp16 (torch.amp.GradScaler's algorithm, on the same ATen kernels):
// the loss is multiplied by `scale` before backward; unscale() divides the gradients and finds
// inf/NaN; a step with inf/NaN is skipped and the scale multiplied by backoff; after
// growth_interval clean steps it is multiplied by growth. Disabled: scale 1, but unscale() still
// reports non-finite gradients so such steps are skipped in every precision.
struct LossScalerOptions {
  bool enabled = true;
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  std::int64_t growth_interval = 2000;
};

class LossScaler {
 public:
  explicit LossScaler(LossScalerOptions options = {}, torch::Device device = torch::kCPU);
  torch::Tensor scale(const torch::Tensor& loss) const;
  // Divides the gradients by the scale in place; false when any is inf/NaN (skip the step).
  bool unscale(const std::vector<torch::Tensor>& params);
  // After each step (taken or skipped): adjusts the scale from what unscale() found.
  void update();
  double scale_value() const;
  bool enabled() const { return options_.enabled; }
  // "loss_scaler.scale" (F32) and "loss_scaler.growth_tracker" (I32) for checkpoints.
  std::map<std::string, torch::Tensor> state() const;
  void load_state(const std::map<std::string, torch::Tensor>& state);

 private:
  LossScalerOptions options_;
  torch::Tensor scale_, growth_tracker_, found_inf_;  // on the training device
};

// ---------------------------------------------------------------------------------------------
// Optimizers and schedules

enum class OptimizerKind { adamw, sgd };

struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::adamw;
  double lr = 1e-3;
  double weight_decay = 0.05;
  double momentum = 0.9;  // SGD
  bool nesterov = true;   // SGD
};

// Parameters that require grad, in two groups: weights with weight decay, and norms and biases
// (1-D tensors) without. The names come back in optimizer order (for checkpoint state).
struct OptimizerSetup {
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::vector<std::pair<std::string, torch::Tensor>> params;
};
OptimizerSetup make_optimizer(Model& model, const OptimizerOptions& options);

// Linear warmup from 0 to base over `warmup` steps, then cosine to min_factor * base at `total`.
double cosine_lr(double base, std::int64_t step, std::int64_t warmup, std::int64_t total, double min_factor = 0.0);
void set_lr(torch::optim::Optimizer& optimizer, double lr);

// Sets requires_grad(false) on every parameter whose name starts with one of the prefixes
// (matching whole name components: "layer1" freezes "layer1.0.conv1.weight", not "layer10.*").
// Returns the number of tensors frozen; a prefix that matches nothing -> Error(usage).
int freeze(Model& model, const std::vector<std::string>& prefixes);

// ---------------------------------------------------------------------------------------------
// The training step

struct StepOptions {
  int micro_batch = 64;   // samples per forward/backward
  double label_smoothing = 0.0;
  double clip_grad_norm = 0.0;  // 0: no clipping
  AmpMode amp = AmpMode::off;
  torch::Device device = torch::kCPU;
  bool channels_last = false;  // lay each micro-batch out channels-last (see to_channels_last)
  std::vector<float> mean{0.5f}, std{0.5f};  // normalization of uint8 images
  // Data-parallel with --sync-bn: each batch is forwarded in ceil(max(its size, this) /
  // micro_batch) chunks, empty ones too, so that every rank makes the same collectives (0: only
  // the chunks that hold samples).
  std::int64_t equal_forwards = 0;
};

// Stores the model's 4-D weights channels-last, as PyTorch's module.to(memory_format=...) does:
// also the single-input-channel ones, which contiguous(ChannelsLast) would leave with NCHW strides
// (they count as channels-last already) and which would then keep the first layers on NCHW kernels.
// The same holds for an input (N, 1, H, W); TrainStep lays batches out that way with channels_last.
void to_channels_last(Model& model);
torch::Tensor as_channels_last(const torch::Tensor& t);

// (B, C, H, W) uint8 on any device -> normalized float on options.device (channels-last when asked).
torch::Tensor prepare_batch(const torch::Tensor& images, const StepOptions& options);

struct StepResult {
  double loss = 0;          // mean over the step's samples
  std::int64_t samples = 0;
  bool skipped = false;     // inf/NaN gradients: no optimizer step
  bool oom_recovered = false;
};

// One optimizer step over the samples of `batches` (uint8 images as the loader gives them),
// split into micro-batches of `micro_batch`. Each micro-batch's mean loss is weighted by its share
// of the step's samples, so the accumulated gradient equals that of one batch of all of them.
//
// On running out of memory (c10::OutOfMemoryError, or cuBLAS/cuDNN failing to allocate, see
// is_out_of_memory) the step is undone (gradients zeroed, batch-norm statistics restored, CUDA
// cache emptied), micro_batch halved and the step rerun on the same samples; the new size is kept
// (micro_batch()) and noted once. At micro-batch 1 the error becomes Error(budget). An OOM inside
// optimizer.step() is redone only when no parameter or optimizer state had changed yet (else
// Error(budget): redoing it would step some parameters twice); make_optimizer() creates the
// optimizer state up front so that the first step allocates none of it.
class TrainStep {
 public:
  TrainStep(Model& model, torch::optim::Optimizer& optimizer, LossScaler& scaler, StepOptions options);
  // `global_samples`: the step's samples over all the processes of a data-parallel run (0: these
  // batches are the whole step). Each micro-batch's loss is weighted by its share of them, so that
  // the gradients summed over the processes (reduce_gradients) are those of the global batch's
  // mean loss; the result's loss and samples are then the global batch's too.
  StepResult run(const std::vector<std::pair<torch::Tensor, torch::Tensor>>& batches, std::int64_t global_samples = 0);
  int micro_batch() const { return options_.micro_batch; }

  // Data-parallel: called once per optimizer step, after the last micro-batch's backward and
  // before unscaling: sums the parameters' gradients (undefined ones as zeros) and `extra` (the
  // step's loss sum) over the processes, in place. Every process then unscales, checks for inf/NaN
  // and steps on the same gradients: one decision, taken alike everywhere.
  std::function<void(const std::vector<torch::Tensor>& params, std::vector<torch::Tensor> extra)> reduce_gradients;
  // Data-parallel: replaces zero_grad(set_to_none) before a step's first backward, e.g. with
  // gradients that are views of the all-reduce's buckets, zeroed (ProcessGroup::prepare_gradients).
  std::function<void(const std::vector<torch::Tensor>& params)> zero_gradients;

  // Test seams: called before each micro-batch's forward with a running micro-step counter, and
  // before optimizer.step(); may throw (e.g. c10::OutOfMemoryError) to simulate a failure there.
  std::function<void(std::int64_t micro_step)> before_micro_step;
  std::function<void()> before_optimizer_step;

 private:
  StepResult attempt(const std::vector<std::pair<torch::Tensor, torch::Tensor>>& batches, std::int64_t global_samples);
  std::vector<torch::Tensor> trainable() const;

  Model& model_;
  torch::optim::Optimizer& optimizer_;
  LossScaler& scaler_;
  StepOptions options_;
  std::int64_t micro_steps_ = 0;
  bool oom_noted_ = false;
};

}  // namespace frugal

#include "frugal/evaluate.h"  // evaluation over any BatchSource (needs StepOptions above)

namespace frugal {

// ---------------------------------------------------------------------------------------------
// The run (`frugal train`)

// A size as the user wrote it ("20G") and its bytes; `text` is what config.json records.
struct SizeOption {
  std::string text;  // empty: not given
  std::uint64_t bytes = 0;
  explicit operator bool() const { return !text.empty(); }
};

// Checkpoint cadence: every N optimizer steps ("50steps") or every DURATION ("10m").
// The run's total training time, all sessions together ("20h"); `text` is what config.json records.
struct TimeBudgetOption {
  std::string text;  // empty: none
  std::chrono::seconds seconds{0};
  explicit operator bool() const { return !text.empty(); }
};

struct SaveEvery {
  std::string text;  // empty: after each epoch only
  std::int64_t steps = 0;
  std::chrono::seconds every{0};
};

enum class DeviceKind { automatic, cpu, cuda };
struct DeviceChoice {
  DeviceKind kind = DeviceKind::automatic;
  int index = -1;  // cuda:N; -1: the default device
  std::string text() const;  // "auto", "cpu", "cuda", "cuda:1"
};

// Where training JPEGs are decoded: `automatic` takes the GPU only when this build, machine and
// data allow (select_decode); config.json records the resolved "cpu" or "gpu".
enum class DecodeChoice { cpu, gpu, automatic };

struct TrainConfig {
  std::string data, val, run, model = "cnn", init, config_file, label_pattern, name_encoding;
  std::vector<std::string> freeze;
  double val_split = 0.0;  // 0 without --val: 5% of the training data (stable split)
  std::int64_t max_pixels = 89478485;
  double max_bad_fraction = 0.01;
  int channels = 0;  // 0: as the data
  int epochs = 10, batch_size = 64, accum = 1, image_size = 0, workers = 2;  // epochs 0: auto (time_budget)
  std::uint64_t seed = 0;
  double lr = 1e-3, weight_decay = 0.05, label_smoothing = 0.0, clip_grad_norm = 0.0;
  double warmup_fraction = 0.02;
  OptimizerKind optimizer = OptimizerKind::adamw;
  std::optional<AmpMode> amp;  // none: auto (choose_amp)
  DeviceChoice device;
  bool grad_checkpoint = false, fresh = false, deterministic = false, json = false;
  SizeOption disk_budget, gpu_memory;
  std::string workspace;
  std::optional<DeadlineSpec> deadline;
  TimeBudgetOption time_budget;  // with epochs auto: the steps are planned to fit it (docs/formats.md)
  SaveEvery save_every;
  int keep_best = 1, keep_last = 2;
  bool delta = false;  // --delta: checkpoints between full ones store only changes (docs/formats.md)
  // "gpu": training batches decoded by nvJPEG and transformed on the GPU (GpuLoader; needs a CUDA
  // device); "cpu": the CPU Loader.
  DecodeChoice decode = DecodeChoice::cpu;
  // Data-parallel (WORLD_SIZE > 1 in the environment, as torchrun sets it): --sync-bn, the wait for
  // another process before giving up, and --nproc (the command runs torchrun for the user).
  bool sync_bn = false;
  std::chrono::seconds dist_timeout{120};
  int nproc = 1;

  // The options as config.json and checkpoints record them (keys and values unchanged since
  // version 1, so old runs resume): one entry per row of train_options() that has a `get`.
  nlohmann::json to_json() const;
};

// The one list of train options: the config struct's fields, their config.json keys, the keys a
// resume may not change, and the command-line options (tools/frugal/torch_cmd_train.cpp) and
// TOML keys (the same names) all come from these rows.
struct TrainOption {
  const char* key;         // config.json key ("batch_size"); the option is key with '-' for '_'...
  const char* name;        // ...unless named here ("warmup" for warmup_fraction)
  const char* help;
  enum class Kind { value, values, flag } kind = Kind::value;  // one value, a list, a switch
  bool learning = false;   // changes what is learned: resuming refuses a change (learning_changes)
  bool required = false;
  // Parses one value (for a switch: "true"/"false") into the config. Returns "" or, when the value
  // is refused, what is allowed ("a number > 0"), which the caller reports with the option's name.
  std::string (*set)(TrainConfig& config, const std::string& text) = nullptr;
  // The value as config.json records it; nullptr: not recorded (fresh, json, --config's path).
  nlohmann::json (*get)(const TrainConfig& config) = nullptr;
};
const std::vector<TrainOption>& train_options();

// config.json keys whose change makes a resume unsound: the learning rows, plus "classes" and
// "train_images" (the data's identity), in the order learning_changes reports them.
const std::vector<std::string>& learning_keys();

// --init FILE: tensors of a safetensors file (a frugal checkpoint's trainer state left out).
std::map<std::string, torch::Tensor> load_checkpoint_or_weights(const std::string& path);

// Resuming with options that change what is learned (model, data, classes, schedule, seed, ...)
// would silently mix two experiments: returns each such difference between a checkpoint's config
// and the new one as "key: saved -> now" (empty when resuming is sound). Keys missing on either side
// are not compared.
std::vector<std::string> learning_changes(const nlohmann::json& saved, const nlohmann::json& now);

// How a run ended when it did not fail (failures throw frugal::Error: usage, invalid data, budget).
struct SessionOutcome {
  enum class Status {
    done,               // every epoch trained, the final weights saved
    stopped_resumable,  // deadline, signal, or no room for a checkpoint: a rerun of the same command continues (exit 75)
  } status = Status::done;
  std::int64_t step = 0;             // optimizer steps done when it ended
  std::int64_t resumable_step = -1;  // stopped: the checkpoint a rerun continues from
};

// Trains as configured. Every file the run writes and every clock it reads goes through `env`.
// Nothing is written before training really starts: a refused option, unusable data, a budget
// that does not fit (disk, memory, a deadline too short for one step) leave the run folder as they
// found it (a folder it had to create is removed again).
SessionOutcome train_session(const TrainConfig& config, Env& env = Env::real());

// The torch.distributed backends this build can train several processes with (torchrun; README
// "Several GPUs or machines"): "gloo (CPU)", and "nccl 2.27.3 (CUDA)" in a CUDA build.
std::vector<std::string> distributed_backends();

}  // namespace frugal

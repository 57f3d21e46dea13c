// The run behind `frugal train`: data, model, resume, the epoch loop, evaluation, checkpoints,
// metrics, and stopping resumable on a deadline or signal.
#include <sys/stat.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <optional>

#include "frugal/archive/data_source.h"
#include "frugal/budget/budget.h"
#include "frugal/budget/watchdog.h"
#include "frugal/checkpoint/checkpoint.h"
#include "frugal/checkpoint/weights_file.h"
#include "frugal/data/loader.h"
#include "frugal/dataset/train_val.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/data/gpu_loader.h"
#include "frugal/image/image.h"
#include "frugal/util/progress.h"
#include "frugal/checkpoint_files/run_folder.h"
#include "frugal/train/run_writer.h"
#include "frugal/train/train.h"
#include "frugal/util/units.h"
#include "train/device.h"
#include "train/collective.h"
#include "train/distributed.h"
#include "train/horizon.h"
#include "train/run_state.h"
#include "frugal/run/global_batch.h"
#include "frugal/run/stop_policy.h"
#include "frugal/budget/time_budget.h"
#include "frugal/run/train_log.h"

namespace frugal {
namespace fs = std::filesystem;

namespace {

using Batches = std::vector<std::pair<torch::Tensor, torch::Tensor>>;

double seconds_since(Env::SteadyTime t0, Env::SteadyTime t1) { return std::chrono::duration<double>(t1 - t0).count(); }

std::string count(std::int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// What {disk_budget} counts besides the workspace (budget_workspace()): the tars
// {cache_decompressed} makes of DATA and VAL wherever the cache folder is.
DiskBudgetOptions budget_options(const TrainConfig& c, const fs::path& run_dir) {
  DiskBudgetOptions bo;
  bo.limit = c.disk_budget.bytes;
  bo.own_folder = run_dir;
  if (c.cache_decompressed)
    for (const std::string* data : {&c.data, &c.val})
      if (!data->empty())
        if (auto f = decompressed_cache_file(*data)) bo.counted.push_back(*f);
  return bo;
}

// What is left of {disk_budget} for those tars: the limit less all else it counts (their own bytes
// from an earlier run are left out: the tar is made again or reused as it is).
std::uint64_t cache_budget(const TrainConfig& c, const fs::path& run_dir, Env& env) {
  const DiskBudgetOptions bo = budget_options(c, run_dir);
  std::uint64_t used = DiskBudget(budget_workspace(run_dir, c.workspace), bo, env).used();
  for (const auto& f : bo.counted) used -= std::min(used, allocated_size(f));
  return used >= *bo.limit ? 0 : *bo.limit - used;
}

// Everything one run holds; the loop below reads as the algorithm.
//
// The run folder is the session's alone and frugal's (run_: a RunWriter, made before anything in
// it is read): locked, and refused when it holds files frugal did not write.
// Nothing is written until training really starts (begin_writing(), after the first step of the
// session passed the deadline's check): options, data, model, memory, disk budget and free space,
// resume state and the first step are all checked first, so a run refused for any of them leaves
// the run folder as it was ("nothing was changed"), and a folder this run had to create is removed
// again.
class Session {
 public:
  Session(const TrainConfig& c, Env& env)
      : c_(c), env_(env), run_dir_(c.run), last_save_(env.steady_now()), session_start_(last_save_) {}
  ~Session() {
    if (c_.sync_bn) set_batch_norm_sync(nullptr);
  }
  SessionOutcome execute();

 private:
  SessionOutcome train();
  void open_data();
  void choose_decode();
  void build_model();
  std::shared_ptr<Model> describe_model(const std::string& why);
  std::string size_from_data(Model* scripted);
  static constexpr int kSmallestDataSize = 16;  // below it a stride-32 network's maps are all padding
  void choose_device();
  void build_optimizer();
  std::string choose_model(const std::map<std::string, torch::Tensor>& init);
  void check_scripted_model();
  void check_memory() const;
  void check_fits_model() const;
  void prepare_resume();
  void start_watchdog();
  void check_resume_learns_the_same();
  bool check_extension(const Checkpoint& ck, std::vector<std::string>& changes) const;
  bool check_budget_extension(const Checkpoint& ck, std::vector<std::string>& changes) const;
  void start_together();
  void make_loaders();
  void say_plan() const;
  SessionOutcome finish();
  void begin_writing();
  // The epoch loop and its parts, in the order a step goes through them.
  struct NextStep {
    Batches batches;
    std::int64_t samples = 0, position = 0;  // the loader's position after them
  };
  bool train_epoch(std::int64_t epoch, std::int64_t& position);
  void start_epoch(std::int64_t epoch, std::int64_t position);
  bool plan_ends_here();
  NextStep next_batches(std::int64_t position);
  Collective::StepPlan agree_on_step(const NextStep& next);
  StepResult run_step(const NextStep& next, const Collective::StepPlan& plan);
  void account(std::int64_t epoch, const StepResult& r);
  bool cadence_due(std::int64_t step);
  bool save_due(const Collective::StepPlan& plan);
  bool end_of_epoch(std::int64_t epoch, std::int64_t position);
  bool validation_too_bad(std::int64_t epoch, std::int64_t position);
  std::pair<std::int64_t, std::int64_t> validation_bad_seen();
  std::pair<std::string, std::string> bad_validation_files() const;
  void check_validation_up_front();
  void write_epoch_events(const EvalResult& e);
  Checkpoint make_checkpoint(std::int64_t epochs_done, std::int64_t position, std::int64_t loader_epoch) const;
  void checkpoint(std::int64_t epochs_done, std::int64_t position, std::int64_t loader_epoch, bool wait);
  void save(const Checkpoint& ckpt, bool wait);
  void join_group();
  void average_buffers();
  void fits_one_step_together();
  bool rank0() const { return !group_ || group_->rank0(); }
  int world() const { return group_ ? group_->world() : 1; }
  int replicas() const { return group_ ? group_->replicas() : 1; }
  std::int64_t global_batch() const { return static_cast<std::int64_t>(c_.batch_size) * c_.accum * replicas(); }
  void check_disk_budget();
  SessionOutcome stopped();
  SessionOutcome outcome(SessionOutcome::Status status, std::int64_t resumable_step) const;
  bool should_stop(bool eval_due);
  void start_horizon();
  EvalResult evaluate_epoch(double& secs);
  void add_multi_label_figures(const EvalResult& e);
  double session_seconds() const { return seconds_since(session_start_, env_.steady_now()); }
  nlohmann::json run_config_json() const;

  // Constant after construction.
  TrainConfig c_;  // a copy: --decode auto and the epochs mode are resolved in it
  Env& env_;
  fs::path run_dir_;

  // Made before training and constant during it: the run's rooms and resources.
  RunIdentity identity_;  // built once the data and the world size are known
  std::shared_ptr<Dataset> train_, val_;
  std::vector<std::string> classes_;
  std::map<std::string, std::uint64_t> skipped_, val_skipped_;  // files left out, by reason (the outcome)
  nlohmann::json data_decided_;  // which files train and validate (TrainVal::decided): config.json, the outcome
  ModelInfo info_;
  torch::Device device_{torch::kCPU};
  AmpMode amp_ = AmpMode::off;
  std::shared_ptr<Model> model_;
  OptimizerSetup opt_;
  std::unique_ptr<LossScaler> scaler_;
  std::unique_ptr<TrainStep> step_;
  StepOptions step_options_;
  EvalOptions eval_options_;                   // the evaluation chunk that fits, kept across epochs
  std::unique_ptr<BatchSource> train_loader_;  // Loader, GpuLoader (--decode gpu) or LabelLoader (a later stage)
  std::unique_ptr<BatchSource> val_loader_;    // Loader, or LabelLoader (a later stage: not read)
  // The run folder: its claim (the folders made for it, its lock on rank 0), checkpoints, disk
  // budget, config.json, metrics.jsonl and events; made before anything in the folder is read.
  std::unique_ptr<RunWriter> run_;
  std::optional<StopPolicy> stop_;  // deadline, signals and the costs they are decided from; made first
  // Ends the process when a step does not return by the deadline or a signal plus the stop grace
  // (the CLI's sessions, on the real clock). After run_: destroyed before its manager, as it asks it.
  std::optional<Watchdog> watchdog_;
  std::unique_ptr<TrainLog> log_;
  std::optional<DistEnv> dist_env_;                  // launched by torchrun as one of several ranks
  std::unique_ptr<Collective> group_;                // the run's other processes (solo: none), once the device is known
  Horizon::Saved saved_schedule_;                    // the resumed checkpoint's plan and tail, and its path
  std::optional<CheckpointManager::Resume> resume_;  // what prepare_resume() found, applied at once
  std::int64_t start_epoch_ = 0, start_position_ = 0, steps_per_epoch_ = 0;

  // Per session: where the run stands and what the session has told and written.
  Env::SteadyTime last_save_;
  Env::SteadyTime session_start_;  // this session's time counts against a time budget
  std::int64_t global_step_ = 0, session_steps_ = 0;
  std::optional<Horizon> horizon_;  // where the run ends: epochs or a time budget, and the learning rate
  double last_lr_ = 0;
  nlohmann::json last_metrics_ = nlohmann::json::object();
  std::optional<double> last_val_accuracy_;
  std::int64_t epochs_done_ = 0;  // epochs completed, earlier sessions included
  std::string stop_reason_;
  std::string resume_hint_;              // what a rerun must change to continue (stopped()); "": nothing
  std::optional<RunState> extend_from_;  // --extend: where the run was, for start_tail
  double saved_peak_ = 0;                // --extend: the run's --lr
  bool new_tail_ = false;                // --extend starts a tail in this session

  // Per epoch.
  std::int64_t step_in_epoch_ = 0;
  double epoch_loss_sum_ = 0;  // over this session's steps of the current epoch (finite losses)
  std::int64_t epoch_loss_samples_ = 0;
  double step_seconds_ = 0, comm_at_epoch_start_ = 0,
         gradient_at_epoch_start_ = 0;  // this epoch's steps (with their agreement) and collectives

  // Per step.
  Env::SteadyTime agreed_from_{};  // the step's agreement began (step_seconds_ counts from it)
};

void Session::open_data() {
  DatasetOptions d;
  d.label_pattern = c_.label_pattern;
  d.labels = c_.labels;
  d.label_columns = c_.label_columns;
  d.images_dir = c_.images_dir;
  d.class_names = c_.class_names;
  d.labels_are_classes = c_.labels_are_classes;
  d.label_separator = c_.label_separator, d.labels_header = c_.labels_header;
  d.max_pixels = static_cast<std::uint64_t>(c_.max_pixels);
  if (c_.max_file_bytes) d.max_file_bytes = c_.max_file_bytes.bytes;
  d.max_bad_fraction = c_.max_bad_fraction;
  d.channels = c_.channels;
  d.name_encoding = c_.name_encoding;
  d.exif_orientation = c_.exif_orientation;
  d.cache_decompressed = c_.cache_decompressed;
  d.label_kind = c_.label_kind;
  d.exclude = c_.exclude;
  if (c_.disk_budget) d.decompressed_max_bytes = cache_budget(c_, run_dir_, env_);
  TrainValOptions o;
  o.data = c_.data;
  o.val = c_.val;
  o.val_split = c_.val_split;
  o.data_root = c_.data_root;
  o.dataset = d;
  o.val_labels = {c_.val_labels, c_.val_label_columns, c_.val_images_dir};
  TrainVal data = open_train_val(o);
  train_ = std::move(data.train);
  val_ = std::move(data.val);
  classes_ = std::move(data.classes);
  skipped_ = std::move(data.skipped);
  val_skipped_ = std::move(data.val_skipped);
  data_decided_ = std::move(data.decided);
}

// --decode, once the device is known: `gpu` needs a CUDA device (else a usage error naming the
// device) and a machine and build that can (else select_decode's usage error naming what is
// missing); `auto` takes the GPU only when all of that and the data allow.
void Session::choose_decode() {
  if (c_.decode == DecodeChoice::cpu) return;
  if (c_.decode == DecodeChoice::gpu) {
    if (!device_.is_cuda())
      fail(ErrorKind::usage, "{decode} gpu", "a CUDA device to train on", "{device} " + device_.str(),
           "train on cuda (or auto on a machine with a GPU), or decode on the cpu");
    note("decode: " + select_decode("gpu", *train_).reason);
    return;
  }
  if (c_.device.kind == DeviceKind::cpu) {
    note("decode: cpu ({device} cpu)");
    c_.decode = DecodeChoice::cpu;
    return;
  }
  DecodeSelection sel = select_decode("auto", *train_);
  note("decode: " + sel.reason);
  c_.decode = sel.gpu && device_.is_cuda() ? DecodeChoice::gpu : DecodeChoice::cpu;
}

// With no --model: the zoo model whose names and shapes --init's weights have, else cnn; either
// way the log says the model, its image size and why. Returns the why.
std::string Session::choose_model(const std::map<std::string, torch::Tensor>& init) {
  if (!c_.model.empty()) return "{model}";
  if (!c_.init.empty()) {
    const std::optional<std::string> theirs = zoo_model_for(init);
    std::string zoo;
    for (const std::string& name : zoo_model_names()) zoo += (zoo.empty() ? "" : ", ") + name;
    if (!theirs)
      fail(ErrorKind::usage, c_.init, "the weights of a zoo model (" + zoo + ") to choose the model by",
           "the names and shapes of none of them", "give {model} NAME, the model these weights are for");
    c_.model = *theirs;
    return "chosen by {init}: its weights have " + *theirs + "'s names and shapes";
  }
  c_.model = "cnn";
  return "the default; {model} not given";
}

void Session::build_model() {
  std::map<std::string, torch::Tensor> init;
  if (!c_.init.empty()) init = load_checkpoint_or_weights(c_.init);
  std::shared_ptr<Model> scripted = describe_model(choose_model(init));
  choose_device();
  torch::manual_seed(c_.seed);
  model_ = scripted ? scripted : make_model(c_.model, static_cast<int>(classes_.size()), info_.channels);
  check_memory();
  if (scripted)
    check_scripted_model();
  else
    check_fits_model();
  if (!c_.init.empty()) {
    auto msg = load_weights(*model_, init, /*allow_head_mismatch=*/true);
    note("initialized from " + c_.init + (msg.empty() ? "" : ": " + msg));
  }
  if (!c_.freeze.empty()) note("froze " + count(freeze(*model_, c_.freeze), "tensor", "tensors"));
  // A pipeline's stage (which pieces go to this rank's device) is decided with the other ranks.
  if (c_.pipeline > 1) join_group();
  if (group_)
    group_->place(*model_, device_);
  else
    model_->to(device_);
  // Channels-last on every device: on CUDA for cuDNN's tensor-core kernels, on the CPU because
  // oneDNN's convolutions run 1.1-1.6x faster that way (cnn, resnet18, efficientnet_b0 measured).
  to_channels_last(*model_);
  model_->set_grad_checkpoint(c_.grad_checkpoint);
  model_->train();
  build_optimizer();
}

// info_: the model's input (size, channels, statistics) and classes; returns the user's
// TorchScript module when --model names one. Says what was chosen and why.
std::shared_ptr<Model> Session::describe_model(const std::string& why) {
  std::shared_ptr<Model> scripted;  // --model FILE.pt
  if (names_module_file(c_.model)) {
    if (c_.deterministic) set_torchscript_optimized(false);
    set_allow_model_code(c_.allow_model_code);
    ScriptedModule m = load_torchscript(c_.model);
    scripted = m.model;
    info_ = torchscript_model_info(c_.model, m.sha256, train_->channels());
  } else {
    info_ = default_model_info(c_.model, train_->channels());
  }
  info_.classes = classes_;
  info_.multi_label = train_->multi_label();
  info_.threshold = static_cast<float>(c_.threshold);
  eval_options_.multi_label = info_.multi_label;
  eval_options_.thresholds = {info_.threshold};
  if (c_.image_size > 0) info_.image_size = c_.image_size;
  const std::string size_why = c_.image_size > 0 ? "{image_size}" : size_from_data(scripted.get());
  // Photos shrunk to a 28 px cnn train badly without a word: say what fits them.
  const int native = train_->native_size();
  const bool photos_small = why != "{model}" && c_.image_size <= 0 && native >= 2 * info_.image_size && native >= 96;
  note("model: " + c_.model + " at " + std::to_string(info_.image_size) + " px (" + why + "; " + size_why + ")" +
       (photos_small ? "; these images are about " + std::to_string(native) +
                           " px: for photos give {model} resnet18 or efficientnet_b0 (224 px)"
                     : ""));
  return scripted;
}

// With no {image_size}, a model that takes any size (every one but cnn, whose 28 px are its
// layers'; a TorchScript module is tried at it, its classes' count aside) trains at the data's own
// size when every sampled image is smaller than the model's default: an 8x upscale of 28 px images
// to 224 costs 64x the work and nobody asked for it. Said, and recorded in config.json's "data".
// Returns why the size is what it is.
std::string Session::size_from_data(Model* scripted) {
  const int largest = train_->largest_sampled_size(), default_size = info_.image_size;
  if (c_.model == "cnn" || largest <= 0 || largest >= default_size) return "its default image size";
  const int side = std::max(largest, kSmallestDataSize);
  if (scripted) {  // a module may take one size only: tried at this one first
    try {
      torch::NoGradGuard no_grad;
      scripted->eval();
      scripted->forward(torch::zeros({2, info_.channels, side, side}));
      scripted->train();
    } catch (const std::exception&) {
      scripted->train();
      return "its default image size: it does not take " + std::to_string(side) +
             " px images, the data's own size; {image_size} sets another";
    }
  }
  info_.image_size = side;
  const std::string said = "the images' own size: those sampled (up to 32) are at most " + std::to_string(largest) +
                           " px, less than its default " + std::to_string(default_size) + "; {image_size} sets another";
  data_decided_["image_size"] = said;
  return said;
}

// device_ and amp_ from {device} and {amp}; {gpu_memory}'s cap set.
void Session::choose_device() {
  // Several ranks on one machine: each takes the GPU of its LOCAL_RANK (cuda and auto alike).
  std::string device = c_.device.text();
  if (dist_env_ && c_.device.kind != DeviceKind::cpu && c_.device.index < 0 && torch::cuda::is_available())
    device = "cuda:" + std::to_string(dist_env_->local_rank);
  std::tie(device_, amp_) = resolve_device(device, c_.amp ? to_string(*c_.amp) : "auto");
  if (c_.gpu_memory)
    if (std::string line = limit_gpu_memory(device_, c_.gpu_memory.bytes); !line.empty()) note(line);
  note("device: " + configure_device(device_) + ", precision: " + to_string(amp_));
  // On the CPU `auto` stays fp32 (results comparable across machines); say when bf16 would pay.
  if (!device_.is_cuda() && amp_ == AmpMode::off && !c_.amp && cpu_has_native_bf16())
    note("this CPU computes bf16 in hardware (AMX/AVX512-BF16): {amp} bf16 trains faster (cnn: 1.4x on 2 cores)");
  if (!device_.is_cuda() && amp_ == AmpMode::bf16 && !cpu_has_native_bf16())
    warn("this CPU has no bf16 instructions, so {amp} bf16 is emulated and slower than {amp} off");
}

// The optimizer, the loss scaler and what every step is run with.
void Session::build_optimizer() {
  OptimizerOptions o;
  o.kind = c_.optimizer;
  o.lr = c_.lr;
  o.weight_decay = c_.weight_decay;
  opt_ = make_optimizer(*model_, o);
  LossScalerOptions so;
  so.enabled = amp_ == AmpMode::fp16;
  scaler_ = std::make_unique<LossScaler>(so, device_);

  step_options_.micro_batch = c_.batch_size;
  step_options_.label_smoothing = c_.label_smoothing;
  step_options_.clip_grad_norm = c_.clip_grad_norm;
  step_options_.amp = amp_;
  step_options_.device = device_;
  step_options_.channels_last = true;
  step_options_.mean = info_.mean;
  step_options_.std = info_.std;
}

// Physical memory of this machine (bytes); 0 when unknown.
std::uint64_t physical_memory() {
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
}

// An image size or batch that cannot fit is a budget error before anything is allocated (not a
// c10 "you tried to allocate" trace half-way). The estimate is a floor: a micro-batch of uint8
// images as the loader hands them over, as float on the device, and the first convolution's output
// with its gradient; what a real step needs is larger. Compared with the machine's RAM (and the
// GPU's memory as --gpu-memory gives it), a size over it cannot train at any speed.
void Session::check_memory() const {
  const std::int64_t side = info_.image_size, channels = info_.channels, batch = c_.batch_size;
  double per_pixel = static_cast<double>(channels) * (1 + 4);
  for (const auto& m : model_->modules(/*include_self=*/false))
    if (auto* conv = m->as<torch::nn::Conv2d>()) {
      const auto& o = conv->options;
      double stride = static_cast<double>((*o.stride())[0] * (*o.stride())[1]);
      per_pixel += 2.0 * 4.0 * static_cast<double>(o.out_channels()) / std::max(1.0, stride);
      break;
    }
  const double pixels = static_cast<double>(side) * static_cast<double>(side);
  const double need = per_pixel * pixels * static_cast<double>(batch);
  std::uint64_t have = physical_memory();
  std::string where = "the " + format_size(have) + " of RAM";
  if (device_.is_cuda() && c_.gpu_memory && c_.gpu_memory.bytes < have) {
    have = c_.gpu_memory.bytes;
    where = "the " + format_size(have) + " of GPU memory allowed";
  }
  // One image's elements must also be countable in an int (the loader's and decoder's buffers).
  const bool too_many_elements = pixels * static_cast<double>(channels) > 2147483647.0;
  if (have == 0 || (need <= static_cast<double>(have) && !too_many_elements)) return;
  const double h = static_cast<double>(have);
  auto fit_side = static_cast<std::int64_t>(std::sqrt(h / (per_pixel * static_cast<double>(batch))));
  fit_side = std::min<std::int64_t>(fit_side,
                                    static_cast<std::int64_t>(std::sqrt(2147483647.0 / static_cast<double>(channels))));
  auto fit_batch = static_cast<std::int64_t>(h / (per_pixel * pixels));
  std::string fix = "an image size of at most " + std::to_string(fit_side) + " at this batch size";
  if (fit_batch >= 1 && !too_many_elements)
    fix += ", or a batch size of at most " + std::to_string(fit_batch) + " at this image size";
  fail(ErrorKind::budget, c_.model + " at image size " + std::to_string(side) + ", batch " + std::to_string(batch),
       "memory for one training step (at least " + format_size(static_cast<std::uint64_t>(std::min(need, 1.8e19))) +
           ": the batch's images, as input, and the first layer's output and gradient)",
       "more than " + where, "use " + fix + "; nothing was changed");
}

// Small images are halved by each of the model's downsampling stages; one the model cannot take
// would otherwise fail inside its first forward as a c10 error. Larger sizes always fit.
// A user's module, before anything is written: what frugal cannot do to it is refused with the
// reason, and its output must be one logit per class of the data.
void Session::check_scripted_model() {
  if (c_.grad_checkpoint)
    fail(ErrorKind::usage, "{grad_checkpoint}", "a zoo model", "a TorchScript module (" + c_.model + ")",
         "train without {grad_checkpoint}: a module's code runs in TorchScript's interpreter, whose blocks frugal "
         "cannot recompute; lower {batch_size} with {accum} instead");
  if (c_.sync_bn)
    fail(ErrorKind::usage, "{sync_bn}", "a zoo model", "a TorchScript module (" + c_.model + ")",
         "train without {sync_bn}: the module's batch norm layers run as scripted");
  const std::int64_t side = info_.image_size, channels = info_.channels,
                     classes = static_cast<std::int64_t>(classes_.size());
  torch::Tensor out;
  try {
    torch::NoGradGuard no_grad;
    model_->eval();
    out = model_->forward(torch::zeros({2, channels, side, side}));
    model_->train();
  } catch (const c10::Error& e) {
    std::string what = e.what_without_backtrace();
    fail(ErrorKind::invalid, c_.model,
         "a module that takes a (batch, " + std::to_string(channels) + ", " + std::to_string(side) + ", " +
             std::to_string(side) + ") batch of images",
         "one that failed on it: " + what.substr(0, what.find('\n')),
         "make its first layer take " + std::to_string(channels) +
             " channels ({channels} 3 reads the images as RGB), "
             "or give the image size it takes with {image_size}");
  }
  if (out.dim() != 2 || out.size(0) != 2 || out.size(1) != classes)
    fail(ErrorKind::invalid, c_.model,
         "one logit per class of the data: output (batch, " + std::to_string(classes) + ")",
         "output " + c10::str(out.sizes()),
         "make the module with " + std::to_string(classes) + " outputs, e.g. timm.create_model(NAME, num_classes=" +
             std::to_string(classes) + ") or a last nn.Linear(..., " + std::to_string(classes) +
             "), then torch.jit.script and torch.jit.save it again");
}

void Session::check_fits_model() const {
  if (info_.image_size >= 64) return;
  torch::NoGradGuard no_grad;
  model_->eval();
  try {
    model_->forward(torch::zeros({1, info_.channels, info_.image_size, info_.image_size}));
  } catch (const c10::Error&) {
    model_->train();
    fail(ErrorKind::usage, "image size " + std::to_string(info_.image_size),
         "an image size the " + c_.model + " model can take", "one too small for its downsampling",
         "use a larger image size (the model's default is " +
             std::to_string(default_model_info(c_.model, info_.channels).image_size) + ")");
  }
  model_->train();
}

NamedTensors param_names(const OptimizerSetup& s) { return NamedTensors(s.params.begin(), s.params.end()); }

// A resume must learn what the run was learning: a damaged checkpoint is bad input (exit 3), a
// change of what is learned (options, model, module file) a usage error (exit 2) listing it.
void Session::check_resume_learns_the_same() {
  const Checkpoint& ck = resume_->ckpt;
  const nlohmann::json now = identity_.to_json();
  // A checkpoint whose batch size, accumulation or world size is no integer (or whose product
  // overflows) is damaged or crafted: bad input (exit 3), not a change of options the user made.
  if (ck.config.contains("batch_size") && !global_batch_of(ck.config)) {
    auto shown = [&](const char* k) {
      return ck.config.contains(k) ? ck.config[k].dump().substr(0, 40) : std::string("absent");
    };
    fail(ErrorKind::invalid, (run_dir_ / resume_->file.filename()).string(),
         "the checkpoint's effective batch (batch_size x accum x world_size) as integers whose product fits",
         "batch_size " + shown("batch_size") + ", accum " + shown("accum") + ", world_size " + shown("world_size"),
         "the checkpoint is damaged: remove it to resume from an older one, or add {fresh} to start this run over");
  }
  std::vector<std::string> changes = learning_changes(ck.config, now);
  new_tail_ = c_.extend && check_extension(ck, changes);
  if (!changes.empty()) {
    std::string list;
    for (auto& c : changes) list += (list.empty() ? "" : "; ") + c;
    fail(ErrorKind::usage, (run_dir_ / resume_->file.filename()).string(), "the options this run was started with",
         list, "run the original command to resume, or add {fresh} to start this run over with the new options");
  }
  // A crafted or damaged config may hold anything under "data": only a string is shown.
  if (ck.config.contains("data") && ck.config["data"] != now["data"])
    note("the training data is now read from " + c_.data + " (was " +
         (ck.config["data"].is_string() ? ck.config["data"].get<std::string>() : ck.config["data"].dump()) +
         "); same classes and image count, so the run resumes");
  if (ck.model.module_sha256 != info_.module_sha256)
    fail(ErrorKind::usage, (run_dir_ / resume_->file.filename()).string(),
         "the model this run was trained with (" +
             (ck.model.module_sha256.empty()
                  ? ck.model.name
                  : "TorchScript module sha256 " + ck.model.module_sha256.substr(0, 12) + "...") +
             ")",
         info_.module_sha256.empty() ? c_.model
                                     : "TorchScript module sha256 " + info_.module_sha256.substr(0, 12) + "...",
         "give the module file the run was trained with, or add {fresh} to start this run over with this one");
}

// --extend: a larger --epochs (and --lr, the new tail's peak) are what it may change; what else
// changed is left in `changes` to be refused as for any resume. The same command again, once the
// extension's first checkpoint is saved, resumes it (its epochs are the run's now): returns
// whether a new tail starts here.
bool Session::check_extension(const Checkpoint& ck, std::vector<std::string>& changes) const {
  const std::string where = (run_dir_ / resume_->file.filename()).string();
  const bool was_auto = ck.config.contains("epochs") && !ck.config["epochs"].is_number_integer();
  if (c_.epochs_auto() != was_auto)
    fail(ErrorKind::usage, where, was_auto ? "{extend} with a larger {time_budget}" : "{extend} with a larger {epochs}",
         was_auto ? "{epochs} given to a run planned by {time_budget}" : "{time_budget} given to a run of epochs",
         was_auto ? "keep {epochs} auto and give a larger {time_budget}" : "give a larger {epochs}");
  if (was_auto) return check_budget_extension(ck, changes);
  const std::int64_t had = ck.config.value("epochs", std::int64_t{0});
  if (c_.epochs == had && ck.schedule.contains("tail")) return false;  // an extension under way
  if (c_.epochs <= had)
    fail(ErrorKind::usage, where, "more epochs than the run's " + std::to_string(had) + " to {extend} it to",
         "{epochs} " + std::to_string(c_.epochs), "give a larger {epochs}, e.g. {epochs} " + std::to_string(had + 5));
  std::erase_if(changes, [](const std::string& c) { return c.starts_with("epochs: ") || c.starts_with("lr: "); });
  return true;
}

// --extend of a run planned by --time-budget: the budget (the whole run's, all sessions together)
// must be larger than the one its checkpoint was planned for; the same budget again, once the
// extension has saved, resumes it.
bool Session::check_budget_extension(const Checkpoint& ck, std::vector<std::string>& changes) const {
  const std::string where = (run_dir_ / resume_->file.filename()).string();
  const auto& plan = ck.schedule.contains("time_budget") ? ck.schedule["time_budget"] : nlohmann::json();
  if (!plan.is_object() || !plan.contains("budget_seconds") || !plan["budget_seconds"].is_number())
    fail(ErrorKind::invalid, where, "the time budget the run was planned for", "none in the checkpoint",
         "the checkpoint is damaged: remove it to resume from an older one");
  const double had = plan["budget_seconds"].get<double>();
  const double now = static_cast<double>(c_.time_budget.seconds.count());
  if (now == had && ck.schedule.contains("tail")) return false;  // an extension under way
  if (now <= had)
    fail(ErrorKind::usage, where,
         "a time budget larger than the run's " + format_duration(std::chrono::seconds(std::llround(had))) +
             " to {extend} it to (the whole run's, every session together)",
         "{time_budget} " + c_.time_budget.text,
         "give a larger {time_budget}, e.g. " + format_duration(std::chrono::seconds(std::llround(had * 1.5))));
  std::erase_if(changes, [](const std::string& c) { return c.starts_with("lr: "); });
  return true;
}

// Read-only: builds the checkpoint manager and disk budget, finds the checkpoint to resume from
// and refuses a resume that would change what is learned. begin_writing() makes the changes
// (temporaries removed, --fresh's discards).
void Session::prepare_resume() {
  CheckpointOptions co;
  co.retention.keep_best = c_.keep_best;
  co.retention.keep_last = c_.keep_last;
  co.delta = c_.delta;
  std::optional<DiskBudgetOptions> bo;
  if (c_.disk_budget) bo = budget_options(c_, run_dir_);
  run_->open(co, bo, c_.workspace);  // the budget: rank 0's, the one that writes
  if (watchdog_) watchdog_->set_resumable_probe([m = &run_->manager()] { return m->resumable_step(); });
  check_disk_budget();
  if (c_.extend && c_.fresh)
    fail(ErrorKind::usage, "{extend} with {fresh}", "one of them", "both",
         "{extend} goes on with the run's checkpoints; {fresh} discards them");
  if (c_.fresh) return;
  resume_ = run_->manager().load_latest();
  if (!resume_ && c_.extend)
    fail(ErrorKind::usage, run_dir_.string(), "a run to {extend}: a checkpoint in the run folder", "none",
         "leave out {extend} to start this run, or name the run folder of the run to go on with");
  if (!resume_) return;
  check_resume_learns_the_same();
  const Checkpoint& ck = resume_->ckpt;
  load_weights(*model_, ck.weight_map(), false);
  load_optimizer_state(*opt_.optimizer, param_names(opt_), ck);
  load_trainer_tensors(ck, *scaler_, device_);
  const RunState saved = RunState::from_checkpoint(ck, c_.batch_size);
  global_step_ = saved.step;
  start_epoch_ = saved.loader_epoch;
  start_position_ = saved.loader_position;
  step_options_.micro_batch = saved.micro_batch;
  saved_schedule_.file = (run_dir_ / resume_->file.filename()).string();
  saved_schedule_.time_budget = saved.time_budget;
  saved_schedule_.tail = ScheduleTail::from_json(saved.tail, saved_schedule_.file);
  if (new_tail_) {
    extend_from_ = saved;
    saved_peak_ = ck.config.contains("lr") && ck.config["lr"].is_number() ? ck.config["lr"].get<double>() : c_.lr;
  }
  last_val_accuracy_ = saved.val_accuracy;
  epochs_done_ = start_epoch_;
  // The checkpoint's last validation stays the run's until this session validates: the next
  // checkpoint carries it on, and the outcome reports it.
  if (ck.metrics.is_object()) last_metrics_ = ck.metrics;
  note("resuming from " + resume_->file.filename().string() + " (epoch " + std::to_string(start_epoch_ + 1) +
       ", step " + std::to_string(global_step_) + ")");
  resume_->ckpt = Checkpoint{};  // the tensors are in the model now
}

// Training really starts: from here on the run folder changes.
// (Rank 0 writes the run folder; the others only train.)
void Session::begin_writing() {
  if (run_->writing()) return;
  RunWriter::Start start;
  if (rank0()) start.config = run_config_json();
  start.fresh = c_.fresh;
  start.events = start.say_removed = true;
  run_->begin_writing(start);
}

Checkpoint Session::make_checkpoint(std::int64_t epochs_done, std::int64_t position, std::int64_t loader_epoch) const {
  Checkpoint ck;
  ck.kind = "full";
  ck.model = info_;
  ck.weights = to_named(state_dict(*model_));
  ck.state = optimizer_state(*opt_.optimizer, param_names(opt_));
  put_trainer_tensors(ck, *scaler_, device_);
  RunState s;
  s.step = global_step_;
  s.epochs_done = epochs_done;
  s.loader_epoch = loader_epoch;
  s.loader_position = position;
  s.lr = last_lr_;
  s.micro_batch = step_->micro_batch();
  s.accum = c_.accum * (c_.batch_size / std::max(1, step_->micro_batch()));
  horizon_->save_to(s);
  s.metrics = last_metrics_;
  s.val_accuracy = last_val_accuracy_;
  s.multi_label = info_.multi_label;
  s.to_checkpoint(ck);
  ck.config = identity_.to_json();
  return ck;
}

// Before training: a budget that cannot keep the run resumable is exit 4 now, rather than a run
// that saves nothing a rerun can continue from (or ends over its budget).
void Session::check_disk_budget() {
  std::uint64_t weight_bytes = 0, state_bytes = 0;
  for (const auto& [name, t] : state_dict(*model_)) weight_bytes += t.nbytes();
  for (const auto& [name, t] : optimizer_state(*opt_.optimizer, param_names(opt_))) state_bytes += t.nbytes();
  for (const auto& [name, t] : scaler_->state()) state_bytes += t.nbytes();
  state_bytes += cpu_rng_state().nbytes();
  run_->require_room_for_run(weight_bytes, state_bytes);
}

// Stopped resumable only when a rerun really continues: from this step when its checkpoint was
// saved, else from the last one saved; with none saved a rerun would start over, which is a
// budget failure.
SessionOutcome Session::stopped() {
  const std::optional<std::int64_t> mine = rank0() ? run_->manager().resumable_step() : std::nullopt;
  const std::int64_t saved = group_->from_rank0(mine.value_or(-1));  // rank 0 saved: every rank reports that
  const std::string at = "stopped (" + stop_reason_ + ") at step " + std::to_string(global_step_);
  if (saved == global_step_) {
    note(at + ", saved; " + (resume_hint_.empty() ? "run the same command again to continue" : resume_hint_));
    return outcome(SessionOutcome::Status::stopped_resumable, saved);
  }
  if (saved >= 0) {
    note(at + "; its checkpoint was not saved, so a rerun continues from step " + std::to_string(saved) +
         " (the last checkpoint saved) and redoes the steps after it; " +
         (run_->no_room().empty() ? std::string() : run_->room_hint() + ", then ") +
         "run the same command again to continue");
    return outcome(SessionOutcome::Status::stopped_resumable, saved);
  }
  fail(ErrorKind::budget, run_dir_.string(), "a resumable checkpoint saved before stopping",
       "none (" + at + ", no checkpoint fit)",
       "a rerun would start over at step 1; free space (frugal du, frugal clean) or raise {disk_budget}");
}

namespace {

// A validation's figures from a metrics record (metrics.jsonl's, a checkpoint's "metrics"), which a
// damaged or crafted file may hold anything in: nullopt unless its numbers are there.
std::optional<ValFigures> val_figures(const nlohmann::json& m) {
  auto number = [&](const char* key) { return m.is_object() && m.contains(key) && m[key].is_number(); };
  if (!number("val_accuracy") || !number("val_loss") || !number("epoch") || !number("step")) return std::nullopt;
  ValFigures v;
  v.accuracy = m["val_accuracy"].get<double>();
  v.loss = m["val_loss"].get<double>();
  v.epoch = m["epoch"].get<std::int64_t>();
  v.step = m["step"].get<std::int64_t>();
  if (number("val_mean_ap")) v.mean_ap = m["val_mean_ap"].get<double>();
  return v;
}

}  // namespace

// What the run reached, for train --json. best.safetensors is read back (its header only) for the
// best validation: it may come from an earlier session of the run.
SessionOutcome Session::outcome(SessionOutcome::Status status, std::int64_t resumable_step) const {
  SessionOutcome o;
  o.status = status;
  o.step = global_step_;
  o.resumable_step = resumable_step;
  if (status != SessionOutcome::Status::done) o.stop_reason = stop_reason_;
  o.epochs = epochs_done_;
  o.final_val = val_figures(last_metrics_);
  o.classes = classes_.size();
  o.train_images = train_ ? train_->size() : 0;
  o.val_images = val_ ? val_->size() : 0;
  // The skips found opening the data, and the images the loaders could not decode since.
  o.skipped = train_ ? train_->skipped().counts : skipped_;
  o.val_skipped = val_ && !data_decided_.contains("val_split") ? val_->skipped().counts : val_skipped_;
  o.data = data_decided_;
  const fs::path best = run_dir_ / kBestFile;
  std::error_code ec;
  if (rank0() && fs::is_regular_file(fs::symlink_status(best, ec))) {
    try {
      SafetensorsHeader h = read_safetensors_header(best, Links::refuse);
      o.best_checkpoint = best.string();
      if (h.metadata.count("metrics"))
        o.best_val = val_figures(nlohmann::json::parse(h.metadata["metrics"], nullptr, false));
    } catch (const Error& e) {
      warn(e.what());
    }
  }
  return o;
}

// Every rank calls this at the same step: the BatchNorm statistics are made equal first, then rank 0
// saves.
void Session::checkpoint(std::int64_t epochs_done, std::int64_t position, std::int64_t loader_epoch, bool wait) {
  average_buffers();
  group_->gather(*model_, opt_);  // a pipeline's stages into rank 0's copy
  if (rank0()) save(make_checkpoint(epochs_done, position, loader_epoch), wait);
}

// A background save costs the loop only its snapshot, but the save made when stopping is waited
// for: under a deadline the first save of a session is waited for too, so that the deadline
// plans with what a whole save takes (and later saves count as at least that).
void Session::save(const Checkpoint& ckpt, bool wait) {
  begin_writing();
  wait = wait || stop_->wants_whole_save();
  auto t0 = env_.steady_now();
  CheckpointWriter& writer = *run_->writer();
  run_->note_save(writer.wait());  // the previous save's result, which submit() would not tell
  writer.submit(ckpt);
  if (wait) {
    auto r = writer.wait();  // what a rerun resumes from is decided by stopped()
    if (!r.message.empty()) note(r.message);
    run_->note_save(r);
  }
  last_save_ = env_.steady_now();
  stop_->save_took(seconds_since(t0, last_save_), wait);
}

bool Session::should_stop(bool eval_due) {
  if (CheckpointWriter* w = run_->writer(); w && !w->busy()) run_->note_save(w->wait());  // a background save done
  if (!run_->no_room().empty()) {
    stop_reason_ = run_->no_room();
    return true;
  }
  if (auto why = stop_->before_step(eval_due)) {
    stop_reason_ = why->text;
    return true;
  }
  return false;
}

// Joins the ranks torchrun started (distributed.h); one process with --sync-bn normalises through
// the same code, its own batch being the whole batch.
void Session::join_group() {
  if (group_) return;  // a pipeline joined before placing the model
  PipelineOptions pipeline;
  if (c_.pipeline > 1) {
    if (!dist_env_)
      fail(ErrorKind::usage, "{pipeline} " + std::to_string(c_.pipeline),
           std::to_string(c_.pipeline) + " processes, one per stage", "one process",
           "add {nproc} " + std::to_string(c_.pipeline) + ", or start the command with torchrun --nproc-per-node " +
               std::to_string(c_.pipeline));
    pipeline.stages = c_.pipeline;
    pipeline.micro_batches = c_.micro_batches;
    pipeline.split = c_.pipeline_split;
    pipeline.balance = c_.pipeline_balance;
    pipeline.sample = {std::max(1, (c_.batch_size + c_.micro_batches - 1) / c_.micro_batches), info_.channels,
                       info_.image_size, info_.image_size};
    pipeline.amp = amp_;
  }
  group_ = Collective::join(
      dist_env_, device_, std::chrono::duration_cast<std::chrono::milliseconds>(c_.dist_timeout),
      [this] { return stop_->signalled(); }, pipeline);
  Collective* g = group_.get();
  if (c_.sync_bn)
    set_batch_norm_sync([g](torch::Tensor& t) {
      std::vector<torch::Tensor> one{t};
      g->sum(one);
    });
  if (!g->grouped()) return;
  note(g->describe() + ", a global batch of " + count(global_batch(), "image", "images") +
       (c_.pipeline > 1 ? ", batch norm per micro-batch"
        : c_.sync_bn    ? ", batch norm over all ranks"
                        : ", batch norm per rank (averaged before evaluating and saving)"));
  eval_options_.reduce = [g](std::vector<torch::Tensor>& counts) { g->combine_eval(counts); };
}

// BatchNorm running statistics differ between ranks that normalise by their own batches: before
// evaluating and saving they are averaged, so that every rank evaluates and rank 0 saves one model
// whose statistics come from all the data seen (an average of estimates over equal shares; a
// broadcast of rank 0's would throw the others' away). With --sync-bn they are equal already.
void Session::average_buffers() {
  if (!group_->grouped()) return;  // one process's statistics are the mean already
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> floating;
  for (auto& b : model_->buffers())
    if (b.is_floating_point()) floating.push_back(b);
  group_->average(floating);
}

// The first step's deadline check, decided together: a rank whose deadline cannot hold a step and
// a save says so, and every rank refuses (exit 4, nothing written yet) instead of the others
// waiting for it in vain (exit 1). Every rank takes part, with a deadline or not.
void Session::fits_one_step_together() {
  std::optional<Error> mine;
  try {
    stop_->check_fits_first_step();
  } catch (const Error& e) {
    mine = e;
  }
  const bool any = group_->any(mine.has_value());
  if (mine) throw *mine;
  if (any)
    fail(ErrorKind::budget, "deadline", "time for at least one step and a save on every process",
         "a process whose deadline is too close (its own message says how much it needs)",
         "give a later deadline, or a smaller batch or image size; nothing was changed");
}

// An epoch starts: the loader at its position, this epoch's figures from zero.
void Session::start_epoch(std::int64_t epoch, std::int64_t position) {
  stop_->restart_step_clock();  // this epoch's first step waits for the loader to start
  train_loader_->start(epoch, position);
  step_in_epoch_ = position == 0 ? 0 : global_step_ - epoch * steps_per_epoch_;
  epoch_loss_sum_ = 0;
  epoch_loss_samples_ = 0;
  step_seconds_ = 0;
  comm_at_epoch_start_ = group_->comm_seconds();
  gradient_at_epoch_start_ = group_->gradient_seconds();
}

// Whether the plan of a time budget ends before this step (mid-epoch too): then evaluate and save.
// With several ranks rank 0's plan decides, in the step's agreement.
bool Session::plan_ends_here() {
  horizon_->update(global_step_, false);
  return !group_->grouped() && horizon_->ended(global_step_);
}

// The next step's batches: `accum` of them, fewer at the epoch's end, none after it.
Session::NextStep Session::next_batches(std::int64_t position) {
  NextStep next;
  next.position = position;
  for (int i = 0; i < c_.accum; ++i) {
    auto b = train_loader_->next();
    if (!b) break;
    next.batches.emplace_back(b->images, b->labels);
    next.samples += b->images.size(0);
    next.position = b->position;
  }
  return next;
}

bool Session::cadence_due(std::int64_t step) {
  const auto& every = c_.save_every;
  const double since_save = seconds_since(last_save_, env_.steady_now());
  return horizon_->planned() && ((every.steps > 0 && step % every.steps == 0) ||
                                 (every.every.count() > 0 && since_save >= static_cast<double>(every.every.count())));
}

// What every process agrees on before the step: a stop asked for anywhere (signal, deadline), the
// step's samples over all, rank 0's plan (steps, learning rate). A group decides rank 0's save
// cadence here; one process after the step (save_due).
Collective::StepPlan Session::agree_on_step(const NextStep& next) {
  using Plan = Collective::StepPlan;
  const bool last_of_epoch = step_in_epoch_ + 1 >= steps_per_epoch_ || horizon_->last(global_step_);
  const bool stop = should_stop(last_of_epoch);
  last_lr_ = horizon_->lr(global_step_);
  agreed_from_ = env_.steady_now();
  Plan mine;
  mine.stop = !stop                                  ? Plan::Stop::none
              : stop_reason_.rfind("signal", 0) == 0 ? Plan::Stop::signal
                                                     : Plan::Stop::deadline;
  mine.samples = next.samples;
  mine.total_steps = horizon_->total_steps();
  mine.lr = last_lr_;
  mine.save_after = group_->grouped() && cadence_due(global_step_ + 1);
  const Plan plan = group_->agree_on_step(mine);
  horizon_->agree(plan.total_steps);
  if (plan.stop != Plan::Stop::none && !stop)  // one deadline for all
    stop_reason_ = plan.stop == Plan::Stop::signal ? "signal on another rank" : "deadline";
  last_lr_ = plan.lr;
  return plan;
}

StepResult Session::run_step(const NextStep& next, const Collective::StepPlan& plan) {
  set_lr(*opt_.optimizer, last_lr_);
  // Dropout on each rank draws from a generator seeded by (seed, rank, step): the checkpoint holds
  // rank 0's generator only, and ranks that drew for batches of other sizes would not resume as
  // they ran. So a resumed rank draws what it would have drawn, whatever the world size before.
  group_->seed_step(c_.seed, global_step_);
  StepResult r = step_->run(next.batches, plan.samples);
  const auto t1 = env_.steady_now();
  stop_->step_ended(t1);  // from the last step's end: the wait for its batches included
  step_seconds_ += seconds_since(agreed_from_, t1);
  // The first step of each session measures what one costs: a deadline that cannot hold it and
  // a save is refused now, before the run folder changes (exit 4, nothing was changed).
  if (session_steps_ == 0) fits_one_step_together();
  ++session_steps_;
  // A time budget too short for one epoch is refused at the first plan, a few steps in: until
  // then nothing is written either.
  if (horizon_->planned()) begin_writing();
  return r;
}

// The step's figures: counters, the epoch's mean loss, the log and TensorBoard.
void Session::account(std::int64_t epoch, const StepResult& r) {
  ++global_step_;
  ++step_in_epoch_;
  if (std::isfinite(r.loss)) {
    epoch_loss_sum_ += r.loss * static_cast<double>(r.samples);
    epoch_loss_samples_ += r.samples;
  }
  log_->step(global_step_, horizon_->total_steps(), epoch, r, last_lr_);
  if (global_step_ % 20 == 0 && rank0() && run_->may_write(64, "the TensorBoard events"))
    run_->event_scalar("train/loss", r.loss, global_step_);
}

bool Session::save_due(const Collective::StepPlan& plan) {
  return group_->grouped() ? plan.save_after : cadence_due(global_step_);
}

// Returns false when the run must stop (saved) before the epoch ends.
bool Session::train_epoch(std::int64_t epoch, std::int64_t& position) {
  start_epoch(epoch, position);
  for (;;) {
    if (plan_ends_here()) return true;
    const NextStep next = next_batches(position);
    if (next.batches.empty()) return true;  // every rank has as many batches (EpochPlan)
    const Collective::StepPlan plan = agree_on_step(next);
    if (horizon_->ended(global_step_)) return true;  // rank 0's plan ended here
    if (plan.stop != Collective::StepPlan::Stop::none) {
      checkpoint(epoch, position, epoch, true);
      return false;
    }
    const StepResult r = run_step(next, plan);
    position = next.position;
    account(epoch, r);
    if (save_due(plan)) checkpoint(epoch, position, epoch, false);
  }
}

// The epoch's evaluation, its seconds in `secs`; with nothing to validate on (--val-split 0) none:
// 0 samples, and the run's last validation accuracy stays unset, so best.safetensors is the newest.
EvalResult Session::evaluate_epoch(double& secs) {
  secs = 0;
  if (val_->size() == 0) return {};
  auto t0 = env_.steady_now();
  const Collective::Evaluation how = group_->for_evaluation(*model_, *val_loader_, eval_options_);
  EvalResult e = evaluate(how.model, how.batches, static_cast<int>(classes_.size()), step_options_, &eval_options_);
  secs = seconds_since(t0, env_.steady_now());
  stop_->eval_took(secs);
  last_val_accuracy_ = e.score();
  if (e.multi_label && c_.tune_thresholds) {  // saved with this epoch's checkpoint (ModelInfo)
    info_.thresholds.clear();
    for (double t : e.best_thresholds)
      info_.thresholds.push_back(std::isnan(t) ? info_.threshold : static_cast<float>(t));
  }
  return e;
}

// metrics.jsonl's multi-label figures: val_accuracy is the share of images with every tag right,
// per_class each class's figures as eval --json gives them (AP, precision, recall, F1, ...).
void Session::add_multi_label_figures(const EvalResult& e) {
  const nlohmann::json j = e.to_json(classes_);
  for (const char* key : {"mean_ap", "f1", "precision", "recall"}) last_metrics_[std::string("val_") + key] = j[key];
  last_metrics_["threshold"] = c_.threshold;
  if (!info_.thresholds.empty()) last_metrics_["thresholds"] = info_.thresholds;
}

namespace {

// `s` as one word for a POSIX shell: in single quotes, each ' written '\''.
std::string shell_word(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

}  // namespace

// The epoch's validation in the TensorBoard events, flushed.
void Session::write_epoch_events(const EvalResult& e) {
  if (e.samples > 0 && rank0() && run_->may_write(128, "the TensorBoard events")) {
    run_->event_scalar("val/loss", e.loss, global_step_);
    run_->event_scalar("val/accuracy", e.accuracy, global_step_);
    if (e.multi_label) {
      run_->event_scalar("val/mean_ap", e.mean_ap, global_step_);
      run_->event_scalar("val/f1", e.f1, global_step_);
    }
  }
  run_->flush_events();
}

// Undecodable validation images count against {max_bad_fraction} as training's do, over every
// rank's shard. Past it the epoch's training is kept: saved at the epoch's end, before its
// evaluation, so a rerun that leaves the files out (--exclude, named here) evaluates it again and
// goes on; nothing of the epoch is trained twice. Returns true when the run stopped so.
// Validation's undecodable images and images seen since its loader's start(), every rank's summed.
std::pair<std::int64_t, std::int64_t> Session::validation_bad_seen() {
  std::vector<torch::Tensor> counts{torch::tensor({static_cast<std::int64_t>(val_loader_->samples_bad()),
                                                   static_cast<std::int64_t>(val_loader_->samples_seen())},
                                                  torch::kInt64)
                                        .to(device_)};
  group_->sum(counts);
  const auto c = counts[0].cpu();
  return {c[0].item<std::int64_t>(), c[1].item<std::int64_t>()};
}

// The undecodable validation files (the first 5 named) and the --exclude words that leave them out
// (the first 20), for a message.
std::pair<std::string, std::string> Session::bad_validation_files() const {
  const std::vector<std::string> files = val_->bad_files();
  std::string names, excludes;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (i < 5) names += (i ? ", " : "") + files[i];
    if (i < 20) excludes += " {exclude} " + shell_word(files[i]);
  }
  if (files.size() > 5) names += ", ... (" + std::to_string(files.size()) + " in all)";
  if (files.size() > 20) excludes += " (and the rest)";
  return {names, excludes};
}

// --check-val auto: a validation set of at most kCheckValMax images is decoded once before the
// first step, so that a damaged file is refused before any training (exit 3, nothing written)
// rather than found by the first evaluation (exit 75 after the epoch's training is saved).
void Session::check_validation_up_front() {
  constexpr std::size_t kCheckValMax = 10000;
  if (!c_.check_val || val_->size() == 0 || val_->size() > kCheckValMax) return;
  const auto t0 = env_.steady_now();
  val_loader_->start(0, 0);
  while (val_loader_->next()) {}
  const auto [bad, seen] = validation_bad_seen();
  const double secs = std::chrono::duration<double>(env_.steady_now() - t0).count();
  char took[32];
  std::snprintf(took, sizeof took, "%.1f s", secs);
  note("checked the " + count(val_->size(), "validation image", "validation images") + " before training (" + took +
       ", {check_val} off leaves it to the first evaluation): " +
       (bad == 0 ? std::string("all decode") : std::to_string(bad) + " undecodable"));
  if (bad == 0 || static_cast<double>(bad) <= c_.max_bad_fraction * static_cast<double>(seen)) return;
  const auto [names, excludes] = bad_validation_files();
  fail(ErrorKind::invalid, c_.val.empty() ? c_.data + " (its validation images)" : c_.val,
       "validation images that decode (at most {max_bad_fraction} " + std::to_string(c_.max_bad_fraction) +
           " of them undecodable)",
       std::to_string(bad) + " of " + std::to_string(seen) + " undecodable: " + names,
       "nothing was trained: run the same command with" + excludes + " to leave them out (or replace them)");
}

bool Session::validation_too_bad(std::int64_t epoch, std::int64_t position) {
  const auto [bad, seen] = validation_bad_seen();
  if (bad == 0 || static_cast<double>(bad) <= c_.max_bad_fraction * static_cast<double>(seen)) return false;
  const auto [names, excludes] = bad_validation_files();
  warn(std::to_string(bad) + " of " + std::to_string(seen) + " validation images are undecodable, more than " +
       "{max_bad_fraction} " + std::to_string(c_.max_bad_fraction) + " allows: " + names);
  stop_reason_ = "undecodable validation images";
  resume_hint_ = "run the same command with" + excludes +
                 " to leave them out (or replace them), and it evaluates epoch " + std::to_string(epoch + 1) +
                 " again and continues";
  checkpoint(epoch, position, epoch, true);
  return true;
}

bool Session::end_of_epoch(std::int64_t epoch, std::int64_t position) {
  // An epoch shorter than the steps timed for the first plan is planned here, before writing.
  if (!horizon_->planned()) {
    horizon_->update(global_step_, true);
    begin_writing();
  }
  const double step_comm = group_->comm_seconds() - comm_at_epoch_start_;  // the steps' collectives
  average_buffers();  // every rank evaluates the same model, on its shard of the validation set
  double secs = 0;
  const EvalResult e = evaluate_epoch(secs);
  if (validation_too_bad(epoch, position)) return false;
  const bool validating = e.samples > 0;  // --val-split 0: no validation figures (best: the newest)
  epochs_done_ = epoch + 1;
  nlohmann::json per = e.to_json(classes_)["per_class"];
  // train_loss: the mean over the epoch's samples (those trained in this session when it resumed
  // mid-epoch), not the last step's, which varies with its batch.
  const double train_loss = epoch_loss_samples_ > 0 ? epoch_loss_sum_ / static_cast<double>(epoch_loss_samples_) : NAN;
  last_metrics_ = {{"epoch", epoch + 1},
                   {"step", global_step_},
                   {"train_loss", train_loss},
                   {"val_loss", e.loss},
                   {"val_accuracy", e.accuracy},
                   {"val_samples", e.samples},
                   {"per_class", per},
                   {"lr", last_lr_},
                   {"micro_batch", step_->micro_batch()},
                   {"images_per_s", log_->images_per_second()},
                   {"eval_seconds", secs}};
  if (validating && e.multi_label) add_multi_label_figures(e);
  if (!validating)
    for (const char* key : {"val_loss", "val_accuracy", "val_samples", "per_class"}) last_metrics_.erase(key);
  if (group_->grouped()) {
    // The share of the epoch's steps spent in collectives (waiting for the slowest rank included).
    last_metrics_["world_size"] = world();
    last_metrics_["step_seconds"] = step_seconds_;
    last_metrics_["comm_seconds"] = step_comm;
    last_metrics_["gradient_comm_seconds"] = group_->gradient_seconds() - gradient_at_epoch_start_;
  }
  if (nlohmann::json figures = group_->epoch_figures(); !figures.is_null()) last_metrics_["pipeline"] = figures;
  log_->epoch(epoch, horizon_->epochs_to_show(epoch, global_step_), e);
  run_->append_metrics(last_metrics_.dump() + "\n");
  write_epoch_events(e);
  checkpoint(epoch + 1, 0, epoch + 1, false);
  if (horizon_->update(global_step_, true))
    horizon_->agree(group_->from_rank0(horizon_->total_steps()));  // the loop's end is rank 0's plan
  return true;
}

// Where the run ends (Horizon): after --epochs, or (epochs auto) where the steps planned to fit the
// time budget end (budget/time_budget.h; a resumed run continues the plan its checkpoint holds);
// with --extend, on a new learning-rate tail over the steps planned for the new epochs or budget.
void Session::start_horizon() {
  Horizon::Options ho;
  ho.steps_per_epoch = steps_per_epoch_;
  ho.epochs = c_.epochs;
  ho.lr = c_.lr;
  ho.warmup_fraction = c_.warmup_fraction;
  ho.images_per_step = global_batch();
  auto tell = [this](const std::string& line, const nlohmann::json& record) {
    if (!line.empty()) note(line);
    if (!record.is_null()) run_->append_metrics_when_writing(record.dump() + "\n");
  };
  horizon_.emplace(
      ho, saved_schedule_, [this] { return session_seconds(); }, tell);
  if (c_.epochs_auto()) {
    TimeBudget::Options o;
    o.budget = static_cast<double>(c_.time_budget.seconds.count());
    o.steps_per_epoch = steps_per_epoch_;
    // An evaluation is a forward pass over the validation images: about a third of a step's work
    // per image, until one is timed.
    o.eval_in_steps = static_cast<double>(val_->size()) / static_cast<double>(global_batch()) / 3.0;
    horizon_->follow_budget(stop_->plan_for(o), {o.budget, c_.time_budget.text}, global_step_, new_tail_);
  }
  if (extend_from_) horizon_->start_tail(global_step_, extend_from_->lr, saved_peak_, c_.lr);
}

// config.json: the run's identity, and what this session resolved.
nlohmann::json Session::run_config_json() const {
  nlohmann::json j = identity_.to_json();
  j["model_info"] = {{"name", info_.name},
                     {"image_size", info_.image_size},
                     {"channels", info_.channels},
                     {"mean", info_.mean},
                     {"std", info_.std}};
  j["resolved"] = {{"device", device_.str()}, {"amp", to_string(amp_)}, {"micro_batch", step_options_.micro_batch}};
  j["data"] = data_decided_;
  return run_config(std::move(j));
}

SessionOutcome Session::execute() {
  try {
    return train();
  } catch (...) {
    // Refused before training started: leave no folder behind that this run made.
    if (run_) run_->abandon();
    throw;
  }
}

SessionOutcome Session::train() {
  validate(c_);  // the rules between options, as the command line applies them
  stop_.emplace(env_, c_.deadline);
  start_watchdog();
  dist_env_ = dist_env();
  // The run folder is made, locked and refused when frugal did not make it (run_folder.h's
  // claim_run_folder); only rank 0 writes the run folder, so only rank 0 locks it.
  run_ = std::make_unique<RunWriter>(run_dir_, !dist_env_ || dist_env_->rank == 0, env_);
  stop_->check_time_left();
  if (c_.deterministic) at::globalContext().setDeterministicAlgorithms(true, false);
  if (dist_env_ && dist_env_->rank != 0) Progress::set_quiet(true);  // rank 0 speaks for the run
  open_data();
  build_model();
  choose_decode();
  join_group();
  identity_ = {c_, classes_, static_cast<std::int64_t>(train_->size()), replicas()};
  prepare_resume();
  start_together();
  stop_->check_time_left();
  make_loaders();
  start_horizon();
  if (horizon_->work_left(global_step_, start_epoch_))
    run_->require_free_space();  // a run with nothing left to train saves nothing
  if (group_->grouped() && c_.sync_bn) step_options_.equal_forwards = c_.batch_size;
  step_ = group_->make_step(*model_, *opt_.optimizer, *scaler_, step_options_);
  log_ = std::make_unique<TrainLog>(c_.json, env_);
  say_plan();
  check_validation_up_front();

  for (std::int64_t epoch = start_epoch_; horizon_->more(global_step_, epoch); ++epoch) {
    std::int64_t position = epoch == start_epoch_ ? start_position_ : 0;
    if (!train_epoch(epoch, position)) return stopped();
    if (!end_of_epoch(epoch, position)) return stopped();
  }
  return finish();
}

// The deadline and signals held against a step that never returns (a module's forward can loop
// forever): on the real clock only (a fake one's deadline means nothing to the watchdog's).
void Session::start_watchdog() {
  if (&env_ != &Env::real()) return;
  std::optional<Watchdog::Clock::time_point> end;
  if (const auto& d = stop_->deadline())
    end = Watchdog::Clock::now() +
          std::chrono::duration_cast<Watchdog::Clock::duration>(std::chrono::duration<double>(d->remaining_seconds()));
  watchdog_.emplace(end, c_.stop_grace, &stop_->signals());
}

// With several ranks, one start for all: rank 0's parameters and buffers, and every rank resumed
// the same step.
void Session::start_together() {
  if (!group_->grouped()) return;
  std::vector<torch::Tensor> state;
  for (auto& p : model_->parameters()) state.push_back(p.data());
  for (auto& b : model_->buffers()) state.push_back(b);
  group_->broadcast_from_rank0(state);
  if (std::int64_t step0 = group_->from_rank0(global_step_); step0 != global_step_)
    fail(ErrorKind::invalid, run_dir_.string(), "the same run folder on every rank",
         "rank " + std::to_string(group_->rank()) + " resumed at step " + std::to_string(global_step_) +
             ", rank 0 at step " + std::to_string(step0),
         "give every rank the same run folder (on several machines: a shared file system)");
}

// The training loader (CPU, or GPU with --decode gpu; each rank its slice of every global batch)
// and the validation loader, and the steps they make. A pipeline stage after the first reads
// labels only (LabelLoader) for both: its input comes from the stage before.
void Session::make_loaders() {
  LoaderOptions lo;
  lo.image_size = info_.image_size;
  lo.batch_size = c_.batch_size;
  lo.workers = c_.workers;
  lo.seed = c_.seed;
  lo.augment = c_.augment;
  lo.pin_memory = device_.is_cuda();
  if (replicas() > 1) lo.shard = {group_->replica(), replicas()};
  if (!group_->reads_images()) {
    train_loader_ = std::make_unique<LabelLoader>(train_, lo);
  } else if (c_.decode == DecodeChoice::gpu) {
    GpuOutputOptions go;  // uint8 levels, normalised by TrainStep as the CPU batches are
    go.device = device_.has_index() ? device_.index() : 0;
    train_loader_ = std::make_unique<GpuLoader>(train_, lo, go);
  } else {
    train_loader_ = std::make_unique<Loader>(train_, lo);
  }
  lo.train = false;
  lo.shuffle = false;
  lo.batch_size = std::max(c_.batch_size, 256);
  lo.count_bad_only = true;  // end_of_epoch holds validation's undecodable images to the limit, every rank together
  if (group_->reads_images())
    val_loader_ = std::make_unique<Loader>(val_, lo);
  else
    val_loader_ = std::make_unique<LabelLoader>(val_, lo);
  std::int64_t batches = train_loader_->batches_per_epoch();
  steps_per_epoch_ = (batches + c_.accum - 1) / c_.accum;
}

void Session::say_plan() const {
  note("training " + c_.model + " on " + count(train_->size(), "image", "images") + " (" +
       count(classes_.size(), "class", "classes") + "), validating on " + std::to_string(val_->size()) + "; " +
       horizon_->steps_said() + " of " + count(global_batch(), "image", "images") +
       (replicas() > 1
            ? " (" + std::to_string(replicas()) + " ranks x " + std::to_string(c_.batch_size * c_.accum) + ")"
            : ""));
}

// After the last epoch: the final save waited for. The final weights must be somewhere: in the
// last checkpoint, or (weights_only) in best. When they are not, the run stops resumable from the
// last checkpoint saved (exit 75), or is a budget failure when none was.
SessionOutcome Session::finish() {
  begin_writing();  // a resumed run that had nothing left to train still records its config
  bool saved = true;
  if (rank0()) {
    auto r = run_->writer()->wait();
    if (!r.message.empty()) note(r.message);
    saved = r.status != SaveResult::Status::skipped_no_room && r.status != SaveResult::Status::disk_full;
    if (!saved) run_->note_save(r);
  }
  saved = group_->from_rank0(saved ? 1 : 0) != 0;  // every rank ends as rank 0's save did
  if (!saved) {
    stop_reason_ = rank0() ? run_->no_room() : "no room on rank 0";
    return stopped();
  }
  log_->done();
  return outcome(SessionOutcome::Status::done, global_step_);
}

}  // namespace

std::map<std::string, torch::Tensor> load_checkpoint_or_weights(const std::string& given) {
  // A run folder, as eval, predict and export take one: its best checkpoint. (A Hugging Face
  // model folder, which holds no best.safetensors, is read as such below.)
  std::string path = given;
  std::error_code ec;
  if (fs::is_directory(given, ec) && !fs::is_symlink(fs::path(given) / kBestFile, ec) &&
      fs::is_regular_file(fs::path(given) / kBestFile, ec)) {
    path = (fs::path(given) / kBestFile).string();
    note("{init} " + given + ": a run folder: its " + kBestFile);
  }
  WeightsFile w = load_weights_file(path);
  if (!w.described.empty()) note(path + ": " + w.described);
  return std::move(w.tensors);
}

SessionOutcome train_session(const TrainConfig& config, Env& env) { return Session(config, env).execute(); }

}  // namespace frugal

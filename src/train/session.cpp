// The run behind `frugal train`: data, model, resume, the epoch loop, evaluation, checkpoints,
// metrics, and stopping resumable on a deadline or signal.
#include <sys/stat.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <optional>

#include "frugal/budget.h"
#include "frugal/checkpoint.h"
#include "frugal/data.h"
#include "frugal/error.h"
#include "frugal/fs.h"
#include "frugal/gpu_loader.h"
#include "frugal/image.h"
#include "frugal/progress.h"
#include "frugal/run_folder.h"
#include "frugal/train.h"
#include "frugal/units.h"
#include "train/device.h"
#include "train/distributed.h"
#include "train/events.h"
#include "train/global_batch.h"
#include "train/schedule.h"
#include "train/train_log.h"

namespace frugal {
namespace fs = std::filesystem;

namespace {

using Batches = std::vector<std::pair<torch::Tensor, torch::Tensor>>;

double seconds_since(Env::SteadyTime t0, Env::SteadyTime t1) { return std::chrono::duration<double>(t1 - t0).count(); }

std::string count(std::int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// Everything one run holds; the loop below reads as the algorithm.
//
// The run folder is the session's alone and frugal's (claim_run_folder(), before anything in it is
// read): locked, and refused when it holds files frugal did not write.
// Nothing is written until training really starts (begin_writing(), after the first step of the
// session passed the deadline's check): options, data, model, memory, disk budget and free space,
// resume state and the first step are all checked first, so a run refused for any of them leaves
// the run folder as it was ("nothing was changed"), and a folder this run had to create is removed
// again.
class Session {
 public:
  Session(const TrainConfig& c, Env& env) : c_(c), env_(env), run_dir_(c.run), last_save_(env.steady_now()), session_start_(last_save_) {}
  ~Session() {
    if (c_.sync_bn) set_batch_norm_sync(nullptr);
  }
  SessionOutcome execute();

 private:
  SessionOutcome train();
  void claim_run_folder();
  void open_data();
  void build_model();
  void check_memory() const;
  void check_fits_model() const;
  void prepare_resume();
  void begin_writing();
  bool train_epoch(std::int64_t epoch, std::int64_t position);
  void end_of_epoch(std::int64_t epoch);
  Checkpoint make_checkpoint(std::int64_t epochs_done, std::int64_t position, std::int64_t loader_epoch) const;
  void checkpoint(std::int64_t epochs_done, std::int64_t position, std::int64_t loader_epoch, bool wait);
  void save(const Checkpoint& ckpt, bool wait);
  void join_group();
  void average_buffers();
  struct StepShare {  // what every rank agrees on before a step
    bool stop = false;
    std::int64_t samples = 0, total_steps = 0;
    double lr = 0;
    bool save_after = false;
  };
  StepShare share_step(bool stop, std::int64_t samples, double lr, bool save_after);
  std::int64_t from_rank0(std::int64_t value);
  void fits_one_step_together();
  bool rank0() const { return !dist_ || dist_->rank() == 0; }
  int world() const { return dist_ ? dist_->world() : 1; }
  std::int64_t global_batch() const { return static_cast<std::int64_t>(c_.batch_size) * c_.accum * world(); }
  void check_disk_budget();
  void check_free_space();
  void note_save(const SaveResult& r);
  std::string room_hint() const;
  bool may_write(std::uint64_t bytes, const char* what);
  void append_metrics(const std::string& line);
  void log_scalar(const char* tag, double value);
  void log_write_failed(const char* what, const Error& e);
  SessionOutcome stopped();
  bool should_stop(bool eval_due);
  void start_time_budget();
  void update_plan(bool after_eval);
  double session_seconds() const { return seconds_since(session_start_, env_.steady_now()); }
  void write_config();

  TrainConfig c_;  // a copy: --decode auto is resolved in it
  Env& env_;
  fs::path run_dir_;
  std::vector<fs::path> created_;   // folders this session made for the run, deepest first
  std::optional<FileLock> lock_;    // on the run folder, held for the session's life (rank 0)
  std::shared_ptr<Dataset> train_, val_;
  std::vector<std::string> classes_;
  ModelInfo info_;
  torch::Device device_{torch::kCPU};
  AmpMode amp_ = AmpMode::off;
  std::shared_ptr<Model> model_;
  OptimizerSetup opt_;
  std::unique_ptr<LossScaler> scaler_;
  std::unique_ptr<TrainStep> step_;
  StepOptions step_options_;
  EvalOptions eval_options_;  // the evaluation chunk that fits, kept across epochs
  std::unique_ptr<BatchSource> train_loader_;  // the CPU Loader, or the GpuLoader with --decode gpu
  std::unique_ptr<Loader> val_loader_;
  std::unique_ptr<CheckpointManager> manager_;
  std::unique_ptr<CheckpointWriter> writer_;
  std::unique_ptr<DiskBudget> budget_;
  std::optional<Deadline> deadline_;
  SignalGuard signals_;
  std::unique_ptr<EventWriter> events_;
  std::unique_ptr<TrainLog> log_;
  std::optional<DistEnv> dist_env_;        // launched by torchrun as one of several ranks
  std::unique_ptr<ProcessGroup> dist_;     // joined once the device is known
  Env::SteadyTime last_save_;
  Env::SteadyTime session_start_;  // this session's time counts against a time budget
  std::optional<TimeBudget> time_budget_;
  std::optional<Env::SteadyTime> step_end_;  // the last step's end, for the time budget's step cost
  std::int64_t noted_total_ = 0;  // the planned steps the log last told
  nlohmann::json saved_plan_;  // the resumed checkpoint's time budget (null: none)
  fs::path resume_file_;       // the checkpoint resumed from (its file name)
  std::vector<std::string> pending_records_;  // plan records made before the run folder may change
  std::optional<CheckpointManager::Resume> resume_;  // what prepare_resume() found, applied at once
  std::uint64_t weight_bytes_ = 0, state_bytes_ = 0;  // what a checkpoint holds, as measured before training
  std::string no_room_;  // why a save found no room ("disk full", ...): the session stops resumable

  std::int64_t start_epoch_ = 0, start_position_ = 0, global_step_ = 0, steps_per_epoch_ = 0, total_steps_ = 0;
  std::int64_t session_steps_ = 0;
  double last_lr_ = 0;
  double whole_save_seconds_ = -1;  // the longest waited-for save of this session; -1: none yet
  double epoch_loss_sum_ = 0;  // over this session's steps of the current epoch (finite losses)
  double step_seconds_ = 0, comm_at_epoch_start_ = 0, gradient_at_epoch_start_ = 0;  // this epoch's steps (with their agreement) and collectives
  std::int64_t epoch_loss_samples_ = 0;
  nlohmann::json last_metrics_ = nlohmann::json::object();
  std::optional<double> last_val_accuracy_;
  std::string stop_reason_;
  bool writing_ = false, log_room_warned_ = false, log_failure_warned_ = false;
};

// Room kept for what the trainer writes besides checkpoints (config.json, metrics.jsonl, events).
constexpr std::uint64_t kLogReserve = 1ull << 20;

void Session::open_data() {
  DatasetOptions d;
  d.label_pattern = c_.label_pattern;
  d.max_pixels = static_cast<std::uint64_t>(c_.max_pixels);
  d.max_bad_fraction = c_.max_bad_fraction;
  d.channels = c_.channels;
  d.name_encoding = c_.name_encoding;
  auto all = Dataset::open(c_.data, d);
  classes_ = all->classes();
  // One class trains to loss 0 and "100%" without learning anything.
  if (classes_.size() < 2)
    fail(ErrorKind::invalid, c_.data, "images of at least 2 classes to train a classifier",
         classes_.empty() ? std::string("no class") : "only class \"" + classes_[0] + "\"",
         "add images of other classes (one folder per class, labels.csv or a label pattern)");
  if (!c_.val.empty()) {
    d.channels = all->channels();
    train_ = all;
    val_ = Dataset::open(c_.val, d);
    if (val_->classes() != classes_)
      fail(ErrorKind::invalid, c_.val, "the same classes as " + c_.data, count(val_->classes().size(), "class", "classes") +
           ", not all matching", "give a validation archive with the same class names");
  } else {
    double f = c_.val_split > 0 ? c_.val_split : 0.05;
    std::tie(train_, val_) = all->split_val(f);
    if (c_.val_split <= 0) note("validating on a stable 5% of the training data ({val} or {val_split} to choose)");
  }
  if (train_->size() == 0) fail(ErrorKind::invalid, c_.data, "training images", "none", "check {data}");
  // --decode: an impossible `gpu` is a usage error naming what is missing; `auto` takes the GPU
  // only when this build, machine and data can.
  if (c_.decode == DecodeChoice::automatic) {
    if (c_.device.kind == DeviceKind::cpu) {
      note("decode: cpu ({device} cpu)");
      c_.decode = DecodeChoice::cpu;
    } else {
      DecodeSelection sel = select_decode("auto", *train_);
      note("decode: " + sel.reason);
      c_.decode = sel.gpu ? DecodeChoice::gpu : DecodeChoice::cpu;
    }
  } else if (c_.decode == DecodeChoice::gpu) {
    if (c_.device.kind == DeviceKind::cpu)
      fail(ErrorKind::usage, "decode gpu", "a CUDA device to train on", "device cpu",
           "train on cuda (or auto), or decode on the cpu");
    note("decode: " + select_decode("gpu", *train_).reason);
  }
}

void Session::build_model() {
  info_ = default_model_info(c_.model, train_->channels());
  info_.classes = classes_;
  if (c_.image_size > 0) info_.image_size = c_.image_size;

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
    note("warning: this CPU has no bf16 instructions, so {amp} bf16 is emulated and slower than {amp} off");

  torch::manual_seed(c_.seed);
  model_ = make_model(c_.model, static_cast<int>(classes_.size()), info_.channels);
  check_memory();
  check_fits_model();
  if (!c_.init.empty()) {
    auto msg = load_weights(*model_, load_checkpoint_or_weights(c_.init), /*allow_head_mismatch=*/true);
    note("initialized from " + c_.init + (msg.empty() ? "" : ": " + msg));
  }
  if (!c_.freeze.empty()) note("froze " + count(freeze(*model_, c_.freeze), "tensor", "tensors"));
  model_->to(device_);
  // Channels-last on every device: on CUDA for cuDNN's tensor-core kernels, on the CPU because
  // oneDNN's convolutions run 1.1-1.6x faster that way (cnn, resnet18, efficientnet_b0 measured).
  to_channels_last(*model_);
  model_->set_grad_checkpoint(c_.grad_checkpoint);
  model_->train();

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
  fit_side = std::min<std::int64_t>(fit_side, static_cast<std::int64_t>(std::sqrt(2147483647.0 / static_cast<double>(channels))));
  auto fit_batch = static_cast<std::int64_t>(h / (per_pixel * pixels));
  std::string fix = "an image size of at most " + std::to_string(fit_side) + " at this batch size";
  if (fit_batch >= 1 && !too_many_elements) fix += ", or a batch size of at most " + std::to_string(fit_batch) + " at this image size";
  fail(ErrorKind::budget, c_.model + " at image size " + std::to_string(side) + ", batch " + std::to_string(batch),
       "memory for one training step (at least " + format_size(static_cast<std::uint64_t>(std::min(need, 1.8e19))) +
           ": the batch's images, as input, and the first layer's output and gradient)",
       "more than " + where, "use " + fix + "; nothing was changed");
}

// Small images are halved by each of the model's downsampling stages; one the model cannot take
// would otherwise fail inside its first forward as a c10 error. Larger sizes always fit.
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

// Read-only: builds the checkpoint manager and disk budget, finds the checkpoint to resume from
// and refuses a resume that would change what is learned. begin_writing() makes the changes
// (temporaries removed, --fresh's discards).
void Session::prepare_resume() {
  CheckpointOptions co;
  co.retention.keep_best = c_.keep_best;
  co.retention.keep_last = c_.keep_last;
  co.delta = c_.delta;
  manager_ = std::make_unique<CheckpointManager>(run_dir_, co, env_);
  if (c_.disk_budget && rank0()) {  // only rank 0 writes
    DiskBudgetOptions bo;
    bo.limit = c_.disk_budget.bytes;
    bo.own_folder = run_dir_;
    fs::path ws = c_.workspace.empty() ? fs::absolute(run_dir_).parent_path() : fs::path(c_.workspace);
    budget_ = std::make_unique<DiskBudget>(ws, bo, env_);
    budget_->set_evictable([m = manager_.get()] { return m->evictable(); });
    manager_->set_disk_budget(budget_.get());
  }
  check_disk_budget();
  if (c_.fresh) return;
  resume_ = manager_->load_latest();
  if (!resume_) return;
  const Checkpoint& ck = resume_->ckpt;
  nlohmann::json now = c_.to_json();
  now["classes"] = classes_;
  now["train_images"] = train_->size();
  now["world_size"] = world();
  // A checkpoint whose batch size, accumulation or world size is no integer (or whose product
  // overflows) is damaged or crafted: bad input (exit 3), not a change of options the user made.
  if (ck.config.contains("batch_size") && !global_batch_of(ck.config)) {
    auto shown = [&](const char* k) { return ck.config.contains(k) ? ck.config[k].dump().substr(0, 40) : std::string("absent"); };
    fail(ErrorKind::invalid, (run_dir_ / resume_->file.filename()).string(),
         "the checkpoint's effective batch (batch_size x accum x world_size) as integers whose product fits",
         "batch_size " + shown("batch_size") + ", accum " + shown("accum") + ", world_size " + shown("world_size"),
         "the checkpoint is damaged: remove it to resume from an older one, or add {fresh} to start this run over");
  }
  if (auto changes = learning_changes(ck.config, now); !changes.empty()) {
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
  load_weights(*model_, ck.weight_map(), false);
  load_optimizer_state(*opt_.optimizer, param_names(opt_), ck);
  std::map<std::string, torch::Tensor> scaler_state;
  for (const char* k : {"loss_scaler.scale", "loss_scaler.growth_tracker"})
    if (auto* t = ck.find_state(k)) scaler_state[k] = *t;
  scaler_->load_state(scaler_state);
  if (auto* rng = ck.find_state("rng.cpu")) set_cpu_rng_state(*rng);
  // Dropout and stochastic depth on the GPU draw from its generator: without it resuming is exact
  // only on the CPU.
  if (auto* rng = ck.find_state("rng.cuda"); rng && device_.is_cuda()) set_device_rng_state(device_, *rng);
  global_step_ = ck.step;
  start_epoch_ = ck.loader.value("epoch", ck.epoch);
  start_position_ = ck.loader.value("position", std::int64_t{0});
  step_options_.micro_batch = ck.schedule.value("micro_batch", c_.batch_size);
  if (ck.schedule.contains("time_budget")) saved_plan_ = ck.schedule["time_budget"];
  resume_file_ = resume_->file.filename();
  if (ck.metric_value) last_val_accuracy_ = ck.metric_value;
  note("resuming from " + resume_->file.filename().string() + " (epoch " + std::to_string(start_epoch_ + 1) +
       ", step " + std::to_string(global_step_) + ")");
  resume_->ckpt = Checkpoint{};  // the tensors are in the model now
}

// Training really starts: from here on the run folder changes.
void Session::begin_writing() {
  if (writing_) return;
  writing_ = true;
  if (!rank0()) return;  // rank 0 writes the run folder; the others only train
  if (int n = manager_->remove_temporaries()) note("removed " + count(n, "leftover temporary file", "leftover temporary files"));
  if (c_.fresh) {
    // The old run's checkpoints carry higher step numbers and would rank newest, and its metrics
    // and events would read as this run's: drop them.
    manager_->discard_previous();
    env_.remove_file(run_dir_ / kMetricsFile);
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(run_dir_, ec))
      if (const auto name = e.path().filename().string();
          name.rfind("events.out.tfevents.", 0) == 0 && name.ends_with(".frugal"))  // never another writer's
        env_.remove_file(e.path());
  }
  if (budget_) budget_->start_watcher();
  write_config();
  writer_ = std::make_unique<CheckpointWriter>(*manager_);
  try {
    events_ = std::make_unique<EventWriter>(run_dir_, env_);
  } catch (const Error& e) {
    log_write_failed("the TensorBoard events", e);
  }
  for (const auto& line : pending_records_) append_metrics(line);
  pending_records_.clear();
}

Checkpoint Session::make_checkpoint(std::int64_t epochs_done, std::int64_t position, std::int64_t loader_epoch) const {
  Checkpoint ck;
  ck.kind = "full";
  ck.model = info_;
  ck.weights = to_named(state_dict(*model_));
  ck.state = optimizer_state(*opt_.optimizer, param_names(opt_));
  for (auto& [k, v] : scaler_->state()) ck.state.emplace_back(k, v);
  ck.state.emplace_back("rng.cpu", cpu_rng_state());
  if (auto rng = device_rng_state(device_); rng.defined()) ck.state.emplace_back("rng.cuda", rng);
  ck.epoch = epochs_done;
  ck.step = global_step_;
  ck.loader = {{"epoch", loader_epoch}, {"position", position}};
  ck.schedule = {{"lr", last_lr_}, {"total_steps", total_steps_}, {"micro_batch", step_->micro_batch()},
                 {"accum", c_.accum * (c_.batch_size / std::max(1, step_->micro_batch()))}};
  if (time_budget_) ck.schedule["time_budget"] = time_budget_->to_json(session_seconds());
  ck.metrics = last_metrics_;
  ck.config = c_.to_json();
  ck.config["classes"] = classes_;
  ck.config["train_images"] = train_->size();
  ck.config["world_size"] = world();  // the global batch is batch_size x accum x world_size
  if (last_val_accuracy_) {
    ck.metric_value = last_val_accuracy_;
    ck.metric_name = "val_accuracy";
  }
  return ck;
}

// Before training: a budget that cannot keep the run resumable is exit 4 now, rather than a run
// that saves nothing a rerun can continue from (or ends over its budget).
void Session::check_disk_budget() {
  weight_bytes_ = state_bytes_ = 0;
  for (const auto& [name, t] : state_dict(*model_)) weight_bytes_ += t.nbytes();
  for (const auto& [name, t] : optimizer_state(*opt_.optimizer, param_names(opt_))) state_bytes_ += t.nbytes();
  for (const auto& [name, t] : scaler_->state()) state_bytes_ += t.nbytes();
  state_bytes_ += cpu_rng_state().nbytes();
  if (budget_) manager_->require_room_for_run(weight_bytes_, state_bytes_, kLogReserve);
}

// Before training, budget or not: a disk that cannot take the next checkpoint is exit 4 now (a
// rerun after a full disk stopped the run), not a session that trains and fails at its first save.
void Session::check_free_space() {
  if (rank0()) manager_->require_free_space(weight_bytes_, state_bytes_, kLogReserve);
}

// A save that found no room (the disk full, or nothing left within the budget) ends the session at
// the next step, resumable from the last checkpoint saved: training on would only redo steps that
// no save can keep, and each rerun would train them again.
void Session::note_save(const SaveResult& r) {
  if (r.status == SaveResult::Status::disk_full)
    no_room_ = "disk full";
  else if (r.status == SaveResult::Status::skipped_no_room || r.status == SaveResult::Status::weights_only)
    no_room_ = budget_ && budget_->options().limit ? "no room within {disk_budget}" : "no room on the disk";
}

std::string Session::room_hint() const {
  return "free at least " + format_size(manager_->room_for_save(weight_bytes_, state_bytes_, kLogReserve)) +
         " on the disk of " + run_dir_.string() + " (frugal du, frugal clean)" +
         (budget_ && budget_->options().limit ? " or raise {disk_budget}" : "");
}

// Logs ask the disk budget too; without room a record is dropped (one warning), not the run.
bool Session::may_write(std::uint64_t bytes, const char* what) {
  if (!budget_ || budget_->reserve(bytes)) return true;
  if (!log_room_warned_)
    note(std::string("frugal: warning: no room within the disk budget for ") + what +
         "; log records are dropped until there is. Free space (frugal du, frugal clean) or raise {disk_budget}");
  log_room_warned_ = true;
  return false;
}

// A log record that cannot be written (disk full, an I/O error) is dropped with one warning, as
// when the budget has no room: the logs serve the run, they do not stop it. The checkpoints decide
// how the run ends (a disk that stays full skips them, and the final save's failure is exit 4).
void Session::log_write_failed(const char* what, const Error& e) {
  if (!log_failure_warned_)
    note(std::string("frugal: warning: could not write ") + what + " (" + e.what() +
         "); log records are dropped, training goes on");
  log_failure_warned_ = true;
}

// One whole line or nothing: an appendable file cuts a failed append back (env.h), so a reader
// never sees a torn record.
void Session::append_metrics(const std::string& line) {
  if (!rank0()) return;
  if (!may_write(line.size(), kMetricsFile)) return;
  try {
    auto file = env_.new_appendable_file(run_dir_ / kMetricsFile);
    file->append(line);
    file->close();
  } catch (const Error& e) {
    log_write_failed(kMetricsFile, e);
  }
}

void Session::log_scalar(const char* tag, double value) {
  if (!events_) return;
  try {
    events_->scalar(tag, static_cast<float>(value), global_step_);
  } catch (const Error& e) {
    events_.reset();
    log_write_failed("the TensorBoard events", e);
  }
}

// Stopped resumable only when a rerun really continues: from this step when its checkpoint was
// saved, else from the last one saved; with none saved a rerun would start over, which is a
// budget failure.
SessionOutcome Session::stopped() {
  std::optional<std::int64_t> step = rank0() ? manager_->resumable_step() : std::nullopt;
  if (dist_) {  // rank 0 saved: every rank reports what it saved
    const std::int64_t saved = from_rank0(step.value_or(-1));
    step = saved >= 0 ? std::optional<std::int64_t>(saved) : std::nullopt;
  }
  const std::string at = "stopped (" + stop_reason_ + ") at step " + std::to_string(global_step_);
  SessionOutcome out{SessionOutcome::Status::stopped_resumable, global_step_, step.value_or(-1)};
  if (step && *step == global_step_) {
    note(at + ", saved; run the same command again to continue");
    return out;
  }
  if (step) {
    note(at + "; its checkpoint was not saved, so a rerun continues from step " + std::to_string(*step) +
         " (the last checkpoint saved) and redoes the steps after it; " +
         (no_room_.empty() ? std::string() : room_hint() + ", then ") +
         "run the same command again to continue");
    return out;
  }
  fail(ErrorKind::budget, run_dir_.string(), "a resumable checkpoint saved before stopping",
       "none (" + at + ", no checkpoint fit)",
       "a rerun would start over at step 1; free space (frugal du, frugal clean) or raise {disk_budget}");
}

// Every rank calls this at the same step: the BatchNorm statistics are made equal first, then rank 0
// saves.
void Session::checkpoint(std::int64_t epochs_done, std::int64_t position, std::int64_t loader_epoch, bool wait) {
  average_buffers();
  if (rank0()) save(make_checkpoint(epochs_done, position, loader_epoch), wait);
}

// A background save costs the loop only its snapshot, but the save made when stopping is waited
// for: under a deadline the first save of a session is waited for too, so that the deadline
// plans with what a whole save takes (and later saves count as at least that).
void Session::save(const Checkpoint& ckpt, bool wait) {
  begin_writing();
  wait = wait || (deadline_ && whole_save_seconds_ < 0);
  auto t0 = env_.steady_now();
  note_save(writer_->wait());  // the previous save's result, which submit() would not tell
  writer_->submit(ckpt);
  if (wait) {
    auto r = writer_->wait();  // what a rerun resumes from is decided by stopped()
    if (!r.message.empty()) note(r.message);
    note_save(r);
  }
  last_save_ = env_.steady_now();
  double secs = seconds_since(t0, last_save_);
  if (wait) whole_save_seconds_ = std::max(whole_save_seconds_, secs);
  if (deadline_) deadline_->record_save(std::max(secs, whole_save_seconds_));
  if (time_budget_) time_budget_->record_save(seconds_since(t0, last_save_));
}

bool Session::should_stop(bool eval_due) {
  if (rank0() && writer_ && !writer_->busy()) note_save(writer_->wait());  // a background save done
  if (!no_room_.empty()) {
    stop_reason_ = no_room_;
    return true;
  }
  if (signals_.stop_requested()) {
    stop_reason_ = std::string("signal ") + SignalGuard::signal_name(signals_.signal_number());
    return true;
  }
  if (deadline_ && deadline_->should_stop_before_next_step(eval_due)) {
    stop_reason_ = "deadline";
    return true;
  }
  return false;
}

// Joins the ranks torchrun started (distributed.h); one process with --sync-bn normalises through
// the same code, its own batch being the whole batch.
void Session::join_group() {
  if (!dist_env_) {
    if (c_.sync_bn) set_batch_norm_sync([](torch::Tensor&) {});
    return;
  }
  dist_ = ProcessGroup::join(*dist_env_, device_, std::chrono::duration_cast<std::chrono::milliseconds>(c_.dist_timeout),
                             [this] { return signals_.stop_requested(); });
  note("distributed: rank " + std::to_string(dist_->rank()) + " of " + std::to_string(dist_->world()) + " (" +
       dist_->backend() + "), a global batch of " + count(global_batch(), "image", "images") +
       (c_.sync_bn ? ", batch norm over all ranks" : ", batch norm per rank (averaged before evaluating and saving)"));
  ProcessGroup* g = dist_.get();
  eval_options_.reduce = [g](std::vector<torch::Tensor>& counts) { g->all_reduce_sum(counts); };
  if (c_.sync_bn)
    set_batch_norm_sync([g](torch::Tensor& t) {
      std::vector<torch::Tensor> one{t};
      g->all_reduce_sum(one);
    });
}

// BatchNorm running statistics differ between ranks that normalise by their own batches: before
// evaluating and saving they are averaged, so that every rank evaluates and rank 0 saves one model
// whose statistics come from all the data seen (an average of estimates over equal shares; a
// broadcast of rank 0's would throw the others' away). With --sync-bn they are equal already.
void Session::average_buffers() {
  if (!dist_) return;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> floating;
  for (auto& b : model_->buffers())
    if (b.is_floating_point()) floating.push_back(b);
  if (floating.empty()) return;
  dist_->all_reduce_sum(floating);
  for (auto& b : floating) b.div_(world());
}

// One small collective per step, the same on every rank: a stop asked for on any rank (signal,
// deadline) stops all at this step; the step's samples over all ranks weight each loss; rank 0's
// plan (steps, learning rate, a save after the step) is everyone's.
Session::StepShare Session::share_step(bool stop, std::int64_t samples, double lr, bool save_after) {
  const bool signal = stop && stop_reason_.rfind("signal", 0) == 0;
  auto t = torch::zeros({6}, torch::kFloat64);
  auto a = t.accessor<double, 1>();
  a[0] = signal ? 1 : 0;
  a[1] = stop && !signal ? 1 : 0;
  a[2] = static_cast<double>(samples);
  if (rank0()) {
    a[3] = static_cast<double>(total_steps_);
    a[4] = lr;
    a[5] = save_after ? 1 : 0;
  }
  dist_->control_all_reduce_sum(t);  // on the CPU: no wait for the GPU
  auto r = t.accessor<double, 1>();
  StepShare out;
  out.stop = r[0] + r[1] > 0;
  if (out.stop && !stop) stop_reason_ = r[0] > 0 ? "signal on another rank" : "deadline";  // one deadline for all
  out.samples = static_cast<std::int64_t>(r[2]);
  out.total_steps = static_cast<std::int64_t>(r[3]);
  out.lr = r[4];
  out.save_after = r[5] > 0;
  return out;
}

// The first step's deadline check, decided together: a rank whose deadline cannot hold a step and
// a save says so, and every rank refuses (exit 4, nothing written yet) instead of the others
// waiting for it in vain (exit 1). Every rank takes part, with a deadline or not.
void Session::fits_one_step_together() {
  std::optional<Error> mine;
  try {
    if (deadline_) deadline_->check_fits_one_step();
  } catch (const Error& e) {
    mine = e;
  }
  auto t = torch::full({1}, mine ? 1.0 : 0.0, torch::kFloat64);
  dist_->control_all_reduce_sum(t);
  if (mine) throw *mine;
  if (t.item<double>() > 0)
    fail(ErrorKind::budget, "deadline", "time for at least one step and a save on every process",
         "a process whose deadline is too close (its own message says how much it needs)",
         "give a later deadline, or a smaller batch or image size; nothing was changed");
}

std::int64_t Session::from_rank0(std::int64_t value) {
  auto t = torch::full({1}, value, torch::kInt64);
  dist_->control_broadcast(t);
  return t.item<std::int64_t>();
}

// Returns false when the run must stop (saved) before the epoch ends.
bool Session::train_epoch(std::int64_t epoch, std::int64_t position) {
  train_loader_->start(epoch, position);
  std::int64_t step_in_epoch = position == 0 ? 0 : global_step_ - epoch * steps_per_epoch_;
  epoch_loss_sum_ = 0;
  epoch_loss_samples_ = 0;
  step_seconds_ = 0;
  comm_at_epoch_start_ = dist_ ? dist_->comm_seconds() : 0;
  gradient_at_epoch_start_ = dist_ ? dist_->gradient_seconds() : 0;
  const auto& every = c_.save_every;
  auto cadence_due = [&](std::int64_t step, double since_save) {
    return (!time_budget_ || time_budget_->planned()) &&
           ((every.steps > 0 && step % every.steps == 0) ||
            (every.every.count() > 0 && since_save >= static_cast<double>(every.every.count())));
  };
  for (;;) {
    if (time_budget_) {
      update_plan(false);
      // The plan ends here (mid-epoch too): evaluate, save. With several ranks, rank 0's plan
      // decides, after the step's agreement below.
      if (!dist_ && global_step_ >= total_steps_) return true;
    }
    Batches batches;
    std::int64_t next_position = position, samples = 0;
    for (int i = 0; i < c_.accum; ++i) {
      auto b = train_loader_->next();
      if (!b) break;
      batches.emplace_back(b->images, b->labels);
      samples += b->images.size(0);
      next_position = b->position;
    }
    if (batches.empty()) return true;  // every rank has as many batches (EpochPlan)
    bool last_of_epoch = step_in_epoch + 1 >= steps_per_epoch_ || (time_budget_ && global_step_ + 1 >= total_steps_);
    bool stop = should_stop(last_of_epoch);
    last_lr_ = time_budget_ ? time_budget_->lr(c_.lr, global_step_, c_.warmup_fraction)
                            : cosine_lr(c_.lr, global_step_,
                                        std::max<std::int64_t>(1, std::llround(c_.warmup_fraction * total_steps_)), total_steps_);
    std::int64_t global_samples = 0;
    bool save_after = false;
    const auto agreed_from = env_.steady_now();
    if (dist_) {
      StepShare share = share_step(stop, samples, last_lr_,
                                   cadence_due(global_step_ + 1, seconds_since(last_save_, env_.steady_now())));
      total_steps_ = share.total_steps;
      if (time_budget_ && global_step_ >= total_steps_) return true;
      stop = share.stop;
      last_lr_ = share.lr;
      global_samples = share.samples;
      save_after = share.save_after;
    }
    if (stop) {
      checkpoint(epoch, position, epoch, true);
      return false;
    }
    set_lr(*opt_.optimizer, last_lr_);
    // Dropout on each rank draws from a generator seeded by (seed, rank, step): the checkpoint holds
    // rank 0's generator only, and ranks that drew for batches of other sizes would not resume as
    // they ran. So a resumed rank draws what it would have drawn, whatever the world size before.
    if (dist_) torch::manual_seed(mix_seed(mix_seed(c_.seed, static_cast<std::uint64_t>(dist_->rank())),
                                           static_cast<std::uint64_t>(global_step_)));
    auto t0 = env_.steady_now();
    StepResult r = step_->run(batches, global_samples);
    const auto t1 = env_.steady_now();
    const double step_seconds = seconds_since(t0, t1);
    step_seconds_ += seconds_since(agreed_from, t1);
    // The plan's step cost is all a step takes: waiting for the batch, logging, a cadence save
    // too, from one step's end to the next (an evaluation's time is its own: see end_of_epoch).
    if (time_budget_) time_budget_->record_step(seconds_since(step_end_ ? *step_end_ : t0, t1));
    step_end_ = t1;
    if (deadline_) {
      deadline_->record_step(step_seconds);
      // The first step of each session measures what one costs: a deadline that cannot hold it
      // and a save is refused now, before the run folder changes (exit 4, nothing was changed).
      if (session_steps_ == 0 && !dist_) deadline_->check_fits_one_step();
    }
    if (session_steps_ == 0 && dist_) fits_one_step_together();
    ++session_steps_;
    // A time budget too short for one epoch is refused at the first plan, a few steps in: until
    // then nothing is written either.
    if (!time_budget_ || time_budget_->planned()) begin_writing();
    ++global_step_;
    ++step_in_epoch;
    position = next_position;
    if (std::isfinite(r.loss)) {
      epoch_loss_sum_ += r.loss * static_cast<double>(r.samples);
      epoch_loss_samples_ += r.samples;
    }
    log_->step(global_step_, total_steps_, epoch, r, last_lr_);
    if (global_step_ % 20 == 0 && rank0() && may_write(64, "the TensorBoard events")) log_scalar("train/loss", r.loss);
    if (dist_ ? save_after : cadence_due(global_step_, seconds_since(last_save_, env_.steady_now())))
      checkpoint(epoch, position, epoch, false);
  }
}

void Session::end_of_epoch(std::int64_t epoch) {
  // An epoch shorter than the steps timed for the first plan is planned here, before writing.
  if (time_budget_ && !time_budget_->planned()) {
    update_plan(true);
    begin_writing();
  }
  const double step_comm = dist_ ? dist_->comm_seconds() - comm_at_epoch_start_ : 0;  // the steps' collectives
  average_buffers();  // every rank evaluates the same model, on its shard of the validation set
  auto t0 = env_.steady_now();
  EvalResult e = evaluate(*model_, *val_loader_, static_cast<int>(classes_.size()), step_options_, &eval_options_);
  double secs = seconds_since(t0, env_.steady_now());
  if (deadline_) deadline_->record_eval(secs);
  if (time_budget_) time_budget_->record_eval(secs);
  last_val_accuracy_ = e.accuracy;
  nlohmann::json per = e.to_json(classes_)["per_class"];
  // train_loss: the mean over the epoch's samples (those trained in this session when it resumed
  // mid-epoch), not the last step's, which varies with its batch.
  const double train_loss =
      epoch_loss_samples_ > 0 ? epoch_loss_sum_ / static_cast<double>(epoch_loss_samples_) : NAN;
  last_metrics_ = {{"epoch", epoch + 1}, {"step", global_step_}, {"train_loss", train_loss},
                   {"val_loss", e.loss}, {"val_accuracy", e.accuracy}, {"val_samples", e.samples},
                   {"per_class", per}, {"lr", last_lr_}, {"micro_batch", step_->micro_batch()},
                   {"images_per_s", log_->images_per_second()}, {"eval_seconds", secs}};
  if (dist_) {
    // The share of the epoch's steps spent in collectives (waiting for the slowest rank included).
    last_metrics_["world_size"] = world();
    last_metrics_["step_seconds"] = step_seconds_;
    last_metrics_["comm_seconds"] = step_comm;
    last_metrics_["gradient_comm_seconds"] = dist_->gradient_seconds() - gradient_at_epoch_start_;
  }
  log_->epoch(epoch, time_budget_ ? (total_steps_ + steps_per_epoch_ - 1) / steps_per_epoch_ : c_.epochs, e);
  append_metrics(last_metrics_.dump() + "\n");
  if (rank0() && may_write(128, "the TensorBoard events")) {
    log_scalar("val/loss", e.loss);
    log_scalar("val/accuracy", e.accuracy);
  }
  if (events_) {
    try {
      events_->flush();
    } catch (const Error& err) {
      events_.reset();
      log_write_failed("the TensorBoard events", err);
    }
  }
  checkpoint(epoch + 1, 0, epoch + 1, false);
  if (time_budget_) {
    update_plan(true);
    if (dist_) total_steps_ = from_rank0(total_steps_);  // the loop's end is rank 0's plan
  }
  step_end_.reset();  // the evaluation and save are not the next step's
}

// epochs auto: the steps are planned to fit the time budget (train/schedule.h); a resumed run
// continues the plan its checkpoint holds.
void Session::start_time_budget() {
  if (!c_.time_budget)
    fail(ErrorKind::usage, "epochs auto", "a time budget to plan the steps in", "none",
         "give the run a time budget (a duration such as 20h), or a number of epochs");
  TimeBudget::Options o;
  o.budget = static_cast<double>(c_.time_budget.seconds.count());
  o.steps_per_epoch = steps_per_epoch_;
  // An evaluation is a forward pass over the validation images: about a third of a step's work
  // per image, until one is timed.
  o.eval_in_steps = static_cast<double>(val_->size()) / static_cast<double>(global_batch()) / 3.0;
  time_budget_.emplace(o);
  if (!saved_plan_.is_null()) {
    try {
      time_budget_->resume(saved_plan_);
    } catch (const Error& e) {  // metadata of a file the user may not have written: name it
      throw Error(e.kind(), (run_dir_ / resume_file_).string() + ": " + e.what());
    }
    if (time_budget_->planned())
      note("time budget: continuing the plan (revision " + std::to_string(time_budget_->schedule().revision) +
           "): " + time_budget_->summary(global_batch()));
  }
  total_steps_ = time_budget_->total_steps();
}

// Plans once the first steps are timed, re-plans when the budget or the speed changed (see
// TimeBudget::update); each plan is a line of metrics.jsonl and of the log.
void Session::update_plan(bool after_eval) {
  nlohmann::json record = time_budget_->update(global_step_, session_seconds(), after_eval);
  if (record.is_null()) return;
  total_steps_ = time_budget_->total_steps();
  const std::string summary = time_budget_->summary(global_batch());
  auto& r = record["time_budget"];
  r["summary"] = summary;
  const std::string event = r["event"].get<std::string>();
  // Every revision is a line of metrics.jsonl; the log tells those that move the end by 2% or more
  // (the plan is checked every 2% of the steps left, and follows timing noise in small steps).
  const bool small = event == "speed" && noted_total_ > 0 &&
                     std::abs(static_cast<double>(total_steps_ - noted_total_)) < 0.02 * static_cast<double>(noted_total_);
  if (!small) {
    note(event == "plan" ? summary : "time budget: re-planned (" + event + "): " + summary);
    noted_total_ = total_steps_;
  }
  if (writing_) append_metrics(record.dump() + "\n");
  else pending_records_.push_back(record.dump() + "\n");
}

void Session::write_config() {
  nlohmann::json j = c_.to_json();
  j["format"] = "frugal-run-config";
  j["version"] = 1;
  j["classes"] = classes_;
  j["model_info"] = {{"name", info_.name}, {"image_size", info_.image_size}, {"channels", info_.channels},
                     {"mean", info_.mean}, {"std", info_.std}};
  j["resolved"] = {{"device", device_.str()}, {"amp", to_string(amp_)}, {"micro_batch", step_options_.micro_batch}};
  j["world_size"] = world();
  const std::string text = j.dump(2) + "\n";
  write_atomic(env_, run_dir_ / kConfigFile, [&](WritableFile& f) { f.append(text); });
}

// Makes `dir` and its missing parents; returns the folders this process made, deepest first (one
// that another process made at the same moment is not this one's to remove).
std::vector<fs::path> make_folders(const fs::path& dir) {
  std::error_code ec;
  fs::path top = fs::absolute(dir, ec).lexically_normal();
  if (!top.has_filename()) top = top.parent_path();  // "runs/a/"
  std::vector<fs::path> missing;  // deepest first
  for (fs::path p = top; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  std::vector<fs::path> made;
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0777) == 0) made.insert(made.begin(), *it);
    else if (errno != EEXIST) fail_errno("create folder", it->string(), errno);
  }
  return made;
}

// Two trainings of one run folder (a notebook cell run twice) would delete each other's
// checkpoints and mix their metrics, and a folder of someone else's (a Hugging Face model folder)
// would have its config.json and model replaced: the folder is made if missing, locked before
// anything in it is read (the second process fails at once, exit 1, naming the first), and
// refused when frugal did not make it (exit 2), before anything is written or --fresh removes
// anything. Only rank 0 writes the run folder, so only rank 0 locks it.
void Session::claim_run_folder() {
  created_ = make_folders(run_dir_);
  if (dist_env_ && dist_env_->rank != 0) return;
  lock_.emplace(FileLock::lock(run_dir_, "training into this run folder"));
  const RunFolderOwner owner = run_folder_owner(run_dir_);
  if (owner.kind != RunFolderOwner::Kind::foreign) return;
  std::string found;
  for (const auto& r : owner.reasons) found += (found.empty() ? "" : "; ") + r;
  if (owner.foreign > owner.reasons.size()) found += "; and " + std::to_string(owner.foreign - owner.reasons.size()) + " more";
  fail(ErrorKind::usage, run_dir_.string(), "a new or empty folder, or a run folder frugal made",
       "a folder frugal did not make (" + found + ")",
       "train into a new or empty folder (e.g. runs/NAME); frugal would replace or delete files here; nothing was changed");
}

SessionOutcome Session::execute() {
  try {
    return train();
  } catch (...) {
    // Refused before training started: leave no folder behind that this run made (only empty
    // ones go; rmdir refuses anything else). The lock is still held, so no other training has
    // begun to use the folder.
    if (!writing_)
      for (const auto& p : created_) ::rmdir(p.c_str());
    throw;
  }
}

SessionOutcome Session::train() {
  dist_env_ = dist_env();
  claim_run_folder();
  if (c_.deadline) {
    deadline_ = Deadline::start(*c_.deadline, env_);
    deadline_->check_time_left();
  }
  if (c_.deterministic) at::globalContext().setDeterministicAlgorithms(true, false);
  if (dist_env_ && dist_env_->rank != 0) Progress::set_quiet(true);  // rank 0 speaks for the run
  open_data();
  build_model();
  join_group();
  prepare_resume();
  if (dist_) {
    // One start for all: rank 0's parameters and buffers, and every rank resumed the same step.
    std::vector<torch::Tensor> state;
    for (auto& p : model_->parameters()) state.push_back(p.data());
    for (auto& b : model_->buffers()) state.push_back(b);
    dist_->broadcast(state);
    if (std::int64_t step0 = from_rank0(global_step_); step0 != global_step_)
      fail(ErrorKind::invalid, run_dir_.string(), "the same run folder on every rank",
           "rank " + std::to_string(dist_->rank()) + " resumed at step " + std::to_string(global_step_) +
               ", rank 0 at step " + std::to_string(step0),
           "give every rank the same run folder (on several machines: a shared file system)");
  }
  if (deadline_) deadline_->check_time_left();

  LoaderOptions lo;
  lo.image_size = info_.image_size;
  lo.batch_size = c_.batch_size;
  lo.workers = c_.workers;
  lo.seed = c_.seed;
  lo.pin_memory = device_.is_cuda();
  if (dist_) lo.shard = {dist_->rank(), dist_->world()};  // each rank its slice of every global batch
  if (c_.decode == DecodeChoice::gpu) {
    if (!device_.is_cuda())
      fail(ErrorKind::usage, "decode gpu", "a CUDA device to train on", "device " + device_.str(),
           "train on cuda, or decode on the cpu");
    GpuOutputOptions go;  // uint8 levels, normalised by TrainStep as the CPU batches are
    go.device = device_.has_index() ? device_.index() : 0;
    train_loader_ = std::make_unique<GpuLoader>(train_, lo, go);
  } else {
    train_loader_ = std::make_unique<Loader>(train_, lo);
  }
  lo.train = false;
  lo.shuffle = false;
  lo.batch_size = std::max(c_.batch_size, 256);
  val_loader_ = std::make_unique<Loader>(val_, lo);
  std::int64_t batches = train_loader_->batches_per_epoch();
  steps_per_epoch_ = (batches + c_.accum - 1) / c_.accum;
  total_steps_ = steps_per_epoch_ * c_.epochs;
  if (c_.epochs == 0) start_time_budget();
  else if (c_.time_budget)
    fail(ErrorKind::usage, "a time budget with " + count(c_.epochs, "epoch", "epochs"),
         "epochs auto: the budget decides how many", std::to_string(c_.epochs) + " epochs",
         "leave the number of epochs out (or auto) to plan them for the budget, or leave out the budget");
  if (time_budget_ ? !time_budget_->planned() || global_step_ < total_steps_ : start_epoch_ < c_.epochs)
    check_free_space();  // a run with nothing left to train saves nothing
  if (dist_ && c_.sync_bn) step_options_.equal_forwards = c_.batch_size;
  step_ = std::make_unique<TrainStep>(*model_, *opt_.optimizer, *scaler_, step_options_);
  if (dist_) {
    step_->zero_gradients = [g = dist_.get()](const std::vector<torch::Tensor>& params) { g->prepare_gradients(params); };
    step_->reduce_gradients = [g = dist_.get()](const std::vector<torch::Tensor>& params, std::vector<torch::Tensor> extra) {
      g->all_reduce_gradients(params, std::move(extra));
    };
  }
  log_ = std::make_unique<TrainLog>(c_.json, env_);
  note("training " + c_.model + " on " + count(train_->size(), "image", "images") + " (" +
       count(classes_.size(), "class", "classes") + "), validating on " + std::to_string(val_->size()) + "; " +
       (time_budget_ && !time_budget_->planned() ? std::string("steps to fit the time budget (planned once the first are timed), each")
                                                   : count(total_steps_, "step", "steps")) + " of " + count(global_batch(), "image", "images") +
       (dist_ ? " (" + std::to_string(world()) + " ranks x " + std::to_string(c_.batch_size * c_.accum) + ")" : ""));

  for (std::int64_t epoch = start_epoch_; time_budget_ ? global_step_ < total_steps_ : epoch < c_.epochs; ++epoch) {
    std::int64_t position = epoch == start_epoch_ ? start_position_ : 0;
    if (!train_epoch(epoch, position)) return stopped();
    end_of_epoch(epoch);
  }
  begin_writing();  // a resumed run that had nothing left to train still records its config
  bool saved = true;
  if (rank0()) {
    auto r = writer_->wait();
    if (!r.message.empty()) note(r.message);
    saved = r.status != SaveResult::Status::skipped_no_room && r.status != SaveResult::Status::disk_full;
    if (!saved) note_save(r);
  }
  if (dist_) saved = from_rank0(saved ? 1 : 0) != 0;  // every rank ends as rank 0's save did
  // The final weights must be somewhere: in the last checkpoint, or (weights_only) in best. When
  // they are not, the run stops resumable from the last checkpoint saved (exit 75), or is a budget
  // failure when none was.
  if (!saved) {
    stop_reason_ = rank0() ? no_room_ : "no room on rank 0";
    return stopped();
  }
  log_->done();
  return {SessionOutcome::Status::done, global_step_, global_step_};
}

}  // namespace

std::map<std::string, torch::Tensor> load_checkpoint_or_weights(const std::string& path) {
  auto file = load_safetensors(path);
  std::map<std::string, torch::Tensor> out;
  bool checkpoint = file.metadata.count("format") && file.metadata.at("format") == kCheckpointFormat;
  for (auto& [name, t] : file.tensors)
    if (!checkpoint || name.rfind(kStatePrefix, 0) != 0) out[name] = t;
  return out;
}

SessionOutcome train_session(const TrainConfig& config, Env& env) { return Session(config, env).execute(); }

}  // namespace frugal

// The run behind `frugal train`: data, model, resume, the epoch loop, evaluation, checkpoints,
// metrics, and stopping resumable on a deadline or signal.
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <optional>

#include "frugal/budget.h"
#include "frugal/checkpoint.h"
#include "frugal/data.h"
#include "frugal/error.h"
#include "frugal/fs.h"
#include "frugal/gpu_loader.h"
#include "frugal/progress.h"
#include "frugal/train.h"
#include "frugal/units.h"
#include "train/device.h"
#include "train/events.h"
#include "train/train_log.h"

namespace frugal {
namespace fs = std::filesystem;

nlohmann::json TrainConfig::to_json() const {
  return {{"data", data}, {"val", val}, {"val_split", val_split}, {"run", run}, {"model", model},
          {"init", init}, {"freeze", freeze}, {"label_pattern", label_pattern}, {"max_pixels", max_pixels},
          {"max_bad_fraction", max_bad_fraction}, {"channels", channels}, {"epochs", epochs},
          {"batch_size", batch_size}, {"accum", accum}, {"lr", lr}, {"optimizer", optimizer},
          {"weight_decay", weight_decay}, {"label_smoothing", label_smoothing}, {"clip_grad_norm", clip_grad_norm},
          {"warmup_fraction", warmup_fraction}, {"image_size", image_size}, {"workers", workers}, {"seed", seed},
          {"amp", amp}, {"grad_checkpoint", grad_checkpoint}, {"device", device}, {"disk_budget", disk_budget},
          {"workspace", workspace}, {"gpu_memory", gpu_memory}, {"deadline", deadline}, {"save_every", save_every},
          {"keep_best", keep_best}, {"keep_last", keep_last}, {"delta", delta}, {"deterministic", deterministic},
          {"decode", decode}};
}

namespace {

using Batches = std::vector<std::pair<torch::Tensor, torch::Tensor>>;

struct SaveCadence {
  std::int64_t steps = 0;        // every N optimizer steps (0: off)
  double seconds = 0;            // every T seconds (0: off)
};

SaveCadence parse_save_every(const std::string& text) {
  SaveCadence c;
  if (text.empty()) return c;
  if (text.size() > 5 && text.ends_with("steps")) {
    c.steps = std::stoll(text.substr(0, text.size() - 5));
    if (c.steps <= 0) fail(ErrorKind::usage, "--save-every", "a positive number of steps", text, "");
  } else {
    c.seconds = static_cast<double>(parse_duration(text).count());
  }
  return c;
}

// Everything one run holds; the loop below reads as the algorithm.
class Run {
 public:
  explicit Run(const TrainConfig& c) : c_(c), run_dir_(c.run) {}
  int execute();

 private:
  void open_data();
  void build_model();
  void resume();
  bool train_epoch(std::int64_t epoch, std::int64_t position);
  void end_of_epoch(std::int64_t epoch);
  Checkpoint make_checkpoint(std::int64_t epochs_done, std::int64_t position, std::int64_t loader_epoch) const;
  void save(const Checkpoint& ckpt, bool wait);
  void check_disk_budget();
  bool may_write(std::uint64_t bytes, const char* what);
  int stopped();
  bool should_stop(bool eval_due);
  void write_config();

  const TrainConfig& c_;
  fs::path run_dir_;
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
  SaveCadence cadence_;
  std::chrono::steady_clock::time_point last_save_ = std::chrono::steady_clock::now();

  std::int64_t start_epoch_ = 0, start_position_ = 0, global_step_ = 0, steps_per_epoch_ = 0, total_steps_ = 0;
  double last_lr_ = 0, last_train_loss_ = NAN;
  nlohmann::json last_metrics_ = nlohmann::json::object();
  std::optional<double> last_val_accuracy_;
  std::string stop_reason_;
  bool log_room_warned_ = false;
};

// Room kept for what the trainer writes besides checkpoints (config.json, metrics.jsonl, events).
constexpr std::uint64_t kLogReserve = 1ull << 20;

void Run::open_data() {
  DatasetOptions d;
  d.label_pattern = c_.label_pattern;
  d.max_pixels = static_cast<std::uint64_t>(c_.max_pixels);
  d.max_bad_fraction = c_.max_bad_fraction;
  d.channels = c_.channels;
  d.name_encoding = c_.name_encoding;
  auto all = Dataset::open(c_.data, d);
  classes_ = all->classes();
  if (!c_.val.empty()) {
    d.channels = all->channels();
    train_ = all;
    val_ = Dataset::open(c_.val, d);
    if (val_->classes() != classes_)
      fail(ErrorKind::invalid, c_.val, "the same classes as " + c_.data, std::to_string(val_->classes().size()) +
           " classes, not all matching", "give a validation archive with the same class names");
  } else {
    double f = c_.val_split > 0 ? c_.val_split : 0.05;
    std::tie(train_, val_) = all->split_val(f);
    if (c_.val_split <= 0) note("validating on a stable 5% of the training data (--val or --val-split to choose)");
  }
  if (train_->size() == 0) fail(ErrorKind::invalid, c_.data, "training images", "none", "check --data");
}

void Run::build_model() {
  info_ = default_model_info(c_.model, train_->channels());
  info_.classes = classes_;
  if (c_.image_size > 0) info_.image_size = c_.image_size;

  std::tie(device_, amp_) = resolve_device(c_.device, c_.amp);
  if (!c_.gpu_memory.empty())
    if (std::string line = limit_gpu_memory(device_, parse_size(c_.gpu_memory)); !line.empty()) note(line);
  note("device: " + configure_device(device_) + ", precision: " + to_string(amp_));
  // On the CPU `auto` stays fp32 (results comparable across machines); say when bf16 would pay.
  if (!device_.is_cuda() && amp_ == AmpMode::off && c_.amp == "auto" && cpu_has_native_bf16())
    note("this CPU computes bf16 in hardware (AMX/AVX512-BF16): --amp bf16 trains faster (cnn: 1.4x on 2 cores)");
  if (!device_.is_cuda() && amp_ == AmpMode::bf16 && !cpu_has_native_bf16())
    note("warning: this CPU has no bf16 instructions, so --amp bf16 is emulated and slower than --amp off");

  torch::manual_seed(c_.seed);
  model_ = make_model(c_.model, static_cast<int>(classes_.size()), info_.channels);
  if (!c_.init.empty()) {
    auto msg = load_weights(*model_, load_checkpoint_or_weights(c_.init), /*allow_head_mismatch=*/true);
    note("initialized from " + c_.init + (msg.empty() ? "" : ": " + msg));
  }
  if (!c_.freeze.empty()) note("froze " + std::to_string(freeze(*model_, c_.freeze)) + " tensors");
  model_->to(device_);
  // Channels-last on every device: on CUDA for cuDNN's tensor-core kernels, on the CPU because
  // oneDNN's convolutions run 1.1-1.6x faster that way (cnn, resnet18, efficientnet_b0 measured).
  to_channels_last(*model_);
  model_->set_grad_checkpoint(c_.grad_checkpoint);
  model_->train();

  OptimizerOptions o;
  if (c_.optimizer == "sgd") o.kind = OptimizerKind::sgd;
  else if (c_.optimizer != "adamw") fail(ErrorKind::usage, "--optimizer", "adamw or sgd", c_.optimizer, "");
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

NamedTensors param_names(const OptimizerSetup& s) { return NamedTensors(s.params.begin(), s.params.end()); }

void Run::resume() {
  CheckpointOptions co;
  co.retention.keep_best = c_.keep_best;
  co.retention.keep_last = c_.keep_last;
  co.delta = c_.delta;
  manager_ = std::make_unique<CheckpointManager>(run_dir_, co);
  if (!c_.disk_budget.empty()) {
    DiskBudgetOptions bo;
    bo.limit = parse_size(c_.disk_budget);
    bo.own_folder = run_dir_;
    fs::path ws = c_.workspace.empty() ? fs::absolute(run_dir_).parent_path() : fs::path(c_.workspace);
    budget_ = std::make_unique<DiskBudget>(ws, bo);
    budget_->set_evictable([m = manager_.get()] { return m->evictable(); });
    manager_->set_disk_budget(budget_.get());
    budget_->start_watcher();
  }
  if (int n = manager_->remove_temporaries()) note("removed " + std::to_string(n) + " leftover temporary file(s)");
  check_disk_budget();
  if (c_.fresh) {
    // The old run's checkpoints carry higher step numbers and would rank newest: drop them.
    manager_->discard_previous();
    return;
  }
  auto r = manager_->load_latest();
  if (!r) return;
  const Checkpoint& ck = r->ckpt;
  nlohmann::json now = c_.to_json();
  now["classes"] = classes_;
  now["train_images"] = train_->size();
  if (auto changes = learning_changes(ck.config, now); !changes.empty()) {
    std::string list;
    for (auto& c : changes) list += (list.empty() ? "" : "; ") + c;
    fail(ErrorKind::usage, (run_dir_ / r->file.filename()).string(), "the options this run was started with",
         list, "run the original command to resume, or add --fresh to start this run over with the new options");
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
  if (ck.metric_value) last_val_accuracy_ = ck.metric_value;
  note("resuming from " + r->file.filename().string() + " (epoch " + std::to_string(start_epoch_ + 1) + ", step " +
       std::to_string(global_step_) + ")");
}

Checkpoint Run::make_checkpoint(std::int64_t epochs_done, std::int64_t position, std::int64_t loader_epoch) const {
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
  ck.metrics = last_metrics_;
  ck.config = c_.to_json();
  ck.config["classes"] = classes_;
  ck.config["train_images"] = train_->size();
  if (last_val_accuracy_) {
    ck.metric_value = last_val_accuracy_;
    ck.metric_name = "val_accuracy";
  }
  return ck;
}

// Before training: a budget that cannot keep the run resumable is exit 4 now, rather than a run
// that saves nothing a rerun can continue from (or ends over its budget).
void Run::check_disk_budget() {
  if (!budget_) return;
  std::uint64_t weights = 0, state = 0;
  for (const auto& [name, t] : state_dict(*model_)) weights += t.nbytes();
  for (const auto& [name, t] : optimizer_state(*opt_.optimizer, param_names(opt_))) state += t.nbytes();
  for (const auto& [name, t] : scaler_->state()) state += t.nbytes();
  state += cpu_rng_state().nbytes();
  manager_->require_room_for_run(weights, state, kLogReserve);
}

// Logs ask the disk budget too; without room a record is dropped (one warning), not the run.
bool Run::may_write(std::uint64_t bytes, const char* what) {
  if (!budget_ || budget_->reserve(bytes)) return true;
  if (!log_room_warned_)
    note(std::string("frugal: warning: no room within the disk budget for ") + what +
         "; log records are dropped until there is. Free space (frugal du, frugal clean) or raise --disk-budget");
  log_room_warned_ = true;
  return false;
}

// Exit 75 only when a rerun really continues: from this step when its checkpoint was saved, else
// from the last one saved; with none saved a rerun would start over, which is a budget failure.
int Run::stopped() {
  const auto step = manager_->resumable_step();
  const std::string at = "stopped (" + stop_reason_ + ") at step " + std::to_string(global_step_);
  if (step && *step == global_step_) {
    note(at + ", saved; run the same command again to continue");
    return exit_code(ErrorKind::interrupted);
  }
  if (step) {
    note(at + "; its checkpoint was not saved, so a rerun continues from step " + std::to_string(*step) +
         " (the last checkpoint saved) and redoes the steps after it; run the same command again to continue");
    return exit_code(ErrorKind::interrupted);
  }
  fail(ErrorKind::budget, run_dir_.string(), "a resumable checkpoint saved before stopping",
       "none (" + at + ", no checkpoint fit)",
       "a rerun would start over at step 1; free space (frugal du, frugal clean) or raise --disk-budget");
}

void Run::save(const Checkpoint& ckpt, bool wait) {
  auto t0 = std::chrono::steady_clock::now();
  writer_->submit(ckpt);
  if (wait) {
    auto r = writer_->wait();  // what a rerun resumes from is decided by stopped()
    if (!r.message.empty()) note(r.message);
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (deadline_) deadline_->record_save(s);
  last_save_ = std::chrono::steady_clock::now();
}

bool Run::should_stop(bool eval_due) {
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

// Returns false when the run must stop (saved) before the epoch ends.
bool Run::train_epoch(std::int64_t epoch, std::int64_t position) {
  train_loader_->start(epoch, position);
  std::int64_t step_in_epoch = position == 0 ? 0 : global_step_ - epoch * steps_per_epoch_;
  for (;;) {
    Batches batches;
    std::int64_t next_position = position;
    for (int i = 0; i < c_.accum; ++i) {
      auto b = train_loader_->next();
      if (!b) break;
      batches.emplace_back(b->images, b->labels);
      next_position = b->position;
    }
    if (batches.empty()) return true;
    bool last_of_epoch = step_in_epoch + 1 >= steps_per_epoch_;
    if (should_stop(last_of_epoch)) {
      save(make_checkpoint(epoch, position, epoch), true);
      return false;
    }
    last_lr_ = cosine_lr(c_.lr, global_step_, std::max<std::int64_t>(1, std::llround(c_.warmup_fraction * total_steps_)),
                         total_steps_);
    set_lr(*opt_.optimizer, last_lr_);
    auto t0 = std::chrono::steady_clock::now();
    StepResult r = step_->run(batches);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (deadline_) {
      deadline_->record_step(secs);
      if (global_step_ == 0) deadline_->check_fits_one_step();
    }
    ++global_step_;
    ++step_in_epoch;
    position = next_position;
    last_train_loss_ = r.loss;
    log_->step(global_step_, total_steps_, epoch, r, last_lr_);
    if (global_step_ % 20 == 0 && may_write(64, "the TensorBoard events"))
      events_->scalar("train/loss", static_cast<float>(r.loss), global_step_);
    double since_save = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_save_).count();
    if ((cadence_.steps > 0 && global_step_ % cadence_.steps == 0) || (cadence_.seconds > 0 && since_save >= cadence_.seconds))
      save(make_checkpoint(epoch, position, epoch), false);
  }
}

void Run::end_of_epoch(std::int64_t epoch) {
  auto t0 = std::chrono::steady_clock::now();
  EvalResult e = evaluate(*model_, *val_loader_, static_cast<int>(classes_.size()), step_options_, &eval_options_);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (deadline_) deadline_->record_eval(secs);
  last_val_accuracy_ = e.accuracy;
  nlohmann::json per = e.to_json(classes_)["per_class"];
  last_metrics_ = {{"epoch", epoch + 1}, {"step", global_step_}, {"train_loss", last_train_loss_},
                   {"val_loss", e.loss}, {"val_accuracy", e.accuracy}, {"val_samples", e.samples},
                   {"per_class", per}, {"lr", last_lr_}, {"micro_batch", step_->micro_batch()},
                   {"images_per_s", log_->images_per_second()}, {"eval_seconds", secs}};
  log_->epoch(epoch, c_.epochs, e);
  const std::string line = last_metrics_.dump() + "\n";
  if (may_write(line.size(), kMetricsFile)) std::ofstream(run_dir_ / kMetricsFile, std::ios::app) << line;
  if (may_write(128, "the TensorBoard events")) {
    events_->scalar("val/loss", static_cast<float>(e.loss), global_step_);
    events_->scalar("val/accuracy", static_cast<float>(e.accuracy), global_step_);
  }
  events_->flush();
  save(make_checkpoint(epoch + 1, 0, epoch + 1), false);
}

void Run::write_config() {
  nlohmann::json j = c_.to_json();
  j["format"] = "frugal-run-config";
  j["version"] = 1;
  j["classes"] = classes_;
  j["model_info"] = {{"name", info_.name}, {"image_size", info_.image_size}, {"channels", info_.channels},
                     {"mean", info_.mean}, {"std", info_.std}};
  j["resolved"] = {{"device", device_.str()}, {"amp", to_string(amp_)}, {"micro_batch", step_options_.micro_batch}};
  write_file_atomic(run_dir_ / kConfigFile, j.dump(2) + "\n");
}

int Run::execute() {
  if (!c_.deadline.empty()) deadline_ = Deadline::parse(c_.deadline);
  cadence_ = parse_save_every(c_.save_every);
  if (c_.batch_size < 1 || c_.accum < 1 || c_.epochs < 1)
    fail(ErrorKind::usage, "--batch-size/--accum/--epochs", "positive numbers", "", "");
  if (c_.deterministic) at::globalContext().setDeterministicAlgorithms(true, false);
  fs::create_directories(run_dir_);
  open_data();
  build_model();
  resume();
  write_config();
  writer_ = std::make_unique<CheckpointWriter>(*manager_);
  events_ = std::make_unique<EventWriter>(run_dir_);

  LoaderOptions lo;
  lo.image_size = info_.image_size;
  lo.batch_size = c_.batch_size;
  lo.workers = c_.workers;
  lo.seed = c_.seed;
  lo.pin_memory = device_.is_cuda();
  if (c_.decode == "gpu") {
    if (!device_.is_cuda())
      fail(ErrorKind::usage, "--decode gpu", "a CUDA device to train on", "device " + device_.str(),
           "use --device cuda, or --decode cpu");
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
  step_ = std::make_unique<TrainStep>(*model_, *opt_.optimizer, *scaler_, step_options_);
  log_ = std::make_unique<TrainLog>(c_.json);
  note("training " + c_.model + " on " + std::to_string(train_->size()) + " images (" + std::to_string(classes_.size()) +
       " classes), validating on " + std::to_string(val_->size()) + "; " + std::to_string(total_steps_) +
       " steps of " + std::to_string(c_.batch_size * c_.accum) + " images");

  for (std::int64_t epoch = start_epoch_; epoch < c_.epochs; ++epoch) {
    std::int64_t position = epoch == start_epoch_ ? start_position_ : 0;
    if (!train_epoch(epoch, position)) return stopped();
    end_of_epoch(epoch);
  }
  auto r = writer_->wait();
  if (!r.message.empty()) note(r.message);
  // The final weights must be somewhere: in the last checkpoint, or (weights_only) in best.
  if (r.status == SaveResult::Status::skipped_no_room || r.status == SaveResult::Status::disk_full)
    fail(ErrorKind::budget, run_dir_.string(), "the final weights saved",
         "no room for them (" + manager_->resumable_from() + ")",
         "free space (frugal du, frugal clean) or raise --disk-budget, then run the same command again");
  log_->done();
  return 0;
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

int run_training(const TrainConfig& config) { return Run(config).execute(); }

}  // namespace frugal

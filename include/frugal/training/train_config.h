// The run's configuration, torch-free: every option of `frugal train` as one table (TrainOption
// rows: parsing and validation where a value enters, what config.json records, which options a
// resume may not change), and how a session ended. The CLI, the TOML reader and the library all
// go through it; the trainer (train/train_session.h) takes a TrainConfig.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "frugal/budget/budget.h"
#include "frugal/image/image.h"

namespace frugal {

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

enum class OptimizerKind { adamw, sgd };

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
  int index = -1;            // cuda:N; -1: the default device
  std::string text() const;  // "auto", "cpu", "cuda", "cuda:1"
};

// Where training JPEGs are decoded: `automatic` takes the GPU only when this build, machine and
// data allow (select_decode); config.json records the resolved "cpu" or "gpu".
enum class DecodeChoice { cpu, gpu, automatic };

// How many epochs a run trains: `fixed`, the config's `epochs`; `automatic`, as many as fit its
// time budget (planned once the first steps are timed). `unset` is decided by validate(): automatic
// with a time budget, else fixed.
enum class EpochsMode { unset, fixed, automatic };

struct TrainConfig {
  // model: a zoo name or a TorchScript module's file; empty: the zoo model --init's weights are for,
  // else cnn (the session says which, and why).
  std::string data, val, run, model, init, config_file, label_pattern, name_encoding;
  std::string data_root;  // a folder inside --data ({data_root})
  // Labels from a CSV/TSV and names of integer classes (DatasetOptions' fields of the same names)
  std::string labels, label_columns, images_dir, class_names;
  bool labels_are_classes = false;  // --labels values that look like tag lists taken whole (DatasetOptions')
  // Multi-label: tags separated by this in the label column; whether the --labels file's first row
  // is a header: yes, no, auto (DatasetOptions' fields of the same names)
  std::string label_separator, labels_header = "auto";
  // The validation data's own labels (TrainValOptions::val_labels): --val-labels FILE and its
  // --val-label-columns and --val-images-dir
  std::string val_labels, val_label_columns, val_images_dir;
  // Files never read (DatasetOptions::exclude)
  std::vector<std::string> exclude;
  bool cache_decompressed = false;  // a compressed tar decompressed once (ArchiveOptions)
  std::string label_kind;           // CIFAR-100: "fine" ("" the same) or "coarse" (ArchiveOptions)
  std::vector<std::string> freeze;
  // The stable fraction of --data validated on; unset: 5% (said); 0: none, no validation at all.
  // config.json records unset as 0.0, as version 1 did (the resolved split is under "data").
  std::optional<double> val_split;
  std::int64_t max_pixels = 89478485;
  SizeOption max_file_bytes;  // unset: kDefaultMaxFileBytes (DatasetOptions::max_file_bytes)
  double max_bad_fraction = 0.01;
  bool check_val = true;  // --check-val auto: a small validation set is decoded before training
  int channels = 0;       // 0: as the data
  ExifOrientation exif_orientation = ExifOrientation::apply;
  int epochs = 10, batch_size = 64, accum = 1, image_size = 0, workers = 2;  // epochs: with EpochsMode::fixed
  EpochsMode epochs_mode = EpochsMode::unset;
  std::uint64_t seed = 0;
  double lr = 1e-3, weight_decay = 0.05, label_smoothing = 0.0, clip_grad_norm = 0.0;
  double lr_backbone = 1.0;       // --lr-backbone: with --init, the rate outside the head is lr x this
  std::string class_weights;      // --class-weights: "auto" (balanced) or a CLASS,WEIGHT file; "": none
  bool balanced_sampler = false;  // --sampler balanced: each epoch draws classes alike (LoaderOptions::sample_weights)
  int test_size =
      0;  // --test-size PX: validation, and the model's recorded size (eval, predict, export); 0: image_size
  int progressive = 0;  // --progressive START_PX: training images grow to image_size (progressive_size); 0: off
  // --augment and --random-erasing: what training adds after the random crop (frugal/image/augment.h).
  AugmentOptions augment;
  // --mixup A and --cutmix A (Beta's alpha; 0: off): each batch mixed with itself reversed, timm's
  // Mixup (train/batch_mix.h). --ema DECAY (0: off): the weights' moving average, timm's ModelEmaV3
  // with warmup, is what is evaluated, kept as best and exported (train/weight_average.h).
  double mixup = 0, cutmix = 0, ema = 0;
  bool tta_flip = false;  // --tta flip: validation averages each image's logits with its mirror's
  // --recipe: "auto" (validate() resolves it to "default" without a time budget; with one the session
  // picks once its plan is known, training/recipe.h), "none", "default", "light" or "strong". Its
  // values go to the options not in `given`: the config.json keys the user set (the command line
  // and its config file record them; a program setting fields directly leaves them at a default
  // value only where it wants the recipe's).
  std::string recipe = "auto";
  std::vector<std::string> given;
  // Multi-label data: a tag is predicted when its probability reaches `threshold`, or the per-class
  // thresholds of the best F1 on the validation set when tune_thresholds (stored with the model).
  double threshold = 0.5;
  bool tune_thresholds = false;
  // Go on with the run in --run past the epochs it was started with (a larger --epochs; --lr the new
  // tail's peak): Session's ScheduleTail. Not recorded: a later resume needs no flag.
  bool extend = false;
  double warmup_fraction = 0.02;
  OptimizerKind optimizer = OptimizerKind::adamw;
  std::optional<AmpMode> amp;  // none: auto (choose_amp)
  DeviceChoice device;
  bool grad_checkpoint = false, fresh = false, deterministic = false, json = false;
  SizeOption disk_budget, gpu_memory;
  std::string workspace;
  std::optional<DeadlineSpec> deadline;
  // How long a session may run on past its deadline, or after a first signal, before its watchdog
  // ends the process (a forward that does not return): exit 75 when a checkpoint exists, else 1.
  std::chrono::seconds stop_grace{60};
  bool allow_model_code = false;  // --model FILE.pt: run any op its code holds (docs/models.md)
  TimeBudgetOption time_budget;   // with epochs auto: the steps are planned to fit it (docs/formats.md)
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
  // --pipeline N: the model cut into N stages, one per process; each step's batch flows through
  // them in micro_batches micro-batches (0: validate() makes it 2N); pipeline_split: where stages
  // 1..N-1 begin (piece names; empty: balanced by measured time).
  int pipeline = 1;
  int micro_batches = 0;
  std::vector<std::string> pipeline_split;
  std::string pipeline_balance = "time";  // or "parameters"

  bool epochs_auto() const { return epochs_mode == EpochsMode::automatic; }

  // The options as config.json and checkpoints record them (keys and values unchanged since
  // version 1, so old runs resume): one entry per row of train_options() that has a `get`.
  nlohmann::json to_json() const;
};

// The one list of train options: the config struct's fields, their config.json keys, the keys a
// resume may not change, and the command-line options (tools/frugal/torch_cmd_train.cpp) and
// TOML keys (the same names) all come from these rows.
struct TrainOption {
  const char* key;   // config.json key ("batch_size"); the option is key with '-' for '_'...
  const char* name;  // ...unless named here ("warmup" for warmup_fraction)
  const char* help;
  enum class Kind { value, values, flag } kind = Kind::value;  // one value, a list, a switch
  bool learning = false;  // changes what is learned: resuming refuses a change (learning_changes)
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

// Resuming with options that change what is learned (model, data, classes, schedule, seed, ...)
// would silently mix two experiments: returns each such difference between a checkpoint's config
// and the new one as "key: saved -> now" (empty when resuming is sound). Keys missing on either side
// are not compared.
std::vector<std::string> learning_changes(const nlohmann::json& saved, const nlohmann::json& now);

// The rules between options, one place for every way a config is made (the command line, its
// config files, a program calling train_session): decides an unset epochs mode, and refuses
// (Error(usage)) a time budget with a fixed number of epochs, epochs auto without a time budget
// or a number of epochs out of range. Idempotent; train_session() calls it too. (Decoding on the
// GPU needs the device resolved: the session refuses it on the CPU, once the device is known.)
void validate(TrainConfig& config);

// One validation pass, as the outcome reports it.
struct ValFigures {
  double accuracy = 0;  // top-1, 0 to 1 (multi-label: the share of images with every tag right)
  double loss = 0;
  std::int64_t epoch = 0;         // epochs completed when it was measured
  std::int64_t step = 0;          // optimizer steps done then
  std::optional<double> mean_ap;  // multi-label: what ranks checkpoints
};

// How a run ended when it did not fail (failures throw frugal::Error: usage, invalid data, budget),
// and what it reached: what `train --json` prints (outcome_json).
struct SessionOutcome {
  enum class Status {
    done,               // every epoch trained, the final weights saved
    stopped_resumable,  // deadline, signal, or no room for a checkpoint: a rerun of the same command continues (exit 75)
  } status = Status::done;
  std::int64_t step = 0;             // optimizer steps done when it ended
  std::int64_t resumable_step = -1;  // stopped: the checkpoint a rerun continues from
  std::string stop_reason;           // stopped: why ("deadline", "SIGTERM", no room, ...)
  std::int64_t epochs = 0;           // epochs completed (earlier sessions of the run included)
  // The last validation: this session's, or the resumed checkpoint's when it validated none.
  std::optional<ValFigures> final_val;
  // best.safetensors as the run folder holds it when the session ended ("" and nullopt when none).
  std::string best_checkpoint;
  std::optional<ValFigures> best_val;
  std::size_t classes = 0;
  std::uint64_t train_images = 0, val_images = 0;
  // Files of --data (and of --val when it names other data) left out, by reason (dataset.h's SkipReport).
  std::map<std::string, std::uint64_t> skipped, val_skipped;
  // What frugal decided that the user did not say: which files trained and validated, the
  // fraction held out (TrainVal::decided; config.json's "data").
  nlohmann::json data = nlohmann::json::object();
};

// `train --json`'s one document (CLI.md): {"exit_code", "run", "status" ("done" | "stopped"),
// "stop_reason", "epochs", "steps", "resumable_step", "val_accuracy", "val_loss" (the final
// validation; null when none ran), "best_checkpoint", "best_val_accuracy", "best_val_loss",
// "best_epoch", "classes", "train_images", "val_images", "skipped" {reason: count},
// "val_skipped", "data" {"train", "validation", "val_split", "labels"}). (A run that fails prints
// {"exit_code", "run", "status": "failed", "error"} instead.)
nlohmann::json outcome_json(const SessionOutcome& outcome, int exit_code, const std::string& run);

// The model names of the zoo (models/models.h builds them): cnn, resnet18, resnet50, efficientnet_b0.
const std::vector<std::string>& zoo_model_names();
// Whether --model's value names a file (a path, or a .pt/.pth/.ts/.jit/.torchscript name): a
// TorchScript module (models.h's load_torchscript) rather than a zoo model.
bool names_module_file(const std::string& model);

}  // namespace frugal

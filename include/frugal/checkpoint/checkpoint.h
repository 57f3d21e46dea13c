// Checkpoints: safetensors files that carry everything needed to resume a run or use its model
// (docs/formats.md, "Checkpoint file", "Run folder", "Delta checkpoint").
//
//   tensors   model weights + buffers under plain torchvision names ("conv1.weight", ...);
//             optimizer, loss-scaler, RNG and other trainer state under "frugal." + name
//   metadata  format "frugal-checkpoint", version, kind, model info, epoch/step, loader position,
//             schedule, metrics, the run's config, and "checksum" (xxh3 of the tensor payload)
//
// A checkpoint is complete when it is visible: files are published by an atomic rename, and a
// load verifies the checksum, so a torn or corrupt file is reported and the previous one used.
#pragma once

#include <torch/torch.h>

#include <condition_variable>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "frugal/budget/budget.h"
#include "frugal/util/env.h"
#include "frugal/util/serial_worker.h"
#include "frugal/util/fs.h"
#include "frugal/models/models.h"
#include "frugal/checkpoint_files/checkpoint_files.h"
#include "frugal/checkpoint_files/run_folder.h"
#include "frugal/checkpoint/safetensors.h"

namespace frugal {

inline constexpr const char* kStatePrefix = "frugal.";

// Metadata "kind": what a file holds.
//   "full"  weights + trainer state: resumable
//   "delta" like full, stored as the difference against a full checkpoint (metadata "base")
//   "best"  weights + what using them needs (best.safetensors); no trainer state
//   "model" weights written by another tool (compress: int8 tensors + scales); not resumable
struct Checkpoint {
  std::string kind = "full";
  ModelInfo model;
  NamedTensors weights;                                // torchvision names
  NamedTensors state;                                  // trainer state; names WITHOUT kStatePrefix (added on disk)
  std::int64_t epoch = 0;                              // epochs completed
  std::int64_t step = 0;                               // optimizer steps completed (global)
  nlohmann::json loader = nlohmann::json::object();    // data loader position (trainer's format)
  nlohmann::json schedule = nlohmann::json::object();  // LR schedule state
  nlohmann::json metrics = nlohmann::json::object();   // latest metrics, e.g. {"val_accuracy":0.9}
  nlohmann::json config = nlohmann::json::object();    // the run's configuration
  std::optional<double> metric_value;                  // what keep-best and best.safetensors rank by
  std::string metric_name;                             // e.g. "val_accuracy"
  bool higher_is_better = true;
  Metadata extra;  // further string metadata, kept as is (e.g. compress's "quantization")

  // Weights as a map (for frugal::load_weights).
  std::map<std::string, torch::Tensor> weight_map() const;
  const torch::Tensor* find_state(const std::string& name) const;
};

NamedTensors to_named(const std::map<std::string, torch::Tensor>& tensors);

// Checkpoint <-> safetensors content. The checksum is added by save and verified by load.
Metadata checkpoint_metadata(const Checkpoint& ckpt);
Checkpoint checkpoint_from_file(SafetensorsFile file);

// Writes a checkpoint (any kind but "delta") crash-safely with its checksum.
void save_checkpoint(const std::filesystem::path& path, const Checkpoint& ckpt, Env& env = Env::real());

// Loads and verifies a checkpoint file (full, best, model, or a delta with its base beside it).
// Throws Error(invalid) naming the file for a bad format/version or checksum mismatch, and for
// anything but a regular file (fs.h's open_regular: never a FIFO waited on or a device read without
// end); `links` as there: Links::refuse for a file found in a run folder. A delta's base, found
// beside it, is never read through a link.
Checkpoint load_checkpoint(const std::filesystem::path& path, Links links = Links::follow);

// CKPT on the command line: a file, or a run folder meaning its best.safetensors. A file the user
// named may be a link to a regular file; a run folder's best.safetensors is read only as the
// regular file itself (Error(invalid), exit 3, naming it when it is a FIFO, a device or a link).
struct CkptFile {
  std::filesystem::path path;
  Links links = Links::follow;
};
CkptFile resolve_ckpt_file(const std::filesystem::path& ckpt);
inline std::filesystem::path resolve_ckpt(const std::filesystem::path& ckpt) { return resolve_ckpt_file(ckpt).path; }
inline Checkpoint load_ckpt_arg(const std::filesystem::path& ckpt) {
  const CkptFile f = resolve_ckpt_file(ckpt);
  return load_checkpoint(f.path, f.links);
}

// Deep copy to contiguous CPU tensors, so training can go on mutating the originals.
Checkpoint snapshot(const Checkpoint& ckpt);

// --- Model files ---------------------------------------------------------------------------------
// Compressed model files (docs/compressed-model.md): a checkpoint of kind "model" whose metadata
// "compression" indexes the encoded weights (NAME values, NAME@mask bitmask, NAME@scale int8 scales).
// Written by compress (save_compressed_model), read here.
inline constexpr const char* kCompressionKey = "compression";
inline constexpr const char* kCompressedFormat = "frugal-compressed";
inline constexpr int kCompressedVersion = 1;
inline constexpr const char* kCompressedMaskSuffix = "@mask";
inline constexpr const char* kCompressedScaleSuffix = "@scale";

// Float32 tensors under torchvision names. Throws Error(invalid) naming `source` and the tensor for
// inconsistent values/mask/scale.
std::map<std::string, torch::Tensor> decode_weights(const NamedTensors& stored, const nlohmann::json& index,
                                                    const std::string& source);

struct LoadedModel {
  ModelInfo info;
  std::shared_ptr<Model> model;  // on the CPU, in eval mode
  // CKPT was weights without frugal's metadata: info.classes are "0".."N-1" (the head's width), which
  // a command with data replaces by the data's classes in sorted order (use_data_classes).
  bool foreign = false;
};

// CKPT that holds weights only (a torch.save state dict, safetensors from another tool, a Hugging
// Face folder), and what using them needs besides.
struct ForeignModelOptions {
  std::string model;   // a zoo name or a TorchScript module's file; empty: the zoo model whose names the weights have
  int image_size = 0;  // 0: the model's default
  // A TorchScript module (CKPT's recorded one, or model FILE.pt) may run any op, not only the
  // allowlist's: {allow_model_code} (set_allow_model_code, models.h). For every CKPT, not only foreign ones.
  bool allow_model_code = false;
};

// Whether CKPT is weights from elsewhere: safetensors without frugal's metadata, a torch.save file
// (zip or legacy), or a Hugging Face folder. A missing path, a run folder and any other file are
// not: they are read (and refused) as frugal's.
bool is_foreign_weights(const std::filesystem::path& ckpt);

// A foreign model's classes become the data's, in sorted order (torchvision's ImageFolder numbers
// them so): Error(invalid) naming both counts when they differ. No-op for frugal's checkpoints.
void use_data_classes(LoadedModel& loaded, const std::vector<std::string>& data_classes, const std::string& data);

// CKPT as CLI.md has it: a checkpoint file, best.safetensors, a run folder (its best checkpoint) or
// a compressed model file. int8 weights are dequantized to float32 here (see docs/compressed-model.md
// for why), and a note on stderr says so.
// Weights from elsewhere are read as `foreign` says (weights_file.h's formats), strictly: every
// tensor of the model, none other; the log says what was read as what.
LoadedModel load_model_any(const std::filesystem::path& ckpt, const ForeignModelOptions& foreign = {});

// What a model file holds, for reports: size on disk and its "compression" metadata (null when none).
struct ModelFileSummary {
  std::filesystem::path file;
  std::uint64_t bytes = 0;
  nlohmann::json compression;
};
ModelFileSummary summarize_model_file(const std::filesystem::path& ckpt);

// --- Trainer state helpers -------------------------------------------------------------------
// Optimizer state as named tensors "optim.<param name>.<field>" (+ "optim.<param>.step" as I64),
// for AdamW/Adam (exp_avg, exp_avg_sq, max_exp_avg_sq, step) and SGD (momentum_buffer).
// `params` are the optimizer's parameters with their torchvision names, in optimizer order.
NamedTensors optimizer_state(torch::optim::Optimizer& optimizer, const NamedTensors& params);
// Restores what optimizer_state() saved; parameters without saved state get none (fresh).
void load_optimizer_state(torch::optim::Optimizer& optimizer, const NamedTensors& params, const Checkpoint& ckpt);
torch::Tensor cpu_rng_state();  // (N,) uint8, torch's default CPU generator
void set_cpu_rng_state(const torch::Tensor& state);
// The default generator of a CUDA device (dropout and stochastic depth on the GPU draw from it):
// (16,) uint8, seed and Philox offset. Undefined for the CPU or when LibTorch has no CUDA.
torch::Tensor device_rng_state(const torch::Device& device);
void set_device_rng_state(const torch::Device& device, const torch::Tensor& state);

// --- Delta checkpoints -------------------------------------------------------------------------
// Each tensor stored as zstd(bits XOR base bits) (U8), unchanged tensors omitted; restoring is
// bit-exact. Metadata as a full checkpoint plus "base" (file name) and "base_checksum".
std::string encode_delta_bytes(const Checkpoint& ckpt, const Checkpoint& base, const std::string& base_name,
                               const std::string& base_checksum);
void save_delta_checkpoint(const std::filesystem::path& path, const Checkpoint& ckpt, const Checkpoint& base,
                           const std::filesystem::path& base_path, Env& env = Env::real());

// --- The run folder ------------------------------------------------------------------------------
struct CheckpointOptions {
  RetentionPolicy retention;
  bool delta = false;  // --delta: store deltas between full checkpoints
  int full_every = 4;  // with delta: every N-th save is a full checkpoint
  bool write_best = true;
};

struct SaveResult {
  enum class Status { saved, weights_only, skipped_no_room, disk_full };
  Status status = Status::saved;
  std::filesystem::path file;  // the checkpoint written (empty unless saved)
  std::uint64_t bytes = 0;
  bool best_updated = false;
  std::vector<std::filesystem::path> deleted;  // by retention after the commit
  double seconds = 0;
  std::string message;  // for weights_only / skipped / disk_full: what happened and why
};

// Owns the checkpoints of one run folder. Not thread-safe except evictable(); the
// CheckpointWriter serializes saves.
class CheckpointManager {
 public:
  CheckpointManager(std::filesystem::path run, CheckpointOptions options, Env& env = Env::real());

  // Removes leftover "*.frugal-tmp-*" in the run folder; returns how many.
  int remove_temporaries();

  // For --fresh: removes the run's checkpoints and best.safetensors, which belong to the run being
  // started over (left in place, their higher step numbers would rank them newer than the new
  // run's checkpoints). Returns how many files were removed.
  int discard_previous();

  // The newest checkpoint that loads and verifies (deltas resolved). Corrupt or truncated newer
  // files are named in `skipped` (and noted on stderr); they are kept for inspection.
  struct Resume {
    Checkpoint ckpt;
    std::filesystem::path file;
    std::vector<std::string> skipped;
  };
  std::optional<Resume> load_latest();

  // Writes the next checkpoint (full, or delta when enabled and a base exists), updates
  // best.safetensors when the metric improved (or always when there is no metric), then deletes
  // what retention no longer needs. With a DiskBudget every file asks make_room() first; without
  // room for the checkpoint, only best.safetensors (weights_only: not resumable from here), else
  // nothing (skipped_no_room); without room for best.safetensors it is not updated (noted). A
  // disk-full error while writing leaves every earlier file intact and returns disk_full. Other
  // errors throw.
  SaveResult save(const Checkpoint& ckpt);

  // Before training: throws Error(budget) (exit 4) when the disk budget cannot keep this run
  // resumable, i.e. hold two full checkpoints (the last good one stays until the next is
  // committed) plus best.safetensors plus `log_bytes`, counting this run's own checkpoint files as
  // room. Says what budget would fit. No-op without a DiskBudget.
  void require_room_for_run(std::uint64_t weight_bytes, std::uint64_t state_bytes, std::uint64_t log_bytes);

  // Bytes the next save needs free on the disk, budget or not: a full checkpoint beside the last
  // good one (which stays until the new one is committed), a new best.safetensors beside the old,
  // and `log_bytes`.
  std::uint64_t room_for_save(std::uint64_t weight_bytes, std::uint64_t state_bytes, std::uint64_t log_bytes) const;
  // Before training: throws Error(budget) (exit 4, nothing was changed) when the file system holding
  // the run has less than room_for_save() free, saying how much to free. A rerun on a disk that is
  // still full is refused here instead of training and failing at its first save again.
  void require_free_space(std::uint64_t weight_bytes, std::uint64_t state_bytes, std::uint64_t log_bytes);

  // Step of the newest checkpoint written or loaded and verified, which a rerun resumes from;
  // none when there is none (a rerun would start over). Thread-safe.
  std::optional<std::int64_t> resumable_step() const;
  // The same in words, for messages.
  std::string resumable_from() const;

  // Checkpoints retention would delete now (DiskBudget's evictable callback). Thread-safe.
  std::vector<std::filesystem::path> evictable() const;

  void set_disk_budget(DiskBudget* budget);
  const std::filesystem::path& run() const { return run_; }
  const CheckpointOptions& options() const { return options_; }

 private:
  SaveResult write_checkpoint(const Checkpoint& ckpt);
  bool update_best(const Checkpoint& ckpt);
  std::vector<std::filesystem::path> apply_retention();
  std::uint64_t estimate_bytes(const Checkpoint& ckpt) const;  // allocated, full checkpoint
  std::uint64_t best_bytes(const Checkpoint& ckpt) const;      // allocated, best.safetensors

  std::filesystem::path run_;
  CheckpointOptions options_;
  Env& env_;
  DiskBudget* budget_ = nullptr;
  std::optional<Checkpoint> base_;  // the last full checkpoint written or loaded (for deltas)
  std::filesystem::path base_path_;
  std::string base_checksum_;
  std::filesystem::path known_good_;  // newest checkpoint written or loaded and verified: never evicted
  std::optional<std::int64_t> known_good_step_;
  int saves_since_full_ = 0;
  std::optional<double> best_metric_;
  bool best_loaded_ = false;
  mutable std::mutex mu_;
};

// Saves in the background: submit() snapshots the state to host memory on the caller's thread
// (the only stall training sees), then a worker thread writes it. At most one save is pending:
// submit() first waits for the previous one. Errors surface from the next submit() or wait().
class CheckpointWriter {
 public:
  explicit CheckpointWriter(CheckpointManager& manager);
  ~CheckpointWriter();  // waits for the pending save (errors are noted, not thrown)
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  void submit(const Checkpoint& ckpt);
  // Waits until no save is pending; returns the last result, rethrows the save's error.
  SaveResult wait();
  bool busy() const;

 private:
  // Host tensors of the previous save, reused by the next snapshot: copying into memory that is
  // already mapped costs a memcpy, while fresh buffers cost a page fault per 4 KiB on top, which
  // made the training stall of a background save longer than a synchronous save. Holds one
  // host copy of the state between saves. Written by the worker's Done (its thread) before
  // wait() returns, read by submit() after it.
  std::vector<torch::Tensor> spare_;
  SerialWorker<Checkpoint, SaveResult> worker_;  // last: its thread stops before spare_ goes
};

}  // namespace frugal

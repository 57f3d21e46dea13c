// The run folder: its file names and finding run folders, without LibTorch, so `frugal du` and
// `frugal clean` can use it. The checkpoint files in it (names, headers, verification, retention)
// are checkpoint_files.h's. The layout is documented in docs/formats.md, "Run folder":
//
//   RUN/config.json                          the run's configuration (JSON; keep_best, keep_last,
//                                            disk_budget, ... as in `frugal train` options)
//   RUN/metrics.jsonl                        one JSON object per evaluation
//   RUN/ckpt-e0003-s000120.safetensors       full checkpoint after epoch 3 / global step 120
//   RUN/ckpt-e0003-s000150.delta.safetensors delta checkpoint (against a full one)
//   RUN/best.safetensors                     weights + metadata for eval/predict/export
//   *.frugal-tmp-*                           interrupted atomic writes (removed at start/clean)
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "frugal/checkpoint_files/checkpoint_files.h"
#include "frugal/util/fs.h"

namespace frugal {

inline constexpr const char* kBestFile = "best.safetensors";
inline constexpr const char* kConfigFile = "config.json";
inline constexpr const char* kMetricsFile = "metrics.jsonl";

// A folder frugal trains into: its config.json says "format": "frugal-run-config", or it holds
// checkpoint files (ckpt-*.safetensors). Another program's folder with a config.json of its own
// (a Hugging Face model) is not one. Reads only a regular config.json of at most 1 MiB; never throws.
bool is_run_folder(const std::filesystem::path& dir);

// RUN/config.json parsed, or nullopt when there is none. Read only as a regular file in the folder
// (not a link, FIFO or device) of at most 1 MiB; anything else, and JSON that is not an object, is
// Error(invalid) naming the file: `du` and `clean` stop before deleting anything.
std::optional<nlohmann::json> read_run_config(const std::filesystem::path& run);

// A whole number in a run's config.json: an integer, or a number written with no fraction (10.0,
// 1e1), from 0 to `max`; nullopt for anything else (a negative, a fraction, a string, a bool, ...).
std::optional<std::uint64_t> config_whole_number(const nlohmann::json& v, std::uint64_t max);

// DIR itself when it is a run folder, else every run folder below it (at most 3 levels deep).
std::vector<std::filesystem::path> find_run_folders(const std::filesystem::path& dir);

// Whose a folder is, decided before a training writes into it (or --fresh removes anything from
// it): frugal replaces config.json and best.safetensors, appends to metrics.jsonl and deletes
// checkpoints and events in a run folder, which must not happen to a folder of someone else's
// (a Hugging Face model folder holds a config.json and a model.safetensors too).
//   absent   nothing there yet
//   empty    no entries, hidden ones (".ipynb_checkpoints", ...) aside: frugal never writes,
//            reads or removes a name starting with "."
//   frugal   its config.json says "format": "frugal-run-config"; or, without one, it holds only
//            names frugal writes there: metrics.jsonl, events.out.tfevents.*.frugal, temporaries,
//            and checkpoints (ckpt-*, best.safetensors) whose headers say "frugal-checkpoint"
//   foreign  anything else; `reasons` names up to kForeignShown of what is not frugal's
//            ("config.json is not a frugal run configuration", "model.safetensors"), `foreign`
//            counts them all
// Files are read bounded (config.json up to 1 MiB, checkpoint headers as the header reader caps
// them) and never through a link. One of frugal's own names that is not a regular file (a FIFO,
// a device, a symbolic link) is Error(invalid) naming it: frugal would block on it or follow it out
// of the folder. A ckpt-* that is not is foreign only when config.json does not vouch for the
// folder; in a run folder it is an unreadable checkpoint (the loader skips it).
struct RunFolderOwner {
  enum class Kind { absent, empty, frugal, foreign };
  Kind kind = Kind::absent;
  std::vector<std::string> reasons;
  std::size_t foreign = 0;
};
inline constexpr std::size_t kForeignShown = 5;
RunFolderOwner run_folder_owner(const std::filesystem::path& dir);

// The smallest "disk_budget" (bytes, or a size text like "20G"; "" or null: none) in the runs'
// config.json, with the file it came from. Any other value is Error(invalid) naming file and key.
std::optional<std::pair<std::uint64_t, std::filesystem::path>> budget_from_runs(
    const std::vector<std::filesystem::path>& runs);

// A run folder taken for one training (every front end: the CLI's session, Python's Checkpointer).
// Two trainings of one run folder (a notebook cell run twice) would delete each other's
// checkpoints and mix their metrics, and a folder of someone else's (a Hugging Face model folder)
// would have its config.json and model replaced: the folder is made if missing, locked before
// anything in it is read (the second process fails at once, Error(io), exit 1, naming the first),
// and refused with Error(usage) (exit 2) when frugal did not make it, before anything is written.
// `lock` false (a rank other than 0, which never writes the folder): only made.
struct RunFolderClaim {
  std::vector<std::filesystem::path> created;  // folders made for it, deepest first
  std::optional<FileLock> lock;                // held for the training's life
  // Refused before anything was written: removes the folders this claim made that are still
  // empty (rmdir refuses anything else). The lock is still held, so nothing else uses them.
  void undo() const;
};
RunFolderClaim claim_run_folder(const std::filesystem::path& run, bool lock, const std::string& doing);

// Makes `dir` and its missing parents; returns the folders this process made, deepest first (one
// that another process made at the same moment is not this one's to remove).
std::vector<std::filesystem::path> make_folders(const std::filesystem::path& dir);

}  // namespace frugal

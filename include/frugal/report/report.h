// `frugal report`'s page: one self-contained HTML file of a run (docs/cli.md, "report"). Torch-free:
// the command gathers a JSON document (the run folder's history here, the evaluation and thumbnails
// from frugal-torch) and render_report() turns it into HTML with inline SVG, no script, no request.
//
// The document (every key optional unless said; absent parts are left off the page):
//   "run": the run folder's path, "generated": the time of writing (text)
//   "config": config.json as it is
//   "metrics": metrics.jsonl's lines (objects), in file order (epoch records' "train_points": the
//              fine curves)
//   "sessions": [{"file", "start", "end" (Unix seconds), "first_step", "last_step",
//                 "scalars": {tag: [[step, wall seconds, value], ...]}}]  (read_run_history; the
//                 "session/end" scalar says how a session ended, docs/formats.md)
//   "checkpoints": [{"name", "bytes", "epoch", "step", "valid", "metric"}], "disk": {"used", "budget"}
//   "environment": doctor --json's document
//   "eval": {"data", "samples", "accuracy", "loss", "classes": [names], "confusion": [[int]],
//            "per_class_report" (or "per_class"): [{"class", "precision", "recall", "f1", "support"}],
//            "macro", "weighted" (eval --json's keys),
//            "worst": [{"name", "true", "predicted", "probability", "loss", "thumbnail" (data: URI)}],
//            "skipped": {reason: count}}
//           a multi-label run's: {"multi_label": true, "mean_ap", "f1", "precision", "recall",
//            "exact_match", "loss", "samples", "data", "classes", "thresholds" (one, or one per class),
//            "per_class": {tag: {"ap", "precision", "recall", "f1", "positives", "best_threshold"}}}
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace frugal::report {

// Text for HTML element content and attribute values: & < > " ' as entities, bytes that are not
// UTF-8 and control characters (but tab and newline) as U+FFFD.
std::string escape_html(std::string_view text);

// An order of the classes (a permutation of 0..n-1) in which classes confused with each other sit
// side by side: a chain starts from the unplaced class with the most confusions (both ways, with
// any class) and grows greedily, the unplaced class most confused with either end joining at that
// end, until none is; then the next chain. Classes confused with nothing keep their order at the
// end. Deterministic (ties: the lower index). O(n^2) per chain.
std::vector<int> cluster_order(const std::vector<std::vector<std::int64_t>>& confusion);

// A row's most confused classes: (predicted class, count) of the off-diagonal cells of `row`
// (true class `true_class`), largest first, at most `n`, zeros left out.
std::vector<std::pair<int, std::int64_t>> most_confused(const std::vector<std::int64_t>& row, int true_class, int n);

// The run folder's own record, as the document's "config", "metrics", "sessions", "checkpoints"
// and "disk": config.json (Error(invalid) when it is not a frugal run folder's), metrics.jsonl
// (lines that do not parse are skipped), the TensorBoard events files (one per session; a
// truncated record ends its file), the checkpoints (headers only) and the folder's disk use
// against config.json's disk_budget.
nlohmann::json read_run_history(const std::filesystem::path& run);

// The scalars of one TensorBoard events file's records: {tag: [[step, wall, value], ...]}, and
// the file's first and last wall time and step ("start", "end", "first_step", "last_step").
nlohmann::json read_events(std::string_view bytes);

// metrics.jsonl's text as an array of its lines' objects: a line that is not a JSON object (torn,
// hand-edited) is skipped.
nlohmann::json read_metrics_lines(std::string_view text);

// A thumbnail of an encoded image (any format image.h decodes) as a data: URI of a JPEG whose longer
// side is at most `max_side` pixels. Error(invalid) for an image that does not decode.
std::string thumbnail_data_uri(std::span<const std::uint8_t> bytes, int max_side, const std::string& where);

// The page. Never throws for a document of unexpected shape: a part it cannot read is left off.
std::string render_report(const nlohmann::json& doc);

}  // namespace frugal::report

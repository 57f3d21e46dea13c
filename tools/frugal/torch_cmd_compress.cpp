// frugal compress CKPT -o OUT [--prune FRACTION] [--prune-scope layer|global]
//                  [--quantize int8|fp16] [--finetune-epochs N [--finetune-data ARCHIVE]] [--data ARCHIVE] [--json]
#include <cstdio>
#include <set>
#include <filesystem>
#include <optional>

#include "cli.h"
#include "commands.h"
#include "run_lock.h"
#include "frugal/checkpoint/checkpoint.h"
#include "frugal/compress/compress.h"
#include "frugal/dataset/dataset.h"
#include "frugal/util/error.h"
#include "frugal/util/progress.h"
#include "frugal/util/units.h"

namespace frugal::cli {
namespace {

double zero_fraction(Model& model) {
  std::int64_t zeros = 0, total = 0;
  for (const auto& [name, w] : prunable_weights(model)) {
    zeros += (w == 0).sum().item<std::int64_t>();
    total += w.numel();
  }
  return total ? static_cast<double>(zeros) / static_cast<double>(total) : 0.0;
}

// The model's weights as a plain float32 safetensors file, the baseline sizes are compared with
// (the input may be a full checkpoint that also carries optimizer state).
std::uint64_t float32_model_bytes(const Model& model) {
  return safetensors_bytes(to_named(state_dict(model)), {}).size();
}

// LibTorch's quantized engines on this machine (e.g. fbgemm): reported, not used (see
// docs/compressed-model.md, "Inference").
nlohmann::json quantized_engines() {
  nlohmann::json out = nlohmann::json::array();
  for (auto e : at::globalContext().supportedQEngines()) out.push_back(c10::toString(e));
  return out;
}

std::string percent(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f%%", 100.0 * x);
  return b;
}

struct CompressArgs {
  std::string ckpt, out, scope = "global", quantize = "none", data, finetune_data;
  double prune = 0;
  int finetune_epochs = 0;
  bool json = false;
  double finetune_lr = 1e-4;
  int batch_size = 64;
  ForeignModelOptions code;  // only its allow_model_code: CKPT is frugal's
  DatasetOptions labels;     // where --data's labels come from, as train took them
};

void add_compress_options(CLI::App& app, CompressArgs& a) {
  app.add_option("CKPT", a.ckpt, "checkpoint file, compressed model or run folder")->required();
  app.add_option("-o,--output", a.out, "the compressed model file to write (.safetensors)")->required();
  app.add_option("--prune", a.prune, "fraction of convolution/linear weights to zero, by magnitude (0..1)")
      ->check(number_in(0, 0.999));
  app.add_option("--prune-scope", a.scope,
                 "global (default): one magnitude threshold over all layers; layer: the fraction in each layer (harsh "
                 "on small layers: 50% per layer costs the Fashion cnn 50 points, 50% global half a point)")
      ->check(CLI::IsMember({"layer", "global"}));
  app.add_option("--quantize", a.quantize, "int8 (per-channel, symmetric) or fp16 weights")
      ->check(CLI::IsMember({"none", "int8", "fp16"}));
  app.add_option("--finetune-epochs", a.finetune_epochs, "epochs of fine-tuning after pruning (masks kept fixed)")
      ->check(integer_in(0, 1000));
  app.add_option("--data", a.data, "archive to measure accuracy before and after on");
  app.add_option("--finetune-data", a.finetune_data, "archive to fine-tune on (default: --data)");
  app.add_option("--finetune-lr", a.finetune_lr, "fine-tuning learning rate (default 1e-4)")
      ->check(number_at_least(0, /*exclusive=*/true));
  app.add_option("--batch-size", a.batch_size, "fine-tuning batch size (default 64)")->check(integer_in(1, 1 << 16));
  app.add_flag("--json", a.json, "print a JSON report on stdout");
  add_model_code_option(app, a.code.allow_model_code);
  add_label_options(app, a.labels);
}

// The options that only make sense together; --finetune-data defaults to --data.
void check_compress_args(CompressArgs& a) {
  if (a.prune == 0 && a.quantize == "none")
    fail(ErrorKind::usage, "", "--prune FRACTION and/or --quantize int8|fp16", "neither",
         "e.g. --prune 0.5 --quantize int8");
  if (a.finetune_data.empty()) a.finetune_data = a.data;
  if (a.finetune_epochs > 0 && (a.prune == 0 || a.finetune_data.empty()))
    fail(ErrorKind::usage, "--finetune-epochs", "--prune FRACTION and --data (or --finetune-data) ARCHIVE",
         a.prune == 0 ? "no --prune" : "no data", "fine-tuning recovers accuracy lost to pruning, on that data");
  if (a.finetune_epochs > 0 && a.finetune_data == a.data)
    note("note: fine-tuning on " + a.data +
         ", the archive accuracy is measured on; pass --finetune-data "
         "TRAIN_ARCHIVE to keep the after-accuracy an unseen-data figure");
}

CompressOptions compress_options(const CompressArgs& a) {
  CompressOptions options;
  options.prune = a.prune;
  options.prune_scope = a.scope == "global" ? PruneScope::global : PruneScope::layer;
  options.weights = a.quantize == "int8"   ? WeightFormat::int8
                    : a.quantize == "fp16" ? WeightFormat::float16
                                           : WeightFormat::float32;
  options.finetune_epochs = a.finetune_epochs;
  return options;
}

// A TorchScript module: its Conv2d and Linear layers are compressed, everything else is kept as
// trained; say which. The parameters kept (none for frugal's own models).
std::vector<std::string> parameters_left_alone(const LoadedModel& model) {
  std::vector<std::string> left_alone;
  if (model.info.name != kTorchScriptModel) return left_alone;
  std::set<std::string> layers;
  for (const auto& [name, w] : prunable_weights(*model.model)) layers.insert(name);
  for (const auto& p : model.model->named_parameters())
    if (!layers.count(p.key())) left_alone.push_back(p.key());
  std::string examples;
  for (std::size_t i = 0; i < left_alone.size() && i < 4; ++i) examples += (i ? ", " : "") + left_alone[i];
  note("compress: the module's " + std::to_string(layers.size()) + " Conv2d and Linear weights are compressed; " +
       std::to_string(left_alone.size()) + " other parameters are kept as trained" +
       (examples.empty() ? std::string() : " (" + examples + (left_alone.size() > 4 ? ", ..." : "") + ")"));
  return left_alone;
}

void prune_and_finetune(const CompressArgs& a, const CompressOptions& options, LoadedModel& model) {
  if (a.prune <= 0) return;
  const auto masks = l1_prune_masks(*model.model, a.prune, options.prune_scope);
  apply_masks(*model.model, masks);
  if (a.finetune_epochs <= 0) return;
  FinetuneOptions f;
  f.dataset = a.labels;
  f.epochs = a.finetune_epochs;
  f.lr = a.finetune_lr;
  f.batch_size = a.batch_size;
  finetune_pruned(*model.model, model.info, masks, a.finetune_data, f);
}

// What compress measured: the files' sizes, the sparsity, and the accuracy before and after when
// --data was given.
struct CompressReport {
  std::string model;
  std::vector<std::string> left_alone;
  ModelFileSummary input, output;
  std::uint64_t baseline_bytes = 0;
  double sparsity = 0, reduction = 0;
  std::optional<AccuracyReport> acc_before, acc_after;
};

void print_compress_json(const CompressArgs& a, const CompressReport& r) {
  nlohmann::json doc{
      {"input", {{"file", r.input.file.string()}, {"bytes", r.input.bytes}, {"float32_bytes", r.baseline_bytes}}},
      {"output", {{"file", a.out}, {"bytes", r.output.bytes}}},
      {"size_reduction", r.reduction},
      {"model", r.model},
      {"left_alone", r.left_alone},
      {"prune", a.prune},
      {"prune_scope", a.scope},
      {"quantize", a.quantize},
      {"sparsity", r.sparsity},
      {"finetune_epochs", a.finetune_epochs},
      {"inference", a.quantize == "int8" ? "float32 (int8 weights dequantized at load)" : "float32"},
      {"quantized_engines", quantized_engines()}};
  if (r.acc_before) {
    doc["data"] = a.data;
    doc["images"] = r.acc_before->images;
    doc["input"]["accuracy"] = r.acc_before->accuracy;
    doc["output"]["accuracy"] = r.acc_after->accuracy;
    doc["accuracy_change"] = r.acc_after->accuracy - r.acc_before->accuracy;
    doc["metric"] = r.acc_before->metric;  // "accuracy", or a multi-label model's "mean AP"
  }
  print_json(doc);
}

void print_compress_table(const CompressArgs& a, const CompressReport& r) {
  std::printf("%-10s %14s %14s\n", "", "before", "after");
  std::printf("%-10s %14s %14s   (%s smaller than the float32 weights; input file %s)\n", "size",
              format_size(r.baseline_bytes).c_str(), format_size(r.output.bytes).c_str(), percent(r.reduction).c_str(),
              format_size(r.input.bytes).c_str());
  std::printf("%-10s %14s %14s\n", "sparsity", "", percent(r.sparsity).c_str());
  if (r.acc_before)
    std::printf("%-10s %14s %14s   (%+.2f points, %s)\n", r.acc_before->metric.c_str(),
                percent(r.acc_before->accuracy).c_str(), percent(r.acc_after->accuracy).c_str(),
                100.0 * (r.acc_after->accuracy - r.acc_before->accuracy),
                count_of(static_cast<std::uint64_t>(r.acc_before->images), "image").c_str());
  note("wrote " + a.out);
}

// CKPT read, compressed and written; what was written read back as eval/predict will read it.
CompressReport compress_model(const CompressArgs& a) {
  const CompressOptions options = compress_options(a);
  auto before = load_model_any(a.ckpt, a.code);
  // Weights from elsewhere number their classes; with --data they take the data's class names in
  // sorted order, as eval gives them.
  if (before.foreign && !a.data.empty()) {
    DatasetOptions d = a.labels;
    d.channels = before.info.channels;
    use_data_classes(before, Dataset::open(a.data, d)->classes(), a.data);
  }
  CompressReport r;
  r.model = before.info.name;
  r.input = summarize_model_file(a.ckpt);
  r.left_alone = parameters_left_alone(before);
  r.baseline_bytes = float32_model_bytes(*before.model);
  if (!a.data.empty()) r.acc_before = measure_accuracy(*before.model, before.info, a.data, a.labels);
  prune_and_finetune(a, options, before);
  r.sparsity = zero_fraction(*before.model);
  const auto run_lock = lock_run_folder_of(a.out, "writing a compressed model into this run folder");
  save_compressed_model(a.out, before.info, *before.model, options);

  auto after = load_model_any(a.out, a.code);
  r.output = summarize_model_file(a.out);
  if (!a.data.empty()) r.acc_after = measure_accuracy(*after.model, after.info, a.data, a.labels);
  r.reduction = 1.0 - static_cast<double>(r.output.bytes) / static_cast<double>(r.baseline_bytes);
  return r;
}

}  // namespace

int cmd_compress(int argc, char** argv) {
  CLI::App app(
      "Make a model smaller: L1 pruning of convolution/linear weights and int8 or fp16 "
      "storage, written as a compressed model file that eval, predict and export accept.",
      "compress");
  CompressArgs a;
  add_compress_options(app, a);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  Progress::set_quiet(a.json);
  check_compress_args(a);
  const CompressReport r = compress_model(a);
  if (a.json)
    print_compress_json(a, r);
  else
    print_compress_table(a, r);
  return 0;
}

}  // namespace frugal::cli

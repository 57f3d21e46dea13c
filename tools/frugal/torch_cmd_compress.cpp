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

}  // namespace

int cmd_compress(int argc, char** argv) {
  CLI::App app(
      "Make a model smaller: L1 pruning of convolution/linear weights and int8 or fp16 "
      "storage, written as a compressed model file that eval, predict and export accept.",
      "compress");
  std::string ckpt, out, scope = "global", quantize = "none", data, finetune_data;
  double prune = 0;
  int finetune_epochs = 0;
  bool json = false;
  app.add_option("CKPT", ckpt, "checkpoint file, compressed model or run folder")->required();
  app.add_option("-o,--output", out, "the compressed model file to write (.safetensors)")->required();
  app.add_option("--prune", prune, "fraction of convolution/linear weights to zero, by magnitude (0..1)")
      ->check(number_in(0, 0.999));
  app.add_option("--prune-scope", scope,
                 "global (default): one magnitude threshold over all layers; layer: the fraction in each layer (harsh "
                 "on small layers: 50% per layer costs the Fashion cnn 50 points, 50% global half a point)")
      ->check(CLI::IsMember({"layer", "global"}));
  app.add_option("--quantize", quantize, "int8 (per-channel, symmetric) or fp16 weights")
      ->check(CLI::IsMember({"none", "int8", "fp16"}));
  app.add_option("--finetune-epochs", finetune_epochs, "epochs of fine-tuning after pruning (masks kept fixed)")
      ->check(integer_in(0, 1000));
  app.add_option("--data", data, "archive to measure accuracy before and after on");
  app.add_option("--finetune-data", finetune_data, "archive to fine-tune on (default: --data)");
  double finetune_lr = 1e-4;
  int batch_size = 64;
  app.add_option("--finetune-lr", finetune_lr, "fine-tuning learning rate (default 1e-4)")
      ->check(number_at_least(0, /*exclusive=*/true));
  app.add_option("--batch-size", batch_size, "fine-tuning batch size (default 64)")->check(integer_in(1, 1 << 16));
  app.add_flag("--json", json, "print a JSON report on stdout");
  ForeignModelOptions code;  // only its allow_model_code: CKPT is frugal's
  add_model_code_option(app, code.allow_model_code);
  DatasetOptions labels;  // where --data's labels come from, as train took them
  add_label_options(app, labels);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  Progress::set_quiet(json);

  if (prune == 0 && quantize == "none")
    fail(ErrorKind::usage, "", "--prune FRACTION and/or --quantize int8|fp16", "neither",
         "e.g. --prune 0.5 --quantize int8");
  if (finetune_data.empty()) finetune_data = data;
  if (finetune_epochs > 0 && (prune == 0 || finetune_data.empty()))
    fail(ErrorKind::usage, "--finetune-epochs", "--prune FRACTION and --data (or --finetune-data) ARCHIVE",
         prune == 0 ? "no --prune" : "no data", "fine-tuning recovers accuracy lost to pruning, on that data");
  if (finetune_epochs > 0 && finetune_data == data)
    note("note: fine-tuning on " + data +
         ", the archive accuracy is measured on; pass --finetune-data "
         "TRAIN_ARCHIVE to keep the after-accuracy an unseen-data figure");

  CompressOptions options;
  options.prune = prune;
  options.prune_scope = scope == "global" ? PruneScope::global : PruneScope::layer;
  options.weights = quantize == "int8"   ? WeightFormat::int8
                    : quantize == "fp16" ? WeightFormat::float16
                                         : WeightFormat::float32;
  options.finetune_epochs = finetune_epochs;

  auto before = load_model_any(ckpt, code);
  // Weights from elsewhere number their classes; with --data they take the data's class names in
  // sorted order, as eval gives them.
  if (before.foreign && !data.empty()) {
    DatasetOptions d = labels;
    d.channels = before.info.channels;
    use_data_classes(before, Dataset::open(data, d)->classes(), data);
  }
  const auto input = summarize_model_file(ckpt);
  // A TorchScript module: its Conv2d and Linear layers are compressed, everything else is kept as
  // trained; say which.
  std::vector<std::string> left_alone;
  if (before.info.name == kTorchScriptModel) {
    std::set<std::string> layers;
    for (const auto& [name, w] : prunable_weights(*before.model)) layers.insert(name);
    for (const auto& p : before.model->named_parameters())
      if (!layers.count(p.key())) left_alone.push_back(p.key());
    std::string examples;
    for (std::size_t i = 0; i < left_alone.size() && i < 4; ++i) examples += (i ? ", " : "") + left_alone[i];
    note("compress: the module's " + std::to_string(layers.size()) + " Conv2d and Linear weights are compressed; " +
         std::to_string(left_alone.size()) + " other parameters are kept as trained" +
         (examples.empty() ? std::string() : " (" + examples + (left_alone.size() > 4 ? ", ..." : "") + ")"));
  }
  const std::uint64_t baseline_bytes = float32_model_bytes(*before.model);
  std::optional<AccuracyReport> acc_before, acc_after;
  if (!data.empty()) acc_before = measure_accuracy(*before.model, before.info, data, labels);

  if (prune > 0) {
    const auto masks = l1_prune_masks(*before.model, prune, options.prune_scope);
    apply_masks(*before.model, masks);
    if (finetune_epochs > 0) {
      FinetuneOptions f;
      f.dataset = labels;
      f.epochs = finetune_epochs;
      f.lr = finetune_lr;
      f.batch_size = batch_size;
      finetune_pruned(*before.model, before.info, masks, finetune_data, f);
    }
  }
  const double sparsity = zero_fraction(*before.model);
  const auto run_lock = lock_run_folder_of(out, "writing a compressed model into this run folder");
  save_compressed_model(out, before.info, *before.model, options);

  // Measure what was written, read back as eval/predict will read it.
  auto after = load_model_any(out, code);
  const auto output = summarize_model_file(out);
  if (!data.empty()) acc_after = measure_accuracy(*after.model, after.info, data, labels);
  const double reduction = 1.0 - static_cast<double>(output.bytes) / static_cast<double>(baseline_bytes);

  if (json) {
    nlohmann::json doc{
        {"input", {{"file", input.file.string()}, {"bytes", input.bytes}, {"float32_bytes", baseline_bytes}}},
        {"output", {{"file", out}, {"bytes", output.bytes}}},
        {"size_reduction", reduction},
        {"model", before.info.name},
        {"left_alone", left_alone},
        {"prune", prune},
        {"prune_scope", scope},
        {"quantize", quantize},
        {"sparsity", sparsity},
        {"finetune_epochs", finetune_epochs},
        {"inference", quantize == "int8" ? "float32 (int8 weights dequantized at load)" : "float32"},
        {"quantized_engines", quantized_engines()}};
    if (acc_before) {
      doc["data"] = data;
      doc["images"] = acc_before->images;
      doc["input"]["accuracy"] = acc_before->accuracy;
      doc["output"]["accuracy"] = acc_after->accuracy;
      doc["accuracy_change"] = acc_after->accuracy - acc_before->accuracy;
      doc["metric"] = acc_before->metric;  // "accuracy", or a multi-label model's "mean AP"
    }
    print_json(doc);
    return 0;
  }
  std::printf("%-10s %14s %14s\n", "", "before", "after");
  std::printf("%-10s %14s %14s   (%s smaller than the float32 weights; input file %s)\n", "size",
              format_size(baseline_bytes).c_str(), format_size(output.bytes).c_str(), percent(reduction).c_str(),
              format_size(input.bytes).c_str());
  std::printf("%-10s %14s %14s\n", "sparsity", "", percent(sparsity).c_str());
  if (acc_before)
    std::printf("%-10s %14s %14s   (%+.2f points, %s)\n", acc_before->metric.c_str(),
                percent(acc_before->accuracy).c_str(), percent(acc_after->accuracy).c_str(),
                100.0 * (acc_after->accuracy - acc_before->accuracy),
                count_of(static_cast<std::uint64_t>(acc_before->images), "image").c_str());
  note("wrote " + out);
  return 0;
}

}  // namespace frugal::cli

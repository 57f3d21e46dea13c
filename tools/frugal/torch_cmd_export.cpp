// frugal export CKPT --format onnx -o OUT.onnx [--json]
#include <filesystem>

#include "cli.h"
#include "commands.h"
#include "run_lock.h"
#include "frugal/checkpoint/checkpoint.h"
#include "frugal/compress/compress.h"
#include "frugal/util/error.h"
#include "frugal/compress/onnx.h"
#include "frugal/util/progress.h"
#include "frugal/util/units.h"

namespace frugal::cli {

int cmd_export(int argc, char** argv) {
  CLI::App app(
      "Export a model (checkpoint, run folder or compressed model) to a standard ONNX file "
      "(opset 17, dynamic batch, batch norm folded, preprocessing in metadata_props).",
      "export");
  std::string ckpt, format = "onnx", out;
  bool json = false;
  ForeignModelOptions foreign;
  app.add_option("CKPT", ckpt,
                 "checkpoint file, compressed model, run folder, or weights from elsewhere with --model (classes "
                 "numbered 0..N-1)")
      ->required();
  app.add_option("--format", format, "output format (onnx)")->check(CLI::IsMember({"onnx"}));
  app.add_option("-o,--output", out, "the .onnx file to write")->required();
  add_foreign_model_options(app, foreign);
  app.add_flag("--json", json, "print a JSON report on stdout");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  Progress::set_quiet(json);

  auto loaded = load_model_any(ckpt, foreign);
  const ModelFileSummary source = summarize_model_file(ckpt);
  const auto run_lock = lock_run_folder_of(out, "exporting into this run folder");
  export_onnx(loaded.info, *loaded.model, out);
  const auto bytes = std::filesystem::file_size(out);
  // ONNX gets the weights as the model computes with them, dense float32: a compressed model's
  // int8/float16 storage and pruning masks do not carry over, so the file can be several times the
  // input. Said, not left for the user to find by the file size.
  const bool compressed = !source.compression.is_null();
  const std::string stored = compressed ? source.compression.value("weights", std::string("float32")) : "float32";
  const double pruned = compressed ? source.compression.value("prune", 0.0) : 0.0;
  if (json) {
    nlohmann::json doc{
        {"output", out},
        {"format", format},
        {"model", loaded.info.name},
        {"bytes", bytes},
        {"opset", 17},
        {"input", {"batch", loaded.info.channels, loaded.info.image_size, loaded.info.image_size}},
        {"weights", "float32"},
        {"source", {{"file", source.file.string()}, {"bytes", source.bytes}, {"compressed", compressed}}}};
    if (compressed) {
      doc["source"]["weights"] = stored;
      doc["source"]["prune"] = pruned;
      doc["note"] = "ONNX receives the dequantized float32 weights, not the compressed form";
    }
    print_json(doc);
    return 0;
  }
  if (compressed) {
    std::string what = stored == "float32" ? std::string() : stored + " weights";
    if (pruned > 0) what += (what.empty() ? "" : ", ") + format_percent(pruned) + " pruned";
    note("note: " + source.file.string() + " is a compressed model (" + format_size(source.bytes) +
         (what.empty() ? "" : ": " + what) + "); ONNX receives its weights dequantized to dense float32 " +
         "(its int8/float16 storage and pruning masks do not carry over), so " + out + " is " + format_size(bytes));
  }
  note("wrote " + out + " (" + format_size(bytes) + "): " + loaded.info.name + ", input (batch, " +
       std::to_string(loaded.info.channels) + ", " + std::to_string(loaded.info.image_size) + ", " +
       std::to_string(loaded.info.image_size) + ") float32, output logits over " +
       count_of(loaded.info.classes.size(), "class"));
  return 0;
}

}  // namespace frugal::cli

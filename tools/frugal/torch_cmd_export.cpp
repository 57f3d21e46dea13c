// frugal export CKPT --format onnx -o OUT.onnx [--json]
#include <filesystem>

#include "cli.h"
#include "commands.h"
#include "frugal/compress.h"
#include "frugal/error.h"
#include "frugal/onnx.h"
#include "frugal/progress.h"
#include "frugal/units.h"

namespace frugal::cli {

int cmd_export(int argc, char** argv) {
  CLI::App app("Export a model (checkpoint, run folder or compressed model) to a standard ONNX file "
               "(opset 17, dynamic batch, batch norm folded, preprocessing in metadata_props).", "export");
  std::string ckpt, format = "onnx", out;
  bool json = false;
  app.add_option("CKPT", ckpt, "checkpoint file, compressed model or run folder")->required();
  app.add_option("--format", format, "output format (onnx)")->check(CLI::IsMember({"onnx"}));
  app.add_option("-o,--output", out, "the .onnx file to write")->required();
  app.add_flag("--json", json, "print a JSON report on stdout");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  Progress::set_quiet(json);

  auto loaded = load_model_any(ckpt);
  export_onnx(loaded.info, *loaded.model, out);
  const auto bytes = std::filesystem::file_size(out);
  if (json) {
    print_json({{"output", out}, {"format", format}, {"model", loaded.info.name}, {"bytes", bytes},
                {"opset", 17}, {"input", {"batch", loaded.info.channels, loaded.info.image_size,
                                          loaded.info.image_size}}});
  } else {
    note("wrote " + out + " (" + format_size(bytes) + "): " + loaded.info.name + ", input (batch, " +
         std::to_string(loaded.info.channels) + ", " + std::to_string(loaded.info.image_size) + ", " +
         std::to_string(loaded.info.image_size) + ") float32, output logits over " +
         std::to_string(loaded.info.classes.size()) + " classes");
  }
  return 0;
}

}  // namespace frugal::cli

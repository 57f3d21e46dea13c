// frugal train --data ARCHIVE --run DIR [options]   (CLI.md, "frugal train options")
#include <string>
#include <vector>

#include "cli.h"
#include "commands.h"
#include "config_file.h"
#include "frugal/error.h"
#include "frugal/gpu_loader.h"
#include "frugal/progress.h"
#include "frugal/train.h"

namespace frugal::cli {
namespace {

void add_options(CLI::App& app, TrainConfig& c, std::string& config_file) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--data", c.data, "training archive (class folders, labels.csv, --label-pattern, .npy)")->required();
  app.add_option("--run", c.run, "run folder: config, checkpoints, metrics; resumes when it holds a checkpoint")->required();
  app.add_option("--config", config_file, "TOML file with the same keys as the long options");
  app.add_option("--val", c.val, "validation archive");
  app.add_option("--val-split", c.val_split, "fraction of --data held out for validation (stable); default 0.05");
  app.add_option("--label-pattern", c.label_pattern, "regex with one capture group for the label in file names");
  app.add_option("--name-encoding", c.name_encoding, "encoding of non-UTF-8 entry names");
  app.add_option("--max-pixels", c.max_pixels, "larger images count as bad");
  app.add_option("--max-bad-fraction", c.max_bad_fraction, "fail when more images than this cannot be decoded");
  app.add_option("--channels", c.channels, "1 or 3 (default: as the data)");
  app.add_option("--model", c.model, "cnn, resnet18, resnet50, efficientnet_b0");
  app.add_option("--epochs", c.epochs, "passes over the training data");
  app.add_option("--batch-size", c.batch_size, "micro-batch size");
  app.add_option("--accum", c.accum, "micro-batches per optimizer step (effective batch = B x K)");
  app.add_option("--lr", c.lr, "peak learning rate (cosine schedule with warmup)");
  app.add_option("--optimizer", c.optimizer, "adamw or sgd (momentum 0.9, Nesterov)")->check(CLI::IsMember({"adamw", "sgd"}));
  app.add_option("--weight-decay", c.weight_decay, "not applied to norms and biases");
  app.add_option("--label-smoothing", c.label_smoothing, "label smoothing of the cross-entropy");
  app.add_option("--clip-grad-norm", c.clip_grad_norm, "clip the gradient norm (0: off)");
  app.add_option("--warmup", c.warmup_fraction, "fraction of the steps spent warming up");
  app.add_option("--image-size", c.image_size, "input side (default 28 for cnn, else 224)");
  app.add_option("--workers", c.workers, "decode threads");
  app.add_option("--seed", c.seed, "seed for initialization, order and augmentation");
  app.add_option("--amp", c.amp, "auto, fp16, bf16 or off")->check(CLI::IsMember({"auto", "fp16", "bf16", "off"}));
  app.add_flag("--grad-checkpoint", c.grad_checkpoint, "recompute activations in backward to save memory");
  app.add_option("--device", c.device, "auto, cpu, cuda or cuda:N");
  app.add_option("--init", c.init, "start from these weights (safetensors, torchvision names)");
  app.add_option("--freeze", c.freeze, "parameter name prefixes to freeze")->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--disk-budget", c.disk_budget, "never let the workspace grow past this size");
  app.add_option("--workspace", c.workspace, "workspace for the disk budget (default: the run folder's parent)");
  app.add_option("--gpu-memory", c.gpu_memory, "behave as if the GPU had only this much memory");
  app.add_option("--deadline", c.deadline, "stop saved and resumable (exit 75) before this (DURATION or HH:MM)");
  app.add_option("--save-every", c.save_every, "checkpoint cadence: a DURATION or Nsteps (default: each epoch)");
  app.add_option("--keep-best", c.keep_best, "checkpoints kept for their validation accuracy");
  app.add_option("--keep-last", c.keep_last, "newest checkpoints kept");
  app.add_flag("--delta", c.delta, "between full checkpoints, store only what changed (XOR + zstd)");
  app.add_flag("--fresh", c.fresh, "start over even if the run folder holds a checkpoint");
  app.add_flag("--deterministic", c.deterministic, "bitwise-reproducible on the CPU");
  app.add_flag("--json", c.json, "print a JSON summary on stdout");
}

// --decode (docs/gpu.md), resolved before the run folder is touched: an impossible `gpu` is a
// usage error naming what is missing; `auto` takes the GPU only when this build and machine can.
void resolve_decode(const std::string& decode, TrainConfig& c) {
  c.decode = "cpu";
  if (decode == "cpu") return;
  if (c.device == "cpu") {
    if (decode == "gpu")
      fail(ErrorKind::usage, "--decode gpu", "a CUDA device to train on", "--device cpu",
           "use --device cuda (or auto), or --decode cpu");
    note("decode: cpu (--device cpu)");
    return;
  }
  DatasetOptions d;
  d.label_pattern = c.label_pattern;
  d.max_pixels = static_cast<std::uint64_t>(c.max_pixels);
  d.channels = c.channels;
  d.name_encoding = c.name_encoding;
  DecodeSelection sel = select_decode(decode, *Dataset::open(c.data, d));  // Error(usage) for an impossible gpu
  note("decode: " + sel.reason);
  if (sel.gpu) c.decode = "gpu";
}

}  // namespace

int cmd_train(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    // "--config=FILE" too: CLI11 would otherwise take it and the file would be silently unread.
    if ((a == "--config" && i + 1 < argc) || a.rfind("--config=", 0) == 0) {
      auto extra = config_args(a == "--config" ? argv[i + 1] : a.substr(9));
      args.insert(args.begin() + 1, extra.begin(), extra.end());
      break;
    }
  }
  std::vector<char*> ptrs;
  for (auto& a : args) ptrs.push_back(a.data());

  CLI::App app("Train a model straight from an archive; resumable, within time and disk budgets.", "train");
  TrainConfig config;
  add_options(app, config, config.config_file);
  std::string decode = "auto";
  app.add_option("--decode", decode, "where JPEGs are decoded: cpu, gpu (nvJPEG) or auto")
      ->check(CLI::IsMember({"cpu", "gpu", "auto"}));
  if (int rc = parse(app, static_cast<int>(ptrs.size()), ptrs.data()); rc >= 0) return rc;
  Progress::set_quiet(config.json);
  resolve_decode(decode, config);
  int rc = run_training(config);
  if (config.json) print_json({{"run", config.run}, {"exit_code", rc}});
  return rc;
}

}  // namespace frugal::cli

// frugal predict CKPT IMAGE... [--top K] [--max-pixels N] [--json]; IMAGE is a file or ARCHIVE:entry.
#include <cstdio>
#include <filesystem>
#include <span>

#include "cli.h"
#include "commands.h"
#include "frugal/archive.h"
#include "frugal/compress.h"
#include "frugal/data.h"
#include "frugal/error.h"
#include "frugal/fs.h"
#include "frugal/image.h"
#include "frugal/input_path.h"
#include "frugal/progress.h"
#include "frugal/terminal.h"
#include "frugal/units.h"

namespace frugal::cli {
namespace {

std::vector<std::uint8_t> read_image_bytes(const std::string& spec) {
  std::error_code ec;
  if (std::filesystem::exists(spec, ec)) {
    std::string s = read_file(check_input(spec, InputKind::file));
    return {s.begin(), s.end()};
  }
  // ARCHIVE:entry (the last ':' that leaves an existing archive path before it).
  for (auto pos = spec.rfind(':'); pos != std::string::npos && pos > 0; pos = spec.rfind(':', pos - 1)) {
    std::string archive = spec.substr(0, pos), entry = spec.substr(pos + 1);
    if (!std::filesystem::exists(archive, ec)) continue;
    auto a = Archive::open(archive);
    auto i = a->find(entry);
    if (!i) fail(ErrorKind::usage, archive, "an entry named '" + entry + "'", "none", "list the entries with `frugal ls`");
    return a->read(*i);
  }
  check_input(spec, InputKind::file);  // throws: no such file, with a near name when there is one
  fail(ErrorKind::usage, spec, "an image file or ARCHIVE:entry", "neither", "check the path");
}

// An image that cannot be predicted is reported and skipped; the worst such outcome sets the exit
// code at the end (bad input 3 over usage 2 over I/O 1), so one bad file of many costs no answers.
int severity(int code) { return code == 3 ? 3 : code == 2 ? 2 : code == 1 ? 1 : 0; }

}  // namespace

int cmd_predict(int argc, char** argv) {
  CLI::App app("Class predictions for image files (or ARCHIVE:entry). An image that cannot be read is "
               "reported and the others are still predicted; the exit code then says the worst problem.", "predict");
  std::string ckpt;
  std::vector<std::string> images;
  int top = 1;
  std::uint64_t max_pixels = 89478485;
  bool json = false;
  app.add_option("CKPT", ckpt, "checkpoint file, compressed model or run folder (its best.safetensors)")->required();
  app.add_option("IMAGE", images, "image files or ARCHIVE:entry")->required();
  app.add_option("--top", top, "classes shown per image")->check(at_least(1));
  app.add_option("--max-pixels", max_pixels, "larger images are refused as possible decompression bombs")
      ->capture_default_str()->check(at_least(1));
  app.add_flag("--json", json, "print the predictions as JSON on stdout");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  Progress::set_quiet(json);

  auto loaded = load_model_any(check_input(ckpt, InputKind::checkpoint));
  const auto& info = loaded.info;
  TransformOptions t;
  t.image_size = info.image_size;
  t.train = false;
  t.channels = info.channels;
  nlohmann::json out = nlohmann::json::array(), failed = nlohmann::json::array();
  int worst = 0;
  torch::NoGradGuard no_grad;
  for (auto& spec : images) {
    Image scratch, img;
    try {
      auto bytes = read_image_bytes(spec);
      ImageInfo header = read_image_info(bytes, spec, max_pixels);
      t.small = std::max(header.width, header.height) <= 64;
      decode_transform(bytes, t, max_pixels, 0, spec, scratch, img);
    } catch (const Error& e) {
      // Said as main says an error, then on to the next image.
      std::fprintf(stderr, "frugal predict: %s\n", printable(e.what()).c_str());
      failed.push_back({{"image", spec}, {"problem", e.what()}});
      if (severity(exit_code(e.kind())) > severity(worst)) worst = exit_code(e.kind());
      continue;
    }
    auto x = torch::from_blob(img.pixels.data(), {1, img.height, img.width, img.channels}, torch::kUInt8)
                 .permute({0, 3, 1, 2}).contiguous();
    auto probs = torch::softmax(loaded.model->forward(normalize(x, info.mean, info.std)), 1)[0];
    int k = std::min<int>(top, static_cast<int>(info.classes.size()));
    auto [values, indices] = probs.topk(k);
    nlohmann::json preds = nlohmann::json::array();
    std::string line = printable(spec) + ":";
    for (int j = 0; j < k; ++j) {
      auto idx = indices[j].item<std::int64_t>();
      double p = values[j].item<double>();
      preds.push_back({{"class", info.classes[idx]}, {"probability", p}});
      line += " " + printable(info.classes[idx]) + " (" + std::to_string(p).substr(0, 5) + ")";
    }
    out.push_back({{"image", spec}, {"predictions", preds}});
    if (!json) std::printf("%s\n", line.c_str());
  }
  if (json) {
    nlohmann::json doc = {{"predictions", out}};
    if (!failed.empty()) doc["failed"] = failed;
    print_json(doc);
  }
  if (failed.empty()) return 0;
  std::fprintf(stderr, "frugal predict: predicted %s; %s could not be read (above)\n",
               count_of(out.size(), "image").c_str(), count_of(failed.size(), "image").c_str());
  return worst;
}

}  // namespace frugal::cli

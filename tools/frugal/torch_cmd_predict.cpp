// frugal predict CKPT IMAGE... [--top K] [--json]; IMAGE is a file or ARCHIVE:entry.
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
#include "frugal/progress.h"

namespace frugal::cli {
namespace {

std::vector<std::uint8_t> read_image_bytes(const std::string& spec) {
  if (std::filesystem::exists(spec)) {
    std::string s = read_file(spec);
    return {s.begin(), s.end()};
  }
  // ARCHIVE:entry (the last ':' that leaves an existing archive path before it).
  for (auto pos = spec.rfind(':'); pos != std::string::npos && pos > 0; pos = spec.rfind(':', pos - 1)) {
    std::string archive = spec.substr(0, pos), entry = spec.substr(pos + 1);
    if (!std::filesystem::exists(archive)) continue;
    auto a = Archive::open(archive);
    auto i = a->find(entry);
    if (!i) fail(ErrorKind::usage, archive, "an entry named '" + entry + "'", "none", "list the entries with `frugal ls`");
    return a->read(*i);
  }
  fail(ErrorKind::usage, spec, "an image file or ARCHIVE:entry", "neither exists", "check the path");
}

}  // namespace

int cmd_predict(int argc, char** argv) {
  CLI::App app("Class predictions for image files (or ARCHIVE:entry).", "predict");
  std::string ckpt;
  std::vector<std::string> images;
  int top = 1;
  bool json = false;
  app.add_option("CKPT", ckpt, "checkpoint file, compressed model or run folder (its best.safetensors)")->required();
  app.add_option("IMAGE", images, "image files or ARCHIVE:entry")->required();
  app.add_option("--top", top, "classes shown per image")->check(CLI::PositiveNumber);
  app.add_flag("--json", json, "print the predictions as JSON on stdout");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  Progress::set_quiet(json);

  auto loaded = load_model_any(ckpt);
  const auto& info = loaded.info;
  TransformOptions t;
  t.image_size = info.image_size;
  t.train = false;
  t.channels = info.channels;
  nlohmann::json out = nlohmann::json::array();
  torch::NoGradGuard no_grad;
  for (auto& spec : images) {
    auto bytes = read_image_bytes(spec);
    Image scratch, img;
    ImageInfo header = read_image_info(bytes, spec);
    t.small = std::max(header.width, header.height) <= 64;
    decode_transform(bytes, t, 89478485, 0, spec, scratch, img);
    auto x = torch::from_blob(img.pixels.data(), {1, img.height, img.width, img.channels}, torch::kUInt8)
                 .permute({0, 3, 1, 2}).contiguous();
    auto probs = torch::softmax(loaded.model->forward(normalize(x, info.mean, info.std)), 1)[0];
    int k = std::min<int>(top, static_cast<int>(info.classes.size()));
    auto [values, indices] = probs.topk(k);
    nlohmann::json preds = nlohmann::json::array();
    std::string line = spec + ":";
    for (int j = 0; j < k; ++j) {
      auto idx = indices[j].item<std::int64_t>();
      double p = values[j].item<double>();
      preds.push_back({{"class", info.classes[idx]}, {"probability", p}});
      line += " " + info.classes[idx] + " (" + std::to_string(p).substr(0, 5) + ")";
    }
    out.push_back({{"image", spec}, {"predictions", preds}});
    if (!json) std::printf("%s\n", line.c_str());
  }
  if (json) print_json({{"predictions", out}});
  return 0;
}

}  // namespace frugal::cli

// frugal report RUN [-o FILE] [--data DATA] [--worst N]: one self-contained HTML page of a run.
// Gathers the run folder's record (report.h's read_run_history), evaluates best.safetensors on the
// run's validation data (or --data) with the confusion matrix and the worst images, whose
// thumbnails it reads from the data (a multi-label model: each tag's AP, precision, recall, F1 and
// threshold), adds doctor's facts, and writes render_report()'s page atomically.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>

#include "cli.h"
#include "commands.h"
#include "torch_eval.h"
#include "frugal/checkpoint/checkpoint.h"
#include "frugal/checkpoint_files/checkpoint_files.h"
#include "frugal/checkpoint_files/run_folder.h"
#include "frugal/loader/loader.h"
#include "frugal/dataset/train_val.h"
#include "frugal/report/report.h"
#include "frugal/training/classification_report.h"
#include "frugal/training/data_options.h"
#include "frugal/training/train_config.h"
#include "frugal/train/step.h"
#include "frugal/train/evaluate.h"
#include "frugal/training/train_log.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/progress.h"
#include "frugal/util/units.h"

namespace frugal::cli {
namespace {

struct ReportArgs {
  std::string run, output, data;
  int worst = 64, batch_size = 256, workers = 2;
  Tta tta = Tta::none;
};

// The data options a run was trained with, from its best checkpoint's config (DATA as typed, and
// every option that says how DATA is read): the one construction of train_val_options().
TrainConfig data_config(const std::filesystem::path& run, const nlohmann::json& run_config) {
  const SafetensorsHeader h = read_safetensors_header(run / kBestFile, Links::refuse);
  const auto it = h.metadata.find("config");
  const nlohmann::json saved =
      it == h.metadata.end() ? nlohmann::json::object() : parse_json_bounded(it->second, (run / kBestFile).string());
  TrainConfig c;
  for (const TrainOption& row : train_options()) {
    const auto v = saved.find(row.key);
    const std::string key = row.key;
    if (v == saved.end() || v->is_null() || !row.set || key == "val_split") continue;
    if (key.find("label") == std::string::npos && key.find("data") == std::string::npos && key.find("val") != 0 &&
        key.find("images_dir") == std::string::npos && key.find("max_") != 0 && key != "class_names" &&
        key != "exclude" && key != "name_encoding" && key != "exif_orientation" && key != "cache_decompressed")
      continue;  // not a data option
    for (const nlohmann::json& item : v->is_array() ? *v : nlohmann::json::array({*v})) {
      const std::string text = item.is_string()    ? item.get<std::string>()
                               : item.is_boolean() ? (item.get<bool>() ? "true" : "false")
                                                   : item.dump();
      if (!text.empty() && !row.set(c, text).empty())
        note("note: " + (run / kBestFile).string() + ": " + key + " " + text + " not read back");
    }
  }
  c.data = saved.value("data", "");
  c.val = saved.value("val", "");
  // config.json's "data" holds the split used (checkpoints record an unset one as 0).
  const nlohmann::json decided = run_config.value("data", nlohmann::json::object());
  if (decided.is_object() && decided.contains("val_split") && decided["val_split"].is_number())
    c.val_split = decided["val_split"].get<double>();
  return c;
}

// The data evaluated on: --data (its validation folder when it has split folders, as eval reads
// it), else the run's own validation data; nullptr when the run validated on nothing.
std::shared_ptr<Dataset> report_data(const ReportArgs& a, const nlohmann::json& run_config, int channels,
                                     std::string& name) {
  if (!a.data.empty()) {
    DatasetOptions d;
    d.channels = channels;
    d.split = SplitFolder::validation;
    name = a.data;
    return Dataset::open(a.data, d);
  }
  TrainConfig c = data_config(a.run, run_config);
  c.channels = channels;
  if (c.data.empty()) return nullptr;
  TrainVal tv = open_train_val(train_val_options(c));
  const nlohmann::json validation = tv.decided.value("validation", nlohmann::json());
  name = validation.is_string() ? validation.get<std::string>() : "";
  return tv.val && tv.val->size() > 0 ? tv.val : nullptr;
}

// The worst images' names and thumbnails: the file as the data holds it, else (a sample inside an
// array) the image as evaluation saw it.
void add_thumbnails(nlohmann::json& worst, const std::vector<Prediction>& preds, const Dataset& data, int image_size) {
  std::vector<std::uint8_t> buffer;
  for (std::size_t k = 0; k < preds.size() && k < worst.size(); ++k) {
    if (preds[k].sample < 0) continue;
    const auto i = static_cast<std::size_t>(preds[k].sample);
    try {
      if (const auto bytes = data.file_bytes(i, buffer); bytes && is_decodable(sniff_format(*bytes))) {
        worst[k]["thumbnail"] = report::thumbnail_data_uri(*bytes, 96, data.name(i));
        continue;
      }
      Image scratch, img;
      TransformOptions t;
      t.image_size = image_size;
      t.train = false;
      data.load(i, t, 0, scratch, img);
      worst[k]["thumbnail"] = report::thumbnail_data_uri(encode_png(img), 96, data.name(i));
    } catch (const Error& e) {  // the page shows "no image" for it
      note("note: " + data.name(i) + ": no thumbnail (" + e.what() + ")");
    }
  }
}

// The thresholds a multi-label model's tags are counted at: its per-class ones, else the one it
// was trained with (eval's default).
std::vector<float> model_thresholds(const ModelInfo& info) {
  return info.thresholds.empty() ? std::vector<float>{info.threshold} : info.thresholds;
}

// The evaluation's document (eval --json's, with the confusion matrix, per-class report and the
// worst images; a multi-label model's tags with their AP and the thresholds used).
nlohmann::json eval_json(EvalResult& r, const LoadedModel& loaded, const Dataset& data, const EvalOptions& eo) {
  if (r.multi_label) {
    nlohmann::json doc = r.to_json(data.classes());
    doc["classes"] = loaded.info.classes;
    doc["thresholds"] = eo.thresholds;
    return doc;
  }
  for (Prediction& p : r.worst)
    if (p.sample >= 0) p.name = data.name(static_cast<std::size_t>(p.sample));
  nlohmann::json doc = r.to_json(data.classes());
  doc.update(classification_json(r.confusion, classification_report(r.confusion), loaded.info.classes));
  doc["worst"] = worst_json(r.worst, loaded.info.classes);
  add_thumbnails(doc["worst"], r.worst, data, loaded.info.image_size);
  return doc;
}

nlohmann::json evaluate_for_report(const ReportArgs& a, const nlohmann::json& run_config) {
  auto loaded = load_model_any(a.run);
  std::string name;
  std::shared_ptr<Dataset> data;
  try {
    data = report_data(a, run_config, loaded.info.channels, name);
  } catch (const Error& e) {
    if (!a.data.empty()) throw;
    // The run's data, as its options name it, may be elsewhere now (another notebook session).
    note("note: the run's own validation data cannot be read from here (" + std::string(e.what()) +
         "): the page has no confusion matrix; give --data DATA for one");
    return nullptr;
  }
  if (!data) {
    note("note: " + a.run + ": the run validated on nothing: give --data DATA for a confusion matrix");
    return nullptr;
  }
  check_label_kind(loaded.info.multi_label, data->multi_label(), name);
  const ClassMatch match = match_classes(loaded.info.classes, data->classes(), name);
  EvalOptions eo;
  eo.multi_label = loaded.info.multi_label;  // as eval does: each tag's AP at the model's thresholds
  eo.thresholds = model_thresholds(loaded.info);
  eo.confusion = !eo.multi_label;
  eo.worst = eo.multi_label ? 0 : static_cast<std::size_t>(a.worst);
  eo.tta = a.tta;
  EvalResult r = evaluate_loaded(loaded, data, match, a.batch_size, a.workers, eo);
  nlohmann::json doc = eval_json(r, loaded, *data, eo);
  doc["data"] = name;
  doc["samples"] = r.samples;
  doc["skipped"] = data->skipped().counts;
  return doc;
}

// -o FILE, else RUN/report.html: a folder frugal made. Never a folder named by -o.
std::filesystem::path output_path(const ReportArgs& a) {
  if (a.output.empty()) return std::filesystem::path(a.run) / "report.html";
  std::error_code ec;
  if (std::filesystem::is_directory(a.output, ec))
    fail(ErrorKind::usage, a.output, "a file name for the page (-o report.html)", "a folder",
         "name the file, e.g. -o " + (std::filesystem::path(a.output) / "report.html").string());
  return a.output;
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

}  // namespace

int cmd_report(int argc, char** argv) {
  CLI::App app(
      "One self-contained HTML page of a run (no script, no request; docs/cli.md): loss, accuracy, learning\n"
      "rate, images/s and loss scale against steps and wall time with the sessions marked, the time budget's\n"
      "plan, the confusion matrix of best.safetensors on the run's validation data (or --data), normalised\n"
      "and raw, per-class precision/recall/F1, the worst images as thumbnails (a multi-label run: each tag's\n"
      "AP, precision, recall, F1 and threshold), and the run's facts.",
      "report");
  ReportArgs a;
  app.add_option("RUN", a.run, "the run folder frugal train wrote")->required();
  app.add_option("-o,--output", a.output, "the page's file (default: RUN/report.html)");
  app.add_option("--data", a.data,
                 "evaluate on this data instead of the run's validation data (its validation folder when its "
                 "top level is split folders, as eval reads it)");
  app.add_option("--worst", a.worst, "the images of highest loss shown as thumbnails")
      ->capture_default_str()
      ->check(integer_in(0, 1000));
  app.add_option("--batch-size", a.batch_size, "images per forward pass")->capture_default_str()->check(at_least(1));
  add_tta_option(app, a.tta);
  app.add_option("--workers", a.workers, "decode threads")->capture_default_str()->check(integer_in(1, kMaxWorkers));
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  const std::filesystem::path out = output_path(a);
  nlohmann::json doc = report::read_run_history(a.run);
  doc["generated"] = now_utc();
  doc["environment"] = doctor_json(a.run);
  if (std::filesystem::exists(std::filesystem::path(a.run) / kBestFile))
    doc["eval"] = evaluate_for_report(a, doc["config"]);
  else
    note("note: " + a.run + ": no best.safetensors yet: the page shows the curves and facts only");
  const std::string page = report::render_report(doc);
  write_file_atomic(out, page);
  note("report: " + out.string() + " (" + format_size(page.size()) + ")");
  std::printf("%s\n", out.c_str());
  return 0;
}

}  // namespace frugal::cli

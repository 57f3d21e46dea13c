// frugal predict CKPT INPUT... [--top K] [--csv FILE [--csv-columns ID,LABEL] [--probabilities]
// [--csv-escape-formulas]]
// [--max-pixels N] [--json]: INPUTs are image files, folders, DATA, ARCHIVE:entry and ARCHIVE:GLOB
// (predict_inputs.h); --csv writes a Kaggle-shaped submission (submission_csv.h).
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <span>
#include <thread>

#include "cli.h"
#include "commands.h"
#include "torch_eval.h"
#include "frugal/archive/archive.h"
#include "frugal/archive/read_limit.h"
#include "frugal/compress/compress.h"
#include "frugal/loader/loader.h"
#include "frugal/dataset/predict_inputs.h"
#include "frugal/dataset/submission_csv.h"
#include "frugal/image/image.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/input_path.h"
#include "frugal/util/progress.h"
#include "frugal/util/terminal.h"
#include "frugal/util/units.h"

namespace frugal::cli {
namespace {

// Images decoded at once and given to the model as one batch: one forward per image made 10,000
// test images cost 10,000 small forwards. 32 images of 224 px hold a few hundred MB of a
// ResNet-50's activations on the CPU, which small machines have.
constexpr std::size_t kBatch = 32;

// An image that cannot be predicted is reported and skipped; the worst such outcome sets the exit
// code at the end (bad input 3 over usage 2 over I/O 1), so one bad file of many costs no answers.
int severity(int code) { return code == 3 ? 3 : code == 2 ? 2 : code == 1 ? 1 : 0; }

struct Decoded {
  bool ok = false;
  Image image;  // (image_size, image_size, channels) uint8
  ErrorKind kind = ErrorKind::invalid;
  std::string problem;
};

// Images [begin, end) read and brought to the model's input on `threads` threads, each with its
// own buffers (Archive::read is thread-safe).
void decode_batch(const PredictInputs& inputs, std::size_t begin, std::size_t end, const TransformOptions& transform,
                  std::uint64_t max_pixels, std::uint64_t max_file_bytes, unsigned threads, std::vector<Decoded>& out) {
  out.resize(end - begin);
  std::atomic<std::size_t> next{begin};
  auto work = [&] {
    std::vector<std::uint8_t> bytes;
    Image scratch;
    for (std::size_t i; (i = next++) < end;) {
      const PredictImage& image = inputs.images()[i];
      Decoded& d = out[i - begin];
      d.ok = false;
      try {
        inputs.read(image, bytes, max_file_bytes);
        TransformOptions t = transform;
        const ImageInfo header = read_image_info(bytes, image.name, max_pixels);
        t.small = std::max(header.width, header.height) <= 64;
        decode_transform(bytes, t, max_pixels, 0, image.name, scratch, d.image);
        d.ok = true;
      } catch (const Error& e) {
        d.kind = e.kind();
        d.problem = e.what();
      } catch (const std::exception& e) {
        d.kind = ErrorKind::io;
        d.problem = image.name + ": " + e.what();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned k = 1; k < std::min<std::size_t>(threads, end - begin); ++k) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
}

// The submission file: a new file, beside nothing predict reads (it replaces what is there
// crash-safely, but never an input: `--csv test.zip` was one typo away).
void check_csv_target(const std::string& csv, const PredictInputs& inputs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(csv, ec))
    fail(ErrorKind::usage, csv, "a file to write the predictions to", "a folder", "name a file, e.g. submission.csv");
  const fs::path parent = fs::path(csv).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    fail(ErrorKind::usage, csv, "a file in an existing folder", "no folder " + parent.string(),
         "create the folder first or name a file in another one");
  if (!fs::exists(csv, ec)) return;
  for (const fs::path& f : inputs.files())
    if (fs::equivalent(csv, f, ec))
      fail(ErrorKind::usage, csv, "a file to write the predictions to", "one of the inputs (" + f.string() + ")",
           "name another file, e.g. submission.csv");
}

// What the written submission holds that its reader should know (submission_csv.h): one warning
// per set of cells (column names, class names, ids), naming them.
void warn_unsafe_cells(const std::string& csv, const SubmissionColumns& columns,
                       const std::vector<std::string>& classes, const std::vector<std::string>& ids, bool probabilities,
                       bool escape_formulas) {
  std::vector<std::string> column_names = {columns.id};
  if (!probabilities) column_names.push_back(columns.label);
  auto say = [&](const char* what, const std::vector<std::string>& texts) {
    for (const std::string& line : unsafe_cells_warning(csv, what, texts, escape_formulas, "--csv-escape-formulas"))
      warn(line);
  };
  say("column name", column_names);
  say("class name", classes);
  say("id", ids);
}

// A multi-label model's tags for one image: those whose probability reaches their threshold, by
// probability, highest first.
std::vector<std::size_t> tags_above(const float* probs, const ModelInfo& info, double given) {
  std::vector<std::size_t> tags;
  for (std::size_t c = 0; c < info.classes.size(); ++c)
    if (probs[c] >= (given > 0 ? static_cast<float>(given) : info.threshold_of(c))) tags.push_back(c);
  std::stable_sort(tags.begin(), tags.end(), [&](std::size_t a, std::size_t b) { return probs[a] > probs[b]; });
  return tags;
}

std::string joined(const std::vector<std::size_t>& tags, const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t t : tags) out += (out.empty() ? "" : " ") + names[t];
  return out;
}

struct PredictArgs {
  std::string ckpt, csv, csv_columns;
  std::vector<std::string> inputs;
  int top = 1;
  double threshold = 0;
  std::uint64_t max_pixels = 89478485, max_file_bytes = kDefaultMaxFileBytes;
  bool json = false, probabilities = false, escape_formulas = false;
  Tta tta = Tta::none;
  ArchiveOptions archive_options;
  ForeignModelOptions foreign;
};

void add_predict_options(CLI::App& app, PredictArgs& a) {
  app.add_option("CKPT", a.ckpt,
                 "checkpoint file, compressed model, run folder (its best.safetensors), or weights from elsewhere "
                 "with --model (their classes are numbered 0..N-1)")
      ->required();
  app.add_option("INPUT", a.inputs, "image files, folders, DATA, ARCHIVE:entry or ARCHIVE:GLOB")->required();
  app.add_option("--top", a.top, "classes shown per image (multi-label: besides its tags)")->check(at_least(1));
  app.add_option("--threshold", a.threshold,
                 "multi-label models: the tags of an image are those whose probability reaches this (default: the "
                 "model's per-class thresholds when it has them, else the threshold it was trained with); --csv "
                 "writes them space-separated")
      ->check(probability());
  auto* csv_option = app.add_option("--csv", a.csv,
                                    "write one row per image to FILE (crash-safely): id,label, the id being "
                                    "the file name without its extension (the shape of a Kaggle submission)");
  app.add_option("--csv-columns", a.csv_columns, "the names of --csv's two columns, ID,LABEL (e.g. image_id,label)")
      ->needs(csv_option);
  app.add_flag("--probabilities", a.probabilities,
               "--csv has one column per class (the class names as headers) holding its probability, "
               "instead of the label column")
      ->needs(csv_option);
  app.add_flag("--csv-escape-formulas", a.escape_formulas,
               "write each --csv cell that a spreadsheet would run as a formula (starting = + - @, e.g. a class "
               "named =HYPERLINK(...)) as text: a ' before it, quoted (OWASP's advice); without it such cells are "
               "written as they are and warned about")
      ->needs(csv_option);
  app.add_option("--max-pixels", a.max_pixels, "larger images are refused as possible decompression bombs")
      ->capture_default_str()
      ->check(at_least(1));
  add_max_file_bytes_option(app, a.max_file_bytes, "an error for that image (exit 3), the others still predicted");
  add_data_options(app, a.archive_options);
  add_foreign_model_options(app, a.foreign);
  app.add_flag("--json", a.json, "print the predictions as JSON on stdout");
  add_tta_option(app, a.tta);
}

// What predict has found so far: the rows, the images it could not read, the inputs' skipped
// files, and the submission's text.
struct PredictOutput {
  nlohmann::json out = nlohmann::json::array(), failed = nlohmann::json::array(), skipped = nlohmann::json::object();
  int worst = 0;
  std::string csv_text;
  std::vector<std::string> written_ids, written_labels;  // for warn_unsafe_cells

  // Said as main says an error, then on to the next image.
  void report(const std::string& what, const std::string& problem, ErrorKind kind) {
    std::fprintf(stderr, "frugal predict: %s\n", printable(fit_advice(problem, "predict")).c_str());
    failed.push_back({{"image", what}, {"problem", problem}});
    if (severity(exit_code(kind)) > severity(worst)) worst = exit_code(kind);
  }
};

// The decoded images of `good` as one (B, C, H, W) uint8 tensor.
torch::Tensor batch_tensor(const std::vector<Decoded>& batch, const std::vector<std::size_t>& good) {
  const Image& first = batch[good[0]].image;
  auto x = torch::empty({static_cast<std::int64_t>(good.size()), first.height, first.width, first.channels},
                        torch::kUInt8);  // (B, H, W, C)
  const std::size_t bytes = first.pixels.size();
  for (std::size_t g = 0; g < good.size(); ++g)
    std::memcpy(x.data_ptr<std::uint8_t>() + g * bytes, batch[good[g]].image.pixels.data(), bytes);
  return x.permute({0, 3, 1, 2}).contiguous();  // (B, C, H, W)
}

// One image's answer: its row of probabilities `p` (all classes), its top k (`v`, `idx`).
void record_prediction(const PredictArgs& a, const ModelInfo& info, const PredictImage& image, const float* p,
                       const float* v, const std::int64_t* idx, int k, PredictOutput& o) {
  nlohmann::json preds = nlohmann::json::array();
  std::string line = printable(image.name) + ":";
  const std::vector<std::size_t> tags =
      info.multi_label ? tags_above(p, info, a.threshold) : std::vector<std::size_t>{};
  if (info.multi_label) line += " tags [" + printable(joined(tags, info.classes)) + "];";
  for (int j = 0; j < k; ++j) {
    const std::string& name = info.classes[idx[j]];
    preds.push_back({{"class", name}, {"probability", v[j]}});
    line += " " + printable(name) + " (" + std::to_string(v[j]).substr(0, 5) + ")";
  }
  o.out.push_back({{"image", image.name}, {"id", image.id}, {"predictions", preds}});
  if (info.multi_label) {
    nlohmann::json names = nlohmann::json::array();
    for (std::size_t t : tags) names.push_back(info.classes[t]);
    o.out.back()["tags"] = names;
  }
  if (!a.json && a.csv.empty()) std::printf("%s\n", line.c_str());
  if (a.csv.empty()) return;
  // Multi-label: the tags space-separated, as Kaggle's multi-label submissions take them.
  const std::string label = info.multi_label ? joined(tags, info.classes) : info.classes[idx[0]];
  o.csv_text += a.probabilities
                    ? submission_row(image.id, std::span<const float>(p, info.classes.size()), a.escape_formulas)
                    : submission_row(image.id, label, a.escape_formulas);
  o.written_ids.push_back(image.id);
  if (!a.probabilities) o.written_labels.push_back(label);
}

// The images of one batch that decoded (`good`, indices into `batch`, whose first image is
// inputs.images()[begin]) through the model, each recorded.
void predict_batch(const PredictArgs& a, const LoadedModel& loaded, const PredictInputs& inputs, std::size_t begin,
                   const std::vector<Decoded>& batch, const std::vector<std::size_t>& good, PredictOutput& o) {
  const ModelInfo& info = loaded.info;
  const int k = static_cast<int>(std::min<std::int64_t>(a.top, static_cast<std::int64_t>(info.classes.size())));
  const auto logits = forward_tta(*loaded.model, normalize(batch_tensor(batch, good), info.mean, info.std), a.tta);
  // Multi-label: each class's own sigmoid; else one softmax over the classes.
  const auto probs = (info.multi_label ? torch::sigmoid(logits) : torch::softmax(logits, 1)).contiguous();
  const auto [values, indices] = probs.topk(k, 1);
  const auto p = probs.accessor<float, 2>();
  const auto v = values.contiguous();
  const auto idx = indices.contiguous();
  for (std::size_t g = 0; g < good.size(); ++g)
    record_prediction(a, info, inputs.images()[begin + good[g]], &p[g][0],
                      v.data_ptr<float>() + static_cast<std::int64_t>(g) * k,
                      idx.data_ptr<std::int64_t>() + static_cast<std::int64_t>(g) * k, k, o);
}

// Every image, kBatch at a time: decoded on `threads` threads, then predicted.
void predict_all(const PredictArgs& a, const LoadedModel& loaded, const PredictInputs& inputs, PredictOutput& o) {
  TransformOptions t;
  t.image_size = loaded.info.image_size;
  t.train = false;
  t.channels = loaded.info.channels;
  const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  torch::NoGradGuard no_grad;
  const std::size_t n = inputs.images().size();
  Progress progress("predict", n, Progress::Unit::items);
  std::vector<Decoded> batch;
  for (std::size_t begin = 0; begin < n; begin += kBatch) {
    const std::size_t end = std::min(n, begin + kBatch);
    decode_batch(inputs, begin, end, t, a.max_pixels, a.max_file_bytes, threads, batch);
    std::vector<std::size_t> good;
    for (std::size_t j = 0; j < batch.size(); ++j) {
      if (batch[j].ok)
        good.push_back(j);
      else
        o.report(inputs.images()[begin + j].name, batch[j].problem, batch[j].kind);
    }
    if (!good.empty()) predict_batch(a, loaded, inputs, begin, batch, good, o);
    progress.advance(end - begin);
  }
  progress.finish();
}

// The submission written, the JSON document printed, and the exit code: the worst problem's.
int finish_predict(const PredictArgs& a, const SubmissionColumns& columns, const ModelInfo& info,
                   const PredictOutput& o) {
  if (!a.csv.empty() && !o.out.empty()) {
    write_file_atomic(a.csv, o.csv_text);
    warn_unsafe_cells(a.csv, columns, a.probabilities ? info.classes : o.written_labels, o.written_ids, a.probabilities,
                      a.escape_formulas);
    if (!a.json)
      note("wrote " + a.csv + ": " + count_of(o.out.size(), "row") + " (" +
           (a.probabilities ? "probabilities" : "labels") + ")");
  }
  if (a.json) {
    nlohmann::json doc = {{"predictions", o.out}};
    if (!o.failed.empty()) doc["failed"] = o.failed;
    if (!o.skipped.empty()) doc["skipped"] = o.skipped;
    if (!a.csv.empty() && !o.out.empty()) doc["csv"] = a.csv;
    print_json(doc);
  }
  if (o.failed.empty()) return 0;
  std::fprintf(stderr, "frugal predict: predicted %s; %s could not be read (above)\n",
               count_of(o.out.size(), "image").c_str(), count_of(o.failed.size(), "image").c_str());
  return o.worst;
}

}  // namespace

int cmd_predict(int argc, char** argv) {
  CLI::App app(
      "Class predictions for images: image files, folders (every image under them, sorted), archives and "
      "other DATA (docs/data.md), ARCHIVE:entry, and ARCHIVE:GLOB (e.g. 'test.zip:test/*.jpg'; quote it; "
      "'*' stays within a folder, '**' crosses folders). Files in a folder or archive that are not images "
      "are skipped and counted. An image that cannot be read is reported and the others are still "
      "predicted; the exit code then says the worst problem. --csv writes a submission (one row per "
      "image, id = its file name without extension) instead of the rows on stdout. A multi-label model gives "
      "each image its tags: the classes whose probability reaches the threshold.",
      "predict");
  PredictArgs a;
  add_predict_options(app, a);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  Progress::set_quiet(a.json);
  const SubmissionColumns columns =
      a.csv_columns.empty() ? SubmissionColumns{} : parse_submission_columns(a.csv_columns, "--csv-columns");

  const LoadedModel loaded = load_model_any(check_input(a.ckpt, InputKind::checkpoint), a.foreign);
  const PredictInputs inputs = PredictInputs::expand(a.inputs, a.archive_options);
  if (!a.csv.empty()) {
    refuse_duplicate_ids(inputs.images(), a.csv);
    check_csv_target(a.csv, inputs);
  }
  PredictOutput o;
  for (const auto& p : inputs.problems()) o.report(p.input, p.what, p.kind);
  for (const auto& [input, skips] : inputs.skipped()) {
    note(input + ": skipped " + skips.summary());
    o.skipped[input] = skips.counts;
  }
  o.csv_text = submission_header(columns, a.probabilities ? &loaded.info.classes : nullptr, a.escape_formulas);
  predict_all(a, loaded, inputs, o);
  return finish_predict(a, columns, loaded.info, o);
}

}  // namespace frugal::cli

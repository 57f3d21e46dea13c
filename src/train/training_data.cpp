// The data a training session reads (train/training_data.h).
#include "train/training_data.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "frugal/archive/data_source.h"
#include "frugal/loader/gpu_loader.h"
#include "frugal/dataset/train_val.h"
#include "frugal/training/data_options.h"
#include "frugal/train/run_writer.h"
#include "frugal/util/error.h"
#include "frugal/util/progress.h"
#include "frugal/util/units.h"

namespace frugal {
namespace fs = std::filesystem;

namespace {

// `s` as one word for a POSIX shell: in single quotes, each ' written '\''.
std::string shell_word(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

// What is left of {disk_budget} for those tars: the limit less all else it counts (their own bytes
// from an earlier run are left out: the tar is made again or reused as it is).
std::uint64_t cache_budget(const TrainConfig& c, const fs::path& run_dir, Env& env) {
  const DiskBudgetOptions bo = disk_budget_options(c, run_dir);
  std::uint64_t used = DiskBudget(budget_workspace(run_dir, c.workspace), bo, env).used();
  for (const auto& f : bo.counted) used -= std::min(used, allocated_size(f));
  return used >= *bo.limit ? 0 : *bo.limit - used;
}

}  // namespace

DiskBudgetOptions disk_budget_options(const TrainConfig& c, const fs::path& run_dir) {
  DiskBudgetOptions bo;
  bo.limit = c.disk_budget.bytes;
  bo.own_folder = run_dir;
  if (c.cache_decompressed)
    for (const std::string* data : {&c.data, &c.val})
      if (!data->empty())
        if (auto f = decompressed_cache_file(*data)) bo.counted.push_back(*f);
  return bo;
}

TrainingData TrainingData::open(const TrainConfig& c, const fs::path& run_dir, Env& env) {
  TrainValOptions o = train_val_options(c);
  if (c.disk_budget) o.dataset.decompressed_max_bytes = cache_budget(c, run_dir, env);
  TrainVal data = open_train_val(o);
  TrainingData d;
  d.train = std::move(data.train);
  d.val = std::move(data.val);
  d.classes = std::move(data.classes);
  d.skipped = std::move(data.skipped);
  d.val_skipped = std::move(data.val_skipped);
  d.decided = std::move(data.decided);
  return d;
}

void TrainingData::make_loaders(const TrainConfig& c, int image_size, const torch::Device& device,
                                const LoaderShare& share, int train_size) {
  LoaderOptions lo;
  lo.image_size = train_size > 0 ? train_size : image_size;
  lo.batch_size = c.batch_size;
  lo.workers = c.workers;
  lo.seed = c.seed;
  lo.augment = c.augment;
  lo.sample_weights = sample_weights;
  lo.pin_memory = device.is_cuda();
  if (share.replicas > 1) lo.shard = {share.replica, share.replicas};
  if (!share.reads_images) {
    train_loader = std::make_unique<LabelLoader>(train, lo);
  } else if (c.decode == DecodeChoice::gpu) {
    GpuOutputOptions go;  // uint8 levels, normalised by TrainStep as the CPU batches are
    go.device = device.has_index() ? device.index() : 0;
    train_loader = std::make_unique<GpuLoader>(train, lo, go);
  } else {
    train_loader = std::make_unique<Loader>(train, lo);
  }
  lo.image_size = image_size;  // validation at the model's size
  lo.sample_weights.clear();   // and every image once
  lo.train = false;
  lo.shuffle = false;
  lo.batch_size = std::max(c.batch_size, 256);
  lo.count_bad_only = true;  // the session holds validation's undecodable images to the limit, every rank together
  if (share.reads_images)
    val_loader = std::make_unique<Loader>(val, lo);
  else
    val_loader = std::make_unique<LabelLoader>(val, lo);
}

std::pair<std::int64_t, std::int64_t> TrainingData::validation_bad_seen(const SumOverRanks& sum,
                                                                        const torch::Device& device) const {
  std::vector<torch::Tensor> counts{torch::tensor({static_cast<std::int64_t>(val_loader->samples_bad()),
                                                   static_cast<std::int64_t>(val_loader->samples_seen())},
                                                  torch::kInt64)
                                        .to(device)};
  sum(counts);
  const auto n = counts[0].cpu();
  return {n[0].item<std::int64_t>(), n[1].item<std::int64_t>()};
}

std::pair<std::string, std::string> TrainingData::bad_validation_files() const {
  const std::vector<std::string> files = val->bad_files();
  std::string names, excludes;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (i < 5) names += (i ? ", " : "") + files[i];
    if (i < 20) excludes += " {exclude} " + shell_word(files[i]);
  }
  if (files.size() > 5) names += ", ... (" + std::to_string(files.size()) + " in all)";
  if (files.size() > 20) excludes += " (and the rest)";
  return {names, excludes};
}

void TrainingData::check_validation_up_front(const TrainConfig& c, Env& env, const SumOverRanks& sum,
                                             const torch::Device& device) {
  constexpr std::size_t kCheckValMax = 10000;
  if (!c.check_val || val->size() == 0 || val->size() > kCheckValMax) return;
  const auto t0 = env.steady_now();
  val_loader->start(0, 0);
  while (val_loader->next()) {}
  const auto [bad, seen] = validation_bad_seen(sum, device);
  const double secs = std::chrono::duration<double>(env.steady_now() - t0).count();
  char took[32];
  std::snprintf(took, sizeof took, "%.1f s", secs);
  note("checked the " + count_of(val->size(), "validation image") + " before training (" + took +
       ", {check_val} off leaves it to the first evaluation): " +
       (bad == 0 ? std::string("all decode") : std::to_string(bad) + " undecodable"));
  if (bad == 0 || static_cast<double>(bad) <= c.max_bad_fraction * static_cast<double>(seen)) return;
  const auto [names, excludes] = bad_validation_files();
  fail(ErrorKind::invalid, c.val.empty() ? c.data + " (its validation images)" : c.val,
       "validation images that decode (at most {max_bad_fraction} " + std::to_string(c.max_bad_fraction) +
           " of them undecodable)",
       std::to_string(bad) + " of " + std::to_string(seen) + " undecodable: " + names,
       "nothing was trained: run the same command with" + excludes + " to leave them out (or replace them)");
}

void TrainingData::describe(SessionOutcome& o) const {
  o.classes = classes.size();
  o.train_images = train ? train->size() : 0;
  o.val_images = val ? val->size() : 0;
  // The skips found opening the data, and the images the loaders could not decode since.
  o.skipped = train ? train->skipped().counts : skipped;
  o.val_skipped = val && !decided.contains("val_split") ? val->skipped().counts : val_skipped;
  o.data = decided;
}

DecodeChoice choose_decode(const TrainConfig& c, const torch::Device& device, const Dataset& train) {
  if (c.decode == DecodeChoice::cpu) return DecodeChoice::cpu;
  if (c.decode == DecodeChoice::gpu) {
    if (!device.is_cuda())
      fail(ErrorKind::usage, "{decode} gpu", "a CUDA device to train on", "{device} " + device.str(),
           "train on cuda (or auto on a machine with a GPU), or decode on the cpu");
    note("decode: " + select_decode("gpu", train).reason);
    return DecodeChoice::gpu;
  }
  if (c.device.kind == DeviceKind::cpu) {
    note("decode: cpu ({device} cpu)");
    return DecodeChoice::cpu;
  }
  DecodeSelection sel = select_decode("auto", train);
  note("decode: " + sel.reason);
  return sel.gpu && device.is_cuda() ? DecodeChoice::gpu : DecodeChoice::cpu;
}

}  // namespace frugal

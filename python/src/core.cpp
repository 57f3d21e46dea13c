// frugal._core: the C++ half of the Python package (python/frugal/__init__.py is the other half,
// docs/python.md the guide). A thin binding: every decision (which data, which samples each rank
// reads, augmentation, resume positions, checkpoint files, retention, disk budget, deadline) is the
// core's, the same code the CLI runs. What is here is only the crossing: arguments in, tensors
// and plain values out, the GIL released while C++ works, frugal::Error raised as frugal.Error.
//
// pybind11 and the tensor casters are torch's own (torch/extension.h), so the module shares the
// LibTorch that `import torch` loaded: there is never a second one in the process.
#include <signal.h>
#include <torch/extension.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "frugal/archive/archive.h"
#include "frugal/archive/split.h"
#include "frugal/budget/budget.h"
#include "frugal/checkpoint/checkpoint.h"
#include "frugal/checkpoint_files/run_folder.h"
#include "frugal/train/run_writer.h"
#include "frugal/loader/loader.h"
#include "frugal/dataset/train_val.h"
#include "frugal/training/data_options.h"
#include "frugal/training/stop_policy.h"
#include "frugal/train/launch.h"
#include "frugal/util/env.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/progress.h"
#include "frugal/util/settings_text.h"
#include "frugal/util/units.h"

namespace py = pybind11;
namespace fs = std::filesystem;

namespace frugal {
namespace {

// Messages name a setting as the keyword argument a Python user passes ("disk_budget="), not as
// the CLI's flag (settings_text.h).
std::string python_spelling(const std::string& key) { return key + "="; }

const char* kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::usage:
      return "usage";
    case ErrorKind::invalid:
      return "invalid";
    case ErrorKind::unsupported:
      return "unsupported";
    case ErrorKind::budget:
      return "budget";
    case ErrorKind::io:
      return "io";
    case ErrorKind::interrupted:
      return "interrupted";
  }
  return "io";
}

// A loader or checkpointer belongs to the process that made it: its threads do not exist in a
// forked child (a DataLoader worker), whose copy of their locks may be held forever.
class OwnedByProcess {
 protected:
  void check_process(const char* what) const {
    if (::getpid() != owner_)
      fail(ErrorKind::usage, what, "use in the process that made it",
           "a forked process (pid " + std::to_string(::getpid()) + ", made in " + std::to_string(owner_) + ")",
           "a frugal.Loader is one iterator with its own C++ threads, not a Dataset for DataLoader workers: "
           "iterate it in the main process in place of the DataLoader");
  }
  bool forked() const { return ::getpid() != owner_; }

 private:
  pid_t owner_ = ::getpid();
};

// ---- Signals ------------------------------------------------------------------------------------

// Each arrival of a signal frugal.Checkpointer catches, counted where it lands and then handed on
// to Python's own C handler. Python runs a signal's handler once however many times the signal
// arrived while the main thread was in C (a step's kernels, a wait for a batch or a sync), so two
// Ctrl-C within one step reached the Checkpointer as one and the second, the "stop at once", was
// lost; its handler reads the count (signal_arrivals) instead.
constexpr int kMaxSignal = 65;
std::atomic<std::uint64_t> g_arrivals{0};
struct sigaction g_python_handler[kMaxSignal];

void count_signal(int sig, siginfo_t* info, void* context) {
  g_arrivals.fetch_add(1);
  const struct sigaction& next = g_python_handler[sig];
  if (next.sa_flags & SA_SIGINFO) {
    if (next.sa_sigaction) next.sa_sigaction(sig, info, context);
  } else if (next.sa_handler != SIG_DFL && next.sa_handler != SIG_IGN) {
    next.sa_handler(sig);
  }
}

// Puts the counter in front of the handler `sig` has now (Python's, just installed by
// signal.signal(), which replaces the counter again when the Checkpointer gives the signal back).
void count_signals(int sig) {
  if (sig <= 0 || sig >= kMaxSignal)
    fail(ErrorKind::usage, "count_signals", "a signal number", std::to_string(sig), "");
  struct sigaction now {};
  if (::sigaction(sig, nullptr, &now) != 0 || ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == count_signal)) return;
  g_python_handler[sig] = now;
  struct sigaction sa = now;
  sa.sa_sigaction = count_signal;
  sa.sa_flags = now.sa_flags | SA_SIGINFO;
  ::sigaction(sig, &sa, nullptr);
}

// ---- Loader -------------------------------------------------------------------------------------

struct LoaderArgs {
  // DATA, the validation data and their options in frugal train's fields (the data ones only are
  // read, by train_val_options: the one rule train's session opens its data by). val_split: None
  // 5% (said), 0 no validation.
  TrainConfig data;
  std::string subset = "train";
  LoaderOptions loader;
  int rank = -1, world = -1;  // -1: torchrun's environment
};

// The data options `frugal train` refuses as it parses them (train_options.cpp), refused here with
// its words: the core takes them as given (label_kind is checked only on CIFAR data).
void check_data_options(const DatasetOptions& d) {
  if (!d.label_kind.empty() && d.label_kind != "fine" && d.label_kind != "coarse")
    fail(ErrorKind::usage, "label_kind=", "one of fine, coarse", "\"" + d.label_kind + "\"", "");
  for (const std::string& pattern : d.exclude)
    if (pattern.empty()) fail(ErrorKind::usage, "exclude=", "a path inside the data or a glob", "\"\"", "");
}

class PyLoader : OwnedByProcess {
 public:
  // The notes opening the data makes are kept for Python to say (notes()), not printed: a notebook
  // that makes loaders in a loop hears them once. Refused, they are printed before the error.
  explicit PyLoader(LoaderArgs a) {
    NoteCapture capture(notes_);
    try {
      open(std::move(a));
    } catch (...) {
      for (const auto& line : notes_) std::fprintf(stderr, "%s\n", line.c_str());
      throw;
    }
  }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  void open(LoaderArgs a) {
    if (a.subset != "train" && a.subset != "val")
      fail(ErrorKind::usage, "subset=", "\"train\" or \"val\"", "\"" + a.subset + "\"", "");
    const std::optional<double>& val_split = a.data.val_split;
    if (val_split && !(*val_split >= 0 && *val_split < 1))
      fail(ErrorKind::usage, "val_split=", "a fraction from 0 (no validation) up to 1", std::to_string(*val_split), "");
    const RankWorld env = rank_world();
    const int world = a.world > 0 ? a.world : env.world;
    const int rank = a.rank >= 0 ? a.rank : (a.world > 0 ? 0 : env.rank);
    if (rank >= world)
      fail(ErrorKind::usage, "rank=", "a rank below world_size " + std::to_string(world), std::to_string(rank), "");
    a.loader.shard = Shard{rank, world};
    const TrainValOptions o = train_val_options(a.data);
    check_data_options(o.dataset);
    TrainVal tv = open_train_val(o);
    dataset_ = a.subset == "train" ? tv.train : tv.val;
    // Validation data of its own (val=, a val/ folder) has its own skips; one split off DATA was
    // opened with DATA, whose skips are its skips too.
    const bool own_val = a.subset == "val" && !tv.decided.contains("val_split");
    skipped_ = own_val ? tv.val_skipped : tv.skipped;
    classes_ = tv.classes;
    options_ = a.loader;
    loader_ = std::make_unique<Loader>(dataset_, options_);
  }

 public:
  ~PyLoader() {
    // In a forked child the threads are not there to join: the state is left as it is.
    if (forked()) (void)loader_.release();
  }

  void start(std::int64_t epoch, std::int64_t position) {
    check_process("frugal.Loader");
    py::gil_scoped_release release;
    loader_->start(epoch, position);
  }
  py::object next() {
    check_process("frugal.Loader");
    std::optional<Batch> b;
    {
      py::gil_scoped_release release;
      b = loader_->next();
    }
    if (!b) return py::none();
    return py::make_tuple(b->images, b->labels, b->epoch, b->position);
  }
  std::int64_t batches_per_epoch() const { return loader_->batches_per_epoch(); }
  std::size_t size() const { return dataset_->size(); }
  int channels() const { return dataset_->channels(); }
  const std::vector<std::string>& classes() const { return classes_; }
  const std::map<std::string, std::uint64_t>& skipped() const { return skipped_; }
  bool multi_label() const { return dataset_->multi_label(); }
  std::uint64_t samples_seen() const { return loader_->samples_seen(); }
  std::uint64_t samples_bad() const { return loader_->samples_bad(); }
  int rank() const { return options_.shard.rank; }
  int world() const { return options_.shard.world; }

 private:
  std::shared_ptr<Dataset> dataset_;
  std::vector<std::string> classes_;
  std::map<std::string, std::uint64_t> skipped_;  // files opening this subset's data left out, by reason
  LoaderOptions options_;
  std::unique_ptr<Loader> loader_;
  std::vector<std::string> notes_;
};

// ---- Checkpointer -------------------------------------------------------------------------------

NamedTensors named(const py::dict& d) {
  NamedTensors out;
  for (const auto& [k, v] : d) out.emplace_back(py::cast<std::string>(k), py::cast<torch::Tensor>(v));
  return out;
}

py::dict as_dict(const NamedTensors& t) {
  py::dict d;
  for (const auto& [k, v] : t) d[py::str(k)] = v;
  return d;
}

const char* status_name(SaveResult::Status s) {
  switch (s) {
    case SaveResult::Status::saved:
      return "saved";
    case SaveResult::Status::weights_only:
      return "weights_only";
    case SaveResult::Status::skipped_no_room:
      return "skipped_no_room";
    case SaveResult::Status::disk_full:
      return "disk_full";
  }
  return "saved";
}

py::dict result_dict(const SaveResult& r) {
  py::dict d;
  d["status"] = status_name(r.status);
  d["file"] = r.file.string();
  d["bytes"] = r.bytes;
  d["seconds"] = r.seconds;
  d["message"] = r.message;
  return d;
}

struct CheckpointerArgs {
  std::string run;
  std::optional<std::string> disk_budget, deadline, workspace;
  int keep_last = 2;
  bool writes = true;  // false on ranks other than 0: they read the run folder, never write it
};

// The run folder of a training that a Python loop drives: the CLI's checkpoint manager, background
// writer, disk budget and stop policy, the folder claimed as `frugal train` claims it.
class PyCheckpointer : OwnedByProcess {
 public:
  explicit PyCheckpointer(const CheckpointerArgs& a) {
    std::optional<DeadlineSpec> deadline;
    if (a.deadline) deadline = DeadlineSpec::parse(*a.deadline);
    stop_.emplace(env_, deadline, StopPolicy::Signals::from_caller);
    run_ = std::make_unique<RunWriter>(a.run, a.writes, env_);
    try {
      CheckpointOptions co;
      co.retention.keep_last = a.keep_last;
      co.retention.keep_best = 0;
      std::optional<DiskBudgetOptions> bo;
      if (a.disk_budget) bo.emplace().limit = parse_size(*a.disk_budget);
      run_->open(co, bo, a.workspace.value_or(""));
      config_ = run_config({{"front_end", "python"}, {"keep_last", a.keep_last}, {"keep_best", 0}});
      if (a.disk_budget) config_["disk_budget"] = *a.disk_budget;
      if (a.deadline) config_["deadline"] = *a.deadline;
    } catch (...) {
      run_->abandon();
      throw;
    }
  }
  ~PyCheckpointer() {
    if (forked()) run_->forget_after_fork();  // the writer's thread is the parent's
  }

  // Before training: a budget or a disk that cannot keep the run resumable is Error(budget), with
  // nothing written (and the folder removed when this made it). Then the run folder is the
  // training's: config.json written, interrupted writes' temporaries removed.
  void prepare(std::uint64_t weight_bytes, std::uint64_t state_bytes) {
    check_process("frugal.Checkpointer");
    if (!run_->writes() || run_->writing()) return;
    try {
      run_->require_room_for_run(weight_bytes, state_bytes);
      run_->require_free_space();
    } catch (...) {
      run_->abandon();
      throw;
    }
    RunWriter::Start start;
    start.config = config_;
    run_->begin_writing(start);
  }

  py::object load_latest() {
    check_process("frugal.Checkpointer");
    std::optional<CheckpointManager::Resume> r;
    {
      py::gil_scoped_release release;
      r = run_->manager().load_latest();
    }
    if (!r) return py::none();
    py::dict d;
    d["weights"] = as_dict(r->ckpt.weights);
    d["state"] = as_dict(r->ckpt.state);
    d["step"] = r->ckpt.step;
    d["epoch"] = r->ckpt.epoch;
    d["loader"] = r->ckpt.loader.dump();
    d["metrics"] = r->ckpt.metrics.dump();
    py::dict extra;
    for (const auto& [k, v] : r->ckpt.extra) extra[py::str(k)] = py::bytes(v);
    d["extra"] = extra;
    d["file"] = r->file.string();
    d["skipped"] = r->skipped;
    return d;
  }

  // Hands the checkpoint to the background writer (the caller's stall: copying the tensors to host
  // memory); waits for the whole save when the stop policy needs to measure one.
  void save(std::int64_t step, std::int64_t epoch, const py::dict& weights, const py::dict& state,
            const std::string& loader, const std::string& metrics, const py::dict& extra, const py::dict& model) {
    check_process("frugal.Checkpointer");
    if (!run_->writes()) return;
    CheckpointWriter* writer = run_->writer();
    if (!writer) fail(ErrorKind::usage, "frugal.Checkpointer.save", "restore() called first", "no restore()", "");
    Checkpoint ck;
    ck.model.name = py::cast<std::string>(model["name"]);
    ck.model.classes = py::cast<std::vector<std::string>>(model["classes"]);
    ck.model.image_size = py::cast<int>(model["image_size"]);
    ck.model.channels = py::cast<int>(model["channels"]);
    ck.model.mean = py::cast<std::vector<float>>(model["mean"]);
    ck.model.std = py::cast<std::vector<float>>(model["std"]);
    // A loader of tags (multi-label): frugal's eval and predict read the outputs as sigmoids.
    if (model.contains("multi_label")) ck.model.multi_label = py::cast<bool>(model["multi_label"]);
    ck.weights = named(weights);
    ck.state = named(state);
    ck.step = step;
    ck.epoch = epoch;
    ck.loader = nlohmann::json::parse(loader);
    ck.metrics = nlohmann::json::parse(metrics);
    ck.config = config_;
    for (const auto& [k, v] : extra) ck.extra[py::cast<std::string>(k)] = py::cast<std::string>(v);
    py::gil_scoped_release release;
    const bool whole = stop_->wants_whole_save();
    const auto t0 = env_.steady_now();
    writer->submit(ck);
    if (whole) last_ = writer->wait();
    stop_->save_took(std::chrono::duration<double>(env_.steady_now() - t0).count(), whole);
  }

  py::dict wait() {
    check_process("frugal.Checkpointer");
    CheckpointWriter* writer = run_->writer();
    if (!writer) return result_dict(last_);
    {
      py::gil_scoped_release release;
      const auto t0 = env_.steady_now();
      last_ = writer->wait();
      stop_->save_took(std::chrono::duration<double>(env_.steady_now() - t0).count(), false);
    }
    return result_dict(last_);
  }

  void restart_step_clock() { stop_->restart_step_clock(); }
  double step_ended() { return stop_->step_ended(env_.steady_now()); }
  std::optional<std::string> should_stop() const {
    auto r = stop_->before_step(false);
    if (!r) return std::nullopt;
    return r->text;
  }
  void signal_arrived(int sig) { stop_->signal_arrived(sig); }
  std::optional<double> deadline_remaining() const {
    if (!stop_->deadline()) return std::nullopt;
    return stop_->deadline()->remaining_seconds();
  }
  std::optional<std::int64_t> resumable_step() const { return run_->manager().resumable_step(); }
  std::string run() const { return run_->run().string(); }

  // Waits for the pending save and lets the run folder go (its lock, the budget's watcher).
  py::dict close() {
    py::dict r = result_dict(last_);
    if (forked()) return r;
    if (run_->writer()) r = wait();
    run_->close();
    return r;
  }

 private:
  Env& env_ = Env::real();
  std::optional<StopPolicy> stop_;
  std::unique_ptr<RunWriter> run_;  // claimed, checkpoints, disk budget, config.json
  nlohmann::json config_;
  SaveResult last_;
};

// frugal.Error(RuntimeError) with .kind ("usage", "budget", ...) and .exit_code (the CLI's for the
// same failure). The type lives as long as the process (never freed after the interpreter).
void bind_error(py::module_& m) {
  static PyObject* error_type = py::exception<Error>(m, "Error", PyExc_RuntimeError).release().ptr();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      py::object exc = py::reinterpret_borrow<py::object>(error_type)(e.what());
      exc.attr("kind") = kind_name(e.kind());
      exc.attr("exit_code") = exit_code(e.kind());
      PyErr_SetObject(error_type, exc.ptr());
    }
  });
}

// Loader(...)'s keyword arguments, in the order bind_loader names them.
std::unique_ptr<PyLoader> make_loader(
    std::string data, std::string val, std::optional<double> val_split, std::string subset, std::string data_root,
    std::string labels, std::string label_pattern, std::string label_columns, std::string images_dir,
    std::string class_names, int channels, double max_bad_fraction, int batch_size, int image_size, bool train,
    std::uint64_t seed, int workers, bool shuffle, bool drop_last, bool pin_memory, int prefetch, int rank, int world,
    std::optional<std::string> max_file_bytes, std::string label_separator, std::string labels_header,
    bool labels_are_classes, std::string val_labels, std::string val_label_columns, std::string val_images_dir,
    std::vector<std::string> exclude, std::string label_kind, std::string name_encoding, bool cache_decompressed) {
  LoaderArgs a;
  TrainConfig& d = a.data;
  d.data = std::move(data);
  d.val = std::move(val);
  d.val_split = val_split;
  a.subset = std::move(subset);
  d.data_root = std::move(data_root);
  d.labels = std::move(labels);
  d.label_pattern = std::move(label_pattern);
  d.label_columns = std::move(label_columns);
  d.label_separator = std::move(label_separator);
  d.labels_header = std::move(labels_header);
  d.labels_are_classes = labels_are_classes;
  d.val_labels = std::move(val_labels);
  d.val_label_columns = std::move(val_label_columns);
  d.val_images_dir = std::move(val_images_dir);
  d.exclude = std::move(exclude);
  d.label_kind = std::move(label_kind);
  d.name_encoding = std::move(name_encoding);
  d.cache_decompressed = cache_decompressed;
  d.images_dir = std::move(images_dir);
  d.class_names = std::move(class_names);
  d.channels = channels;
  d.max_bad_fraction = max_bad_fraction;
  if (max_file_bytes) d.max_file_bytes = {*max_file_bytes, parse_size(*max_file_bytes)};
  a.loader.batch_size = batch_size;
  a.loader.image_size = image_size;
  a.loader.train = train;
  a.loader.seed = seed;
  a.loader.workers = workers;
  a.loader.shuffle = shuffle;
  a.loader.drop_last = drop_last;
  a.loader.pin_memory = pin_memory;
  a.loader.prefetch_batches = prefetch;
  a.rank = rank;
  a.world = world;
  return std::make_unique<PyLoader>(std::move(a));
}

void bind_loader(py::module_& m) {
  py::class_<PyLoader>(m, "Loader")
      .def(py::init(&make_loader), py::arg("data"), py::arg("val"), py::arg("val_split"), py::arg("subset"),
           py::arg("data_root"), py::arg("labels"), py::arg("label_pattern"), py::arg("label_columns"),
           py::arg("images_dir"), py::arg("class_names"), py::arg("channels"), py::arg("max_bad_fraction"),
           py::arg("batch_size"), py::arg("image_size"), py::arg("train"), py::arg("seed"), py::arg("workers"),
           py::arg("shuffle"), py::arg("drop_last"), py::arg("pin_memory"), py::arg("prefetch"), py::arg("rank"),
           py::arg("world"), py::arg("max_file_bytes"), py::arg("label_separator") = "",
           py::arg("labels_header") = "auto", py::arg("labels_are_classes") = false, py::arg("val_labels") = "",
           py::arg("val_label_columns") = "", py::arg("val_images_dir") = "",
           py::arg("exclude") = std::vector<std::string>{}, py::arg("label_kind") = "", py::arg("name_encoding") = "",
           py::arg("cache_decompressed") = false)
      .def("start", &PyLoader::start, py::arg("epoch"), py::arg("position"))
      .def("next", &PyLoader::next)
      .def_property_readonly("batches_per_epoch", &PyLoader::batches_per_epoch)
      .def_property_readonly("size", &PyLoader::size)
      .def_property_readonly("channels", &PyLoader::channels)
      .def_property_readonly("classes", &PyLoader::classes)
      .def_property_readonly("skipped", &PyLoader::skipped)
      .def_property_readonly("multi_label", &PyLoader::multi_label)
      .def_property_readonly("samples_seen", &PyLoader::samples_seen)
      .def_property_readonly("samples_bad", &PyLoader::samples_bad)
      .def_property_readonly("rank", &PyLoader::rank)
      .def_property_readonly("world", &PyLoader::world)
      .def_property_readonly("notes", &PyLoader::notes);
}

void bind_checkpointer(py::module_& m) {
  py::class_<PyCheckpointer>(m, "Checkpointer")
      .def(py::init([](std::string run, std::optional<std::string> disk_budget, int keep_last,
                       std::optional<std::string> deadline, std::optional<std::string> workspace, bool writes) {
             CheckpointerArgs a;
             a.run = std::move(run);
             a.disk_budget = std::move(disk_budget);
             a.keep_last = keep_last;
             a.deadline = std::move(deadline);
             a.workspace = std::move(workspace);
             a.writes = writes;
             return std::make_unique<PyCheckpointer>(a);
           }),
           py::arg("run"), py::arg("disk_budget"), py::arg("keep_last"), py::arg("deadline"), py::arg("workspace"),
           py::arg("writes"))
      .def("prepare", &PyCheckpointer::prepare, py::arg("weight_bytes"), py::arg("state_bytes"))
      .def("load_latest", &PyCheckpointer::load_latest)
      .def("save", &PyCheckpointer::save, py::arg("step"), py::arg("epoch"), py::arg("weights"), py::arg("state"),
           py::arg("loader"), py::arg("metrics"), py::arg("extra"), py::arg("model"))
      .def("wait", &PyCheckpointer::wait)
      .def("restart_step_clock", &PyCheckpointer::restart_step_clock)
      .def("step_ended", &PyCheckpointer::step_ended)
      .def("should_stop", &PyCheckpointer::should_stop)
      .def("signal_arrived", &PyCheckpointer::signal_arrived, py::arg("signal"))
      .def("deadline_remaining", &PyCheckpointer::deadline_remaining)
      .def("resumable_step", &PyCheckpointer::resumable_step)
      .def_property_readonly("run", &PyCheckpointer::run)
      .def("close", &PyCheckpointer::close);
}

// split, join and verify, without the GIL while they work.
void bind_archive_functions(py::module_& m) {
  m.def(
      "split",
      [](const std::string& path, const std::string& size, const std::string& out) {
        SplitOptions o;
        o.part_size = parse_size(size);
        o.out_dir = out;
        SplitResult r;
        {
          py::gil_scoped_release release;
          r = split_file(path, o);
        }
        py::list parts;
        for (const auto& p : r.parts)
          parts.append(py::dict(py::arg("file") = p.file, py::arg("size") = p.size, py::arg("sha256") = p.sha256));
        return py::dict(py::arg("manifest") = r.manifest.string(), py::arg("name") = r.name, py::arg("size") = r.size,
                        py::arg("sha256") = r.sha256, py::arg("parts") = parts);
      },
      py::arg("path"), py::arg("size"), py::arg("out"));
  m.def(
      "join",
      [](const std::string& manifest, const std::string& out, bool delete_parts) {
        JoinOptions o;
        o.output = out;
        o.delete_parts = delete_parts;
        JoinResult r;
        {
          py::gil_scoped_release release;
          r = join_parts(manifest, o);
        }
        return py::dict(py::arg("output") = r.output.string(), py::arg("size") = r.size, py::arg("sha256") = r.sha256,
                        py::arg("parts") = r.parts, py::arg("already_joined") = r.already_joined);
      },
      py::arg("manifest"), py::arg("out"), py::arg("delete_parts"));
  m.def(
      "verify",
      [](const std::string& path, unsigned threads) {
        std::string text;
        {
          py::gil_scoped_release release;
          text = verify_report_json(verify_archive(path, {}, threads));
        }
        return text;
      },
      py::arg("path"), py::arg("threads"));
}

}  // namespace
}  // namespace frugal

PYBIND11_MODULE(_core, m) {
  using namespace frugal;
  m.doc() = "frugal's C++ core (use the frugal package, not this module)";
  set_setting_speller(&python_spelling);
  bind_error(m);
  bind_loader(m);
  bind_checkpointer(m);
  m.def(
      "normalize",
      [](const torch::Tensor& images, const std::vector<float>& mean, const std::vector<float>& std) {
        return normalize(images, mean, std);
      },
      py::arg("images"), py::arg("mean"), py::arg("std"));
  bind_archive_functions(m);
  m.def("count_signals", &count_signals, py::arg("signal"));
  m.def("signal_arrivals", [] { return g_arrivals.load(); });
  m.def("rank_world", [] {
    const RankWorld r = rank_world();
    return py::make_tuple(r.rank, r.world);
  });
}

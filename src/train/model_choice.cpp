// The model a training session trains (train/model_choice.h).
#include "train/model_choice.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "frugal/checkpoint/weights_file.h"
#include "frugal/checkpoint_files/run_folder.h"
#include "frugal/train/run_writer.h"
#include "frugal/util/error.h"
#include "frugal/util/progress.h"
#include "frugal/util/units.h"
#include "train/device.h"

namespace frugal {
namespace fs = std::filesystem;

namespace {

// Physical memory of this machine (bytes); 0 when unknown.
std::uint64_t physical_memory() {
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
}

}  // namespace

std::map<std::string, torch::Tensor> load_checkpoint_or_weights(const std::string& given) {
  // A run folder, as eval, predict and export take one: its best checkpoint. (A Hugging Face
  // model folder, which holds no best.safetensors, is read as such below.)
  std::string path = given;
  std::error_code ec;
  if (fs::is_directory(given, ec) && !fs::is_symlink(fs::path(given) / kBestFile, ec) &&
      fs::is_regular_file(fs::path(given) / kBestFile, ec)) {
    path = (fs::path(given) / kBestFile).string();
    note("{init} " + given + ": a run folder: its " + kBestFile);
  }
  WeightsFile w = load_weights_file(path);
  if (!w.described.empty()) note(path + ": " + w.described);
  return std::move(w.tensors);
}

TrainedModel ModelChoice::make() {
  std::map<std::string, torch::Tensor> init;
  if (!c_.init.empty()) init = load_checkpoint_or_weights(c_.init);
  std::shared_ptr<Model> scripted = describe_model(choose_model(init));
  choose_device();
  torch::manual_seed(c_.seed);
  m_.model = scripted ? scripted : make_model(c_.model, static_cast<int>(data_.classes.size()), m_.info.channels);
  check_memory();
  if (scripted)
    check_scripted_model();
  else
    check_fits_model();
  if (!c_.init.empty()) {
    auto msg = load_weights(*m_.model, init, /*allow_head_mismatch=*/true);
    note("initialized from " + c_.init + (msg.empty() ? "" : ": " + msg));
  }
  if (!c_.freeze.empty()) note("froze " + count_of(static_cast<std::uint64_t>(freeze(*m_.model, c_.freeze)), "tensor"));
  return std::move(m_);
}

// With no --model: the zoo model whose names and shapes --init's weights have, else cnn; either
// way the log says the model, its image size and why. Returns the why.
std::string ModelChoice::choose_model(const std::map<std::string, torch::Tensor>& init) {
  if (!c_.model.empty()) return "{model}";
  if (!c_.init.empty()) {
    const std::optional<std::string> theirs = zoo_model_for(init);
    std::string zoo;
    for (const std::string& name : zoo_model_names()) zoo += (zoo.empty() ? "" : ", ") + name;
    if (!theirs)
      fail(ErrorKind::usage, c_.init, "the weights of a zoo model (" + zoo + ") to choose the model by",
           "the names and shapes of none of them", "give {model} NAME, the model these weights are for");
    c_.model = *theirs;
    return "chosen by {init}: its weights have " + *theirs + "'s names and shapes";
  }
  c_.model = "cnn";
  return "the default; {model} not given";
}

// m_.info: the model's input (size, channels, statistics) and classes; returns the user's
// TorchScript module when --model names one. Says what was chosen and why.
std::shared_ptr<Model> ModelChoice::describe_model(const std::string& why) {
  std::shared_ptr<Model> scripted;  // --model FILE.pt
  if (names_module_file(c_.model)) {
    if (c_.deterministic) set_torchscript_optimized(false);
    set_allow_model_code(c_.allow_model_code);
    ScriptedModule m = load_torchscript(c_.model);
    scripted = m.model;
    m_.info = torchscript_model_info(c_.model, m.sha256, data_.train->channels());
  } else {
    m_.info = default_model_info(c_.model, data_.train->channels());
  }
  m_.info.classes = data_.classes;
  m_.info.multi_label = data_.train->multi_label();
  m_.info.threshold = static_cast<float>(c_.threshold);
  m_.eval_options.multi_label = m_.info.multi_label;
  m_.eval_options.thresholds = {m_.info.threshold};
  if (c_.image_size > 0) m_.info.image_size = c_.image_size;
  const std::string size_why = c_.image_size > 0 ? "{image_size}" : size_from_data(scripted.get());
  // Photos shrunk to a 28 px cnn train badly without a word: say what fits them.
  const int native = data_.train->native_size();
  const bool photos_small = why != "{model}" && c_.image_size <= 0 && native >= 2 * m_.info.image_size && native >= 96;
  note("model: " + c_.model + " at " + std::to_string(m_.info.image_size) + " px (" + why + "; " + size_why + ")" +
       (photos_small ? "; these images are about " + std::to_string(native) +
                           " px: for photos give {model} resnet18 or efficientnet_b0 (224 px)"
                     : ""));
  return scripted;
}

// With no {image_size}, a model that takes any size (every one but cnn, whose 28 px are its
// layers'; a TorchScript module is tried at it, its classes' count aside) trains at the data's own
// size when every sampled image is smaller than the model's default: an 8x upscale of 28 px images
// to 224 costs 64x the work and nobody asked for it. Said, and recorded in config.json's "data".
// Returns why the size is what it is.
std::string ModelChoice::size_from_data(Model* scripted) {
  const int largest = data_.train->largest_sampled_size(), default_size = m_.info.image_size;
  if (c_.model == "cnn" || largest <= 0 || largest >= default_size) return "its default image size";
  const int side = std::max(largest, kSmallestDataSize);
  if (scripted) {  // a module may take one size only: tried at this one first
    try {
      torch::NoGradGuard no_grad;
      scripted->eval();
      scripted->forward(torch::zeros({2, m_.info.channels, side, side}));
      scripted->train();
    } catch (const std::exception&) {
      scripted->train();
      return "its default image size: it does not take " + std::to_string(side) +
             " px images, the data's own size; {image_size} sets another";
    }
  }
  m_.info.image_size = side;
  const std::string said = "the images' own size: those sampled (up to 32) are at most " + std::to_string(largest) +
                           " px, less than its default " + std::to_string(default_size) + "; {image_size} sets another";
  data_.decided["image_size"] = said;
  return said;
}

// m_.device and m_.amp from {device} and {amp}; {gpu_memory}'s cap set.
void ModelChoice::choose_device() {
  // Several ranks on one machine: each takes the GPU of its LOCAL_RANK (cuda and auto alike).
  std::string device = c_.device.text();
  if (dist_ && c_.device.kind != DeviceKind::cpu && c_.device.index < 0 && torch::cuda::is_available())
    device = "cuda:" + std::to_string(dist_->local_rank);
  std::tie(m_.device, m_.amp) = resolve_device(device, c_.amp ? to_string(*c_.amp) : "auto");
  if (c_.gpu_memory)
    if (std::string line = limit_gpu_memory(m_.device, c_.gpu_memory.bytes); !line.empty()) note(line);
  note("device: " + configure_device(m_.device) + ", precision: " + to_string(m_.amp));
  // On the CPU `auto` stays fp32 (results comparable across machines); say when bf16 would pay.
  if (!m_.device.is_cuda() && m_.amp == AmpMode::off && !c_.amp && cpu_has_native_bf16())
    note("this CPU computes bf16 in hardware (AMX/AVX512-BF16): {amp} bf16 trains faster (cnn: 1.4x on 2 cores)");
  if (!m_.device.is_cuda() && m_.amp == AmpMode::bf16 && !cpu_has_native_bf16())
    warn("this CPU has no bf16 instructions, so {amp} bf16 is emulated and slower than {amp} off");
}

// An image size or batch that cannot fit is a budget error before anything is allocated (not a
// c10 "you tried to allocate" trace half-way). The estimate is a floor: a micro-batch of uint8
// images as the loader hands them over, as float on the device, and the first convolution's output
// with its gradient; what a real step needs is larger. Compared with the machine's RAM (and the
// GPU's memory as --gpu-memory gives it), a size over it cannot train at any speed.
void ModelChoice::check_memory() const {
  const std::int64_t side = m_.info.image_size, channels = m_.info.channels, batch = c_.batch_size;
  double per_pixel = static_cast<double>(channels) * (1 + 4);
  for (const auto& m : m_.model->modules(/*include_self=*/false))
    if (auto* conv = m->as<torch::nn::Conv2d>()) {
      const auto& o = conv->options;
      double stride = static_cast<double>((*o.stride())[0] * (*o.stride())[1]);
      per_pixel += 2.0 * 4.0 * static_cast<double>(o.out_channels()) / std::max(1.0, stride);
      break;
    }
  const double pixels = static_cast<double>(side) * static_cast<double>(side);
  const double need = per_pixel * pixels * static_cast<double>(batch);
  std::uint64_t have = physical_memory();
  std::string where = "the " + format_size(have) + " of RAM";
  if (m_.device.is_cuda() && c_.gpu_memory && c_.gpu_memory.bytes < have) {
    have = c_.gpu_memory.bytes;
    where = "the " + format_size(have) + " of GPU memory allowed";
  }
  // One image's elements must also be countable in an int (the loader's and decoder's buffers).
  const bool too_many_elements = pixels * static_cast<double>(channels) > 2147483647.0;
  if (have == 0 || (need <= static_cast<double>(have) && !too_many_elements)) return;
  const double h = static_cast<double>(have);
  auto fit_side = static_cast<std::int64_t>(std::sqrt(h / (per_pixel * static_cast<double>(batch))));
  fit_side = std::min<std::int64_t>(fit_side,
                                    static_cast<std::int64_t>(std::sqrt(2147483647.0 / static_cast<double>(channels))));
  auto fit_batch = static_cast<std::int64_t>(h / (per_pixel * pixels));
  std::string fix = "an image size of at most " + std::to_string(fit_side) + " at this batch size";
  if (fit_batch >= 1 && !too_many_elements)
    fix += ", or a batch size of at most " + std::to_string(fit_batch) + " at this image size";
  fail(ErrorKind::budget, c_.model + " at image size " + std::to_string(side) + ", batch " + std::to_string(batch),
       "memory for one training step (at least " + format_size(static_cast<std::uint64_t>(std::min(need, 1.8e19))) +
           ": the batch's images, as input, and the first layer's output and gradient)",
       "more than " + where, "use " + fix + "; nothing was changed");
}

// A user's module, before anything is written: what frugal cannot do to it is refused with the
// reason, and its output must be one logit per class of the data.
void ModelChoice::check_scripted_model() {
  if (c_.grad_checkpoint)
    fail(ErrorKind::usage, "{grad_checkpoint}", "a zoo model", "a TorchScript module (" + c_.model + ")",
         "train without {grad_checkpoint}: a module's code runs in TorchScript's interpreter, whose blocks frugal "
         "cannot recompute; lower {batch_size} with {accum} instead");
  if (c_.sync_bn)
    fail(ErrorKind::usage, "{sync_bn}", "a zoo model", "a TorchScript module (" + c_.model + ")",
         "train without {sync_bn}: the module's batch norm layers run as scripted");
  const std::int64_t side = m_.info.image_size, channels = m_.info.channels,
                     classes = static_cast<std::int64_t>(data_.classes.size());
  torch::Tensor out;
  try {
    torch::NoGradGuard no_grad;
    m_.model->eval();
    out = m_.model->forward(torch::zeros({2, channels, side, side}));
    m_.model->train();
  } catch (const c10::Error& e) {
    std::string what = e.what_without_backtrace();
    fail(ErrorKind::invalid, c_.model,
         "a module that takes a (batch, " + std::to_string(channels) + ", " + std::to_string(side) + ", " +
             std::to_string(side) + ") batch of images",
         "one that failed on it: " + what.substr(0, what.find('\n')),
         "make its first layer take " + std::to_string(channels) +
             " channels ({channels} 3 reads the images as RGB), "
             "or give the image size it takes with {image_size}");
  }
  if (out.dim() != 2 || out.size(0) != 2 || out.size(1) != classes)
    fail(ErrorKind::invalid, c_.model,
         "one logit per class of the data: output (batch, " + std::to_string(classes) + ")",
         "output " + c10::str(out.sizes()),
         "make the module with " + std::to_string(classes) + " outputs, e.g. timm.create_model(NAME, num_classes=" +
             std::to_string(classes) + ") or a last nn.Linear(..., " + std::to_string(classes) +
             "), then torch.jit.script and torch.jit.save it again");
}

// Small images are halved by each of the model's downsampling stages; one the model cannot take
// would otherwise fail inside its first forward as a c10 error. Larger sizes always fit.
void ModelChoice::check_fits_model() const {
  if (m_.info.image_size >= 64) return;
  torch::NoGradGuard no_grad;
  m_.model->eval();
  try {
    m_.model->forward(torch::zeros({1, m_.info.channels, m_.info.image_size, m_.info.image_size}));
  } catch (const c10::Error&) {
    m_.model->train();
    fail(ErrorKind::usage, "image size " + std::to_string(m_.info.image_size),
         "an image size the " + c_.model + " model can take", "one too small for its downsampling",
         "use a larger image size (the model's default is " +
             std::to_string(default_model_info(c_.model, m_.info.channels).image_size) + ")");
  }
  m_.model->train();
}

void TrainedModel::prepare_to_train(const TrainConfig& c) {
  // Channels-last on every device: on CUDA for cuDNN's tensor-core kernels, on the CPU because
  // oneDNN's convolutions run 1.1-1.6x faster that way (cnn, resnet18, efficientnet_b0 measured).
  to_channels_last(*model);
  model->set_grad_checkpoint(c.grad_checkpoint);
  model->train();
  OptimizerOptions o;
  o.kind = c.optimizer;
  o.lr = c.lr;
  o.weight_decay = c.weight_decay;
  o.backbone_lr_scale = c.lr_backbone;
  opt = make_optimizer(*model, o);
  LossScalerOptions so;
  so.enabled = amp == AmpMode::fp16;
  scaler = std::make_unique<LossScaler>(so, device);

  step_options.micro_batch = c.batch_size;
  test_size = c.test_size;
  apply_recipe(c);
  step_options.clip_grad_norm = c.clip_grad_norm;
  step_options.amp = amp;
  step_options.device = device;
  step_options.channels_last = true;
  step_options.mean = info.mean;
  step_options.std = info.std;
}

void TrainedModel::apply_recipe(const TrainConfig& c) {
  if (c.ema > 0 && !ema) ema = std::make_unique<WeightAverage>(*model, c.ema);
  step_options.label_smoothing = c.label_smoothing;
  eval_options.tta = c.tta_flip ? Tta::flip : Tta::none;
}

NamedTensors TrainedModel::param_names() const { return NamedTensors(opt.params.begin(), opt.params.end()); }

std::pair<std::uint64_t, std::uint64_t> TrainedModel::checkpoint_bytes() const {
  std::uint64_t weight_bytes = 0, state_bytes = 0;
  for (const auto& [name, t] : state_dict(*model)) weight_bytes += t.nbytes();
  for (const auto& [name, t] : optimizer_state(*opt.optimizer, param_names())) state_bytes += t.nbytes();
  for (const auto& [name, t] : scaler->state()) state_bytes += t.nbytes();
  state_bytes += cpu_rng_state().nbytes();
  if (ema) state_bytes += weight_bytes;  // the trained weights beside their average
  return {weight_bytes, state_bytes};
}

Checkpoint TrainedModel::checkpoint(const RunState& s, const RunIdentity& identity) const {
  Checkpoint ck;
  ck.kind = "full";
  ck.model = info;
  ck.weights = to_named(state_dict(*model));
  ck.state = optimizer_state(*opt.optimizer, param_names());
  put_trainer_tensors(ck, *scaler, device);
  if (ema) ema->put(ck);
  if (test_size > 0) ck.model.image_size = test_size;  // eval, predict and export read it at this size
  s.to_checkpoint(ck);
  ck.config = identity.to_json();
  return ck;
}

nlohmann::json TrainedModel::config_json(const RunIdentity& identity, const nlohmann::json& data) const {
  nlohmann::json j = identity.to_json();
  j["model_info"] = {{"name", info.name},
                     {"image_size", info.image_size},
                     {"channels", info.channels},
                     {"mean", info.mean},
                     {"std", info.std}};
  j["resolved"] = {{"device", device.str()}, {"amp", to_string(amp)}, {"micro_batch", step_options.micro_batch}};
  j["data"] = data;
  return run_config(std::move(j));
}

}  // namespace frugal

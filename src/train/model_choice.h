// The model a training session trains (internal to the session): which one (--model, the zoo
// model --init's weights are for, else cnn), at which image size and on which device and
// precision, checked before anything is written (memory, the data's image size, a TorchScript
// module's output), and the optimizer and step options it is trained with.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "frugal/checkpoint/checkpoint.h"
#include "frugal/checkpoint/safetensors.h"
#include "frugal/models/models.h"
#include "frugal/training/train_config.h"
#include "frugal/train/evaluate.h"
#include "frugal/train/amp.h"
#include "frugal/train/optim.h"
#include "frugal/train/step.h"
#include "train/distributed.h"
#include "train/run_state.h"
#include "train/training_data.h"
#include "train/weight_average.h"

namespace frugal {

// The model and all that trains it, as the session holds them.
struct TrainedModel {
  ModelInfo info;  // its input (size, channels, statistics), classes and thresholds
  torch::Device device{torch::kCPU};
  AmpMode amp = AmpMode::off;
  std::shared_ptr<Model> model;
  OptimizerSetup opt;
  std::unique_ptr<LossScaler> scaler;
  StepOptions step_options;
  EvalOptions eval_options;  // the evaluation chunk that fits, kept across epochs
  std::unique_ptr<WeightAverage> ema;
  int test_size =
      0;  // --test-size: what checkpoints record as the model's image size (0: info.image_size)  // --ema: the weights' average, what is evaluated and saved as the weights

  // Once placed on its device: channels-last, gradient checkpointing, training mode, and the
  // optimizer, the loss scaler, the weights' average and what every step is run with.
  void prepare_to_train(const TrainConfig& c);
  // The recipe's options the model holds: the weights' average (made now, from the weights, when
  // c.ema asks for one and there is none), label smoothing and the validation's test-time flip.
  void apply_recipe(const TrainConfig& c);
  // The optimizer's state by parameter name, as a checkpoint holds it.
  NamedTensors param_names() const;
  // The bytes a checkpoint holds: the weights, and the optimizer's and trainer's state.
  std::pair<std::uint64_t, std::uint64_t> checkpoint_bytes() const;
  // A full checkpoint: the weights, the optimizer's and trainer's state, `s` and the run's identity.
  // With --ema the weights are the average, the trained weights are trainer state (WeightAverage::put).
  Checkpoint checkpoint(const RunState& s, const RunIdentity& identity) const;
  // config.json (run_config()): the run's identity, the model's input, what this session resolved
  // (device, precision, micro-batch) and `data`, which files train and validate.
  nlohmann::json config_json(const RunIdentity& identity, const nlohmann::json& data) const;
};

// Chooses and makes the model on the CPU, for `data`'s classes and channels; resolves `c.model`
// in place (the session's config.json records it).
class ModelChoice {
 public:
  ModelChoice(TrainConfig& c, TrainingData& data, const std::optional<DistEnv>& dist)
      : c_(c), data_(data), dist_(dist) {}
  // The model described (the log says which, at which size and why), the device chosen, the model
  // made and checked, --init's weights loaded and --freeze applied. Not yet placed on the device.
  TrainedModel make();

 private:
  static constexpr int kSmallestDataSize = 16;  // below it a stride-32 network's maps are all padding
  std::string choose_model(const std::map<std::string, torch::Tensor>& init);
  std::shared_ptr<Model> describe_model(const std::string& why);
  std::string size_from_data(Model* scripted);
  void choose_device();
  void check_memory() const;
  void check_scripted_model();
  void check_fits_model() const;

  TrainConfig& c_;
  TrainingData& data_;
  const std::optional<DistEnv>& dist_;
  TrainedModel m_;
};

}  // namespace frugal

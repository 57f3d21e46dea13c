// `cnn`: a small network for 28x28 inputs (Fashion-MNIST, MNIST).
//
// Three 3x3 convolutions with batch norm (32, 64, 128 channels), the first two followed by 2x2 max
// pooling, then one hidden fully-connected layer: about 8 M multiply-adds per 28x28 image. It was
// cut from a VGG-style 18 M multiply-add design so that on two CPU cores it trains ~12 epochs of
// Fashion-MNIST in 10 minutes, the budget the project promises (>= 92% test accuracy).
#include "models/layers.h"
#include "models/zoo.h"

namespace frugal::detail {
namespace {

// features.N = [conv, bn, relu] and, for all but the last stage, [maxpool(2)].
Seq stage(int in, int out, bool pool) {
  Seq s(conv(in, out, 3), bn(out), torch::nn::ReLU());
  if (pool) s->push_back(torch::nn::MaxPool2d(2));
  return s;
}

class SmallCnn : public Model {
 public:
  SmallCnn(int num_classes, int channels) {
    features = register_module(
        "features", torch::nn::Sequential(stage(channels, 32, true), stage(32, 64, true), stage(64, 128, false)));
    fc1 = register_module("fc1", torch::nn::Linear(128 * 7 * 7, 128));
    dropout = register_module("dropout", torch::nn::Dropout(0.3));
    fc = register_module("fc", torch::nn::Linear(128, num_classes));
    init_conv_bn(*this);
    std::size_t i = 0;
    for (auto& child : features->children()) {
      auto* s = child->as<SeqImpl>();
      const std::string name = "features." + std::to_string(i++);
      pieces_.push_back({name, {name}, [this, s](const torch::Tensor& t) {
                           return run_block(
                               grad_checkpoint_, *s, [s](const torch::Tensor& u) { return s->forward(u); }, t);
                         }});
    }
    pieces_.push_back({"head", {"fc1", "dropout", "fc"}, [this](const torch::Tensor& t) { return head(t); }});
  }

  torch::Tensor forward(torch::Tensor x) override { return run_pieces(x, 0, pieces_.size()); }

  std::string head_prefix() const override { return "fc"; }

 private:
  torch::Tensor head(torch::Tensor x) {
    // Any input side works; 28x28 inputs arrive here as 7x7 already, and then the (identity) pool
    // is skipped: its backward alone took 9% of a bf16 training step on the CPU.
    if (x.size(2) != 7 || x.size(3) != 7) x = torch::adaptive_avg_pool2d(x, {7, 7});
    x = x.flatten(1);
    x = dropout(torch::relu(fc1(x)));
    return fc(x);
  }

  torch::nn::Sequential features{nullptr};
  torch::nn::Linear fc1{nullptr}, fc{nullptr};
  torch::nn::Dropout dropout{nullptr};
};

}  // namespace

std::shared_ptr<Model> make_cnn(int num_classes, int channels) {
  return std::make_shared<SmallCnn>(num_classes, channels);
}

}  // namespace frugal::detail

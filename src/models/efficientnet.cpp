// EfficientNet-B0 (torchvision's efficientnet.py: MBConv blocks with squeeze-and-excitation).
#include <cmath>

#include "models/layers.h"
#include "models/zoo.h"

namespace frugal::detail {
namespace {

// Conv2dNormActivation: "0" conv, "1" batch norm, then SiLU unless `act` is false.
Seq conv_norm_act(int in, int out, int k, int stride = 1, int groups = 1, bool act = true) {
  Seq s(conv(in, out, k, stride, groups), bn(out));
  if (act) s->push_back(torch::nn::SiLU());
  return s;
}

struct SqueezeExcitationImpl : torch::nn::Module {
  SqueezeExcitationImpl(int channels, int squeeze) {
    fc1 = register_module("fc1", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, squeeze, 1)));
    fc2 = register_module("fc2", torch::nn::Conv2d(torch::nn::Conv2dOptions(squeeze, channels, 1)));
  }
  torch::Tensor forward(torch::Tensor x) {
    auto s = torch::adaptive_avg_pool2d(x, {1, 1});
    s = torch::sigmoid(fc2(torch::silu(fc1(s))));
    return x * s;
  }
  torch::nn::Conv2d fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(SqueezeExcitation);

struct MBConvImpl : torch::nn::Module {
  MBConvImpl(int expand, int k, int stride, int in, int out, double drop_prob)
      : residual(stride == 1 && in == out), drop_prob(drop_prob) {
    int hidden = in * expand;
    torch::nn::Sequential b;
    if (hidden != in) b->push_back(conv_norm_act(in, hidden, 1));
    b->push_back(conv_norm_act(hidden, hidden, k, stride, hidden));
    b->push_back(SqueezeExcitation(hidden, std::max(1, in / 4)));
    b->push_back(conv_norm_act(hidden, out, 1, 1, 1, /*act=*/false));
    block = register_module("block", b);
  }
  torch::Tensor forward(torch::Tensor x) {
    auto out = block->forward(x);
    if (!residual) return out;
    return stochastic_depth(out) + x;
  }
  // torchvision.ops.StochasticDepth(mode="row"): identity in eval.
  torch::Tensor stochastic_depth(const torch::Tensor& x) {
    if (!is_training() || drop_prob == 0.0) return x;
    double survival = 1.0 - drop_prob;
    auto noise = torch::empty({x.size(0), 1, 1, 1}, x.options()).bernoulli_(survival).div_(survival);
    return x * noise;
  }
  torch::nn::Sequential block{nullptr};
  bool residual;
  double drop_prob;
};
TORCH_MODULE(MBConv);

class EfficientNetB0 : public Model {
 public:
  EfficientNetB0(int num_classes, int channels) {
    struct Stage {
      int expand, k, stride, in, out, layers;
    };
    const Stage stages[] = {{1, 3, 1, 32, 16, 1},  {6, 3, 2, 16, 24, 2},   {6, 5, 2, 24, 40, 2},  {6, 3, 2, 40, 80, 3},
                            {6, 5, 1, 80, 112, 3}, {6, 5, 2, 112, 192, 4}, {6, 3, 1, 192, 320, 1}};
    const double stochastic_depth_prob = 0.2;
    int total = 0;
    for (auto& s : stages) total += s.layers;

    features = torch::nn::Sequential();
    features->push_back(conv_norm_act(channels, 32, 3, 2));
    int id = 0;
    for (auto& s : stages) {
      Seq stage;
      for (int i = 0; i < s.layers; ++i) {
        double p = stochastic_depth_prob * id++ / total;
        auto mb = MBConv(s.expand, s.k, i == 0 ? s.stride : 1, i == 0 ? s.in : s.out, s.out, p);
        stage->push_back(mb);
        blocks.push_back(mb.ptr());
      }
      features->push_back(stage);
    }
    features->push_back(conv_norm_act(320, 1280, 1));
    register_module("features", features);
    classifier = register_module("classifier",
                                 torch::nn::Sequential(torch::nn::Dropout(0.2), torch::nn::Linear(1280, num_classes)));
    init();
    auto first = features[0]->as<SeqImpl>(), last = features[features->size() - 1]->as<SeqImpl>();
    pieces_.push_back({"features.0", {"features.0"}, [first](const torch::Tensor& t) { return first->forward(t); }});
    std::size_t b = 0;
    for (std::size_t s = 0; s < std::size(stages); ++s)
      for (int i = 0; i < stages[s].layers; ++i) {
        auto* mb = blocks[b++].get();
        const std::string name = "features." + std::to_string(s + 1) + "." + std::to_string(i);
        pieces_.push_back({name, {name}, [this, mb](const torch::Tensor& t) {
                             return run_block(
                                 grad_checkpoint_, *mb, [mb](const torch::Tensor& u) { return mb->forward(u); }, t);
                           }});
      }
    const std::string tail = "features." + std::to_string(features->size() - 1);
    pieces_.push_back({tail, {tail}, [last](const torch::Tensor& t) { return last->forward(t); }});
    pieces_.push_back({"head", {"classifier"}, [this](const torch::Tensor& t) {
                         return classifier->forward(torch::adaptive_avg_pool2d(t, {1, 1}).flatten(1));
                       }});
  }

  torch::Tensor forward(torch::Tensor x) override { return run_pieces(x, 0, pieces_.size()); }

  std::string head_prefix() const override { return "classifier.1"; }

 private:
  void init() {
    init_conv_bn(*this);
    torch::NoGradGuard no_grad;
    auto* fc = classifier[1]->as<torch::nn::Linear>();
    double range = 1.0 / std::sqrt(static_cast<double>(fc->weight.size(0)));
    fc->weight.uniform_(-range, range);
    fc->bias.zero_();
  }

  torch::nn::Sequential features{nullptr}, classifier{nullptr};
  std::vector<std::shared_ptr<MBConvImpl>> blocks;  // in order, for per-block checkpointing
};

}  // namespace

std::shared_ptr<Model> make_efficientnet_b0(int num_classes, int channels) {
  return std::make_shared<EfficientNetB0>(num_classes, channels);
}

}  // namespace frugal::detail

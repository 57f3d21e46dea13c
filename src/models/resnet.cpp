// ResNet-18/50 (torchvision's resnet.py, v1.5: the stride sits on the 3x3 convolution).
#include "models/zoo.h"

#include "models/layers.h"

namespace frugal::detail {
namespace {

struct BasicBlockImpl : torch::nn::Module {
  static constexpr int expansion = 1;
  BasicBlockImpl(int in, int planes, int stride) {
    conv1 = register_module("conv1", conv(in, planes, 3, stride));
    bn1 = register_module("bn1", bn(planes));
    conv2 = register_module("conv2", conv(planes, planes, 3));
    bn2 = register_module("bn2", bn(planes));
    if (stride != 1 || in != planes) {
      downsample = register_module("downsample", torch::nn::Sequential(conv(in, planes, 1, stride), bn(planes)));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    auto identity = downsample.is_empty() ? x : downsample->forward(x);
    auto out = torch::relu(bn1(conv1(x)));
    out = bn2(conv2(out));
    return torch::relu(out + identity);
  }
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  Norm2d bn1{nullptr}, bn2{nullptr};
  torch::nn::Sequential downsample{nullptr};
};
TORCH_MODULE(BasicBlock);

struct BottleneckImpl : torch::nn::Module {
  static constexpr int expansion = 4;
  BottleneckImpl(int in, int planes, int stride) {
    conv1 = register_module("conv1", conv(in, planes, 1));
    bn1 = register_module("bn1", bn(planes));
    conv2 = register_module("conv2", conv(planes, planes, 3, stride));
    bn2 = register_module("bn2", bn(planes));
    conv3 = register_module("conv3", conv(planes, planes * expansion, 1));
    bn3 = register_module("bn3", bn(planes * expansion));
    if (stride != 1 || in != planes * expansion) {
      downsample = register_module(
          "downsample", torch::nn::Sequential(conv(in, planes * expansion, 1, stride), bn(planes * expansion)));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    auto identity = downsample.is_empty() ? x : downsample->forward(x);
    auto out = torch::relu(bn1(conv1(x)));
    out = torch::relu(bn2(conv2(out)));
    out = bn3(conv3(out));
    return torch::relu(out + identity);
  }
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr};
  Norm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr};
  torch::nn::Sequential downsample{nullptr};
};
TORCH_MODULE(Bottleneck);

template <class Block>
class ResNet : public Model {
 public:
  ResNet(std::array<int, 4> layers, int num_classes, int channels) {
    conv1 = register_module("conv1", conv(channels, 64, 7, 2));
    bn1 = register_module("bn1", bn(64));
    int in = 64;
    const int planes[4] = {64, 128, 256, 512};
    for (int s = 0; s < 4; ++s) {
      torch::nn::Sequential stage;
      for (int b = 0; b < layers[s]; ++b) {
        stage->push_back(Block(in, planes[s], b == 0 && s > 0 ? 2 : 1));
        in = planes[s] * Block::ContainedType::expansion;
      }
      stages.push_back(register_module("layer" + std::to_string(s + 1), stage));
    }
    fc = register_module("fc", torch::nn::Linear(in, num_classes));
    init_conv_bn(*this);
    pieces_.push_back({"stem", {"conv1", "bn1"}, [this](const torch::Tensor& t) {
                         return torch::max_pool2d(torch::relu(bn1(conv1(t))), 3, 2, 1);
                       }});
    for (std::size_t s = 0; s < stages.size(); ++s) {
      std::size_t b = 0;
      for (auto& child : stages[s]->children()) {
        auto* block = child->as<typename Block::ContainedType>();
        const std::string name = "layer" + std::to_string(s + 1) + "." + std::to_string(b++);
        pieces_.push_back({name, {name}, [this, block](const torch::Tensor& t) {
                             return run_block(
                                 grad_checkpoint_, *block,
                                 [block](const torch::Tensor& u) { return block->forward(u); }, t);
                           }});
      }
    }
    pieces_.push_back({"head", {"fc"}, [this](const torch::Tensor& t) {
                         return fc(torch::adaptive_avg_pool2d(t, {1, 1}).flatten(1));
                       }});
  }

  torch::Tensor forward(torch::Tensor x) override { return run_pieces(x, 0, pieces_.size()); }

  std::string head_prefix() const override { return "fc"; }

 private:
  torch::nn::Conv2d conv1{nullptr};
  Norm2d bn1{nullptr};
  std::vector<torch::nn::Sequential> stages;
  torch::nn::Linear fc{nullptr};
};

}  // namespace

std::shared_ptr<Model> make_resnet18(int num_classes, int channels) {
  return std::make_shared<ResNet<BasicBlock>>(std::array<int, 4>{2, 2, 2, 2}, num_classes, channels);
}

std::shared_ptr<Model> make_resnet50(int num_classes, int channels) {
  return std::make_shared<ResNet<Bottleneck>>(std::array<int, 4>{3, 4, 6, 3}, num_classes, channels);
}

}  // namespace frugal::detail

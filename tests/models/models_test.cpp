#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "frugal/util/error.h"
#include "frugal/models/models.h"
#include "frugal/training/train_config.h"
#include "made_once.h"
#include "models/safetensors_read.h"

namespace frugal {
namespace {

namespace fs = std::filesystem;

std::string python() {
  if (const char* p = std::getenv("FRUGAL_PYTHON")) return p;
  return std::string(FRUGAL_SOURCE_DIR) + "/.venv/bin/python";
}

// The torchvision fixtures (150 MB), exported once per build tree (again when the script changes)
// for every test process, as the weights and image fixtures are. Each process once exported its
// own copy into /tmp and left it there: 450 MB a ctest run.
const fs::path& fixture_dir() {
  static fs::path dir = [] {
    const fs::path src = fs::path(FRUGAL_SOURCE_DIR) / "tests/models/export_fixtures.py";
    return testing::made_once(fs::path(FRUGAL_BINARY_DIR) / "test-fixtures/models", src, [&](const fs::path& tmp) {
      fs::create_directories(tmp);
      const std::string cmd =
          "'" + python() + "' '" + src.string() + "' '" + tmp.string() + "' 64 resnet18 resnet50 efficientnet_b0";
      return std::system(cmd.c_str()) == 0;
    });
  }();
  return dir;
}

void expect_torchvision_parity(const std::string& name) {
  if (!fs::exists(python())) GTEST_SKIP() << "no Python with torchvision at " << python() << " (set FRUGAL_PYTHON)";
  const fs::path& dir = fixture_dir();
  ASSERT_FALSE(dir.empty()) << "exporting the torchvision fixtures failed";
  auto model = make_model(name, 10, 3);
  auto msg = load_weights(*model, test::read_safetensors((dir / (name + ".safetensors")).string()), false);
  EXPECT_EQ(msg, "");
  auto io = test::read_safetensors((dir / (name + ".io.safetensors")).string());
  model->eval();
  torch::NoGradGuard no_grad;
  auto y = model->forward(io.at("input"));
  ASSERT_EQ(y.sizes(), io.at("output").sizes());
  EXPECT_LE((y - io.at("output")).abs().max().item<float>(), 1e-4);
}

TEST(Models, Resnet18MatchesTorchvision) { expect_torchvision_parity("resnet18"); }
TEST(Models, Resnet50MatchesTorchvision) { expect_torchvision_parity("resnet50"); }
TEST(Models, EfficientNetB0MatchesTorchvision) { expect_torchvision_parity("efficientnet_b0"); }

TEST(Models, UnknownNameIsAUsageErrorListingTheNames) {
  try {
    make_model("vgg", 10, 3);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("efficientnet_b0"), std::string::npos);
  }
}

TEST(Models, StateDictRoundTripsThroughLoadWeights) {
  torch::manual_seed(1);
  auto a = make_model("cnn", 10, 1);
  auto b = make_model("cnn", 10, 1);
  EXPECT_EQ(load_weights(*b, state_dict(*a), false), "");
  a->eval();
  b->eval();
  auto x = torch::randn({3, 1, 28, 28});
  EXPECT_TRUE(torch::equal(a->forward(x), b->forward(x)));
  EXPECT_EQ(state_dict(*a).count("features.0.1.num_batches_tracked"), 1u);
}

TEST(Models, HeadOfAnotherSizeIsReplacedOnlyWhenAllowed) {
  auto ten = state_dict(*make_model("resnet18", 10, 3));
  auto five = make_model("resnet18", 5, 3);
  EXPECT_THROW(load_weights(*five, ten, false), Error);
  auto msg = load_weights(*five, ten, true);
  EXPECT_NE(msg.find("fc"), std::string::npos);
  EXPECT_TRUE(torch::equal(state_dict(*five).at("layer1.0.conv1.weight"), ten.at("layer1.0.conv1.weight")));
}

TEST(Models, UnknownOrMissingTensorsAreInvalid) {
  auto sd = state_dict(*make_model("cnn", 10, 1));
  sd["extra.weight"] = torch::zeros({1});
  auto m = make_model("cnn", 10, 1);
  try {
    load_weights(*m, sd, true);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid);
    EXPECT_NE(std::string(e.what()).find("extra.weight"), std::string::npos);
  }
  sd.erase("extra.weight");
  sd.erase("fc1.bias");
  EXPECT_THROW(load_weights(*m, sd, true), Error);
}

// Gradients with --grad-checkpoint equal those without, and batch-norm statistics move once.
void expect_checkpoint_same_grads(const std::string& name, int channels, int size) {
  torch::manual_seed(3);
  auto plain = make_model(name, 4, channels);
  auto ckpt = make_model(name, 4, channels);
  load_weights(*ckpt, state_dict(*plain), false);
  ckpt->set_grad_checkpoint(true);
  auto x = torch::randn({4, channels, size, size});
  auto target = torch::tensor({0, 1, 2, 3});
  for (auto* m : {plain.get(), ckpt.get()}) {
    torch::manual_seed(5);  // same dropout / stochastic depth draws
    torch::nn::functional::cross_entropy(m->forward(x), target).backward();
  }
  auto pa = plain->named_parameters(), pb = ckpt->named_parameters();
  for (auto& p : pa) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_TRUE(torch::allclose(p.value().grad(), pb[p.key()].grad(), 1e-5, 1e-6)) << name << " " << p.key();
  }
  auto ba = state_dict(*plain), bb = state_dict(*ckpt);
  for (auto& [k, v] : ba) EXPECT_TRUE(torch::allclose(v.to(torch::kFloat), bb.at(k).to(torch::kFloat))) << k;
}

TEST(Models, GradCheckpointGivesSameGradientsCnn) { expect_checkpoint_same_grads("cnn", 1, 28); }
TEST(Models, GradCheckpointGivesSameGradientsResnet18) { expect_checkpoint_same_grads("resnet18", 3, 16); }
TEST(Models, GradCheckpointGivesSameGradientsEfficientNet) { expect_checkpoint_same_grads("efficientnet_b0", 3, 16); }

// --model is validated by the torch-free training library (training/train_config.h): its list is the zoo's.
TEST(Models, TheOptionsListOfModelNamesIsTheZoos) { EXPECT_EQ(model_names(), zoo_model_names()); }

}  // namespace
}  // namespace frugal

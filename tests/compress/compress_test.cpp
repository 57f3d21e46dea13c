#include <gtest/gtest.h>

#include "frugal/compress/compress.h"
#include "frugal/util/error.h"

using namespace frugal;

namespace {

std::map<std::string, torch::Tensor> one_weight(const torch::Tensor& w) { return {{"conv.weight", w}}; }

std::int64_t stored_bytes(const EncodedWeights& e) {
  std::int64_t n = 0;
  for (const auto& [name, t] : e.tensors) n += t.numel() * static_cast<std::int64_t>(t.element_size());
  return n;
}

torch::Tensor half_zero(std::vector<std::int64_t> shape) {
  torch::manual_seed(1);
  auto w = torch::randn(shape);
  return w * (torch::rand(shape) > 0.5).to(torch::kFloat32);
}

}  // namespace

TEST(WeightCodec, SparseFloat32RoundTripIsExact) {
  auto w = half_zero({16, 8, 3, 3});
  auto e = encode_weights(one_weight(w), {"conv.weight"}, WeightFormat::float32);
  ASSERT_TRUE(e.index.contains("conv.weight"));
  EXPECT_EQ(e.index["conv.weight"]["encoding"], "bitmask");
  auto d = decode_weights(e.tensors, e.index, "test");
  EXPECT_TRUE(torch::equal(d.at("conv.weight"), w));
  EXPECT_LT(stored_bytes(e), w.numel() * 4 * 6 / 10);  // ~half the values + 1 bit each
}

TEST(WeightCodec, DenseFloat32IsStoredUnchanged) {
  torch::manual_seed(2);
  auto w = torch::randn({4, 3});
  auto e = encode_weights(one_weight(w), {"conv.weight"}, WeightFormat::float32);
  EXPECT_FALSE(e.index.contains("conv.weight"));
  ASSERT_EQ(e.tensors.size(), 1u);
  EXPECT_TRUE(torch::equal(e.tensors[0].second, w));
}

TEST(WeightCodec, Int8ErrorStaysWithinHalfAStepPerOutputChannel) {
  torch::manual_seed(3);
  auto w = torch::randn({6, 4, 3, 3}) * torch::arange(1, 7).view({6, 1, 1, 1});  // channel ranges differ
  auto e = encode_weights(one_weight(w), {"conv.weight"}, WeightFormat::int8);
  auto d = decode_weights(e.tensors, e.index, "test").at("conv.weight");
  auto step = std::get<0>(w.abs().view({6, -1}).max(1)) / 127.0;
  auto err = std::get<0>((d - w).abs().view({6, -1}).max(1));
  EXPECT_TRUE((err <= step * 0.5 + 1e-6).all().item<bool>()) << err << step;
  EXPECT_EQ(e.index["conv.weight"]["encoding"], "dense");
}

TEST(WeightCodec, PrunedInt8KeepsZerosExactlyAndShrinksBelowAQuarter) {
  auto w = half_zero({32, 16, 3, 3});
  auto e = encode_weights(one_weight(w), {"conv.weight"}, WeightFormat::int8);
  EXPECT_EQ(e.index["conv.weight"]["encoding"], "bitmask");
  auto d = decode_weights(e.tensors, e.index, "test").at("conv.weight");
  EXPECT_TRUE((d.masked_select(w == 0) == 0).all().item<bool>());
  EXPECT_LT(stored_bytes(e), w.numel() * 4 / 4);
}

TEST(WeightCodec, Float16HalvesDenseWeights) {
  torch::manual_seed(4);
  auto w = torch::randn({8, 8});
  auto e = encode_weights(one_weight(w), {"conv.weight"}, WeightFormat::float16);
  EXPECT_EQ(stored_bytes(e), w.numel() * 2);
  auto d = decode_weights(e.tensors, e.index, "test").at("conv.weight");
  EXPECT_TRUE(torch::allclose(d, w, 1e-3, 1e-3));
}

TEST(WeightCodec, OtherTensorsPassThrough) {
  std::map<std::string, torch::Tensor> state{{"bn.running_mean", torch::randn({5})},
                                             {"bn.num_batches_tracked", torch::tensor(3, torch::kInt64)}};
  auto e = encode_weights(state, {}, WeightFormat::int8);
  auto d = decode_weights(e.tensors, e.index, "test");
  EXPECT_TRUE(torch::equal(d.at("bn.running_mean"), state.at("bn.running_mean")));
  EXPECT_EQ(d.at("bn.num_batches_tracked").scalar_type(), torch::kInt64);
}

TEST(WeightCodec, MaskThatDisagreesWithTheValuesIsRejected) {
  auto w = half_zero({8, 8});
  auto e = encode_weights(one_weight(w), {"conv.weight"}, WeightFormat::float32);
  for (auto& [name, t] : e.tensors)
    if (name == "conv.weight@mask") t = torch::full_like(t, 255);  // claims every entry is stored
  try {
    decode_weights(e.tensors, e.index, "m.safetensors");
    FAIL() << "a damaged mask was accepted";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::invalid);
    EXPECT_NE(std::string(err.what()).find("m.safetensors"), std::string::npos) << err.what();
  }
}

TEST(WeightCodec, MissingScaleIsRejected) {
  torch::manual_seed(5);
  auto e = encode_weights(one_weight(torch::randn({4, 4})), {"conv.weight"}, WeightFormat::int8);
  NamedTensors without;
  for (auto& nt : e.tensors)
    if (nt.first != "conv.weight@scale") without.push_back(nt);
  EXPECT_THROW(decode_weights(without, e.index, "m"), Error);
}

TEST(Pruning, LayerScopeZeroesTheFractionOfEveryWeight) {
  torch::manual_seed(6);
  auto model = make_model("cnn", 10, 1);
  apply_masks(*model, l1_prune_masks(*model, 0.6, PruneScope::layer));
  for (const auto& [name, w] : prunable_weights(*model)) {
    const auto zeros = (w == 0).sum().item<std::int64_t>();
    EXPECT_EQ(zeros, static_cast<std::int64_t>(0.6 * static_cast<double>(w.numel()))) << name;
  }
}

TEST(Pruning, LayerScopeDropsTheSmallestMagnitudes) {
  torch::manual_seed(7);
  auto model = make_model("cnn", 10, 1);
  auto before = prunable_weights(*model)[0].second.detach().clone();
  apply_masks(*model, l1_prune_masks(*model, 0.5, PruneScope::layer));
  auto after = prunable_weights(*model)[0].second.detach();
  auto largest_dropped = before.abs().masked_select(after == 0).max().item<float>();
  auto smallest_kept = before.abs().masked_select(after != 0).min().item<float>();
  EXPECT_LE(largest_dropped, smallest_kept);
}

TEST(Pruning, GlobalScopeUsesOneThresholdAcrossLayers) {
  torch::manual_seed(8);
  auto model = make_model("cnn", 10, 1);
  std::vector<torch::Tensor> before;
  for (const auto& [n, w] : prunable_weights(*model)) before.push_back(w.detach().clone());
  apply_masks(*model, l1_prune_masks(*model, 0.7, PruneScope::global));
  float largest_dropped = 0, smallest_kept = 1e9f;
  std::int64_t zeros = 0, total = 0;
  auto after = prunable_weights(*model);
  std::vector<double> per_layer;
  for (std::size_t i = 0; i < after.size(); ++i) {
    auto z = after[i].second.detach() == 0;
    zeros += z.sum().item<std::int64_t>();
    total += z.numel();
    per_layer.push_back(z.to(torch::kFloat64).mean().item<double>());
    if (z.any().item<bool>())
      largest_dropped = std::max(largest_dropped, before[i].abs().masked_select(z).max().item<float>());
    if ((~z).any().item<bool>())
      smallest_kept = std::min(smallest_kept, before[i].abs().masked_select(~z).min().item<float>());
  }
  EXPECT_EQ(zeros, static_cast<std::int64_t>(0.7 * static_cast<double>(total)));
  EXPECT_LE(largest_dropped, smallest_kept);
  // Layers initialized at different scales end up pruned by different fractions.
  EXPECT_GT(
      *std::max_element(per_layer.begin(), per_layer.end()) - *std::min_element(per_layer.begin(), per_layer.end()),
      0.05);
}

TEST(Pruning, FractionOutsideZeroToOneIsAUsageError) {
  auto model = make_model("cnn", 10, 1);
  EXPECT_THROW(l1_prune_masks(*model, 1.0, PruneScope::layer), Error);
  EXPECT_THROW(l1_prune_masks(*model, -0.1, PruneScope::global), Error);
}

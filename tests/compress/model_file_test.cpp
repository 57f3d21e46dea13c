#include <gtest/gtest.h>

#include <filesystem>

#include "frugal/checkpoint/checkpoint.h"
#include "frugal/compress/compress.h"
#include "frugal/util/error.h"
#include "temp_dir.h"

using namespace frugal;
namespace fs = std::filesystem;

namespace {

class ModelFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = tmp.path();
    torch::manual_seed(11);
    model = make_model("cnn", 10, 1);
    model->eval();
    info.name = "cnn";
    for (int i = 0; i < 10; ++i) info.classes.push_back("c" + std::to_string(i));
    info.mean = {0.3f};
    info.std = {0.35f};
    x = torch::randn({4, 1, 28, 28});
  }

  torch::Tensor forward(Model& m) {
    torch::NoGradGuard no_grad;
    return m.forward(x);
  }

  fs::path save_plain(const fs::path& path) {
    Checkpoint c;
    c.kind = "best";
    c.model = info;
    c.weights = to_named(state_dict(*model));
    save_checkpoint(path, c);
    return path;
  }

  test::TempDir tmp;
  fs::path dir;
  std::shared_ptr<Model> model;
  ModelInfo info;
  torch::Tensor x;
};

}  // namespace

TEST_F(ModelFile, PrunedFloat32ModelComesBackExactly) {
  apply_masks(*model, l1_prune_masks(*model, 0.5, PruneScope::layer));
  CompressOptions o;
  o.prune = 0.5;
  save_compressed_model(dir / "m.safetensors", info, *model, o);
  auto loaded = load_model_any(dir / "m.safetensors");
  EXPECT_EQ(loaded.info.name, "cnn");
  EXPECT_EQ(loaded.info.classes, info.classes);
  EXPECT_EQ(loaded.info.mean, info.mean);
  EXPECT_TRUE(torch::equal(forward(*loaded.model), forward(*model)));
}

TEST_F(ModelFile, PrunedInt8FileIsOverSeventyPercentSmallerAndClose) {
  const auto plain = fs::file_size(save_plain(dir / "plain.safetensors"));
  auto reference = forward(*model);
  apply_masks(*model, l1_prune_masks(*model, 0.5, PruneScope::global));
  CompressOptions o;
  o.prune = 0.5;
  o.prune_scope = PruneScope::global;
  o.weights = WeightFormat::int8;
  save_compressed_model(dir / "m.safetensors", info, *model, o);
  const auto small = fs::file_size(dir / "m.safetensors");
  EXPECT_LT(static_cast<double>(small), 0.3 * static_cast<double>(plain)) << small << " vs " << plain;
  auto loaded = load_model_any(dir / "m.safetensors");
  auto pruned = forward(*model);
  auto got = forward(*loaded.model);
  EXPECT_LT((got - pruned).abs().max().item<float>(), 0.05f * pruned.abs().max().item<float>() + 1e-3f);
  auto summary = summarize_model_file(dir / "m.safetensors");
  EXPECT_EQ(summary.compression["weights"], "int8");
  EXPECT_EQ(summary.compression["prune_scope"], "global");
  (void)reference;
}

TEST_F(ModelFile, PlainCheckpointAndRunFolderLoadToo) {
  save_plain(dir / "best.safetensors");
  auto a = load_model_any(dir / "best.safetensors");
  EXPECT_TRUE(torch::equal(forward(*a.model), forward(*model)));
  auto b = load_model_any(dir);  // the run folder means its best.safetensors
  EXPECT_TRUE(torch::equal(forward(*b.model), forward(*model)));
  EXPECT_TRUE(summarize_model_file(dir).compression.is_null());
}

TEST_F(ModelFile, CompressedFileFromTheFutureIsRefused) {
  CompressOptions o;
  o.weights = WeightFormat::float16;
  save_compressed_model(dir / "m.safetensors", info, *model, o);
  auto c = load_checkpoint(dir / "m.safetensors");
  auto j = nlohmann::json::parse(c.extra.at("compression"));
  j["version"] = 99;
  c.extra["compression"] = j.dump();
  save_checkpoint(dir / "future.safetensors", c);
  try {
    load_model_any(dir / "future.safetensors");
    FAIL() << "version 99 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported);
  }
}

// A crafted compression index: wrong JSON types, negative or overflowing shapes, a shape that
// does not fit the stored values. Each is bad input (exit 3) naming the file, never a
// nlohmann/c10 exception escaping as an internal error, never an allocation of what it claims.
TEST_F(ModelFile, CraftedCompressionIndexIsInvalidInputNotAnInternalError) {
  apply_masks(*model, l1_prune_masks(*model, 0.5, PruneScope::layer));
  CompressOptions o;
  o.prune = 0.5;
  save_compressed_model(dir / "m.safetensors", info, *model, o);
  const auto good = load_checkpoint(dir / "m.safetensors");
  const auto index = nlohmann::json::parse(good.extra.at("compression"));
  const std::string first = index.at("tensors").begin().key();
  std::vector<std::pair<std::string, nlohmann::json>> edits;
  edits.push_back({"index is an array", nlohmann::json::array()});
  auto j = index;
  j["format"] = 7;
  edits.push_back({"format is a number", j});
  j = index;
  j.erase("tensors");
  edits.push_back({"no tensors", j});
  j = index;
  j["tensors"][first]["shape"] = {-8};
  edits.push_back({"negative dimension", j});
  j = index;
  j["tensors"][first]["shape"] = {std::int64_t{1} << 40, std::int64_t{1} << 40};
  edits.push_back({"overflowing shape", j});
  j = index;
  j["tensors"][first]["encoding"] = "dense";
  j["tensors"][first]["shape"] = {3, 5};
  edits.push_back({"shape that does not fit the values", j});
  for (const auto& [what, value] : edits) {
    SCOPED_TRACE(what);
    auto c = good;
    c.extra["compression"] = value.dump();
    save_checkpoint(dir / "bad.safetensors", c);
    try {
      load_model_any(dir / "bad.safetensors");
      ADD_FAILURE() << "loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid) << e.what();
      EXPECT_NE(std::string(e.what()).find("bad.safetensors"), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "escaped as " << typeid(e).name() << ": " << e.what();
    }
  }
}

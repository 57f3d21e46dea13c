// timm's EfficientNet names mapped onto torchvision's, held against the real modules: the names and
// shapes of timm's and torchvision's efficientnet_b0 state dicts (tests/weights/timm_reference.py, the
// .venv's timm and torchvision) must match one to one after mapping, and timm's model loaded into
// torchvision's through the mapping (strict) must give the same logits. The logit check is shown to
// catch a mapping that swaps two BatchNorms of one shape, which names and shapes cannot.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "budget/fault_env.h"
#include "frugal/weights/timm_names.h"
#include "reference_python.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

using Shapes = std::vector<std::pair<std::string, std::vector<std::int64_t>>>;
using testing::python;

Shapes load(const fs::path& p) {
  std::ifstream f(p);
  return nlohmann::json::parse(f).get<Shapes>();
}

std::vector<std::string> names_of(const Shapes& s) {
  std::vector<std::string> out;
  for (const auto& [n, shape] : s) out.push_back(n);
  return out;
}

TEST(TimmNames, EfficientNetB0MapsOntoTorchvisionWithTheSameLogits) {
  const std::string py = python();
  if (py.empty() || std::system((py + " -c 'import timm, torchvision' 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << "needs the .venv's timm and torchvision";
  testing::TempDir dir;
  const std::string script = std::string(FRUGAL_SOURCE_DIR) + "/tests/weights/timm_reference.py";
  ASSERT_EQ(std::system(("OMP_NUM_THREADS=1 " + py + " " + script + " names " + dir.path().string()).c_str()), 0);
  const Shapes timm = load(dir / "timm.json"), tv = load(dir / "torchvision.json");
  ASSERT_EQ(timm.size(), 360u);

  const auto r = from_timm_names(names_of(timm));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->naming, "timm efficientnet_b0");
  EXPECT_EQ(r->names.size(), timm.size());
  std::map<std::string, std::vector<std::int64_t>> want(tv.begin(), tv.end());
  std::map<std::string, std::string> mapping;
  std::size_t missing = want.size(), unexpected = 0;
  for (std::size_t i = 0; i < timm.size(); ++i) {
    const auto it = want.find(r->names[i]);
    if (it == want.end()) {
      ++unexpected;
      ADD_FAILURE() << timm[i].first << " -> " << r->names[i] << ": not a torchvision name";
      continue;
    }
    EXPECT_EQ(it->second, timm[i].second) << timm[i].first << " -> " << r->names[i];
    EXPECT_TRUE(mapping.emplace(timm[i].first, r->names[i]).second);
    --missing;
  }
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(unexpected, 0u);
  EXPECT_EQ(r->renamed, timm.size());  // no timm name is torchvision's

  // The check can tell a wrong mapping whose names and shapes all fit: bn1 and bn2 of one inverted
  // residual block (both 96 channels) swapped.
  auto wrong = mapping;
  for (const char* p : {"weight", "bias", "running_mean", "running_var"})
    std::swap(wrong[std::string("blocks.1.0.bn1.") + p], wrong[std::string("blocks.1.0.bn2.") + p]);
  std::ofstream(dir / "map.json") << nlohmann::json(mapping).dump();
  std::ofstream(dir / "wrong.json") << nlohmann::json(wrong).dump();
  const std::string cmd = "OMP_NUM_THREADS=1 " + py + " " + script + " logits " + (dir / "map.json").string() + " " +
                          (dir / "wrong.json").string();
  FILE* out = ::popen(cmd.c_str(), "r");
  ASSERT_NE(out, nullptr);
  double diff = -1, scale = 0, wrong_diff = -1, wrong_scale = 0;
  const int read = std::fscanf(out, "%lf %lf %lf %lf", &diff, &scale, &wrong_diff, &wrong_scale);
  ASSERT_EQ(::pclose(out), 0);
  ASSERT_EQ(read, 4);
  EXPECT_LE(diff, 1e-5 * scale) << "timm's logits against torchvision's with the mapped weights";
  EXPECT_GT(wrong_diff, 1e-4 * wrong_scale) << "the swapped mapping went unseen";
}

TEST(TimmNames, OtherNamesAreLeftAlone) {
  EXPECT_FALSE(
      from_timm_names(std::vector<std::string>{"features.0.0.weight", "features.0.1.weight", "classifier.1.weight"}));
  EXPECT_FALSE(
      from_timm_names(std::vector<std::string>{"conv1.weight", "bn1.weight", "layer1.0.conv1.weight", "fc.weight"}));
  EXPECT_FALSE(from_timm_names(std::vector<std::string>{"conv_stem.weight", "conv_head.weight"}));  // no blocks
  // A name outside the table is kept as given (the loader reports it as unexpected).
  const auto r = from_timm_names(std::vector<std::string>{"conv_stem.weight", "blocks.0.0.conv_dw.weight",
                                                          "conv_head.weight", "blocks.0.0.extra.weight", "aux.weight"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->naming, "timm EfficientNet");
  EXPECT_EQ(r->names, (std::vector<std::string>{"features.0.0.weight", "features.1.0.block.0.0.weight",
                                                "features.2.0.weight", "blocks.0.0.extra.weight", "aux.weight"}));
  EXPECT_EQ(r->renamed, 3u);
}

}  // namespace
}  // namespace frugal

// The augmentations held to torchvision.transforms.v2 (tests/image/augment_reference.py runs it on
// the same images): every op of TrivialAugmentWide and RandAugment at every magnitude bin and sign,
// the magnitude tables, the policies' draws, RandomErasing's boxes; and what the loader's transform
// does with them (the crop unchanged, the same sample augmented alike).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "frugal/image/augment.h"
#include "frugal/image/image.h"
#include "image/fixtures.h"

using namespace frugal;
using frugal::testing::read_bytes;

namespace {

using Policy = AugmentOptions::Policy;

std::filesystem::path reference() {
  static const std::filesystem::path dir = [] {
    if (frugal::testing::python().empty() ||
        std::system((frugal::testing::python() + " -c 'import torchvision' 2>/dev/null").c_str()) != 0)
      return std::filesystem::path();
    return frugal::testing::fixtures_made_by("tests/image/augment_reference.py", "augment");
  }();
  return dir;
}

#define NEED_REFERENCE()                                                         \
  if (reference().empty()) GTEST_SKIP() << "no Python with torchvision (.venv)"; \
  static_assert(true)

Image raw(const std::filesystem::path& p, int w, int h, int c) {
  Image img;
  img.resize(w, h, c);
  std::vector<std::uint8_t> b = read_bytes(p);
  EXPECT_EQ(b.size(), img.pixels.size()) << p;
  std::copy_n(b.begin(), std::min(b.size(), img.pixels.size()), img.pixels.begin());
  return img;
}

AugmentOp op_named(const std::string& name) {
  for (int i = 0; i < kAugmentOps; ++i)
    if (name == augment_op_name(static_cast<AugmentOp>(i))) return static_cast<AugmentOp>(i);
  ADD_FAILURE() << "unknown op " << name;
  return AugmentOp::identity;
}

bool geometric(AugmentOp op) {
  return op == AugmentOp::shear_x || op == AugmentOp::shear_y || op == AugmentOp::translate_x ||
         op == AugmentOp::translate_y || op == AugmentOp::rotate;
}

struct OpStats {
  std::int64_t cases = 0, exact_cases = 0, values = 0, differing = 0;
  int max_diff = 0;
};

}  // namespace

// Op by op, bin by bin, sign by sign: the image frugal makes against torchvision's. The colour ops
// and posterize, solarize, autocontrast, equalize must be exact. The geometric ops sample with
// nearest interpolation at float32 coordinates that frugal computes in the same order as torch's
// affine grid and grid_sample; where torch's kernels round differently (a multiply-add fused or
// not), a coordinate within an ulp of a half-pixel picks the neighbour: at most 0.5% of the values
// may differ, and the images must still match on 99.5% of their values.
TEST(Augment, OpsMatchTorchvisionOpByOp) {
  NEED_REFERENCE();
  const auto dir = reference();
  std::ifstream manifest(dir / "manifest.txt");
  std::map<std::string, Image> images;
  std::map<std::string, OpStats> stats;
  std::string line;
  while (std::getline(manifest, line)) {
    std::istringstream s(line);
    std::string kind, name;
    s >> kind;
    if (kind == "image") {
      int w, h, c;
      s >> name >> w >> h >> c;
      images[name] = raw(dir / (name + ".raw"), w, h, c);
      continue;
    }
    std::string policy, op_text;
    int bin, sign, file;
    double tv_magnitude;
    s >> policy >> name >> op_text >> bin >> sign >> tv_magnitude >> file;
    const Image& in = images.at(name);
    const AugmentOp op = op_named(op_text);
    const Policy p = policy == "trivial" ? Policy::trivial : Policy::randaugment;
    double m = 0;
    if (bin >= 0) m = *augment_magnitude(p, op, bin, in.width, in.height) * sign;
    ASSERT_EQ(m, tv_magnitude) << line << ": frugal's magnitude";
    Image out;
    apply_augment_op(in, op, m, out);
    const Image want = raw(dir / "ops" / (std::to_string(file) + ".raw"), in.width, in.height, in.channels);
    OpStats& st = stats[op_text];
    std::int64_t differing = 0;
    for (std::size_t i = 0; i < want.pixels.size(); ++i) {
      const int d = std::abs(int(out.pixels[i]) - int(want.pixels[i]));
      differing += d != 0;
      st.max_diff = std::max(st.max_diff, d);
    }
    ++st.cases;
    st.exact_cases += differing == 0;
    st.values += static_cast<std::int64_t>(want.pixels.size());
    st.differing += differing;
    if (!geometric(op))
      EXPECT_EQ(differing, 0) << line;
    else
      EXPECT_LE(differing, static_cast<std::int64_t>(want.pixels.size()) / 200) << line;
  }
  EXPECT_EQ(stats.size(), std::size_t(kAugmentOps));
  for (const auto& [op, st] : stats) {
    std::printf("  %-12s %4lld cases, %4lld exact; %lld of %lld values differ (max %d levels)\n", op.c_str(),
                static_cast<long long>(st.cases), static_cast<long long>(st.exact_cases),
                static_cast<long long>(st.differing), static_cast<long long>(st.values), st.max_diff);
    EXPECT_LE(st.differing * 1000, st.values) << op << ": more than 0.1% of all values differ";
  }
}

// Every table entry torchvision computes (tables.txt) is frugal's, to the bit.
TEST(Augment, MagnitudeTablesAreTorchvisions) {
  NEED_REFERENCE();
  std::ifstream tables(reference() / "tables.txt");
  std::string policy, op;
  int w, h, bin, n = 0;
  double m;
  while (tables >> policy >> op >> w >> h >> bin >> m) {
    const Policy p = policy == "trivial" ? Policy::trivial : Policy::randaugment;
    auto mine = augment_magnitude(p, op_named(op), bin, w, h);
    ASSERT_TRUE(mine.has_value()) << policy << " " << op;
    EXPECT_EQ(*mine, m) << policy << " " << op << " bin " << bin << ": " << *mine << " vs " << m;
    ++n;
  }
  EXPECT_GT(n, 1000);
  // The ends torchvision's tables are known by.
  EXPECT_EQ(*augment_magnitude(Policy::trivial, AugmentOp::rotate, 30, 32, 32), 135.0);
  EXPECT_EQ(*augment_magnitude(Policy::trivial, AugmentOp::posterize, 0, 32, 32), 8.0);
  EXPECT_EQ(*augment_magnitude(Policy::trivial, AugmentOp::posterize, 30, 32, 32), 2.0);
  EXPECT_EQ(*augment_magnitude(Policy::randaugment, AugmentOp::posterize, 30, 32, 32), 4.0);
  EXPECT_FALSE(augment_magnitude(Policy::trivial, AugmentOp::equalize, 3, 32, 32).has_value());
}

// Given the same box, erasing is torchvision's erase with value 0 exactly.
TEST(Augment, EraseIsTorchvisionsGivenTheBox) {
  NEED_REFERENCE();
  Image img = raw(reference() / "rgb.raw", 48, 40, 3);
  const Image want = raw(reference() / "erased.raw", 48, 40, 3);
  erase(img, CropBox{7, 5, 20, 10}, 0);
  EXPECT_EQ(img.pixels, want.pixels);
}

// RandomErasing's boxes over many draws against torchvision's (erasing.txt, 20000 draws per size):
// the share that erase nothing, and the mean and spread of the box's sides, area and centre, each
// within 5 standard errors of the two means' difference.
TEST(Augment, RandomErasingBoxesDistributeAsTorchvisions) {
  NEED_REFERENCE();
  std::ifstream f(reference() / "erasing.txt");
  int w, h, draws;
  int sizes = 0;
  while (f >> w >> h >> draws) {
    std::vector<double> tv(9);
    for (double& v : tv) f >> v;
    Rng rng(mix_seed(w, h));
    std::vector<std::vector<double>> rows;
    int none = 0;
    for (int i = 0; i < draws; ++i) {
      auto b = random_erasing_box(w, h, rng);
      if (!b) {
        ++none;
        continue;
      }
      ASSERT_TRUE(b->x >= 0 && b->y >= 0 && b->x + b->width <= w && b->y + b->height <= h);
      rows.push_back({double(b->height) / h, double(b->width) / w, double(b->width) * b->height / (double(w) * h),
                      (b->x + b->width / 2.0) / w, (b->y + b->height / 2.0) / h});
    }
    const double p_none = double(none) / draws;
    EXPECT_NEAR(p_none, tv[0], 5 * std::sqrt(std::max(tv[0] * (1 - tv[0]), 1e-4) * 2 / draws)) << w << "x" << h;
    if (rows.empty()) continue;
    // mean/sd pairs for h, w, area at tv[1..6]; centre means at tv[7], tv[8].
    for (int k = 0; k < 5; ++k) {
      double mean = 0, sq = 0;
      for (auto& r : rows) mean += r[k];
      mean /= rows.size();
      for (auto& r : rows) sq += (r[k] - mean) * (r[k] - mean);
      const double sd = std::sqrt(sq / rows.size());
      const double tv_mean = k < 3 ? tv[1 + 2 * k] : tv[4 + k];
      const double se = std::max(sd, 1e-3) * std::sqrt(2.0 / rows.size());
      EXPECT_NEAR(mean, tv_mean, 5 * se) << w << "x" << h << " statistic " << k;
      if (k < 3) EXPECT_NEAR(sd, tv[2 + 2 * k], 0.05 * tv[2 + 2 * k] + 1e-3) << w << "x" << h << " spread " << k;
    }
    ++sizes;
  }
  EXPECT_EQ(sizes, 4);
}

// The policies' draws as torchvision defines them: TrivialAugmentWide one op uniform over the 14,
// its bin uniform over 31 (ops with magnitudes), negative half the time for the signed ops;
// RandAugment N ops, each uniform, all at bin M. Chi-square bounds at p ~ 1e-4 over 140000 draws.
TEST(Augment, DrawsFollowThePolicies) {
  AugmentOptions trivial;
  trivial.policy = Policy::trivial;
  Rng rng(45);
  const int n = 140000;
  std::vector<int> ops(kAugmentOps), bins(kMagnitudeBins);
  int signed_draws = 0, negative = 0;
  for (int i = 0; i < n; ++i) {
    auto d = draw_augment(trivial, rng, 32, 32);
    ASSERT_EQ(d.size(), 1u);
    ++ops[static_cast<int>(d[0].op)];
    const bool has_bins = augment_magnitude(Policy::trivial, d[0].op, 0, 32, 32).has_value();
    ASSERT_EQ(d[0].bin >= 0, has_bins);
    if (has_bins) ++bins[d[0].bin];
    if (augment_signed(d[0].op))
      ++signed_draws, negative += d[0].negative;
    else
      ASSERT_FALSE(d[0].negative);
  }
  auto chi2 = [](const std::vector<int>& counts) {
    double total = 0, c = 0;
    for (int v : counts) total += v;
    const double e = total / counts.size();
    for (int v : counts) c += (v - e) * (v - e) / e;
    return c;
  };
  EXPECT_LT(chi2(ops), 41.0);   // 13 degrees of freedom
  EXPECT_LT(chi2(bins), 70.0);  // 30 degrees of freedom
  EXPECT_NEAR(double(negative) / signed_draws, 0.5, 4 * std::sqrt(0.25 / signed_draws));

  AugmentOptions ra;
  ra.policy = Policy::randaugment;
  ra.num_ops = 3;
  ra.magnitude = 17;
  std::vector<int> ra_ops(kAugmentOps);
  for (int i = 0; i < n / 3; ++i) {
    auto d = draw_augment(ra, rng, 64, 48);
    ASSERT_EQ(d.size(), 3u);
    for (auto& x : d) {
      ++ra_ops[static_cast<int>(x.op)];
      if (x.bin >= 0) {
        ASSERT_EQ(x.bin, 17);
        ASSERT_EQ(std::abs(x.magnitude), *augment_magnitude(Policy::randaugment, x.op, 17, 64, 48));
      }
    }
  }
  EXPECT_LT(chi2(ra_ops), 41.0);
  AugmentOptions flip;
  EXPECT_TRUE(draw_augment(flip, rng, 32, 32).empty());
}

TEST(Augment, OptionsParseAndPrint) {
  AugmentOptions a;
  EXPECT_EQ(augment_text(a), "flip");
  EXPECT_EQ(parse_augment("trivial", a), "");
  EXPECT_EQ(a.policy, Policy::trivial);
  EXPECT_EQ(parse_augment("randaugment", a), "");
  EXPECT_EQ(augment_text(a), "randaugment:2,9");
  EXPECT_EQ(parse_augment("randaugment:3,15", a), "");
  EXPECT_EQ(augment_text(a), "randaugment:3,15");
  for (const char* bad : {"randaugment:3", "randaugment:3,31", "randaugment:-1,5", "randaugment3,4", "Trivial", "",
                          "randaugment:2,9x", "autoaugment"}) {
    AugmentOptions b;
    EXPECT_NE(parse_augment(bad, b), "") << bad;
    EXPECT_EQ(b, AugmentOptions{}) << bad << " changed the options";
  }
  EXPECT_EQ(parse_augment("none", a), "");
  EXPECT_FALSE(a.flips());
  EXPECT_FALSE(a.has_ops());
}

// The loader's transform: augmentation leaves the crop plan as it was (its own stream), --augment
// none keeps the box but never flips, and a sample's seed gives the same augmented image again.
TEST(Augment, TransformKeepsTheCropAndRepeatsPerSeed) {
  TransformOptions t;
  t.image_size = 32;
  TransformOptions trivial = t, none = t;
  trivial.augment.policy = Policy::trivial;
  trivial.augment.erasing = 0.5;
  none.augment.policy = Policy::none;
  int flips = 0;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const CropPlan p = plan_crop(t, seed, 120, 90);
    EXPECT_EQ(plan_crop(trivial, seed, 120, 90), p);
    CropPlan q = plan_crop(none, seed, 120, 90);
    EXPECT_FALSE(q.flip);
    flips += p.flip;
    q.flip = p.flip;
    EXPECT_EQ(q, p);
  }
  EXPECT_GT(flips, 60);
  Image src;
  src.resize(120, 90, 3);
  for (std::size_t i = 0; i < src.pixels.size(); ++i) src.pixels[i] = static_cast<std::uint8_t>(i * 7 % 251);
  int changed = 0;
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    Image plain, a, b;
    transform_image(src, t, seed, plain);
    transform_image(src, trivial, seed, a);
    transform_image(src, trivial, seed, b);
    EXPECT_EQ(a.pixels, b.pixels);
    changed += a.pixels != plain.pixels;
    TransformOptions eval = trivial;
    eval.train = false;
    Image e1, e2;
    transform_image(src, eval, seed, e1);
    eval.augment = AugmentOptions{};
    transform_image(src, eval, seed, e2);
    EXPECT_EQ(e1.pixels, e2.pixels) << "evaluation is never augmented";
  }
  EXPECT_GT(changed, 25);
}

#include <gtest/gtest.h>

#include <optional>
#include <set>

#include "dataset/data_fixtures.h"
#include "frugal/loader/loader.h"
#include "frugal/util/error.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = data_fixtures();
    if (dir_.empty()) GTEST_SKIP() << "no Python with PIL to make the archives";
  }
  std::vector<Batch> epoch(std::shared_ptr<const Dataset> ds, LoaderOptions o, std::int64_t ep,
                           std::int64_t position = 0) {
    Loader loader(std::move(ds), o);
    loader.start(ep, position);
    std::vector<Batch> out;
    while (auto b = loader.next()) out.push_back(*b);
    return out;
  }
  std::filesystem::path dir_;
};

void expect_same(const std::vector<Batch>& a, const std::vector<Batch>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::equal(a[i].images, b[i].images)) << "batch " << i;
    EXPECT_TRUE(torch::equal(a[i].labels, b[i].labels)) << "batch " << i;
    EXPECT_EQ(a[i].position, b[i].position);
  }
}

TEST_F(LoaderTest, BatchesAreTheSameWithOneAndFourThreads) {
  auto ds = Dataset::open(dir_ / "folders.zip");
  LoaderOptions o;
  o.image_size = 24;
  o.batch_size = 5;
  o.seed = 9;
  o.workers = 1;
  auto one = epoch(ds, o, 2);
  o.workers = 4;
  o.prefetch_batches = 3;
  auto four = epoch(ds, o, 2);
  expect_same(one, four);
  ASSERT_EQ(one.size(), 8u);  // 38 samples in batches of 5
  EXPECT_EQ(one.back().images.size(0), 3);
  EXPECT_EQ(one.back().position, 38);
  EXPECT_EQ(one[0].images.sizes(), (std::vector<std::int64_t>{5, 3, 24, 24}));
  EXPECT_EQ(one[0].images.dtype(), torch::kUInt8);
  EXPECT_EQ(one[0].labels.dtype(), torch::kInt64);
}

// The loader reuses a batch's image buffer once the consumer let go of it (page faults were 7-9%
// of the photo loader's time), and never one the consumer still holds.
TEST_F(LoaderTest, BatchBuffersAreReusedOnlyOnceTheConsumerLetGo) {
  auto ds = Dataset::open(dir_ / "folders.zip");
  LoaderOptions o;
  o.image_size = 24;
  o.batch_size = 2;
  o.seed = 3;
  o.workers = 2;
  o.prefetch_batches = 2;
  std::vector<Batch> ref;
  {
    Loader loader(ds, o);
    loader.start(1, 0);
    while (auto b = loader.next()) {
      Batch c = *b;
      c.images = b->images.clone();
      ref.push_back(c);
    }
  }
  ASSERT_EQ(ref.size(), 19u);  // 38 samples

  Loader loader(ds, o);
  loader.start(1, 0);
  torch::Tensor held;  // batch 3, kept to the end of the epoch
  std::set<const void*> buffers;
  // A weak reference keeps batch 0's storage object from being freed, so a later batch with the
  // same storage object is that buffer reused, not a new allocation at a recycled address.
  std::optional<c10::weak_intrusive_ptr<c10::StorageImpl>> first;
  const void* first_impl = nullptr;
  int first_reused = 0;
  std::size_t i = 0;
  while (auto b = loader.next()) {
    const void* impl = b->images.storage().unsafeGetStorageImpl();
    if (i == 0) {
      first.emplace(b->images.storage().getWeakStorageImpl());
      first_impl = impl;
    } else if (impl == first_impl) {
      ++first_reused;
    }
    ASSERT_LT(i, ref.size());
    EXPECT_TRUE(torch::equal(b->images, ref[i].images)) << "batch " << i;
    if (held.defined()) EXPECT_NE(b->images.data_ptr(), held.data_ptr()) << "batch " << i << " overwrites a held batch";
    buffers.insert(b->images.data_ptr());
    if (i == 3) held = b->images;
    ++i;
  }
  EXPECT_EQ(i, ref.size());
  EXPECT_TRUE(torch::equal(held, ref[3].images)) << "the held batch changed";
  EXPECT_GT(first_reused, 0) << "batch 0's buffer was never reused";
  // At most prefetch + workers + 2 buffers are pooled, and the held one is among them.
  EXPECT_LE(buffers.size(), 6u + 1u);
}

TEST_F(LoaderTest, LargeImagesGetTheSameRandomResizedCropsWithAnyThreadCount) {
  auto ds = Dataset::open(dir_ / "big.zip");
  ASSERT_GT(ds->native_size(), 64);
  LoaderOptions o;
  o.image_size = 40;  // small enough for 1/2-scaled decoding of most crops
  o.batch_size = 4;
  o.seed = 1;
  o.workers = 1;
  auto one = epoch(ds, o, 0);
  o.workers = 3;
  expect_same(one, epoch(ds, o, 0));
  EXPECT_EQ(one[0].images.sizes(), (std::vector<std::int64_t>{4, 3, 40, 40}));
}

TEST_F(LoaderTest, EpochsDifferAndSeedsDiffer) {
  auto ds = Dataset::open(dir_ / "folders.zip");
  LoaderOptions o;
  o.image_size = 16;
  o.batch_size = 38;
  auto e0 = epoch(ds, o, 0), e1 = epoch(ds, o, 1);
  EXPECT_FALSE(torch::equal(e0[0].labels, e1[0].labels));
  EXPECT_EQ(e0[0].labels.sum().item<std::int64_t>(),
            e1[0].labels.sum().item<std::int64_t>());  // same samples, other order
}

TEST_F(LoaderTest, ResumingAtAPositionYieldsTheRemainingBatches) {
  auto ds = Dataset::open(dir_ / "folders.zip");
  LoaderOptions o;
  o.image_size = 20;
  o.batch_size = 4;
  o.seed = 3;
  auto full = epoch(ds, o, 5);
  auto rest = epoch(ds, o, 5, full[3].position);
  std::vector<Batch> tail(full.begin() + 4, full.end());
  expect_same(tail, rest);
}

TEST_F(LoaderTest, EvalIsDeterministicAndUnshuffledWhenAsked) {
  auto ds = Dataset::open(dir_ / "folders.zip");
  LoaderOptions o;
  o.image_size = 16;
  o.batch_size = 38;
  o.train = false;
  o.shuffle = false;
  auto a = epoch(ds, o, 0), b = epoch(ds, o, 7);
  expect_same(a, b);
  for (std::size_t i = 0; i < ds->size(); ++i) EXPECT_EQ(a[0].labels[i].item<int>(), ds->label(i));
}

TEST_F(LoaderTest, DropLastLeavesOutThePartialBatch) {
  auto ds = Dataset::open(dir_ / "folders.zip");
  LoaderOptions o;
  o.image_size = 8;
  o.batch_size = 5;
  o.drop_last = true;
  Loader loader(ds, o);
  EXPECT_EQ(loader.batches_per_epoch(), 7);
  EXPECT_EQ(epoch(ds, o, 0).size(), 7u);
}

TEST_F(LoaderTest, SmallGrayImagesStayOneChannel) {
  auto ds = Dataset::open(dir_ / "gray28.zip");
  LoaderOptions o;
  o.image_size = 28;
  o.batch_size = 16;
  auto b = epoch(ds, o, 0);
  EXPECT_EQ(b[0].images.sizes(), (std::vector<std::int64_t>{16, 1, 28, 28}));
}

TEST_F(LoaderTest, AFewBadImagesAreSkippedAndCounted) {
  auto ds = Dataset::open(dir_ / "bad_few.zip");
  LoaderOptions o;
  o.image_size = 16;
  o.batch_size = 64;
  auto batches = epoch(ds, o, 0);
  std::int64_t n = 0;
  for (auto& b : batches) n += b.images.size(0);
  EXPECT_EQ(n, 299);
  EXPECT_EQ(ds->skipped().counts["undecodable"], 1u);
  EXPECT_NE(ds->skipped().summary().find("k0/bad0.jpg"), std::string::npos) << ds->skipped().summary();
}

TEST_F(LoaderTest, TooManyBadImagesStopWithCountsAndAnExample) {
  auto ds = Dataset::open(dir_ / "bad_many.zip");
  LoaderOptions o;
  o.image_size = 16;
  o.batch_size = 10;
  o.shuffle = false;  // the bad ones come last in the listing: all in the last batch
  Loader loader(ds, o);
  loader.start(0);
  try {
    while (loader.next()) {}
    FAIL() << "3% bad images were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid);
    std::string m = e.what();
    EXPECT_NE(m.find("3 of 100 seen failed"), std::string::npos) << m;
    EXPECT_NE(m.find("bad0.jpg"), std::string::npos) << m;
    EXPECT_NE(m.find("--max-bad-fraction"), std::string::npos) << m;
  }
}

TEST(Normalize, IsScaledAndStandardisedPerChannel) {
  auto x = torch::tensor({0, 255, 51, 102}, torch::kUInt8).view({1, 2, 1, 2});
  auto y = normalize(x, {0.5f, 0.2f}, {0.5f, 0.4f});
  auto expected = torch::tensor({-1.0f, 1.0f, (0.2f - 0.2f) / 0.4f, (0.4f - 0.2f) / 0.4f}).view({1, 2, 1, 2});
  EXPECT_TRUE(torch::allclose(y, expected, 1e-5, 1e-6)) << y;
  auto g = normalize(torch::full({1, 1, 1, 1}, 255, torch::kUInt8), {0.1f, 0.2f, 0.3f}, {0.5f, 0.5f, 0.5f});
  EXPECT_NEAR(g.item<float>(), (1.0f - 0.2f) / 0.5f, 1e-5);
}

// The one rule both loaders' normalisation reads (the GPU loader's kernel statistics too).
TEST(Normalize, ChannelStatisticsAreOneRuleForGrayRgbAndOneValue) {
  EXPECT_EQ(channel_statistics({0.1f, 0.2f, 0.3f}, 3, "mean"), (std::vector<float>{0.1f, 0.2f, 0.3f}));
  EXPECT_EQ(channel_statistics({0.5f}, 3, "mean"), (std::vector<float>{0.5f, 0.5f, 0.5f}));
  const auto gray = channel_statistics({0.1f, 0.2f, 0.3f}, 1, "mean");
  ASSERT_EQ(gray.size(), 1u);
  EXPECT_NEAR(gray[0], 0.2f, 1e-6);
  try {
    channel_statistics({0.1f, 0.2f}, 3, "std");
    FAIL() << "2 values for 3 channels were taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
  }
}

TEST(EpochOrder, IsAPermutationFixedBySeedAndEpoch) {
  auto a = epoch_order(100, 1, 0, true), b = epoch_order(100, 1, 0, true), c = epoch_order(100, 1, 1, true);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::sort(c.begin(), c.end());
  for (std::size_t i = 0; i < 100; ++i) EXPECT_EQ(c[i], i);
}

}  // namespace

// The sample order shared by every rank (frugal/dataset/sampler.h): with one process it walks the order
// in batches as always; with W processes of batch B, the ranks' batches together are the one
// process's batches of W*B, disjoint, in rank order, with the same positions and augmentation.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "dataset/data_fixtures.h"
#include "loader/batch_queue.h"
#include "frugal/dataset/sampler.h"
#include "frugal/loader/loader.h"
#include "frugal/util/error.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

LoaderOptions options(int batch, int rank = 0, int world = 1) {
  LoaderOptions o;
  o.batch_size = batch;
  o.seed = 4;
  o.shard = {rank, world};
  return o;
}

TEST(EpochPlan, OneProcessTakesConsecutiveBatchesOfTheOrder) {
  auto p = EpochPlan::make(38, options(5), 2, 0, "t");
  EXPECT_EQ(p.order, epoch_order(38, 4, 2, true));
  ASSERT_EQ(p.batches, 8);
  for (std::int64_t k = 0; k < p.batches; ++k) {
    EXPECT_EQ(p.slice(k), std::make_pair(5 * k, std::min<std::int64_t>(5 * k + 5, 38))) << k;
    EXPECT_EQ(p.position_after(k), std::min<std::int64_t>(5 * k + 5, 38));
  }
  EXPECT_EQ(p.rank_samples(), 38);
  auto resumed = EpochPlan::make(38, options(5), 2, 15, "t");  // from a saved position
  EXPECT_EQ(resumed.batches, 5);
  EXPECT_EQ(resumed.slice(0), std::make_pair(std::int64_t{15}, std::int64_t{20}));
  EXPECT_EQ(resumed.rank_samples(), 23);
}

// Every (n, B, W, start, drop_last) in a small range: rank r's slice of global batch k is the r-th
// contiguous part, the parts cover the one-process batch of W*B exactly once, full batches give
// every rank exactly B, and batch counts and positions agree across ranks.
TEST(EpochPlan, RanksSplitEachGlobalBatchIntoDisjointContiguousParts) {
  for (std::size_t n : {0, 1, 3, 7, 38, 40}) {
    for (int B : {1, 3, 5}) {
      for (int W : {1, 2, 3, 4}) {
        for (bool drop_last : {false, true}) {
          for (std::int64_t start : {std::int64_t{0}, static_cast<std::int64_t>(n / 2)}) {
            SCOPED_TRACE(::testing::Message()
                         << "n=" << n << " B=" << B << " W=" << W << " start=" << start << " drop_last=" << drop_last);
            LoaderOptions one = options(B * W);
            one.drop_last = drop_last;
            auto whole = EpochPlan::make(n, one, 1, start, "t");
            std::int64_t total = 0;
            for (int r = 0; r < W; ++r) {
              LoaderOptions o = options(B, r, W);
              o.drop_last = drop_last;
              auto p = EpochPlan::make(n, o, 1, start, "t");
              ASSERT_EQ(p.batches, whole.batches);
              ASSERT_EQ(epoch_batches(n, o), epoch_batches(n, one));
              std::int64_t mine = 0;
              for (std::int64_t k = 0; k < p.batches; ++k) {
                auto [from, to] = p.slice(k);
                auto [a, b] = whole.slice(k);
                const std::int64_t m = b - a;
                EXPECT_EQ(from, a + r * m / W);
                EXPECT_EQ(to, a + (r + 1) * m / W);
                if (m == static_cast<std::int64_t>(B) * W) EXPECT_EQ(to - from, B);
                EXPECT_LE(to - from, (m + W - 1) / W);
                EXPECT_GE(to - from, m / W);
                EXPECT_EQ(p.position_after(k), whole.position_after(k));
                mine += to - from;
              }
              EXPECT_EQ(p.rank_samples(), mine);
              total += mine;
            }
            EXPECT_EQ(total, whole.rank_samples());
          }
        }
      }
    }
  }
}

TEST(EpochPlan, TheLastPartialGlobalBatchIsSplitEvenly) {
  // 31 samples, 4 ranks of 5: global batches of 20, the last holds 11 -> 2, 3, 3, 3.
  std::vector<std::int64_t> sizes;
  for (int r = 0; r < 4; ++r) {
    auto p = EpochPlan::make(31, options(5, r, 4), 0, 0, "t");
    ASSERT_EQ(p.batches, 2);
    EXPECT_EQ(p.slice(0).second - p.slice(0).first, 5);
    sizes.push_back(p.slice(1).second - p.slice(1).first);
  }
  EXPECT_EQ(sizes, (std::vector<std::int64_t>{2, 3, 3, 3}));
}

TEST(EpochPlan, AShardOutsideTheWorldIsAUsageError) {
  for (Shard s : {Shard{2, 2}, Shard{-1, 2}, Shard{0, 0}}) {
    LoaderOptions o = options(4);
    o.shard = s;
    o.image_size = 8;
    try {
      checked_loader_options("Loader", o);
      ADD_FAILURE() << "rank " << s.rank << " of " << s.world << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage);
    }
  }
}

class ShardedLoader : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = data_fixtures();
    if (dir_.empty()) GTEST_SKIP() << "no Python with PIL to make the archives";
  }
  static std::vector<Batch> epoch(std::shared_ptr<const Dataset> ds, LoaderOptions o, std::int64_t ep,
                                  std::int64_t position = 0) {
    Loader loader(std::move(ds), o);
    loader.start(ep, position);
    std::vector<Batch> out;
    while (auto b = loader.next()) out.push_back(*b);
    return out;
  }
  // The W ranks' batches of one epoch, batch by batch joined in rank order: what one process
  // reading the global batch would have.
  static std::vector<Batch> joined(std::shared_ptr<const Dataset> ds, LoaderOptions o, int world, std::int64_t ep,
                                   std::int64_t position = 0) {
    std::vector<std::vector<Batch>> ranks;
    for (int r = 0; r < world; ++r) {
      o.shard = {r, world};
      o.workers = 1 + r % 3;  // each rank its own thread count: batches must not depend on it
      ranks.push_back(epoch(ds, o, ep, position));
      EXPECT_EQ(ranks.back().size(), ranks.front().size()) << "rank " << r;
    }
    std::vector<Batch> out;
    for (std::size_t k = 0; k < ranks.front().size(); ++k) {
      std::vector<torch::Tensor> images, labels;
      for (int r = 0; r < world; ++r) {
        const Batch& b = ranks[r][k];
        EXPECT_EQ(b.position, ranks[0][k].position) << "rank " << r << " batch " << k;
        EXPECT_EQ(b.epoch, ep);
        images.push_back(b.images);
        labels.push_back(b.labels);
      }
      Batch j;
      j.images = torch::cat(images);
      j.labels = torch::cat(labels);
      j.epoch = ep;
      j.position = ranks[0][k].position;
      out.push_back(j);
    }
    return out;
  }
  static void expect_same(const std::vector<Batch>& a, const std::vector<Batch>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_TRUE(torch::equal(a[i].images, b[i].images)) << "batch " << i;
      EXPECT_TRUE(torch::equal(a[i].labels, b[i].labels)) << "batch " << i;
      EXPECT_EQ(a[i].position, b[i].position) << "batch " << i;
    }
  }
  std::filesystem::path dir_;
};

// Random-resized crops and flips included: a sample's augmentation depends on (seed, epoch,
// index), not on which rank draws it.
TEST_F(ShardedLoader, TwoRanksOfBTogetherAreOneProcessOf2B) {
  auto ds = Dataset::open(dir_ / "folders.zip");  // 38 samples
  LoaderOptions o;
  o.image_size = 20;
  o.seed = 6;
  o.batch_size = 10;
  auto one = epoch(ds, o, 3);
  ASSERT_EQ(one.size(), 4u);
  o.batch_size = 5;
  auto two = joined(ds, o, 2, 3);
  expect_same(one, two);
  EXPECT_EQ(two.back().images.size(0), 8);  // 4 + 4
  // Four ranks of 3: the last global batch of 2 leaves ranks 0 and 2 an empty slice.
  o.batch_size = 12;
  auto global = epoch(ds, o, 3);
  o.batch_size = 3;
  expect_same(global, joined(ds, o, 4, 3));
}

TEST_F(ShardedLoader, EveryRankHasEveryBatchEvenAnEmptySlice) {
  auto ds = Dataset::open(dir_ / "folders.zip");  // 38 samples
  LoaderOptions o;
  o.image_size = 8;
  o.batch_size = 3;
  o.shard = {0, 4};  // global batches of 12; the last holds 2: ranks 1 and 3 take one each
  Loader loader(ds, o);
  EXPECT_EQ(loader.batches_per_epoch(), 4);
  loader.start(0);
  std::vector<std::int64_t> sizes;
  while (auto b = loader.next()) sizes.push_back(b->images.size(0));
  EXPECT_EQ(sizes, (std::vector<std::int64_t>{3, 3, 3, 0}));
  EXPECT_EQ(loader.samples_seen(), 9u);
}

TEST_F(ShardedLoader, AnotherWorldSizeResumesAtTheSamePosition) {
  auto ds = Dataset::open(dir_ / "folders.zip");
  LoaderOptions o;
  o.image_size = 16;
  o.seed = 2;
  o.batch_size = 8;
  auto one = epoch(ds, o, 1);
  // Saved by one process after its second batch, resumed by two ranks of 4 (and back).
  o.batch_size = 4;
  auto two = joined(ds, o, 2, 1, one[1].position);
  expect_same(std::vector<Batch>(one.begin() + 2, one.end()), two);
  o.batch_size = 8;
  auto back = epoch(ds, o, 1, two[0].position);
  expect_same(std::vector<Batch>(one.begin() + 3, one.end()), back);
}

// A pipeline stage after the first loads labels only (LabelLoader): the Loader's batches, sizes,
// labels and positions, sharded and resumed alike, and no image read (its images are (n, 0)).
TEST_F(ShardedLoader, ALabelLoaderHasTheLoadersBatchesWithoutTheirImages) {
  auto ds = Dataset::open(dir_ / "folders.zip");  // 38 samples
  LoaderOptions o;
  o.image_size = 16;
  o.seed = 5;
  o.batch_size = 4;
  o.workers = 3;
  for (int rank : {0, 1}) {
    o.shard = {rank, 2};
    for (std::int64_t position : {std::int64_t{0}, std::int64_t{16}}) {
      auto images = epoch(ds, o, 2, position);
      LabelLoader labels(ds, o);
      EXPECT_EQ(labels.batches_per_epoch(), Loader(ds, o).batches_per_epoch());
      labels.start(2, position);
      std::size_t k = 0;
      while (auto b = labels.next()) {
        ASSERT_LT(k, images.size());
        EXPECT_EQ(b->images.sizes(), (std::vector<std::int64_t>{images[k].images.size(0), 0})) << k;
        EXPECT_TRUE(torch::equal(b->labels, images[k].labels)) << "rank " << rank << " batch " << k;
        EXPECT_EQ(b->position, images[k].position);
        EXPECT_EQ(b->epoch, 2);
        ++k;
      }
      EXPECT_EQ(k, images.size());
      EXPECT_EQ(labels.samples_bad(), 0u);
    }
  }
}

}  // namespace

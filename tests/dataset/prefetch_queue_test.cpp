// The batch engine's threads (include/frugal/dataset/prefetch_queue.h) with a batch type of plain
// vectors: the code the Loader and the GpuLoader run, here under ThreadSanitizer too
// (scripts/sanitize.sh builds this binary with -fsanitize=thread). Builders of uneven speed hand
// their batches to next() in order; start() while batches of the older epoch are being built drops
// them; the queue is destroyed while its workers build; a builder's error and the bad-image limit
// reach next() at the batch they belong to; counters are read from another thread throughout.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "frugal/dataset/dataset.h"
#include "frugal/dataset/prefetch_queue.h"
#include "frugal/dataset/sampler.h"
#include "frugal/image/image.h"
#include "frugal/util/error.h"

using namespace frugal;

namespace {

// What a builder makes here: the samples it was given and a payload written on the worker thread
// and read on the consumer's (so a missing happens-before between them is a TSan report).
struct FakeBatch : BatchTally {
  std::int64_t epoch = -1, index = -1;
  std::vector<std::size_t> samples;
  std::vector<std::uint64_t> payload;
  std::int64_t size() const { return static_cast<std::int64_t>(samples.size()); }
};

using Queue = PrefetchQueue<FakeBatch>;

// A folder of two classes of tiny PNGs (the queue needs a Dataset: its size, channels, I/O groups
// and bad-image limit); the builders here never decode them.
class PrefetchQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "frugal-queue-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    Image img;
    img.resize(2, 2, 1);
    const auto png = encode_png(img);
    for (const char* cls : {"cat", "dog"}) {
      std::filesystem::create_directories(dir_ / "data" / cls);
      for (int i = 0; i < kPerClass; ++i)
        std::ofstream(dir_ / "data" / cls / (std::to_string(i) + ".png"), std::ios::binary)
            .write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
    }
    data_ = Dataset::open(dir_ / "data");
    ASSERT_EQ(data_->size(), 2u * kPerClass);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  static LoaderOptions options(int workers = 4, int batch = 5) {
    LoaderOptions o;
    o.batch_size = batch;
    o.workers = workers;
    o.prefetch_batches = 3;
    o.seed = 7;
    o.image_size = 2;
    return o;
  }

  // A builder that takes a time of its own per batch (later batches often finish first).
  static Queue::Build slow_builder(std::atomic<int>* built = nullptr) {
    return [built](const BatchJob& job) {
      std::this_thread::sleep_for(std::chrono::microseconds(200 * ((job.index * 7 + job.epoch * 3) % 5)));
      FakeBatch b;
      b.epoch = job.epoch;
      b.index = job.index;
      b.samples = job.samples;
      b.seen = static_cast<std::int64_t>(job.samples.size());
      for (auto s : job.samples) b.payload.push_back(s * 1000 + static_cast<std::uint64_t>(job.epoch));
      if (built) ++*built;
      return b;
    };
  }

  static constexpr int kPerClass = 20;
  std::filesystem::path dir_;
  std::shared_ptr<const Dataset> data_;
};

TEST_F(PrefetchQueueTest, BatchesComeOutInOrderWhicheverWorkerFinishesFirst) {
  Queue q("Loader", data_, options(), [] { return slow_builder(); });
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> polls{0};
  std::uint64_t over = 0;
  std::thread reader([&] {  // the counters, read while next() writes them
    do {
      if (q.samples_seen() > data_->size() || q.samples_bad() > 0) ++over;
      ++polls;
    } while (!done);
  });
  // On a loaded machine the reader may not be scheduled before the three epochs are over: wait for
  // its first read, so the reads really overlap next() (CI's ASan run once saw polls == 0).
  while (polls == 0) std::this_thread::yield();
  for (std::int64_t epoch : {0, 1, 2}) {
    q.start(epoch, 0);
    const auto plan = EpochPlan::make(data_->size(), options(), epoch, 0, "t");
    std::int64_t k = 0;
    while (auto h = q.next()) {
      ASSERT_EQ(h->batch.index, k);
      EXPECT_EQ(h->epoch, epoch);
      EXPECT_EQ(h->batch.samples, plan.samples(k));
      EXPECT_EQ(h->position, plan.position_after(k));
      for (std::size_t i = 0; i < h->batch.samples.size(); ++i)
        EXPECT_EQ(h->batch.payload[i], h->batch.samples[i] * 1000 + static_cast<std::uint64_t>(epoch));
      ++k;
    }
    EXPECT_EQ(k, plan.batches);
    EXPECT_EQ(q.samples_seen(), data_->size());
  }
  done = true;
  reader.join();
  EXPECT_EQ(over, 0u);
}

TEST_F(PrefetchQueueTest, StartAgainDropsTheBatchesOfTheOlderEpochBeingBuilt) {
  std::atomic<int> built{0};
  Queue q("Loader", data_, options(), [&] { return slow_builder(&built); });
  for (int round = 0; round < 20; ++round) {
    q.start(100 + round, 0);
    ASSERT_TRUE(q.next().has_value());  // the workers are now building the next ones
    const std::int64_t epoch = round, position = 5 * (round % 4);
    q.start(epoch, position);
    const auto plan = EpochPlan::make(data_->size(), options(), epoch, position, "t");
    std::int64_t k = 0;
    while (auto h = q.next()) {
      ASSERT_EQ(h->batch.epoch, epoch) << "a batch of the older epoch was handed out";
      EXPECT_EQ(h->batch.samples, plan.samples(k));
      ++k;
    }
    EXPECT_EQ(k, plan.batches);
  }
  EXPECT_GT(built.load(), 20 * 2);
}

TEST_F(PrefetchQueueTest, DestroyedWhileItsWorkersBuildItJoinsThem) {
  for (int round = 0; round < 10; ++round) {
    std::atomic<int> built{0};
    {
      Queue q("Loader", data_, options(4, 2), [&] { return slow_builder(&built); });
      q.start(round, 0);
      ASSERT_TRUE(q.next().has_value());
    }  // workers mid-batch: each finishes its batch, then stops
    EXPECT_GE(built.load(), 1);
  }
}

TEST_F(PrefetchQueueTest, ABuildersErrorReachesNextAtItsOwnBatch) {
  Queue q("Loader", data_, options(), [] {
    return [](const BatchJob& job) {
      if (job.index == 3) fail(ErrorKind::io, "disk", "a read", "EIO", "");
      return slow_builder()(job);
    };
  });
  q.start(0, 0);
  for (int k = 0; k < 3; ++k) ASSERT_EQ(q.next()->batch.index, k);
  try {
    q.next();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
  }
  q.start(1, 0);  // a new start() is clean
  EXPECT_EQ(q.next()->batch.index, 0);
}

TEST_F(PrefetchQueueTest, AllBadBatchesAreSkippedAndTooManyEndTheEpoch) {
  // Batch 1's images are all bad: one process skips it (below the limit of 50%).
  DatasetOptions o;
  o.max_bad_fraction = 0.5;
  auto data = Dataset::open(dir_ / "data", o);
  auto bad_builder = [data](std::int64_t bad_batch) {
    return [data, bad_batch](const BatchJob& job) {
      FakeBatch b;
      b.index = job.index;
      for (auto s : job.samples) {
        ++b.seen;
        if (job.index == bad_batch || bad_batch < 0) {
          EXPECT_TRUE(b.count_bad(*data, s, Error(ErrorKind::invalid, "not a PNG")));
          continue;
        }
        b.samples.push_back(s);
      }
      return b;
    };
  };
  {
    Queue q("Loader", data, options(), [&] { return Queue::Build(bad_builder(1)); });
    q.start(0, 0);
    std::vector<std::int64_t> handed;
    while (auto h = q.next()) handed.push_back(h->batch.index);
    EXPECT_EQ(handed.front(), 0);
    EXPECT_EQ(handed[1], 2) << "the all-bad batch 1 was handed out";
    EXPECT_EQ(q.samples_bad(), 5u);
  }
  Queue q("Loader", data, options(), [&] { return Queue::Build(bad_builder(-1)); });  // every image bad
  q.start(0, 0);
  try {
    while (q.next()) {}
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid);
    EXPECT_NE(std::string(e.what()).find("not a PNG"), std::string::npos) << e.what();
  }
}

TEST_F(PrefetchQueueTest, NextBeforeStartIsAUsageError) {
  Queue q("Loader", data_, options(1), [] { return slow_builder(); });
  try {
    q.next();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
  }
}

}  // namespace

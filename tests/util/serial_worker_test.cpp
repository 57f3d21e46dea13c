// The background worker the CheckpointWriter saves with (include/frugal/util/serial_worker.h),
// also run under ThreadSanitizer (scripts/sanitize.sh): jobs run one at a time in order, the
// buffers a finished job gives back are reused by the submitting thread without a lock of their
// own, an error is rethrown once (by wait() or the next submit()), busy() is read from another
// thread, and destruction finishes the job it holds.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

#include "frugal/util/serial_worker.h"

using namespace frugal;

namespace {

struct Job {
  int id = 0;
  std::vector<int> buffer;  // filled by the submitter, summed by the worker, given back for reuse
};

TEST(SerialWorker, RunsJobsInOrderAndGivesTheirBuffersBackForReuse) {
  std::vector<int> order;               // written by the worker thread only
  std::vector<std::vector<int>> spare;  // written by Done (worker thread), read by the submitter after wait()
  SerialWorker<Job, long> w(
      [&](Job& j) {
        order.push_back(j.id);
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        return std::accumulate(j.buffer.begin(), j.buffer.end(), 0L);
      },
      [&](Job&& j) { spare.push_back(std::move(j.buffer)); });
  std::atomic<bool> done{false};
  std::thread poller([&] {
    while (!done) (void)w.busy();
  });
  long expected_last = 0;
  int reused = 0;
  for (int id = 0; id < 50; ++id) {
    w.wait();
    Job j;
    j.id = id;
    if (!spare.empty()) {  // the buffer of the job before: its memory, rewritten here
      j.buffer = std::move(spare.back());
      spare.pop_back();
      ++reused;
    }
    j.buffer.assign(1000, id);
    expected_last = 1000L * id;
    w.submit(std::move(j));
  }
  EXPECT_EQ(w.wait(), expected_last);
  EXPECT_FALSE(w.busy());
  done = true;
  poller.join();
  std::vector<int> want(50);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(order, want);
  EXPECT_EQ(reused, 49);
}

TEST(SerialWorker, AnErrorIsRethrownOnceAndTheJobAfterItIsNotTaken) {
  std::atomic<int> ran{0};
  SerialWorker<int, int> w([&](int& x) {
    ++ran;
    if (x < 0) throw std::runtime_error("disk full");
    return x * 2;
  });
  w.submit(21);
  EXPECT_EQ(w.wait(), 42);
  w.submit(-1);
  EXPECT_THROW(w.wait(), std::runtime_error);
  EXPECT_EQ(w.wait(), 0);  // rethrown once; the failed job's result is the default
  w.submit(-1);
  EXPECT_THROW(w.submit(5), std::runtime_error);  // the error of the job before, and 5 is not taken
  EXPECT_EQ(w.wait(), 0);
  EXPECT_EQ(ran.load(), 3);
}

TEST(SerialWorker, DestructionFinishesTheJobItHolds) {
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> finished{0};
    {
      SerialWorker<int, int> w([&](int& x) {
        std::this_thread::sleep_for(std::chrono::microseconds(100 * x));
        ++finished;
        return x;
      });
      w.submit(round % 5);
    }
    EXPECT_EQ(finished.load(), 1) << "round " << round;
  }
}

}  // namespace

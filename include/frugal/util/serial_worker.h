// One job at a time on a thread of its own, at most one waiting: what the CheckpointWriter saves
// in the background with (include/frugal/checkpoint/checkpoint.h). Torch-free and header-only, so
// that its thread runs under ThreadSanitizer in the torch-free unit tests (scripts/sanitize.sh)
// with the code the writer runs.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

namespace frugal {

// Job: movable; Result: copyable and default-constructible.
template <class Job, class Result>
class SerialWorker {
 public:
  using Work = std::function<Result(Job&)>;
  // Given each job back on the worker thread once its work is done, before wait() can return:
  // what it holds (buffers to reuse) can be kept for the next job without a lock of its own.
  using Done = std::function<void(Job&&)>;

  explicit SerialWorker(Work work, Done done = {}) : work_(std::move(work)), done_(std::move(done)) {
    thread_ = std::thread([this] { run(); });
  }
  // Finishes the job it holds, then joins. Its error, if wait() was not called, is dropped: an
  // owner that must report it calls wait() first.
  ~SerialWorker() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  SerialWorker(const SerialWorker&) = delete;
  SerialWorker& operator=(const SerialWorker&) = delete;

  // Waits for the job before (queue depth one; its error is rethrown here and this job is not
  // taken), then hands this one to the thread.
  void submit(Job job) {
    wait();
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_ = std::move(job);
    }
    cv_.notify_all();
  }

  // Waits until no job is pending or running; returns the last one's result, or rethrows its
  // error (once: a second wait() returns a default Result for it).
  Result wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !pending_ && !running_; });
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    return last_;
  }

  bool busy() const {
    std::lock_guard<std::mutex> lock(mu_);
    return pending_ || running_;
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stop_ || pending_; });
      if (!pending_) return;  // stopped, nothing left
      Job job = std::move(*pending_);
      pending_.reset();
      running_ = true;
      lock.unlock();
      Result result{};
      std::exception_ptr error;
      try {
        result = work_(job);
      } catch (...) {
        error = std::current_exception();
      }
      try {
        if (done_) done_(std::move(job));
      } catch (...) {
        if (!error) error = std::current_exception();
      }
      lock.lock();
      running_ = false;
      last_ = std::move(result);
      error_ = error;
      cv_.notify_all();
    }
  }

  const Work work_;
  const Done done_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<Job> pending_;
  bool running_ = false, stop_ = false;
  Result last_{};
  std::exception_ptr error_;
  std::thread thread_;  // last: started when everything above is set
};

}  // namespace frugal

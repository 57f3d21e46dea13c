#include "archive/sha256_worker.h"

namespace frugal {

Sha256Worker::Sha256Worker() : thread_([this] { run(); }) {}

Sha256Worker::~Sha256Worker() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Sha256Worker::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return busy_ || stop_; });
    if (busy_) {
      lock.unlock();
      sha_.update(data_, n_);
      lock.lock();
      busy_ = false;
      cv_.notify_all();
    } else if (stop_) {
      return;
    }
  }
}

void Sha256Worker::submit(const void* data, std::size_t n) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return !busy_; });
  data_ = data;
  n_ = n;
  busy_ = true;
  cv_.notify_all();
}

void Sha256Worker::wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return !busy_; });
}

std::string Sha256Worker::hex_digest() {
  wait();
  return sha_.hex_digest();
}

}  // namespace frugal

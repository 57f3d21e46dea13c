#include "frugal/checkpoint.h"
#include "frugal/progress.h"

namespace frugal {

CheckpointWriter::CheckpointWriter(CheckpointManager& manager) : manager_(manager) {
  worker_ = std::thread([this] { run(); });
}

CheckpointWriter::~CheckpointWriter() {
  try {
    wait();
  } catch (const std::exception& e) {
    note(std::string("frugal: background checkpoint failed: ") + e.what());
  }
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void CheckpointWriter::submit(const Checkpoint& ckpt) {
  wait();  // queue depth 1: the previous save must be on disk before the next snapshot is taken
  Checkpoint copy = snapshot(ckpt);
  {
    std::lock_guard lock(mu_);
    pending_ = std::move(copy);
  }
  cv_.notify_all();
}

SaveResult CheckpointWriter::wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return !pending_ && !writing_; });
  if (error_) {
    auto e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
  return last_;
}

bool CheckpointWriter::busy() const {
  std::lock_guard lock(mu_);
  return pending_ || writing_;
}

void CheckpointWriter::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || pending_; });
    if (!pending_) return;  // stop_ and nothing left
    Checkpoint ckpt = std::move(*pending_);
    pending_.reset();
    writing_ = true;
    lock.unlock();
    SaveResult result;
    std::exception_ptr error;
    try {
      result = manager_.save(ckpt);
    } catch (...) {
      error = std::current_exception();
    }
    ckpt = Checkpoint();  // free the host copy before signalling
    lock.lock();
    writing_ = false;
    last_ = result;
    if (error) error_ = error;
    cv_.notify_all();
  }
}

}  // namespace frugal

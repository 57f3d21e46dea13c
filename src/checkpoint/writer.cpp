#include "frugal/checkpoint/checkpoint.h"
#include "frugal/util/progress.h"

#include <cstring>

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
  wait();                  // queue depth 1: the previous save must be on disk before the next snapshot is taken
  Checkpoint copy = ckpt;  // JSON and strings copied; tensors replaced below
  std::size_t i = 0;
  auto take = [&](NamedTensors& ts) {
    for (auto& [name, t] : ts) {
      torch::Tensor src = t.detach();
      torch::Tensor* reuse = i < spare_.size() ? &spare_[i] : nullptr;
      ++i;
      // Dense channels-last weights (what training uses) are copied as they lie, like contiguous
      // ones; the file writer makes them row-major on its own thread.
      const bool cl = src.dim() == 4 && !src.is_contiguous() && src.is_contiguous(torch::MemoryFormat::ChannelsLast);
      const auto format = cl ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
      bool fits = reuse && reuse->defined() && reuse->sizes() == src.sizes() && reuse->dtype() == src.dtype() &&
                  reuse->is_contiguous(format);
      torch::Tensor dst =
          fits ? *reuse : torch::empty(src.sizes(), src.options().device(torch::kCPU).memory_format(format));
      if (src.is_cpu() && (src.is_contiguous() || cl))
        // A plain memcpy on this thread: torch's copy_ splits into OpenMP work, and on a busy
        // 2-core machine waiting for a descheduled OpenMP thread stalled training for ~0.2 s.
        std::memcpy(dst.data_ptr(), src.data_ptr(), src.nbytes());
      else
        dst.copy_(src);
      t = dst;
    }
  };
  take(copy.weights);
  take(copy.state);
  spare_.clear();  // the copy owns them now; they come back when the save is done
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
    lock.lock();
    spare_.clear();
    for (auto* ts : {&ckpt.weights, &ckpt.state})
      for (auto& [name, t] : *ts) spare_.push_back(std::move(t));
    ckpt = Checkpoint();
    writing_ = false;
    last_ = result;
    if (error) error_ = error;
    cv_.notify_all();
  }
}

}  // namespace frugal

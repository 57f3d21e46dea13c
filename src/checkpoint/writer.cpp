#include "frugal/checkpoint/checkpoint.h"
#include "frugal/util/progress.h"

#include <cstring>

namespace frugal {

CheckpointWriter::CheckpointWriter(CheckpointManager& manager)
    : worker_([&manager](Checkpoint& ckpt) { return manager.save(ckpt); },
              [this](Checkpoint&& done) {
                spare_.clear();
                for (auto* ts : {&done.weights, &done.state})
                  for (auto& [name, t] : *ts) spare_.push_back(std::move(t));
              }) {}

CheckpointWriter::~CheckpointWriter() {
  try {
    worker_.wait();
  } catch (const std::exception& e) {
    note(std::string("frugal: background checkpoint failed: ") + e.what());
  }
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
  worker_.submit(std::move(copy));
}

SaveResult CheckpointWriter::wait() { return worker_.wait(); }

bool CheckpointWriter::busy() const { return worker_.busy(); }

}  // namespace frugal

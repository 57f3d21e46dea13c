// A SHA-256 that runs on its own thread, so that a second digest over the same bytes (the whole
// file's, beside each part's) costs no extra wall time on a machine with two cores.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>

#include "frugal/util/hash.h"

namespace frugal {

class Sha256Worker {
 public:
  Sha256Worker();
  ~Sha256Worker();
  Sha256Worker(const Sha256Worker&) = delete;
  Sha256Worker& operator=(const Sha256Worker&) = delete;

  // Waits for the previous block to be digested, then hands this one over and returns at once.
  // The caller must keep `data` unchanged until the next submit() or digest() returns; with two
  // alternating buffers, filling one while the other is hashed is safe.
  void submit(const void* data, std::size_t n);
  void wait();               // until every submitted block is digested
  std::string hex_digest();  // waits; the worker is spent afterwards

 private:
  void run();
  Sha256 sha_;
  std::mutex mu_;
  std::condition_variable cv_;
  const void* data_ = nullptr;
  std::size_t n_ = 0;
  bool busy_ = false, stop_ = false;
  std::thread thread_;
};

}  // namespace frugal

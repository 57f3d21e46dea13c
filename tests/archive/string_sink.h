// A ByteSink for tests that keeps the bytes written to it in a string, so that a zip can be written
// in memory and then read or written to a file whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "archive/byte_sink.h"

namespace frugal::testing {

class StringSink : public ByteSink {
 public:
  // `start`: where the bytes are taken to begin, as if the sink were a file's tail.
  explicit StringSink(std::uint64_t start = 0) : start_(start) {}
  void write(const void* d, std::size_t n) override { s.append(static_cast<const char*>(d), n); }
  std::uint64_t offset() const override { return start_ + s.size(); }
  std::string s;  // what was written

 private:
  std::uint64_t start_;
};

}  // namespace frugal::testing

// Where a writer's bytes go: one file, or a run of split parts (PartWriter). Only appends, so a
// zip can be streamed into parts that are hashed and closed as they fill.
#pragma once

#include <cstddef>
#include <cstdint>

namespace frugal {

class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual void write(const void* data, std::size_t n) = 0;
  virtual std::uint64_t offset() const = 0;  // bytes written so far
};

}  // namespace frugal

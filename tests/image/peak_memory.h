// The peak resident memory a call adds, for tests that hold decoders to memory bounded by their
// output (Linux: /proc/self/status, its peak reset through /proc/self/clear_refs).
#pragma once

#include <cstdint>
#include <fstream>
#include <functional>
#include <string>

namespace frugal::testing {

// The figure of /proc/self/status's line that starts with `key` ("VmRSS:"), in KiB; 0 when none.
inline std::uint64_t status_kib(const char* key) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind(key, 0) == 0) return std::stoull(line.substr(std::string(key).size()));
  return 0;
}

// Peak resident memory `f` adds, in KiB (VmHWM, reset through clear_refs).
inline std::uint64_t peak_growth_kib(const std::function<void()>& f) {
  std::ofstream("/proc/self/clear_refs") << "5";
  const std::uint64_t before = status_kib("VmRSS:");
  f();
  return status_kib("VmHWM:") - before;
}

}  // namespace frugal::testing

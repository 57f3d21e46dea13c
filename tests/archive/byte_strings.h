// Bytes for tests: numbers as the big-endian bytes of a file header, strings as byte vectors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace frugal::testing {

// `v` as 4 big-endian bytes (IDX headers).
inline std::string be32(std::uint32_t v) { return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; }

inline std::vector<std::uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

}  // namespace frugal::testing

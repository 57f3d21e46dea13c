// Checksums: SHA-256 (OpenSSL's libcrypto) for manifests, CRC-32 (libdeflate) for zip entries,
// XXH3 (xxhash) for fast in-file payload checks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace frugal {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, std::size_t n);
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::string hex_digest();  // 64 lowercase hex digits; the object is spent afterwards

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string sha256_hex(std::string_view data);

// Continues a CRC-32 (zip's polynomial); start with crc = 0.
std::uint32_t crc32(std::uint32_t crc, const void* data, std::size_t n);

std::uint64_t xxh3_64(const void* data, std::size_t n);

// 0x1234abcd -> "1234abcd"
std::string hex32(std::uint32_t v);
std::string to_hex(const void* data, std::size_t n);

}  // namespace frugal

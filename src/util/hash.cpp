#include "frugal/util/hash.h"

#include <libdeflate.h>
#include <openssl/evp.h>
#include <xxhash.h>

#include <cstdio>

#include "frugal/util/error.h"

namespace frugal {

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  if (!impl_->ctx || EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr) != 1)
    throw Error(ErrorKind::io, "OpenSSL: cannot start a SHA-256 digest");
}

Sha256::~Sha256() { EVP_MD_CTX_free(impl_->ctx); }

void Sha256::update(const void* data, std::size_t n) { EVP_DigestUpdate(impl_->ctx, data, n); }

std::string Sha256::hex_digest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(impl_->ctx, md, &len);
  return to_hex(md, len);
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.hex_digest();
}

std::uint32_t crc32(std::uint32_t crc, const void* data, std::size_t n) { return libdeflate_crc32(crc, data, n); }

std::uint64_t xxh3_64(const void* data, std::size_t n) { return XXH3_64bits(data, n); }

std::string hex32(std::uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

std::string to_hex(const void* data, std::size_t n) {
  static const char* const digits = "0123456789abcdef";
  std::string out(2 * n, '0');
  auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 15];
  }
  return out;
}

}  // namespace frugal

// The tar header block (POSIX ustar, GNU and v7 forms) and its number fields. Only what reading
// needs; the layout is POSIX.1-2001's, GNU's extensions as GNU tar writes them.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace frugal::tar {

inline constexpr std::size_t kBlock = 512;

// Field offsets and widths in a header block.
inline constexpr std::size_t kName = 0, kNameLen = 100;
inline constexpr std::size_t kSize = 124, kSizeLen = 12;
inline constexpr std::size_t kChecksum = 148, kChecksumLen = 8;
inline constexpr std::size_t kType = 156;
inline constexpr std::size_t kLinkName = 157, kLinkNameLen = 100;
inline constexpr std::size_t kMagic = 257;
inline constexpr std::size_t kPrefix = 345, kPrefixLen = 155;
inline constexpr std::size_t kGnuIsExtended = 482;     // old GNU sparse: more sparse blocks follow
inline constexpr std::size_t kGnuExtIsExtended = 504;  // the same flag in a sparse extension block

inline bool is_posix_ustar(const std::uint8_t* h) {
  return std::string_view(reinterpret_cast<const char*>(h + kMagic), 6) == std::string_view("ustar\0", 6);
}
inline bool is_gnu(const std::uint8_t* h) {
  return std::string_view(reinterpret_cast<const char*>(h + kMagic), 8) == std::string_view("ustar  \0", 8);
}

inline bool is_zero_block(const std::uint8_t* h) {
  for (std::size_t i = 0; i < kBlock; ++i)
    if (h[i]) return false;
  return true;
}

// A number field: octal digits between optional spaces and NULs (the text stops at the first NUL,
// as Python's tarfile and GNU tar read it), or GNU's base-256 form (first byte 0x80; 0xff is a
// negative number, refused). nullopt when it is neither, negative, or does not fit in 63 bits.
inline std::optional<std::uint64_t> parse_number(const std::uint8_t* f, std::size_t n) {
  if (n == 0) return std::nullopt;
  if (f[0] == 0x80) {
    std::uint64_t v = 0;
    for (std::size_t i = 1; i < n; ++i) {
      if (v >> 55) return std::nullopt;
      v = v << 8 | f[i];
    }
    return v >> 63 ? std::nullopt : std::optional<std::uint64_t>(v);
  }
  if (f[0] == 0xff) return std::nullopt;
  std::size_t end = 0;
  while (end < n && f[end] != 0) ++end;
  std::size_t b = 0;
  auto space = [](std::uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
  while (b < end && space(f[b])) ++b;
  while (end > b && space(f[end - 1])) --end;
  std::uint64_t v = 0;
  for (std::size_t i = b; i < end; ++i) {
    if (f[i] < '0' || f[i] > '7') return std::nullopt;
    if (v >> 60) return std::nullopt;
    v = v << 3 | static_cast<std::uint64_t>(f[i] - '0');
  }
  return v;
}

// The checksum rule: the stored number equals the sum of the block's bytes with the checksum field
// counted as spaces, taken unsigned or (old writers) signed.
inline bool checksum_ok(const std::uint8_t* h) {
  const auto stored = parse_number(h + kChecksum, kChecksumLen);
  if (!stored) return false;
  std::int64_t unsigned_sum = 8 * ' ', signed_sum = 8 * ' ';
  for (std::size_t i = 0; i < kBlock; ++i) {
    if (i >= kChecksum && i < kChecksum + kChecksumLen) continue;
    unsigned_sum += h[i];
    signed_sum += static_cast<std::int8_t>(h[i]);
  }
  return static_cast<std::int64_t>(*stored) == unsigned_sum || static_cast<std::int64_t>(*stored) == signed_sum;
}

// A block the parser takes for a header (tar_index.cpp): not the end, and a valid checksum.
inline bool is_header(const std::uint8_t* h) { return !is_zero_block(h) && checksum_ok(h); }

// A block that starts a tar: a valid checksum, and ustar magic or (v7) a name.
inline bool looks_like_tar_header(const std::uint8_t* h) {
  if (is_zero_block(h) || !checksum_ok(h)) return false;
  return is_posix_ustar(h) || is_gnu(h) || h[kName] != 0;
}

inline std::uint64_t round_up_block(std::uint64_t n) { return (n + kBlock - 1) / kBlock * kBlock; }

}  // namespace frugal::tar

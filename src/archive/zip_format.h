// The zip format's fixed records (PKWARE APPNOTE 6.3.x, sections 4.3 and 4.5), little-endian.
#pragma once

#include <cstdint>
#include <cstring>

namespace frugal::zip {

inline constexpr std::uint32_t kLocalSig = 0x04034b50;      // "PK\3\4"
inline constexpr std::uint32_t kCentralSig = 0x02014b50;    // "PK\1\2"
inline constexpr std::uint32_t kEocdSig = 0x06054b50;       // "PK\5\6"
inline constexpr std::uint32_t kEocd64Sig = 0x06064b50;     // "PK\6\6"
inline constexpr std::uint32_t kEocd64LocSig = 0x07064b50;  // "PK\6\7"
inline constexpr std::uint32_t kSpanSig = 0x08074b50;       // first bytes of a `zip -s` set

inline constexpr std::size_t kLocalSize = 30;
inline constexpr std::size_t kCentralSize = 46;
inline constexpr std::size_t kEocdSize = 22;
inline constexpr std::size_t kEocd64Size = 56;
inline constexpr std::size_t kEocd64LocSize = 20;
inline constexpr std::size_t kMaxComment = 0xffff;

inline constexpr std::uint16_t kExtraZip64 = 0x0001;
inline constexpr std::uint16_t kExtraUnicodePath = 0x7075;  // Info-ZIP's UTF-8 name

inline constexpr std::uint16_t kFlagEncrypted = 1u << 0;
inline constexpr std::uint16_t kFlagDescriptor = 1u << 3;
inline constexpr std::uint16_t kFlagStrongEncryption = 1u << 6;
inline constexpr std::uint16_t kFlagUtf8 = 1u << 11;

// Deflate cannot expand by more than ~1032:1 (a 258-byte match per 2 bits at best); a declared size
// above this bound is a lie, refused before any buffer is sized from it.
inline constexpr std::uint64_t kMaxDeflateRatio = 1032;

inline std::uint16_t le16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }
inline std::uint32_t le32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}
inline std::uint64_t le64(const std::uint8_t* p) {
  return static_cast<std::uint64_t>(le32(p)) | (static_cast<std::uint64_t>(le32(p + 4)) << 32);
}

}  // namespace frugal::zip

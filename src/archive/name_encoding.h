// Entry names: zip stores bytes; frugal shows UTF-8. Names flagged UTF-8 (or valid UTF-8 anyway)
// are kept; others are decoded with iconv from the user's --name-encoding, or shown with U+FFFD
// for each invalid byte.
#pragma once

#include <string>
#include <string_view>

namespace frugal {

bool is_valid_utf8(std::string_view s);

// Each byte that does not start a valid UTF-8 sequence becomes U+FFFD.
std::string repair_utf8(std::string_view s);

class NameDecoder {
 public:
  // Empty encoding: no decoding, only repair. Throws Error(usage) for an encoding iconv lacks.
  explicit NameDecoder(const std::string& encoding);
  ~NameDecoder();
  NameDecoder(const NameDecoder&) = delete;
  NameDecoder& operator=(const NameDecoder&) = delete;

  // Sets `utf8` to the name to show; returns false when it is not the bytes as stored. A name
  // holding a NUL byte is shown escaped (printable(): "a\x00b.png"), whatever its encoding.
  bool decode(std::string_view raw, bool flagged_utf8, std::string& utf8);

 private:
  std::string encoding_;
  void* cd_ = nullptr;  // iconv_t
};

}  // namespace frugal

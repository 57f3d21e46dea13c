#include "archive/name_encoding.h"

#include <iconv.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "frugal/error.h"

namespace frugal {

namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 (overlongs, surrogates and > U+10FFFF rejected).
std::size_t utf8_seq(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  std::size_t n;
  unsigned lo = 0x80, hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(k) < 0x80 || b(k) > 0xbf) return 0;
  return n;
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {  // ASCII fast path: nearly every name in a dataset
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    if (w & 0x8080808080808080ull) break;
  }
  while (i < s.size()) {
    std::size_t n = utf8_seq(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string repair_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (std::size_t i = 0; i < s.size();) {
    std::size_t n = utf8_seq(s, i);
    if (n == 0) {
      out += "\xef\xbf\xbd";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

NameDecoder::NameDecoder(const std::string& encoding) : encoding_(encoding) {
  if (encoding.empty()) return;
  iconv_t cd = ::iconv_open("UTF-8", encoding.c_str());
  if (cd == reinterpret_cast<iconv_t>(-1))
    fail(ErrorKind::usage, "{name_encoding} " + encoding, "an encoding iconv knows (e.g. cp437, gbk, shift_jis)",
         "an unknown encoding", "run 'iconv -l' for the list");
  cd_ = cd;
}

NameDecoder::~NameDecoder() {
  if (cd_) ::iconv_close(static_cast<iconv_t>(cd_));
}

bool NameDecoder::decode(std::string_view raw, bool flagged_utf8, std::string& utf8) {
  if (is_valid_utf8(raw)) {
    utf8.assign(raw);
    return true;
  }
  if (cd_ && !flagged_utf8) {
    iconv_t cd = static_cast<iconv_t>(cd_);
    ::iconv(cd, nullptr, nullptr, nullptr, nullptr);
    std::string out(raw.size() * 4 + 8, '\0');
    char* in = const_cast<char*>(raw.data());
    std::size_t in_left = raw.size();
    char* o = out.data();
    std::size_t out_left = out.size();
    if (::iconv(cd, &in, &in_left, &o, &out_left) != static_cast<std::size_t>(-1) && in_left == 0) {
      out.resize(out.size() - out_left);
      if (is_valid_utf8(out)) {
        utf8 = std::move(out);
        return false;
      }
    }
  }
  utf8 = repair_utf8(raw);
  return false;
}

}  // namespace frugal

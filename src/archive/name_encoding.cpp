#include "archive/name_encoding.h"

#include <iconv.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "frugal/util/error.h"
#include "frugal/util/terminal.h"
#include "frugal/archive/name_encoding.h"

namespace frugal {

namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 (overlongs, surrogates and > U+10FFFF rejected).
std::size_t utf8_seq(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  std::size_t n;
  unsigned lo = 0x80, hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf)
    n = 2;
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
  // A NUL (a PAX path or zip name may hold one) would end every message that names the entry, a
  // C string there: shown escaped ("a\x00b.png"), bytes that are not UTF-8 too; never read.
  if (raw.find('\0') != std::string_view::npos) {
    utf8 = printable(raw);
    return false;
  }
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

namespace frugal {
namespace {

// The code points of `s` (iconv's output, valid UTF-8; a stray byte counts as itself).
std::vector<char32_t> code_points(std::string_view s) {
  std::vector<char32_t> out;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = std::max<std::size_t>(1, utf8_seq(s, i));
    const auto b = [&](std::size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(s[i + k])); };
    char32_t cp = b(0);
    if (n == 2) cp = (b(0) & 0x1f) << 6 | (b(1) & 0x3f);
    if (n == 3) cp = (b(0) & 0x0f) << 12 | (b(1) & 0x3f) << 6 | (b(2) & 0x3f);
    if (n == 4) cp = (b(0) & 0x07) << 18 | (b(1) & 0x3f) << 12 | (b(2) & 0x3f) << 6 | (b(3) & 0x3f);
    out.push_back(cp);
    i += n;
  }
  return out;
}

enum class Script { ascii, ascii_letter, latin, greek, cyrillic, kana, han, hangul, neutral, odd };

Script script_of(char32_t c) {
  if (c < 0x80) return ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') ? Script::ascii_letter : Script::ascii;
  if ((c >= 0xC0 && c <= 0x24F && c != 0xD7 && c != 0xF7)) return Script::latin;
  if (c >= 0x386 && c <= 0x3CE) return Script::greek;
  if (c >= 0x400 && c <= 0x45F) return Script::cyrillic;
  if (c >= 0x3041 && c <= 0x30FA) return Script::kana;
  if (c >= 0x4E00 && c <= 0x9FFF) return Script::han;
  if (c >= 0xAC00 && c <= 0xD7A3) return Script::hangul;
  // CJK punctuation, the ideographic space and full-width ASCII: plausible, not evidence.
  if ((c >= 0x3000 && c <= 0x303F) || (c >= 0xFF01 && c <= 0xFF5E)) return Script::neutral;
  // C1 controls, Latin-1 symbols, general punctuation (cp1252's 0x80-0x9F), box drawing, blocks,
  // math, half-width katakana (Shift_JIS single bytes), private use, ...
  return Script::odd;
}

// Per name: +1 for each letter, -1 for each odd character. A Greek or Cyrillic letter in a word
// that also has ASCII letters is odd (cp437 reads 0xE0 as alpha, cp866 reads 0x82 as a Cyrillic
// letter: "caf\x82"); `rare_han`: Han characters count 0 (GBK outside GB2312, Hanja in EUC-KR).
int score(std::string_view utf8, bool rare_han) {
  const std::vector<char32_t> cps = code_points(utf8);
  int total = 0;
  std::size_t word = 0;
  while (word < cps.size()) {
    std::size_t end = word;
    bool ascii_letters = false;
    while (end < cps.size() && std::string_view("/._- ").find(static_cast<char>(cps[end] < 0x80 ? cps[end] : 'x')) ==
                                   std::string_view::npos) {
      ascii_letters |= script_of(cps[end]) == Script::ascii_letter;
      ++end;
    }
    for (std::size_t i = word; i < end; ++i) {
      switch (script_of(cps[i])) {
        case Script::latin:
        case Script::kana:
        case Script::hangul:
          ++total;
          break;
        case Script::han:
          total += rare_han ? 0 : 1;
          break;
        case Script::greek:
        case Script::cyrillic:
          total += ascii_letters ? -1 : 1;
          break;
        case Script::odd:
          --total;
          break;
        default:
          break;
      }
    }
    word = end + 1;
  }
  return total;
}

// `raw` decoded from `encoding` to UTF-8, or nullopt where iconv refuses it.
std::optional<std::string> decode_as(void* cd_handle, std::string_view raw) {
  iconv_t cd = static_cast<iconv_t>(cd_handle);
  ::iconv(cd, nullptr, nullptr, nullptr, nullptr);
  std::string out(raw.size() * 4 + 8, '\0');
  char* in = const_cast<char*>(raw.data());
  std::size_t in_left = raw.size(), out_left = out.size();
  char* o = out.data();
  if (::iconv(cd, &in, &in_left, &o, &out_left) == static_cast<std::size_t>(-1) || in_left != 0) return std::nullopt;
  out.resize(out.size() - out_left);
  if (!is_valid_utf8(out)) return std::nullopt;
  return out;
}

struct Iconv {
  void* cd = nullptr;
  explicit Iconv(const char* from) {
    iconv_t c = ::iconv_open("UTF-8", from);
    if (c != reinterpret_cast<iconv_t>(-1)) cd = c;
  }
  ~Iconv() {
    if (cd) ::iconv_close(static_cast<iconv_t>(cd));
  }
  Iconv(const Iconv&) = delete;
  Iconv& operator=(const Iconv&) = delete;
};

}  // namespace

std::vector<std::string> guess_name_encodings(const std::vector<std::string>& raw_names) {
  // `core`: the common subset whose Han characters count as letters (GB2312 within GBK; none of
  // Korean's Hanja: names are written in Hangul).
  struct Candidate {
    const char* name;
    const char* core;
    bool han_is_rare;
  };
  static constexpr Candidate kCandidates[] = {
      {"gbk", "gb2312", false},   {"shift_jis", nullptr, false}, {"big5", nullptr, false}, {"euc-kr", nullptr, true},
      {"cp1252", nullptr, false}, {"cp437", nullptr, false},     {"cp866", nullptr, false}};
  const std::size_t n = std::min<std::size_t>(raw_names.size(), 256);
  std::vector<std::pair<std::string, long>> scored;
  for (const Candidate& c : kCandidates) {
    Iconv cd(c.name);
    if (!cd.cd) continue;
    std::optional<Iconv> core;
    if (c.core) core.emplace(c.core);
    long total = 0;
    bool all = n > 0;
    for (std::size_t i = 0; i < n && all; ++i) {
      auto text = decode_as(cd.cd, raw_names[i]);
      if (!text) {
        all = false;
        break;
      }
      const bool rare = c.han_is_rare || (core && core->cd && !decode_as(core->cd, raw_names[i]));
      total += score(*text, rare);
    }
    if (all) scored.emplace_back(c.name, total);
  }
  if (scored.empty()) return {};
  long best = scored[0].second;
  for (const auto& [name, s] : scored) best = std::max(best, s);
  std::vector<std::string> out;
  for (const auto& [name, s] : scored)
    if (s == best) out.push_back(name);
  return out;
}

}  // namespace frugal

namespace frugal {

bool is_unsafe_name(std::string_view name) {
  if (name.find('\0') != std::string_view::npos) return true;
  if (!name.empty() && (name.front() == '/' || name.front() == '\\')) return true;
  if (name.size() >= 2 && name[1] == ':' && std::isalpha(static_cast<unsigned char>(name[0]))) return true;
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find_first_of("/\\", start);
    if (end == std::string_view::npos) end = name.size();
    if (name.substr(start, end - start) == "..") return true;
    start = end + 1;
  }
  return false;
}

}  // namespace frugal

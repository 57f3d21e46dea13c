#include "frugal/util/terminal.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace frugal {
namespace {

// Length of the valid UTF-8 sequence at s[i] and its code point, or 0 when the byte there does not
// start one (stray continuation, overlong form, surrogate, above U+10FFFF, cut short).
std::size_t utf8_at(std::string_view s, std::size_t i, char32_t& cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  std::size_t n = 0;
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  if (c >= 0xC2 && c <= 0xDF)
    n = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4, cp = c & 0x07;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

bool acts_on_terminal(char32_t cp) {
  return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

// `s` with each byte that is not part of valid UTF-8 written as \xHH and, for a terminal, each
// code point that acts on one escaped too (printable()); otherwise kept as it is.
std::string escaped(std::string_view s, bool for_terminal) {
  std::string out;
  out.reserve(s.size());
  char buf[16];
  for (std::size_t i = 0; i < s.size();) {
    char32_t cp = 0;
    const std::size_t n = utf8_at(s, i, cp);
    if (n == 0) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(s[i]));
      out += buf;
      ++i;
      continue;
    }
    if (!for_terminal || !acts_on_terminal(cp)) {
      out.append(s, i, n);
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp < 0x80) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    }
    i += n;
  }
  return out;
}

}  // namespace

std::string printable(std::string_view s) { return escaped(s, true); }

std::string utf8_escaped(std::string_view s) { return escaped(s, false); }

bool is_printable(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    char32_t cp = 0;
    const std::size_t n = utf8_at(s, i, cp);
    if (n == 0 || acts_on_terminal(cp)) return false;
    i += n;
  }
  return true;
}

bool stderr_redraws() {
  if (const char* force = std::getenv("FRUGAL_PROGRESS")) {
    if (std::strcmp(force, "plain") == 0) return false;
    if (std::strcmp(force, "bar") == 0) return true;
  }
  if (::isatty(STDERR_FILENO) != 1) return false;
  const char* term = std::getenv("TERM");
  if (!term || !*term || std::strcmp(term, "dumb") == 0) return false;
  // A notebook's `!command`: ipykernel exports JPY_PARENT_PID to everything the kernel starts;
  // Colab and Kaggle mark their kernels too.
  for (const char* notebook : {"JPY_PARENT_PID", "COLAB_RELEASE_TAG", "COLAB_GPU", "KAGGLE_KERNEL_RUN_TYPE"})
    if (std::getenv(notebook)) return false;
  return true;
}

std::string json_text(const nlohmann::json& doc, int indent) {
  const std::string text = doc.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
  // nlohmann escapes C0 controls but writes DEL, C1 controls and direction overrides raw, which
  // act on a terminal showing the document: written as \u escapes, the same JSON. They occur only
  // inside strings (the rest of a document is ASCII), and replace left valid UTF-8 alone.
  std::string out;
  out.reserve(text.size());
  char buf[16];  // acts_on_terminal() code points are at most U+2069: four hex digits
  for (std::size_t i = 0; i < text.size();) {
    char32_t cp = 0;
    const std::size_t len = utf8_at(text, i, cp), n = len == 0 ? 1 : len;
    if (len > 0 && cp >= 0x7F && acts_on_terminal(cp)) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(text, i, n);
    }
    i += n;
  }
  return out;
}

}  // namespace frugal
